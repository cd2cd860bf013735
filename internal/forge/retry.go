package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// RetryLaterError means GitHub could not do it now (rate limits, outage,
// timeouts) and waiting within the cycle was not reasonable: the caller
// should leave the work to the next cycle.
type RetryLaterError struct {
	// Op names the call, e.g. "create pull request".
	Op string
	// After is how long GitHub asked to wait; zero when it did not say.
	After time.Duration
	Err   error
}

func (e *RetryLaterError) Error() string {
	if e.After > 0 {
		return fmt.Sprintf("forge: %s: retry after %s: %v", e.Op, e.After.Round(time.Second), e.Err)
	}
	return fmt.Sprintf("forge: %s: retry later: %v", e.Op, e.Err)
}

func (e *RetryLaterError) Unwrap() error { return e.Err }

// PermissionError means the App's installation lacks a permission the
// call needs: GitHub answered 403 "Resource not accessible by
// integration" and named, in X-Accepted-GitHub-Permissions, the
// permission sets that would admit it. No retry helps until an owner of
// the installation grants one.
type PermissionError struct {
	Op string
	// Accepted is GitHub's header as sent, e.g. "pull_requests=write" or
	// "issues=write; pull_requests=write".
	Accepted string
	Err      error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("forge: %s: the GitHub App's installation lacks the permission it needs (%s); grant it in the App's settings, as deploy/github-app.json asks: %v",
		e.Op, strings.ReplaceAll(e.Accepted, "; ", " or "), e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// permissionRefusal is the permission sets GitHub named when it refused a
// call for lack of one, "" for any other answer.
func permissionRefusal(err error) string {
	var ghErr *github.ErrorResponse
	if !errors.As(err, &ghErr) || ghErr.Response == nil || ghErr.Response.StatusCode != http.StatusForbidden ||
		ghErr.Message != "Resource not accessible by integration" {
		return ""
	}
	return ghErr.Response.Header.Get("X-Accepted-GitHub-Permissions")
}

// op describes one logical call for the retry policy.
type op struct {
	name     string
	mutating bool
	// idempotent calls may be repeated after an ambiguous failure (a 5xx
	// or a timeout, after which GitHub may or may not have acted). A
	// create that is not idempotent is left to the next cycle instead,
	// which finds what was created.
	idempotent bool
}

// Waits GitHub documents when it gives no Retry-After: at least a minute
// after a secondary limit.
const secondaryLimitDefaultWait = time.Minute

// call runs fn with the retry policy: rate limits (go-github's
// *RateLimitError and *AbuseRateLimitError, and HTTP 429, which go-github
// v66 does not map) are retried after GitHub's wait when it is at most
// MaxRetryAfter; 5xx and timeouts of idempotent calls with doubling
// backoff; everything else is returned at once. Writes are serialised and
// spaced by MinMutationGap.
func (c *Client) call(ctx context.Context, o op, fn func(ctx context.Context) (*github.Response, error)) error {
	if o.mutating {
		c.pace.mu.Lock()
		defer c.pace.mu.Unlock()
	}
	backoff := c.cfg.RetryBackoff
	for attempt := 0; ; attempt++ {
		if o.mutating {
			if err := c.pace.wait(ctx); err != nil {
				return err
			}
		}
		attemptCtx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		resp, err := fn(attemptCtx)
		cancel()
		if o.mutating {
			c.pace.last = time.Now()
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}

		f := classify(err, resp)
		if !f.retryable {
			if accepted := permissionRefusal(err); accepted != "" {
				return &PermissionError{Op: o.name, Accepted: accepted, Err: err}
			}
			return fmt.Errorf("forge: %s: %w", o.name, err)
		}
		wait := f.wait
		if f.secondary {
			c.pace.pauseFor(wait, o.mutating)
		}
		if f.ambiguous {
			if !o.idempotent {
				return c.retryLater(o, f.wait, err)
			}
			wait = max(wait, backoff)
			backoff *= 2
		}
		if attempt >= c.cfg.MaxRetries || wait > c.cfg.MaxRetryAfter {
			return c.retryLater(o, f.wait, err)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		c.meter.count(&c.meter.stats.Retries)
	}
}

func (c *Client) retryLater(o op, after time.Duration, err error) error {
	c.meter.count(&c.meter.stats.RetryLater)
	return &RetryLaterError{Op: o.name, After: after, Err: err}
}

// failure is what the retry policy needs to know about an error.
type failure struct {
	retryable bool
	// ambiguous: GitHub may have acted (5xx, timeout, broken connection).
	ambiguous bool
	// wait is what GitHub asked for; zero when it did not say.
	wait time.Duration
	// secondary: a secondary limit, which holds for every repository.
	secondary bool
}

func classify(err error, resp *github.Response) failure {
	var rate *github.RateLimitError
	if errors.As(err, &rate) {
		// A second past the reset, as GitHub's clock and ours differ.
		return failure{retryable: true, wait: max(time.Until(rate.Rate.Reset.Time)+time.Second, 0)}
	}
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &abuse) {
		wait := secondaryLimitDefaultWait
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		return failure{retryable: true, wait: wait, secondary: true}
	}
	var ghErr *github.ErrorResponse
	if errors.As(err, &ghErr) && ghErr.Response != nil {
		return classifyStatus(ghErr.Response)
	}
	// A failed token refresh surfaces as ghinstallation's error, with the
	// response it got (and whose body it leaves open).
	var mintErr *ghinstallation.HTTPError
	if errors.As(err, &mintErr) && mintErr.Response != nil {
		if mintErr.Response.Body != nil {
			_, _ = io.Copy(io.Discard, mintErr.Response.Body)
			mintErr.Response.Body.Close()
		}
		return classifyStatus(mintErr.Response)
	}
	if resp != nil && resp.Response != nil && resp.StatusCode >= 400 {
		return classifyStatus(resp.Response)
	}
	if transient(err) {
		return failure{retryable: true, ambiguous: true}
	}
	return failure{}
}

func classifyStatus(r *http.Response) failure {
	retryAfter := parseRetryAfter(r.Header)
	switch {
	case r.StatusCode == http.StatusTooManyRequests:
		if retryAfter == 0 {
			retryAfter = resetWait(r.Header)
		}
		if retryAfter == 0 {
			retryAfter = secondaryLimitDefaultWait
		}
		return failure{retryable: true, wait: retryAfter, secondary: true}
	case r.StatusCode == http.StatusForbidden && (retryAfter > 0 || r.Header.Get("X-RateLimit-Remaining") == "0"):
		// A rate limit go-github did not recognise (e.g. on a token mint).
		return failure{retryable: true, wait: max(retryAfter, resetWait(r.Header))}
	case r.StatusCode >= 500:
		return failure{retryable: true, ambiguous: true, wait: retryAfter}
	}
	return failure{}
}

func parseRetryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func resetWait(h http.Header) time.Duration {
	if h.Get("X-RateLimit-Remaining") != "0" {
		return 0
	}
	reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return 0
	}
	return max(time.Until(time.Unix(reset, 0))+time.Second, 0)
}

// transient recognises failures of the connection rather than answers:
// timeouts, resets, refused connections, truncated bodies.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pacing is the write discipline every client of a Pool shares: one write
// at a time, MinMutationGap after the last, and none before a pause a
// secondary limit asked for has passed (GitHub counts those limits per
// identity, not per repository).
type pacing struct {
	gap time.Duration

	mu     sync.Mutex
	last   time.Time
	paused time.Time
}

// wait sleeps until the next write may start. Callers hold p.mu.
func (p *pacing) wait(ctx context.Context) error {
	next := p.last.Add(p.gap)
	if p.paused.After(next) {
		next = p.paused
	}
	return sleep(ctx, time.Until(next))
}

// pauseFor keeps every client's writes back for d; locked says the caller
// holds p.mu already (it is writing).
func (p *pacing) pauseFor(d time.Duration, locked bool) {
	if !locked {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	if until := time.Now().Add(d); until.After(p.paused) {
		p.paused = until
	}
}
