package ghemu

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"time"
)

// StartHub starts a Hub on 127.0.0.1 for a program rather than a test (the
// offline demo); Close stops it.
func StartHub(opts HubOptions) *Hub {
	opts.AppSlug = cmp.Or(opts.AppSlug, "kedge")
	opts.TokenTTL = cmp.Or(opts.TokenTTL, time.Hour)
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	h := &Hub{opts: opts, repos: map[string]*Server{}, tokens: map[string]mintedToken{}, minted: map[int64]int{}}
	h.http = httptest.NewServer(http.HandlerFunc(h.serveHTTP))
	h.URL = h.http.URL
	return h
}

// Close stops a Hub StartHub started.
func (h *Hub) Close() { h.http.Close() }
