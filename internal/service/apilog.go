package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultOutageQuiet is how long client-go must log no error before an
// outage counts as over. Its watches retry with a backoff of up to 30 s,
// so a shorter quiet time would split one outage into several.
const DefaultOutageQuiet = time.Minute

// QuietAPIErrors wraps the handler that client-go's logs (klog, and through
// it utilruntime's error handlers) go to. While the API server is away,
// every informer and the leader elector log an error at each retry, tens of
// lines a minute per replica that say one thing. The first error of an
// outage is logged as a WARN; the rest are counted, and once none has come
// for quiet, one WARN says how long the errors lasted and how many there
// were. Records below ERROR pass through unchanged.
func QuietAPIErrors(next slog.Handler, quiet time.Duration, c clock.WithDelayedExecution) slog.Handler {
	if c == nil {
		c = clock.RealClock{}
	}
	return &quietHandler{next: next, outage: &outage{next: next, quiet: quiet, clock: c}}
}

type quietHandler struct {
	next   slog.Handler
	outage *outage
}

func (h *quietHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return h.next.Handle(ctx, r)
	}
	if opens := h.outage.observe(); !opens {
		return nil
	}
	warn := slog.NewRecord(r.Time, slog.LevelWarn, "Kubernetes API errors: "+r.Message+"; further errors are counted until they stop", r.PC)
	r.Attrs(func(a slog.Attr) bool {
		warn.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, warn)
}

func (h *quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &quietHandler{next: h.next.WithAttrs(attrs), outage: h.outage}
}

func (h *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{next: h.next.WithGroup(name), outage: h.outage}
}

// outage counts the errors of one run of them, shared by every logger
// derived from the handler.
type outage struct {
	next  slog.Handler
	quiet time.Duration
	clock clock.WithDelayedExecution

	mu          sync.Mutex
	first, last time.Time
	errors      int
	// generation tells the timer of the latest error from older ones that
	// fired before being stopped.
	generation int
	timer      clock.Timer
}

// observe counts an error and says whether it opens an outage.
func (o *outage) observe() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errors++
	o.last = o.clock.Now()
	opens := o.timer == nil
	if opens {
		o.first = o.last
	} else {
		o.timer.Stop()
	}
	o.generation++
	generation := o.generation
	o.timer = o.clock.AfterFunc(o.quiet, func() { o.end(generation) })
	return opens
}

// end summarises the outage once errors have stopped for the quiet time.
// It reads no clock: a fake one runs it while holding its own lock.
func (o *outage) end(generation int) {
	o.mu.Lock()
	if generation != o.generation {
		o.mu.Unlock()
		return
	}
	first, last, errors := o.first, o.last, o.errors
	o.errors, o.timer = 0, nil
	o.mu.Unlock()
	r := slog.NewRecord(last.Add(o.quiet), slog.LevelWarn, "Kubernetes API errors stopped", 0)
	r.AddAttrs(slog.String("lasted", last.Sub(first).String()), slog.Int("errors", errors))
	_ = o.next.Handle(context.Background(), r)
}
