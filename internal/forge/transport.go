package forge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// installationTransport authenticates as an App installation. It wraps
// ghinstallation so a token can be renewed early for Git, which
// ghinstallation alone would hand out until its last minute. When the
// installation is not configured, lookup finds it on first use.
type installationTransport struct {
	apps    *ghinstallation.AppsTransport
	baseURL string
	lookup  func(context.Context) (int64, error)

	mu             sync.Mutex
	installationID int64
	cur            *ghinstallation.Transport
}

// ensureID finds the installation unless it is known.
func (t *installationTransport) ensureID(ctx context.Context) error {
	t.mu.Lock()
	known := t.installationID != 0
	t.mu.Unlock()
	if known {
		return nil
	}
	id, err := t.lookup(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.installationID = id
	return nil
}

// newTransport is a token source for the installation. Callers hold t.mu.
func (t *installationTransport) newTransport() *ghinstallation.Transport {
	tr := ghinstallation.NewFromAppsTransport(t.apps, t.installationID)
	tr.BaseURL = t.baseURL
	return tr
}

func (t *installationTransport) current(ctx context.Context) (*ghinstallation.Transport, error) {
	if err := t.ensureID(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		t.cur = t.newTransport()
	}
	return t.cur, nil
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tr, err := t.current(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return tr.RoundTrip(req)
}

// tokenValidFor returns an installation token that stays valid for at
// least life, minting a new one when the current one would not.
func (t *installationTransport) tokenValidFor(ctx context.Context, life time.Duration) (string, error) {
	tr, err := t.current(ctx)
	if err != nil {
		return "", err
	}
	if expires, _, err := tr.Expiry(); err != nil || time.Until(expires) >= life {
		// No token yet, or a long-lived one: ghinstallation mints or reuses.
		token, err := tr.Token(ctx)
		if err != nil {
			return "", err
		}
		if expires, _, err := tr.Expiry(); err == nil && time.Until(expires) >= life {
			return token, nil
		}
	}
	t.mu.Lock()
	fresh := t.newTransport()
	t.mu.Unlock()
	token, err := fresh.Token(ctx)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	t.cur = fresh
	t.mu.Unlock()
	return token, nil
}

// etagCache makes every GET conditional on the ETag of the last answer to
// the same URL and replays that answer on 304, so an unchanged cycle costs
// no rate limit. go-github treats 304 as an error; it never sees one.
type etagCache struct {
	next http.RoundTripper

	mu      sync.Mutex
	entries map[string]*cachedAnswer
	order   []string // insertion order, for eviction
}

type cachedAnswer struct {
	etag   string
	header http.Header
	// body is the answer's bytes until its reader keeps the decoded form
	// instead (keepDecoded): then body is nil and decoded replays.
	body    []byte
	decoded any
}

// decodedBody is the body of a replayed answer whose reader kept what it
// decoded: it reads as empty (go-github decodes nothing from an empty body)
// and hands the kept value back through replayed.
type decodedBody struct {
	io.Reader
	value any
}

func (decodedBody) Close() error { return nil }

// replayed is the value kept for the answer resp replays, if any.
func replayed(resp *http.Response) (any, bool) {
	if resp == nil {
		return nil, false
	}
	if b, ok := resp.Body.(decodedBody); ok {
		return b.value, true
	}
	return nil, false
}

// maxCachedAnswers bounds memory; kedge's listings fit many times over.
const maxCachedAnswers = 512

func newETagCache(next http.RoundTripper) *etagCache {
	return &etagCache{next: next, entries: map[string]*cachedAnswer{}}
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" {
		return c.next.RoundTrip(req)
	}
	key := req.URL.String()
	c.mu.Lock()
	entry := c.entries[key]
	c.mu.Unlock()
	if entry != nil {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", entry.etag)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && entry != nil:
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// The 304's headers (rate limits above all) are newer than the
		// stored ones.
		header := entry.header.Clone()
		for k, vs := range resp.Header {
			header[k] = vs
		}
		header.Del("Content-Length")
		var body io.ReadCloser = io.NopCloser(bytes.NewReader(entry.body))
		if entry.decoded != nil {
			body = decodedBody{Reader: bytes.NewReader(nil), value: entry.decoded}
		}
		return &http.Response{
			Status:        "200 OK",
			StatusCode:    http.StatusOK,
			Proto:         resp.Proto,
			ProtoMajor:    resp.ProtoMajor,
			ProtoMinor:    resp.ProtoMinor,
			Header:        header,
			Body:          body,
			ContentLength: int64(len(entry.body)),
			Request:       req,
		}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		c.store(key, &cachedAnswer{etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body})
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// pageOf is what kedge reads of the listing page resp answered: the value
// kept for it when resp is a replay, else keep's, which the ETag cache then
// replays in place of the page's bytes.
func (c *Client) pageOf(resp *http.Response, keep func() any) any {
	if value, ok := replayed(resp); ok {
		return value
	}
	value := keep()
	if c.answers != nil {
		c.answers.keepDecoded(resp, value)
	}
	return value
}

// keepDecoded swaps the stored bytes of the answer to resp's request for
// value, what its reader made of them, when that answer is still the one
// stored: a listing replayed on 304 then costs neither its bytes in memory
// nor decoding them again. Only a reader that knows every replay of the URL
// comes back through replayed may call it.
func (c *etagCache) keepDecoded(resp *http.Response, value any) {
	if resp == nil || resp.Request == nil {
		return
	}
	key := resp.Request.URL.String()
	etag := resp.Header.Get("ETag")
	c.mu.Lock()
	defer c.mu.Unlock()
	if entry, ok := c.entries[key]; ok && etag != "" && entry.etag == etag {
		c.entries[key] = &cachedAnswer{etag: entry.etag, header: entry.header, decoded: value}
	}
}

func (c *etagCache) store(key string, a *cachedAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = a
	for len(c.order) > maxCachedAnswers {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// isTokenMint recognises POST /app/installations/{id}/access_tokens.
func isTokenMint(req *http.Request) bool {
	return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/access_tokens") &&
		strings.Contains(req.URL.Path, "/app/installations/")
}

func isMutating(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !isTokenMint(req)
}
