package service

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// What starts a cycle.
const (
	// TriggerStart is the cycle run as soon as an instance starts leading.
	TriggerStart = "start"
	// TriggerMesh is a cycle answering mesh changes, after the debounce.
	TriggerMesh = "mesh"
	// TriggerResync is the periodic full cycle.
	TriggerResync = "resync"
)

// maxReasons bounds the change descriptions a cycle carries into its log
// line; a storm of changes is summarised by Changes.
const maxReasons = 10

// Cycle describes why a cycle runs.
type Cycle struct {
	Trigger string
	// Changes counts the mesh changes the cycle answers; Reasons describes
	// the first few of them.
	Changes int
	Reasons []string
	// FirstChange is when the first of them was reported (zero for start
	// and resync cycles without pending changes).
	FirstChange time.Time
}

// SchedulerOptions tunes when cycles run.
type SchedulerOptions struct {
	// Debounce is the quiet time after the last mesh change before a
	// cycle starts, so a burst of changes (a Helm upgrade of istiod
	// relabels and rewrites several objects) costs one cycle.
	Debounce time.Duration
	// MaxDelay caps how long changes that keep coming may hold a cycle
	// back; zero means DefaultMaxDelayFactor × Debounce.
	MaxDelay time.Duration
	// Resync runs a full cycle when no cycle started for this long; zero
	// disables it.
	Resync time.Duration
	// Clock tells the time and runs the timers; nil means the real one.
	Clock clock.Clock
}

// DefaultMaxDelayFactor sets MaxDelay from Debounce when it is not given.
const DefaultMaxDelayFactor = 6

// Scheduler decides when cycles run: one at start, one per burst of mesh
// changes after the debounce, one per resync period, and never two at
// once. It is safe for concurrent use; Run may be called again after it
// returns (a replica that lost the lease and won it back).
type Scheduler struct {
	run   func(context.Context, Cycle)
	opts  SchedulerOptions
	clock clock.Clock
	wake  chan struct{}
	// beforeWait, when set, learns each time the scheduler is about to
	// block and until when (zero: until a change or the end); tests use
	// it to move a fake clock only once the scheduler waits on it.
	beforeWait func(due time.Time)

	mu         sync.Mutex
	pending    *Cycle
	lastChange time.Time
	draining   bool
	// inFlight is closed when the running cycle ends; nil when none runs.
	inFlight chan struct{}
}

// NewScheduler returns a Scheduler that calls run for each cycle.
func NewScheduler(run func(context.Context, Cycle), opts SchedulerOptions) *Scheduler {
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelayFactor * opts.Debounce
	}
	opts.MaxDelay = max(opts.MaxDelay, opts.Debounce)
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Scheduler{run: run, opts: opts, clock: c, wake: make(chan struct{}, 1)}
}

// Trigger reports a mesh change. It never blocks, so an informer goroutine
// may call it.
func (s *Scheduler) Trigger(reason string) {
	now := s.clock.Now()
	s.mu.Lock()
	if s.pending == nil {
		s.pending = &Cycle{Trigger: TriggerMesh, FirstChange: now}
	}
	s.pending.Changes++
	if len(s.pending.Reasons) < maxReasons {
		s.pending.Reasons = append(s.pending.Reasons, reason)
	}
	s.lastChange = now
	s.mu.Unlock()
	s.poke()
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run runs a cycle at once, then cycles as changes and the resync period
// ask, until ctx ends or Drain is called. ctx is also every cycle's
// context: ending it aborts the cycle in flight (lost leadership); use
// Drain to let it finish.
func (s *Scheduler) Run(ctx context.Context) {
	// The first cycle reads everything, which answers whatever changed
	// before it.
	s.mu.Lock()
	s.pending = nil
	s.mu.Unlock()
	next := Cycle{Trigger: TriggerStart}
	for {
		started, ok := s.begin()
		if !ok {
			return
		}
		s.run(ctx, next)
		s.end()
		if ctx.Err() != nil {
			return
		}
		if next, ok = s.wait(ctx, started); !ok {
			return
		}
	}
}

// begin marks a cycle in flight, unless the scheduler is draining.
func (s *Scheduler) begin() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return time.Time{}, false
	}
	s.inFlight = make(chan struct{})
	return s.clock.Now(), true
}

func (s *Scheduler) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.inFlight)
	s.inFlight = nil
}

// wait blocks until the next cycle is due and says which one it is.
func (s *Scheduler) wait(ctx context.Context, lastStart time.Time) (Cycle, bool) {
	for {
		// The state read below answers every change reported so far, so a
		// wake-up left from one of them is spent.
		select {
		case <-s.wake:
		default:
		}
		c, due, ok := s.next(lastStart)
		switch {
		case !ok:
			return Cycle{}, false
		case c != nil:
			return *c, true
		}
		if !s.sleep(ctx, due) {
			return Cycle{}, false
		}
	}
}

// next returns the cycle due now or, when none is, when the next one will
// be (zero: none until a change). ok is false once the scheduler drains.
func (s *Scheduler) next(lastStart time.Time) (c *Cycle, due time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return nil, time.Time{}, false
	}
	now := s.clock.Now()
	meshDue, changed := s.meshDue()
	if changed && !now.Before(meshDue) {
		c := *s.pending
		s.pending = nil
		return &c, time.Time{}, true
	}
	if s.opts.Resync > 0 {
		resyncDue := lastStart.Add(s.opts.Resync)
		if !now.Before(resyncDue) {
			return s.resyncCycle(), time.Time{}, true
		}
		due = resyncDue
	}
	if changed && (due.IsZero() || meshDue.Before(due)) {
		due = meshDue
	}
	return nil, due, true
}

// resyncCycle is a resync cycle; it also answers the pending changes,
// since every cycle reads the whole cluster. Callers hold s.mu.
func (s *Scheduler) resyncCycle() *Cycle {
	c := &Cycle{Trigger: TriggerResync}
	if s.pending != nil {
		c.Changes, c.Reasons, c.FirstChange = s.pending.Changes, s.pending.Reasons, s.pending.FirstChange
		s.pending = nil
	}
	return c
}

// sleep waits until due (forever when zero), a change or Drain; it is
// false when ctx ended.
func (s *Scheduler) sleep(ctx context.Context, due time.Time) bool {
	var fire <-chan time.Time
	if !due.IsZero() {
		timer := s.clock.NewTimer(due.Sub(s.clock.Now()))
		defer timer.Stop()
		fire = timer.C()
	}
	if s.beforeWait != nil {
		s.beforeWait(due)
	}
	select {
	case <-ctx.Done():
		return false
	case <-s.wake:
	case <-fire:
	}
	return ctx.Err() == nil
}

// meshDue is when the pending changes' cycle is due: Debounce after the
// last change, but no later than MaxDelay after the first. Callers hold
// s.mu.
func (s *Scheduler) meshDue() (time.Time, bool) {
	if s.pending == nil {
		return time.Time{}, false
	}
	due := s.lastChange.Add(s.opts.Debounce)
	if capped := s.pending.FirstChange.Add(s.opts.MaxDelay); capped.Before(due) {
		due = capped
	}
	return due, true
}

// Drain stops new cycles for good and waits until the cycle in flight, if
// any, ends or ctx does. It returns ctx's error in the latter case.
func (s *Scheduler) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	inFlight := s.inFlight
	s.mu.Unlock()
	s.poke()
	if inFlight == nil {
		return nil
	}
	select {
	case <-inFlight:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
