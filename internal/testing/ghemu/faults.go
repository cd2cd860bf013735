package ghemu

import (
	"net/http"
	"path"
	"strconv"
	"sync"
	"time"
)

// Fault replaces or delays the answer to one request, to test how a client
// copes with GitHub's limits and outages.
type Fault struct {
	// Method and Path select the requests the fault applies to; empty
	// means any. Path is a path.Match pattern over the API path without
	// the /api/v3 prefix, e.g. "/repos/*/*/pulls".
	Method string
	Path   string

	// Delay holds the answer back; a client whose timeout is shorter sees
	// a timeout.
	Delay time.Duration
	// answer, when set, is given instead of the real handler's; nil lets
	// the request through after Delay.
	answer *response
}

// For narrows the fault to one method and path pattern.
func (f Fault) For(method, pathPattern string) Fault {
	f.Method, f.Path = method, pathPattern
	return f
}

func (f Fault) matches(r *http.Request, apiPath string) bool {
	if f.Method != "" && f.Method != r.Method {
		return false
	}
	if f.Path == "" {
		return true
	}
	ok, err := path.Match(f.Path, apiPath)
	return err == nil && ok
}

// SecondaryRateLimit is GitHub's 403 for exceeding a secondary rate limit,
// with Retry-After in seconds.
func SecondaryRateLimit(retryAfter int) Fault {
	return Fault{answer: secondaryRateLimitResponse(retryAfter)}
}

// TooManyRequests is a 429 with Retry-After, which GitHub also uses for
// secondary limits.
func TooManyRequests(retryAfter int) Fault {
	r := errorResponse(http.StatusTooManyRequests,
		"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", docsSecondaryLimit)
	r.header = http.Header{"Retry-After": {strconv.Itoa(retryAfter)}}
	return Fault{answer: r}
}

// PrimaryRateLimit is the 403 of an exhausted primary limit that resets at
// reset.
func PrimaryRateLimit(reset time.Time) Fault {
	return Fault{answer: primaryRateLimitResponse(reset, "installation ID 1")}
}

// ServerError is a 5xx with GitHub's terse body.
func ServerError(status int) Fault {
	return Fault{answer: errorResponse(status, http.StatusText(status), docsRoot)}
}

// Delay holds a request back for d, then answers it normally.
func Delay(d time.Duration) Fault { return Fault{Delay: d} }

// Faults are the faults armed on a repository or on a whole Hub: a Hub's
// strike any request it serves, whichever repository it names (App
// endpoints included), before the repository's own; New's repository arms
// its Hub's. Each queued fault applies once, to the first later request it
// matches, in queue order.
type Faults struct {
	mu    sync.Mutex
	queue []Fault
	fn    func(*http.Request) *Fault
}

// QueueFault adds faults to the queue.
func (p *Faults) QueueFault(faults ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, faults...)
}

// SetFaultFunc installs a function consulted before the queue for every
// request inside the surface; a nil answer lets the request through.
// Passing nil removes it.
func (p *Faults) SetFaultFunc(fn func(r *http.Request) *Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn = fn
}

// PendingFaults is how many queued faults have not been used yet.
func (p *Faults) PendingFaults() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// take returns the fault for a request, if any: the function's first,
// then the first queued fault that matches, which is used up.
func (p *Faults) take(r *http.Request, apiPath string) *Fault {
	p.mu.Lock()
	fn := p.fn
	p.mu.Unlock()
	// The function runs unlocked: it may take its own locks or sleep.
	if fn != nil {
		if f := fn(r); f != nil {
			return f
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.queue {
		if f.matches(r, apiPath) {
			p.queue = append(p.queue[:i:i], p.queue[i+1:]...)
			return &f
		}
	}
	return nil
}

// takeFault consults the Hub's faults before the repository's own.
func (h *Hub) takeFault(repo *Server, r *http.Request, apiPath string) *Fault {
	if f := h.take(r, apiPath); f != nil || repo == nil || repo.Faults == &h.Faults {
		return f
	}
	return repo.take(r, apiPath)
}
