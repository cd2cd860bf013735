package forge

import (
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Stats counts what the client sent to GitHub, for metrics.
type Stats struct {
	// Calls is every HTTP request sent, by method, retries and token
	// mints included; answers replayed from the ETag cache count once, as
	// the 304 they were.
	Calls map[string]int64
	// Mutating counts requests that change something on GitHub.
	Mutating int64
	// NotModified counts conditional GETs answered 304, which GitHub does
	// not charge to the rate limit.
	NotModified int64
	// TokenMints counts installation tokens requested.
	TokenMints int64
	// Retries counts attempts repeated after a rate limit, a 5xx or a
	// timeout.
	Retries int64
	// RetryLater counts calls given up for the next cycle.
	RetryLater int64

	// RateLimit, RateRemaining and RateReset are the primary limit as of
	// the last answer that carried it; RateLimit is -1 before any.
	RateLimit     int
	RateRemaining int
	RateReset     time.Time
}

// Stats returns a snapshot of the counters.
func (c *Client) Stats() Stats { return c.meter.snapshot() }

// meter counts every request on its way to the network.
type meter struct {
	next http.RoundTripper

	mu    sync.Mutex
	stats Stats
}

func newMeter(next http.RoundTripper) *meter {
	return &meter{next: next, stats: Stats{Calls: map[string]int64{}, RateLimit: -1, RateRemaining: -1}}
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.stats.Calls[req.Method]++
	switch {
	case isTokenMint(req):
		m.stats.TokenMints++
	case isMutating(req):
		m.stats.Mutating++
	}
	m.mu.Unlock()

	resp, err := m.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if resp.StatusCode == http.StatusNotModified {
		m.stats.NotModified++
	}
	if !isTokenMint(req) {
		m.observeRate(resp.Header)
	}
	return resp, nil
}

// observeRate records the primary limit; App JWT calls have a separate
// budget and are left out. Callers hold m.mu.
func (m *meter) observeRate(h http.Header) {
	limit, err1 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	if err1 != nil || err2 != nil {
		return
	}
	m.stats.RateLimit, m.stats.RateRemaining = limit, remaining
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		m.stats.RateReset = time.Unix(reset, 0)
	}
}

func (m *meter) count(field *int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	*field++
}

func (m *meter) snapshot() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Calls = maps.Clone(m.stats.Calls)
	return s
}
