package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/metrics"
)

// SIGTERM during a cycle: the cycle runs to its end within the grace
// period; past it, the cycle is cancelled, and the next run finishes the
// work without doing anything twice. These read the demo snapshot, so they
// need no control plane.
func TestShutdownEndsTheCycleInFlightSafely(t *testing.T) {
	cases := []struct {
		name string
		// gitDelay slows every git request, so the cycle is still running
		// when SIGTERM comes.
		gitDelay   time.Duration
		grace      time.Duration
		wantResult string
	}{
		{name: "the cycle finishes within the grace period", gitDelay: 100 * time.Millisecond, grace: 30 * time.Second, wantResult: metrics.ResultSuccess},
		{name: "past the grace period the cycle is cancelled", gitDelay: 400 * time.Millisecond, grace: 200 * time.Millisecond, wantResult: metrics.ResultAborted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.git.SetDelay(tc.gitDelay)
			r := w.startReplica(t, "kedge", replicaOptions{grace: tc.grace})
			eventually(t, 10*time.Second, func() bool { return r.recorder.count() == 1 }, "the start cycle")
			time.Sleep(tc.gitDelay / 2)
			require.Zero(t, r.recorder.finished(), "still in the cycle at SIGTERM")

			stopped := time.Now()
			require.NoError(t, r.stop(t, time.Minute))
			took := time.Since(stopped)
			require.Equal(t, 1, r.recorder.finished(), "Run returns only after the cycle has ended")
			assert.Equal(t, 1, r.recorder.count(), "no cycle starts during shutdown")
			run := r.recorder.all()[0]
			assert.Equal(t, tc.wantResult, metrics.Result(run.err))
			t.Logf("SIGTERM → stopped: %s (grace %s)", took.Round(time.Millisecond), tc.grace)
			if tc.wantResult == metrics.ResultAborted {
				assert.Less(t, took, tc.grace+5*time.Second, "the grace period bounds shutdown")
				assert.ErrorIs(t, run.err, context.Canceled)
			} else {
				require.NoError(t, run.err)
				assert.NotEmpty(t, w.gh.PRs(), "the cycle did its work")
			}

			// Whatever the first run left, a new one finishes it and opens
			// nothing twice.
			w.git.SetDelay(0)
			next := w.startReplica(t, "kedge-restarted", replicaOptions{})
			eventually(t, time.Minute, func() bool { return next.recorder.finished() == 1 }, "the restarted service's cycle")
			require.NoError(t, next.recorder.all()[0].err)
			opened := 0
			for _, o := range next.recorder.all()[0].report.Outcomes {
				if o.PR != 0 {
					opened++
				}
			}
			assert.NotZero(t, opened)
			prs := w.prsByBranch()
			assert.Len(t, prs, opened)
			for branch, n := range prs {
				assert.Equal(t, 1, n, "pull requests for %s", branch)
			}
		})
	}
}

func TestNotReadyWhileGitHubRefusesTheCredentials(t *testing.T) {
	const wrong = "ghs_wrongToken0000000000000000000000000"
	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{token: wrong})
	eventually(t, 10*time.Second, func() bool {
		_, failing := r.ready.Ready()
		return len(failing) == 1 && failing[0] != "github: pending"
	}, "the GitHub check fails")
	ok, failing := r.ready.Ready()
	assert.False(t, ok)
	assert.Contains(t, failing[0], "401")
	time.Sleep(time.Second)
	assert.Zero(t, r.recorder.count(), "no cycle without working credentials")

	require.NoError(t, r.stop(t, 5*time.Second))
	assert.Contains(t, r.logs.String(), "GitHub authentication check failed")
	assert.NotContains(t, r.logs.String(), wrong, "the token never reaches the log")
}
