package ghemu

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// request is one call as the handlers see it.
type request struct {
	*Call   // as logged
	errs    // the endpoint's
	hub     *Hub
	repo    *Server // the repository the path names; nil when the Hub has none
	item    *item   // the issue or pull request {number} names
	params  map[string]string
	actor   string // login the credentials act as
	apiBase string // scheme://host[/api/v3], for the URLs in answers
	webBase string // scheme://host, for html_url
	accept  string // the Accept header: a custom media type asks for another representation
}

func (r *request) number() int {
	n, _ := strconv.Atoi(r.params["number"])
	return n
}

// decode reads the JSON body; GitHub answers 400 "Problems parsing JSON"
// when it cannot.
func (r *request) decode(v any) *response {
	if len(bytes.TrimSpace(r.Body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		return errorResponse(http.StatusBadRequest, "Problems parsing JSON", docsRoot)
	}
	return nil
}

// response is what a handler answers.
type response struct {
	status int
	body   any
	header http.Header
	// raw, when set, is sent as is instead of body's JSON, as mediaType.
	raw       []byte
	mediaType string
}

func answer(status int, body any) *response { return &response{status: status, body: body} }

// serveHTTP is the one path of every request: route, fault, authentication,
// limits, handler, the headers every answer carries, and the call log.
func (h *Hub) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, 8<<20))
	apiPath, prefix := splitPrefix(hr.URL.Path)
	call := Call{Method: hr.Method, Path: apiPath, RawPath: hr.URL.Path, Query: hr.URL.Query(), Body: body, At: time.Now()}
	repo := h.Repo(repoOfPath(apiPath))
	rt, params := matchRoute(hr.Method, apiPath)
	if rt == nil || !rt.appAuth {
		// The App endpoints are the Hub's even when they name a repository.
		call.repo = repo
	}
	if rt == nil {
		call.OutOfSurface = true
		h.finish(w, hr, &call, notFound(), false)
		return
	}
	call.Route = rt.name

	if f := h.takeFault(call.repo, hr, apiPath); f != nil {
		if f.Delay > 0 && !waitCtx(hr.Context(), f.Delay) {
			// The client gave up: nothing is written, the log shows status 0.
			call.Faulted = true
			h.record(call)
			return
		}
		if f.answer != nil {
			call.Faulted = true
			h.finish(w, hr, &call, f.answer, false)
			return
		}
	}

	webBase := "http://" + hr.Host
	req := &request{
		Call: &call, errs: rt.errs, hub: h, repo: repo, params: params, webBase: webBase, apiBase: webBase + prefix,
		accept: hr.Header.Get("Accept"),
	}
	h.mu.Lock()
	resp, counts := h.handle(rt, req, hr.Header.Get("Authorization"))
	h.mu.Unlock()
	h.finish(w, hr, &call, resp, counts)
}

// handle authenticates, applies the rate limits and runs the handler. It
// reports whether the answer counts against the primary limit. Callers hold
// h.mu.
func (h *Hub) handle(rt *route, req *request, authorization string) (*response, bool) {
	if resp := h.authenticate(rt, req, authorization); resp != nil {
		return resp, false
	}
	rl, now := h.rateOf(req.Call), h.opts.Clock()
	rl.roll(now)
	if rl.used >= h.opts.RateLimit {
		return primaryRateLimitResponse(rl.reset, req.actor), false
	}
	if req.Mutating() {
		gap := h.opts.SecondaryMutationGap
		if wait := gap - now.Sub(rl.lastMutation); gap > 0 && !rl.lastMutation.IsZero() && wait > 0 {
			return secondaryRateLimitResponse(retryAfterSeconds(wait)), true
		}
		rl.lastMutation = now
	}
	if req.repo == nil && !rt.appAuth && rt.name != routeUser {
		return notFound(), true
	}
	if rt.item {
		// The /pulls/ endpoints answer 404 for an issue; the /issues/ ones
		// serve both, since a pull request is an issue on GitHub.
		if req.item = req.repo.items[req.number()]; req.item == nil || rt.pullOnly && !req.item.isPR {
			return notFound(), true
		}
	}
	return rt.handler(req.repo, req), true
}

// finish adds the headers every GitHub answer carries, turns a GET whose
// ETag the client already holds into 304, records and writes.
func (h *Hub) finish(w http.ResponseWriter, hr *http.Request, call *Call, resp *response, counts bool) {
	payload, contentType, mediaType := resp.raw, resp.mediaType+"; charset=utf-8", "github.v3; param="+strings.TrimPrefix(resp.mediaType, "application/vnd.github.")
	if resp.raw == nil {
		contentType, mediaType = "application/json; charset=utf-8", "github.v3; format=json"
	}
	if resp.body != nil && resp.raw == nil {
		var err error
		if payload, err = json.Marshal(resp.body); err != nil {
			resp = errorResponse(http.StatusInternalServerError, err.Error(), docsRoot)
			payload, _ = json.Marshal(resp.body)
		}
	}
	hd := w.Header()
	for k, vs := range resp.header {
		hd[k] = append([]string(nil), vs...)
	}
	status := resp.status
	if hr.Method == http.MethodGet && status == http.StatusOK && payload != nil {
		etag := `W/"` + digest(payload) + `"`
		hd.Set("ETag", etag)
		hd.Set("Cache-Control", "private, max-age=60, s-maxage=60")
		hd.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
		if etagMatches(hr.Header.Get("If-None-Match"), etag) {
			status = http.StatusNotModified
			payload = nil
			counts = false // GitHub does not charge a 304 to the rate limit
		}
	}

	h.mu.Lock()
	rl := h.rateOf(call)
	if counts {
		rl.used++
	}
	rl.roll(h.opts.Clock())
	// A fault or an error may already carry its own rate headers.
	setDefault(hd, "X-RateLimit-Limit", strconv.Itoa(h.opts.RateLimit))
	setDefault(hd, "X-RateLimit-Remaining", strconv.Itoa(max(h.opts.RateLimit-rl.used, 0)))
	setDefault(hd, "X-RateLimit-Reset", strconv.FormatInt(rl.reset.Unix(), 10))
	setDefault(hd, "X-RateLimit-Used", strconv.Itoa(rl.used))
	setDefault(hd, "X-RateLimit-Resource", "core")
	h.requestSeq++
	hd.Set("X-GitHub-Request-Id", fmt.Sprintf("EMU0:%04X:%06X", h.requestSeq, h.requestSeq*7919))
	h.mu.Unlock()

	hd.Set("X-GitHub-Media-Type", mediaType)
	hd.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	if payload != nil {
		hd.Set("Content-Type", contentType)
		hd.Set("Content-Length", strconv.Itoa(len(payload)))
	}
	// Recorded before the answer is written: a client that has read it
	// finds the call in the log.
	call.Status = status
	h.record(*call)
	w.WriteHeader(status)
	if payload != nil {
		_, _ = w.Write(payload)
	}
}

// rate is one primary rate-limit window (an hour, as GitHub's) and the
// last write, for the secondary limit.
type rate struct {
	used         int
	reset        time.Time
	lastMutation time.Time
}

// rateOf is the limit that c counts against: its repository's, or the
// Hub's. Callers hold h.mu.
func (h *Hub) rateOf(c *Call) *rate {
	if c.repo != nil {
		return c.repo.rate
	}
	return &h.rate
}

// roll starts a new window when the last one ended.
func (r *rate) roll(now time.Time) {
	if r.reset.IsZero() || !now.Before(r.reset) {
		r.used = 0
		r.reset = now.Add(time.Hour).Truncate(time.Second)
	}
}

// SetRateRemaining sets how many requests are left in the current primary
// window, e.g. 0 to make the next request fail with the primary limit.
func (s *Server) SetRateRemaining(remaining int) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.rate.roll(s.hub.opts.Clock())
	s.rate.used = max(s.hub.opts.RateLimit-remaining, 0)
}

// RateUsed is how many requests the current primary window has charged.
func (s *Server) RateUsed() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.rate.used
}

func splitPrefix(p string) (apiPath, prefix string) {
	const enterprise = "/api/v3"
	if p == enterprise || strings.HasPrefix(p, enterprise+"/") {
		return cmp.Or(strings.TrimPrefix(p, enterprise), "/"), enterprise
	}
	return p, ""
}

// repoOfPath is the lower-case "owner/name" a /repos/ path names, or "".
func repoOfPath(apiPath string) string {
	parts := strings.Split(strings.Trim(apiPath, "/"), "/")
	if len(parts) < 3 || parts[0] != "repos" {
		return ""
	}
	return strings.ToLower(parts[1] + "/" + parts[2])
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// etagMatches applies If-None-Match's weak comparison.
func etagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, candidate := range strings.Split(ifNoneMatch, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == want {
			return true
		}
	}
	return false
}

func setDefault(h http.Header, key, value string) {
	if h.Get(key) == "" {
		h.Set(key, value)
	}
}

func retryAfterSeconds(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// waitCtx sleeps unless the request goes away first.
func waitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
