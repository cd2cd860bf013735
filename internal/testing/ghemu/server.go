// Package ghemu is an in-process emulation of the part of GitHub's REST v3 API
// that kedge uses (DESIGN §5), with state, for tests. No compatible server can
// be run on the test machines, so this one follows GitHub's documented JSON
// shapes, status codes and headers: rate-limit headers on every answer, ETags
// with 304 on conditional GETs, 401 "Bad credentials", 403 secondary limits,
// 422 validation errors. Anything outside that surface answers 404 and is
// recorded, so tests can assert kedge never strays from it.
package ghemu

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BranchLookup reports whether a branch exists in the emulated repository and
// the commit it points at. It stands for the Git side of GitHub, which the
// emulator does not implement itself.
type BranchLookup func(branch string) (sha string, ok bool)

// Options configures a Server. Zero values pick the documented defaults.
type Options struct {
	// Owner and Repo name the one repository served; other repositories
	// answer 404 like a private repository the caller cannot see.
	Owner, Repo string
	// DefaultBranch is reported by GET /repos/{o}/{r}; default "main".
	DefaultBranch string

	// Tokens maps static tokens (personal access tokens) to the login they
	// act as.
	Tokens map[string]string

	// AppID, AppPublicKey and InstallationID enable App authentication:
	// POST /app/installations/{id}/access_tokens accepts an RS256 JWT
	// signed by the matching private key and mints installation tokens.
	AppID          int64
	AppPublicKey   *rsa.PublicKey
	InstallationID int64
	// AppSlug names the App; installation tokens act as "<slug>[bot]".
	// Default "kedge".
	AppSlug string
	// TokenTTL is the lifetime of minted installation tokens; default 1 h
	// as on GitHub.
	TokenTTL time.Duration

	// Branches answers which branches exist. Nil keeps an in-memory branch
	// table (see SetBranch) holding only the default branch at first.
	Branches BranchLookup

	// Collaborators restricts who may be requested as a reviewer. Nil
	// accepts any login.
	Collaborators []string

	// RateLimit is the primary limit per window (default 5000, the
	// installation limit); RateWindow its length (default 1 h).
	RateLimit  int
	RateWindow time.Duration

	// SecondaryMutationGap, when positive, answers a mutating request that
	// follows the previous one sooner than this with GitHub's 403 secondary
	// rate limit error, so tests can prove a client spaces its writes.
	SecondaryMutationGap time.Duration

	// HumanLogin is the author of edits made through the test controls;
	// default "octocat".
	HumanLogin string

	// Clock replaces time.Now, for token expiry tests.
	Clock func() time.Time
}

// Server is a running emulation. It is safe for concurrent use.
type Server struct {
	// URL is the server's root (http://127.0.0.1:port). GitHub Enterprise
	// clients append /api/v3; both forms are served.
	URL string

	http *httptest.Server
	opts Options

	mu     sync.Mutex
	repo   *repoState
	tokens map[string]time.Time // minted installation token → expiry
	minted int
	calls  []Call
	faults faultPlan
	// hubFaults, set for a repository of a Hub, are the Hub's.
	hubFaults    *faultPlan
	rateUsed     int
	rateReset    time.Time
	lastMutation time.Time
	nextID       int64
	requestSeq   int

	// tokenAuth, set for a repository of a Hub, resolves tokens to the
	// login they act as, or refuses them with GitHub's answer.
	tokenAuth func(token string) (login string, refused *response)
}

// New starts a Server on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a Server on 127.0.0.1; the caller must Close it.
func NewServer(opts Options) *Server {
	s := newServer(opts)
	s.http = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.http.URL
	return s
}

// newServer is a Server's state without a listener.
func newServer(opts Options) *Server {
	opts.Owner = cmp.Or(opts.Owner, "kedge-io")
	opts.Repo = cmp.Or(opts.Repo, "gitops")
	opts.DefaultBranch = cmp.Or(opts.DefaultBranch, "main")
	opts.AppSlug = cmp.Or(opts.AppSlug, "kedge")
	opts.TokenTTL = cmp.Or(opts.TokenTTL, time.Hour)
	opts.RateLimit = cmp.Or(opts.RateLimit, 5000)
	opts.RateWindow = cmp.Or(opts.RateWindow, time.Hour)
	opts.HumanLogin = cmp.Or(opts.HumanLogin, "octocat")
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Server{
		opts:   opts,
		tokens: map[string]time.Time{},
		nextID: 1000,
	}
	s.repo = newRepoState(s, opts)
	return s
}

// Close stops the server.
func (s *Server) Close() {
	if s.http != nil {
		s.http.Close()
	}
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client {
	if s.http == nil {
		return http.DefaultClient // a Hub's repository: served by the Hub
	}
	return s.http.Client()
}

func (s *Server) now() time.Time { return s.opts.Clock().UTC().Truncate(time.Second) }

// ids hands out the numeric ids GitHub gives every object. Callers hold s.mu.
func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// request is one call as the handlers see it.
type request struct {
	method  string
	path    string // API path, without the /api/v3 prefix
	query   url.Values
	body    []byte
	params  map[string]string
	actor   string // login the credentials act as
	apiBase string // scheme://host[/api/v3], for the URLs in answers
	webBase string // scheme://host, for html_url
	header  http.Header
}

func (r *request) number() int {
	n, _ := strconv.Atoi(r.params["number"])
	return n
}

// decode reads the JSON body; GitHub answers 400 "Problems parsing JSON"
// when it cannot.
func (r *request) decode(v any) *response {
	if len(bytes.TrimSpace(r.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		return errorResponse(http.StatusBadRequest, "Problems parsing JSON", docsRoot)
	}
	return nil
}

// response is what a handler answers.
type response struct {
	status int
	body   any
	header http.Header
}

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, 8<<20))
	apiPath, prefix := splitPrefix(hr.URL.Path)
	call := Call{
		Method:  hr.Method,
		Path:    apiPath,
		RawPath: hr.URL.Path,
		Query:   hr.URL.Query(),
		Body:    body,
		At:      time.Now(),
	}

	rt, params := matchRoute(hr.Method, apiPath)
	if rt == nil {
		call.OutOfSurface = true
		s.finish(w, hr, &call, errorResponse(http.StatusNotFound, "Not Found", docsRoot), false)
		return
	}
	call.Route = rt.name

	if f := s.takeFault(hr, apiPath); f != nil {
		if f.Delay > 0 && !waitCtx(hr.Context(), f.Delay) {
			// The client gave up: nothing is written, the log shows status 0.
			call.Faulted = true
			s.record(call)
			return
		}
		if f.Status != 0 {
			call.Faulted = true
			s.finish(w, hr, &call, f.response(), false)
			return
		}
	}

	scheme := "http"
	if hr.TLS != nil {
		scheme = "https"
	}
	req := &request{
		method:  hr.Method,
		path:    apiPath,
		query:   hr.URL.Query(),
		body:    body,
		params:  params,
		webBase: scheme + "://" + hr.Host,
		header:  hr.Header,
	}
	req.apiBase = req.webBase + prefix

	s.mu.Lock()
	resp, counts := s.handle(rt, req, hr.Header.Get("Authorization"))
	s.mu.Unlock()
	s.finish(w, hr, &call, resp, counts)
}

// handle authenticates, applies the rate limits and runs the handler. It
// reports whether the answer counts against the primary limit. Callers hold
// s.mu.
func (s *Server) handle(rt *route, req *request, authorization string) (*response, bool) {
	var resp *response
	if rt.appAuth {
		resp = s.authenticateApp(req, authorization)
	} else {
		resp = s.authenticateToken(req, authorization)
	}
	if resp != nil {
		return resp, false
	}
	s.rollRateWindow()
	if s.rateUsed >= s.opts.RateLimit {
		return primaryRateLimitResponse(s.rateReset, req.actor), false
	}
	mutating := rt.mutating()
	if mutating && s.opts.SecondaryMutationGap > 0 && !s.lastMutation.IsZero() {
		if wait := s.opts.SecondaryMutationGap - s.opts.Clock().Sub(s.lastMutation); wait > 0 {
			return secondaryRateLimitResponse(retryAfterSeconds(wait)), true
		}
	}
	if mutating {
		s.lastMutation = s.opts.Clock()
	}
	return rt.handler(s, req), true
}

// finish adds the headers every GitHub answer carries, turns a GET whose
// ETag the client already holds into 304, writes and records.
func (s *Server) finish(w http.ResponseWriter, hr *http.Request, call *Call, resp *response, counts bool) {
	var payload []byte
	if resp.body != nil {
		var err error
		payload, err = json.Marshal(resp.body)
		if err != nil {
			resp = errorResponse(http.StatusInternalServerError, err.Error(), docsRoot)
			payload, _ = json.Marshal(resp.body)
		}
	}
	h := w.Header()
	for k, vs := range resp.header {
		h[k] = append([]string(nil), vs...)
	}
	status := resp.status
	if hr.Method == http.MethodGet && status == http.StatusOK && payload != nil {
		etag := `W/"` + digest(payload) + `"`
		h.Set("ETag", etag)
		h.Set("Cache-Control", "private, max-age=60, s-maxage=60")
		h.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
		if etagMatches(hr.Header.Get("If-None-Match"), etag) {
			status = http.StatusNotModified
			payload = nil
			counts = false // GitHub does not charge a 304 to the rate limit
		}
	}

	s.mu.Lock()
	if counts {
		s.rateUsed++
	}
	s.rollRateWindow()
	// A fault or an error may already carry its own rate headers.
	setDefault(h, "X-RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
	setDefault(h, "X-RateLimit-Remaining", strconv.Itoa(max(s.opts.RateLimit-s.rateUsed, 0)))
	setDefault(h, "X-RateLimit-Reset", strconv.FormatInt(s.rateReset.Unix(), 10))
	setDefault(h, "X-RateLimit-Used", strconv.Itoa(s.rateUsed))
	setDefault(h, "X-RateLimit-Resource", "core")
	s.requestSeq++
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("EMU0:%04X:%06X", s.requestSeq, s.requestSeq*7919))
	s.mu.Unlock()

	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	if payload != nil {
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(payload)))
	}
	w.WriteHeader(status)
	if payload != nil {
		_, _ = w.Write(payload)
	}
	call.Status = status
	s.record(*call)
}

// rollRateWindow starts a new primary window when the last one ended.
// Callers hold s.mu.
func (s *Server) rollRateWindow() {
	now := s.opts.Clock()
	if s.rateReset.IsZero() || !now.Before(s.rateReset) {
		s.rateUsed = 0
		s.rateReset = now.Add(s.opts.RateWindow).Truncate(time.Second)
	}
}

// SetRateRemaining sets how many requests are left in the current primary
// window, e.g. 0 to make the next request fail with the primary limit.
func (s *Server) SetRateRemaining(remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollRateWindow()
	s.rateUsed = max(s.opts.RateLimit-remaining, 0)
}

// RateUsed is how many requests the current primary window has charged.
func (s *Server) RateUsed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateUsed
}

func splitPrefix(p string) (apiPath, prefix string) {
	const enterprise = "/api/v3"
	if p == enterprise || strings.HasPrefix(p, enterprise+"/") {
		rest := strings.TrimPrefix(p, enterprise)
		if rest == "" {
			rest = "/"
		}
		return rest, enterprise
	}
	return p, ""
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
	secs := int((d + time.Second - 1) / time.Second)
	return max(secs, 1)
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
