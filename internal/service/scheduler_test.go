package service

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cycleLog records the cycles a scheduler runs and catches overlaps.
type cycleLog struct {
	mu      sync.Mutex
	cycles  []Cycle
	starts  []time.Time
	running atomic.Int32
	overlap atomic.Bool
	// hold keeps each cycle running this long.
	hold time.Duration
}

func (l *cycleLog) run(ctx context.Context, c Cycle) {
	if l.running.Add(1) > 1 {
		l.overlap.Store(true)
	}
	defer l.running.Add(-1)
	l.mu.Lock()
	l.cycles = append(l.cycles, c)
	l.starts = append(l.starts, time.Now())
	l.mu.Unlock()
	select {
	case <-time.After(l.hold):
	case <-ctx.Done():
	}
}

func (l *cycleLog) triggers() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.cycles))
	for i, c := range l.cycles {
		out[i] = c.Trigger
	}
	return out
}

func (l *cycleLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cycles)
}

func (l *cycleLog) last() (Cycle, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cycles[len(l.cycles)-1], l.starts[len(l.starts)-1]
}

// step is one action of a scenario, after a pause.
type step struct {
	after   time.Duration
	trigger int // how many mesh changes to report at once
}

func TestSchedulerRunsOneCyclePerBurstOfChanges(t *testing.T) {
	const debounce = 80 * time.Millisecond
	cases := []struct {
		name     string
		opts     SchedulerOptions
		hold     time.Duration
		steps    []step
		settle   time.Duration
		want     []string
		wantLast int // changes answered by the last cycle
	}{
		{
			name:   "a start cycle and nothing else without changes",
			opts:   SchedulerOptions{Debounce: debounce},
			settle: 4 * debounce,
			want:   []string{TriggerStart},
		},
		{
			name:     "a burst of changes costs one cycle",
			opts:     SchedulerOptions{Debounce: debounce},
			steps:    []step{{after: 20 * time.Millisecond, trigger: 1}, {after: 10 * time.Millisecond, trigger: 5}, {after: 20 * time.Millisecond, trigger: 1}},
			settle:   4 * debounce,
			want:     []string{TriggerStart, TriggerMesh},
			wantLast: 7,
		},
		{
			name:     "changes further apart than the debounce cost a cycle each",
			opts:     SchedulerOptions{Debounce: debounce},
			steps:    []step{{after: 20 * time.Millisecond, trigger: 1}, {after: 3 * debounce, trigger: 1}},
			settle:   4 * debounce,
			want:     []string{TriggerStart, TriggerMesh, TriggerMesh},
			wantLast: 1,
		},
		{
			name: "changes that never stop are answered after the maximum delay",
			opts: SchedulerOptions{Debounce: debounce, MaxDelay: 3 * debounce},
			steps: func() []step {
				var s []step
				for range 12 {
					s = append(s, step{after: debounce / 2, trigger: 1})
				}
				return s
			}(),
			settle: 4 * debounce,
			// 12 changes over 6 debounce periods, capped at 3: the first
			// cycle after 3 periods, the rest after the stream ends.
			want: []string{TriggerStart, TriggerMesh, TriggerMesh},
		},
		{
			name:     "changes during a cycle are answered by one more cycle",
			opts:     SchedulerOptions{Debounce: debounce},
			hold:     5 * debounce,
			steps:    []step{{after: debounce, trigger: 3}, {after: debounce, trigger: 2}},
			settle:   8 * debounce,
			want:     []string{TriggerStart, TriggerMesh},
			wantLast: 5,
		},
		{
			name:   "resync runs full cycles without changes",
			opts:   SchedulerOptions{Debounce: debounce, Resync: 2 * debounce},
			settle: 5 * debounce,
			want:   []string{TriggerStart, TriggerResync, TriggerResync},
		},
		{
			name:     "zero debounce runs at once",
			opts:     SchedulerOptions{},
			steps:    []step{{after: 20 * time.Millisecond, trigger: 1}},
			settle:   debounce,
			want:     []string{TriggerStart, TriggerMesh},
			wantLast: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &cycleLog{hold: tc.hold}
			s := NewScheduler(log.run, tc.opts)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Run(ctx)
			}()
			require.Eventually(t, func() bool { return log.count() >= 1 }, time.Second, time.Millisecond)
			for _, st := range tc.steps {
				time.Sleep(st.after)
				for range st.trigger {
					s.Trigger("change")
				}
			}
			time.Sleep(tc.settle)
			cancel()
			<-done

			assert.Equal(t, tc.want, log.triggers())
			assert.False(t, log.overlap.Load(), "two cycles ran at once")
			if tc.wantLast > 0 {
				c, _ := log.last()
				assert.Equal(t, tc.wantLast, c.Changes)
			}
		})
	}
}

func TestSchedulerWaitsTheDebounceAfterTheLastChange(t *testing.T) {
	const debounce = 150 * time.Millisecond
	log := &cycleLog{}
	s := NewScheduler(log.run, SchedulerOptions{Debounce: debounce})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.Run(ctx)
	require.Eventually(t, func() bool { return log.count() == 1 }, time.Second, time.Millisecond)

	s.Trigger("Namespace shop labels changed")
	time.Sleep(debounce / 2)
	last := time.Now()
	s.Trigger("MutatingWebhookConfiguration istio-revision-tag-stable changed")
	require.Eventually(t, func() bool { return log.count() == 2 }, 5*debounce, time.Millisecond)

	c, started := log.last()
	assert.GreaterOrEqual(t, started.Sub(last), debounce, "no cycle before the quiet time")
	assert.Less(t, started.Sub(last), debounce+100*time.Millisecond)
	assert.Equal(t, []string{"Namespace shop labels changed", "MutatingWebhookConfiguration istio-revision-tag-stable changed"}, c.Reasons)
	assert.GreaterOrEqual(t, started.Sub(c.FirstChange), debounce+debounce/2)
}

func TestSchedulerCapsReasonsButCountsEveryChange(t *testing.T) {
	log := &cycleLog{}
	s := NewScheduler(log.run, SchedulerOptions{Debounce: 20 * time.Millisecond})
	for range 3 * maxReasons {
		s.Trigger("change")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.Run(ctx)
	// Changes before Run are answered by the start cycle.
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, []string{TriggerStart}, log.triggers())

	for range 3 * maxReasons {
		s.Trigger("change")
	}
	require.Eventually(t, func() bool { return log.count() == 2 }, time.Second, time.Millisecond)
	c, _ := log.last()
	assert.Equal(t, 3*maxReasons, c.Changes)
	assert.Len(t, c.Reasons, maxReasons)
}

func TestSchedulerDrain(t *testing.T) {
	cases := []struct {
		name      string
		hold      time.Duration
		grace     time.Duration
		wantErr   error
		wantAbort bool
	}{
		{name: "waits for the cycle in flight", hold: 200 * time.Millisecond, grace: 2 * time.Second},
		{name: "gives up after the grace period", hold: 5 * time.Second, grace: 100 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var finished atomic.Bool
			var cycles atomic.Int32
			run := func(ctx context.Context, _ Cycle) {
				cycles.Add(1)
				select {
				case <-time.After(tc.hold):
					finished.Store(true)
				case <-ctx.Done():
				}
			}
			s := NewScheduler(run, SchedulerOptions{Debounce: 10 * time.Millisecond})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Run(ctx)
			}()
			require.Eventually(t, func() bool { return cycles.Load() == 1 }, time.Second, time.Millisecond)
			s.Trigger("change during the cycle")

			graceCtx, stop := context.WithTimeout(t.Context(), tc.grace)
			defer stop()
			err := s.Drain(graceCtx)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.False(t, finished.Load())
				cancel()
			} else {
				require.NoError(t, err)
				assert.True(t, finished.Load(), "Drain returned before the cycle ended")
			}
			select {
			case <-done:
			case <-time.After(time.Second):
				t.Fatal("Run did not return after Drain")
			}
			assert.EqualValues(t, 1, cycles.Load(), "no cycle after Drain, not even for a pending change")

			// A drained scheduler stays drained.
			s.Run(t.Context())
			assert.EqualValues(t, 1, cycles.Load())
		})
	}
}
