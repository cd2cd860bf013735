package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/service"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

// Lease timings short enough for a test, in the proportions client-go
// recommends.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 250 * time.Millisecond
)

func createdPRs(calls []ghemu.Call) int {
	n := 0
	for _, c := range calls {
		if c.Route == "POST /repos/{owner}/{repo}/pulls" {
			n++
		}
	}
	return n
}

// Two replicas, both the deploy/ ServiceAccount, share the API server, the
// Lease, git and GitHub: one leads and runs every cycle, a mesh change
// costs one cycle, and a clean shutdown of the leader hands over at once
// without a second pull request for anything.
func TestTwoReplicasOneLeaderNoDuplicatePR(t *testing.T) {
	admin := controlPlane(t)
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	sa := identity{asServiceAccount: true}.restConfigFor(admin)
	w := newWorld(t)

	start := func(name string) *replica {
		return w.startReplica(t, name, replicaOptions{
			kube:           sa,
			informerResync: informerResync,
			scheduler:      service.SchedulerOptions{Debounce: debounce},
			election: &service.Election{
				Config: sa, Namespace: kedgeNamespace, Name: "kedge", Identity: name,
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			},
		})
	}
	a, b := start("replica-a"), start("replica-b")

	eventually(t, 30*time.Second, func() bool { return a.isReady() && b.isReady() }, "both replicas ready")
	eventually(t, 10*time.Second, func() bool { return a.leading(t) || b.leading(t) }, "a leader")
	leader, follower := a, b
	if b.leading(t) {
		leader, follower = b, a
	}
	lease, err := adminClient.CoordinationV1().Leases(kedgeNamespace).Get(t.Context(), "kedge", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, leader.name, *lease.Spec.HolderIdentity)

	// One start cycle, on the leader.
	eventually(t, time.Minute, func() bool { return leader.recorder.finished() == 1 }, "the leader's start cycle")
	time.Sleep(quiet)
	assert.False(t, follower.leading(t), "one leader")
	assert.Zero(t, follower.recorder.count(), "the follower runs no cycle")
	assert.Equal(t, 1, leader.recorder.count())
	first := leader.recorder.all()[0]
	require.NoError(t, first.err)
	opened := 0
	for _, o := range first.report.Outcomes {
		if o.PR != 0 {
			opened++
		}
	}
	require.NotZero(t, opened)
	prs := w.prsByBranch()
	assert.Len(t, prs, opened)
	for branch, n := range prs {
		assert.Equal(t, 1, n, "pull requests for %s", branch)
	}

	// A mesh change: both replicas see it, only the leader acts.
	relabelNamespace("catalog", "istio-injection", "disabled")(t.Context(), t, adminClient)
	eventually(t, debounce+10*time.Second, func() bool { return leader.recorder.finished() == 2 }, "the leader's cycle for the change")
	time.Sleep(quiet)
	assert.Equal(t, 2, leader.recorder.count(), "one cycle per change")
	assert.Zero(t, follower.recorder.count())

	// SIGTERM to the leader: the follower takes over without waiting for
	// the lease to expire, and opens nothing twice.
	w.gh.ResetCalls()
	stopped := time.Now()
	require.NoError(t, leader.stop(t, time.Minute))
	eventually(t, leaseDuration, func() bool { return follower.recorder.count() == 1 }, "the follower's first cycle")
	takeover := follower.recorder.all()[0].start.Sub(stopped)
	t.Logf("takeover after a clean shutdown: %s (lease duration %s)", takeover.Round(time.Millisecond), leaseDuration)
	assert.True(t, follower.leading(t))
	eventually(t, time.Minute, func() bool { return follower.recorder.finished() == 1 }, "the new leader's start cycle ends")
	require.NoError(t, follower.recorder.all()[0].err)
	assert.Zero(t, createdPRs(w.gh.Calls()), "no pull request opened again")
	for branch, n := range w.prsByBranch() {
		assert.Equal(t, 1, n, "pull requests for %s", branch)
	}
	lease, err = adminClient.CoordinationV1().Leases(kedgeNamespace).Get(t.Context(), "kedge", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, follower.name, *lease.Spec.HolderIdentity)

	// The new leader answers mesh changes.
	relabelNamespace("shop", "team", "storefront")(t.Context(), t, adminClient)
	eventually(t, debounce+10*time.Second, func() bool { return follower.recorder.finished() == 2 }, "the new leader's cycle for the change")
	time.Sleep(quiet)
	assert.Equal(t, 2, follower.recorder.count())
	for branch, n := range w.prsByBranch() {
		assert.Equal(t, 1, n, "pull requests for %s", branch)
	}
}
