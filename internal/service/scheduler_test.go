package service

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// hangGuard only stops a broken test from hanging; no assertion depends on
// it, since every step below waits for the scheduler itself.
const hangGuard = 10 * time.Second

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// lockstep runs a Scheduler on a fake clock and follows it step by step:
// the test learns each cycle it starts and each time it waits, and moves
// the clock only then.
type lockstep struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	s     *Scheduler
	// cycles receives each cycle as it starts; it runs until the test
	// sends on release (or at once, without hold).
	cycles  chan Cycle
	release chan struct{}
	hold    bool
	// waits receives the due time each time the scheduler is about to
	// block; it stays put until the test sends on resume.
	waits  chan time.Time
	resume chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func startLockstep(t *testing.T, opts SchedulerOptions, hold bool) *lockstep {
	t.Helper()
	h := newLockstep(t, opts, hold)
	h.run()
	return h
}

func newLockstep(t *testing.T, opts SchedulerOptions, hold bool) *lockstep {
	t.Helper()
	fake := clocktesting.NewFakeClock(epoch)
	opts.Clock = fake
	h := &lockstep{
		t: t, clock: fake, hold: hold,
		cycles: make(chan Cycle), release: make(chan struct{}), waits: make(chan time.Time), resume: make(chan struct{}),
		done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(t.Context())
	h.ctx, h.cancel = ctx, cancel
	h.s = NewScheduler(func(cycleCtx context.Context, c Cycle) {
		select {
		case h.cycles <- c:
		case <-ctx.Done():
			return
		}
		if h.hold {
			select {
			case <-h.release:
			case <-cycleCtx.Done():
			}
		}
	}, opts)
	h.s.beforeWait = func(due time.Time) {
		select {
		case h.waits <- due:
		case <-ctx.Done():
			return
		}
		// Held until the test has looked at the scheduler's state.
		select {
		case <-h.resume:
		case <-ctx.Done():
		}
	}
	t.Cleanup(h.stop)
	return h
}

func (h *lockstep) run() {
	go func() {
		defer close(h.done)
		h.s.Run(h.ctx)
	}()
}

func (h *lockstep) stop() {
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(hangGuard):
		h.t.Error("Run did not return after its context ended")
	}
}

// cycle is the next cycle the scheduler starts.
func (h *lockstep) cycle() Cycle {
	h.t.Helper()
	select {
	case c := <-h.cycles:
		return c
	case <-time.After(hangGuard):
		h.t.Fatal("no cycle started")
		return Cycle{}
	}
}

// waiting returns when the scheduler blocks having seen every change
// reported so far, and until when it waits (zero: until a change).
func (h *lockstep) waiting() time.Time {
	h.t.Helper()
	for {
		select {
		case due := <-h.waits:
			// A wake-up still queued means the scheduler will look again
			// before it really blocks. It cannot take one while held.
			settled := len(h.s.wake) == 0
			h.resume <- struct{}{}
			if settled {
				return due
			}
		case c := <-h.cycles:
			h.t.Fatalf("unexpected %s cycle while waiting for the scheduler to block", c.Trigger)
		case <-time.After(hangGuard):
			h.t.Fatal("the scheduler never blocked")
		}
	}
}

// trigger reports n mesh changes at the fake clock's time.
func (h *lockstep) trigger(n int, reason string) {
	for range n {
		h.s.Trigger(reason)
	}
}

func TestSchedulerRunsOneCyclePerBurstOfChanges(t *testing.T) {
	const debounce = 10 * time.Second
	cases := []struct {
		name    string
		opts    SchedulerOptions
		actions []action
		// idle is what the scheduler waits for at the end: zero means
		// nothing but a change.
		idle time.Duration
	}{
		{
			name: "a start cycle and nothing else without changes",
			opts: SchedulerOptions{Debounce: debounce},
		},
		{
			name: "a burst of changes costs one cycle",
			opts: SchedulerOptions{Debounce: debounce},
			actions: []action{
				{trigger: 1}, {step: debounce / 4, trigger: 5}, {step: debounce / 2, trigger: 1},
				{step: debounce, expect: TriggerMesh, changes: 7},
			},
		},
		{
			name: "changes further apart than the debounce cost a cycle each",
			opts: SchedulerOptions{Debounce: debounce},
			actions: []action{
				{trigger: 1}, {step: debounce, expect: TriggerMesh, changes: 1},
				{step: 2 * debounce, trigger: 1}, {step: debounce, expect: TriggerMesh, changes: 1},
			},
		},
		{
			name: "changes that never stop are answered after the maximum delay",
			opts: SchedulerOptions{Debounce: debounce, MaxDelay: 3 * debounce},
			// A change every half debounce: the cap answers the first six
			// at 3 debounces, the next six at 6.
			actions: slices.Concat(
				everyHalfDebounce(debounce, 6),
				[]action{{step: debounce / 2, expect: TriggerMesh, changes: 6}},
				everyHalfDebounce(debounce, 6),
				[]action{{step: debounce / 2, expect: TriggerMesh, changes: 6}},
			),
		},
		{
			name: "resync runs full cycles without changes",
			opts: SchedulerOptions{Debounce: debounce, Resync: 2 * debounce},
			actions: []action{
				{step: 2 * debounce, expect: TriggerResync},
				{step: 2 * debounce, expect: TriggerResync},
			},
			idle: 2 * debounce,
		},
		{
			name: "a resync due first answers the pending changes",
			opts: SchedulerOptions{Debounce: debounce, Resync: 2 * debounce},
			actions: []action{
				{step: 2*debounce - debounce/2, trigger: 2},
				{step: debounce / 2, expect: TriggerResync, changes: 2},
			},
			idle: 2 * debounce,
		},
		{
			name: "zero debounce runs at once",
			opts: SchedulerOptions{},
			actions: []action{
				{trigger: 1, expect: TriggerMesh, changes: 1},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startLockstep(t, tc.opts, false)
			require.Equal(t, TriggerStart, h.cycle().Trigger)
			for i, a := range tc.actions {
				// Move the clock only while the scheduler waits on it.
				h.waiting()
				if a.step > 0 {
					h.clock.Step(a.step)
				}
				h.trigger(a.trigger, fmt.Sprintf("change %d", i))
				if a.expect != "" {
					c := h.cycle()
					assert.Equal(t, a.expect, c.Trigger, "action %d", i)
					assert.Equal(t, a.changes, c.Changes, "action %d", i)
				}
			}
			due := h.waiting()
			if tc.idle == 0 {
				assert.Zero(t, due, "no cycle is due without a change")
			} else {
				assert.Equal(t, tc.idle, due.Sub(h.clock.Now()))
			}
		})
	}
}

// action moves the fake clock, then reports changes, then expects a cycle.
type action struct {
	step    time.Duration
	trigger int
	// expect, when set, is the trigger of the cycle that must start next,
	// and changes how many changes it answers.
	expect  string
	changes int
}

// everyHalfDebounce is n changes half a debounce apart, the first at once.
func everyHalfDebounce(debounce time.Duration, n int) []action {
	out := make([]action, n)
	for i := range out {
		out[i].trigger = 1
		if i > 0 {
			out[i].step = debounce / 2
		}
	}
	return out
}

func TestSchedulerWaitsTheDebounceAfterTheLastChange(t *testing.T) {
	const debounce = 10 * time.Second
	h := startLockstep(t, SchedulerOptions{Debounce: debounce}, false)
	require.Equal(t, TriggerStart, h.cycle().Trigger)

	h.waiting()
	first := h.clock.Now()
	h.s.Trigger("Namespace shop labels changed")
	assert.Equal(t, first.Add(debounce), h.waiting(), "due a debounce after the first change")

	h.clock.Step(debounce / 2)
	last := h.clock.Now()
	h.s.Trigger("MutatingWebhookConfiguration istio-revision-tag-stable changed")
	assert.Equal(t, last.Add(debounce), h.waiting(), "a later change pushes the cycle back")

	// Just short of the quiet time the timer has not fired.
	h.clock.Step(debounce - time.Nanosecond)
	assert.Equal(t, 1, h.clock.Waiters(), "the scheduler's timer still waits")
	h.clock.Step(time.Nanosecond)
	c := h.cycle()
	assert.Equal(t, TriggerMesh, c.Trigger)
	assert.Equal(t, []string{"Namespace shop labels changed", "MutatingWebhookConfiguration istio-revision-tag-stable changed"}, c.Reasons)
	assert.Equal(t, first, c.FirstChange)
	assert.Equal(t, 2, c.Changes)
}

func TestSchedulerCapsReasonsButCountsEveryChange(t *testing.T) {
	h := newLockstep(t, SchedulerOptions{Debounce: time.Second}, false)
	h.trigger(3*maxReasons, "before the start")
	h.run()
	// Changes before Run are answered by the start cycle.
	assert.Equal(t, Cycle{Trigger: TriggerStart}, h.cycle())
	assert.Zero(t, h.waiting(), "nothing pending after the start cycle")

	h.trigger(3*maxReasons, "change")
	h.waiting()
	h.clock.Step(time.Second)
	c := h.cycle()
	assert.Equal(t, 3*maxReasons, c.Changes)
	assert.Len(t, c.Reasons, maxReasons)
}

func TestSchedulerRunsNoTwoCyclesAtOnce(t *testing.T) {
	const debounce = 10 * time.Second
	h := startLockstep(t, SchedulerOptions{Debounce: debounce}, true)
	require.Equal(t, TriggerStart, h.cycle().Trigger)
	// The start cycle is still running: changes and time pass.
	h.trigger(3, "during the start cycle")
	h.clock.Step(2 * debounce)
	h.trigger(2, "still during it")
	h.release <- struct{}{}

	// One more cycle answers all five, a debounce after the last.
	assert.Equal(t, h.clock.Now().Add(debounce), h.waiting())
	h.clock.Step(debounce)
	c := h.cycle()
	assert.Equal(t, TriggerMesh, c.Trigger)
	assert.Equal(t, 5, c.Changes)
	h.release <- struct{}{}
	assert.Zero(t, h.waiting())
}

func TestSchedulerDrain(t *testing.T) {
	cases := []struct {
		name string
		// graceOver ends Drain's context while the cycle still runs.
		graceOver bool
		wantErr   error
	}{
		{name: "waits for the cycle in flight"},
		{name: "gives up when its context ends", graceOver: true, wantErr: context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startLockstep(t, SchedulerOptions{Debounce: time.Second}, true)
			require.Equal(t, TriggerStart, h.cycle().Trigger)
			h.s.Trigger("change during the cycle")

			graceCtx, graceOver := context.WithCancel(t.Context())
			defer graceOver()
			drained := make(chan error, 1)
			go func() { drained <- h.s.Drain(graceCtx) }()
			if tc.graceOver {
				graceOver()
				require.ErrorIs(t, <-drained, tc.wantErr)
				h.release <- struct{}{}
			} else {
				h.release <- struct{}{}
				require.NoError(t, <-drained)
			}
			// The scheduler may block once more before it sees Drain; the
			// pending change must not start a cycle whatever the time.
			for returned := false; !returned; {
				select {
				case <-h.done:
					returned = true
				case <-h.waits:
					h.resume <- struct{}{}
					h.clock.Step(time.Hour)
				case c := <-h.cycles:
					t.Fatalf("a %s cycle started after Drain", c.Trigger)
				case <-time.After(hangGuard):
					t.Fatal("Run did not return after Drain")
				}
			}

			// A drained scheduler stays drained: Run returns without a
			// cycle.
			again := make(chan struct{})
			go func() {
				defer close(again)
				h.s.Run(t.Context())
			}()
			select {
			case <-again:
			case c := <-h.cycles:
				t.Fatalf("a drained scheduler started a %s cycle", c.Trigger)
			case <-time.After(hangGuard):
				t.Fatal("Run on a drained scheduler did not return")
			}
		})
	}
}
