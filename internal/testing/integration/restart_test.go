package integration

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/service"
	"github.com/kedge-io/kedge/internal/testing/chaos"
)

// The API server goes away under kedge's watches and comes back: the
// informers must resume (a relabel made after the restart reaches a cycle
// that plans with it), the relist after the restart must not look like a
// change, and the pull requests must come out as if nothing had happened:
// one per namespace, and a later cycle that changes nothing.
func TestAPIServerRestartMidWatch(t *testing.T) {
	plane := restartableControlPlane(t)
	admin := plane.Config
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{
		kube:           identities[1].restConfigFor(admin),
		informerResync: informerResync,
		scheduler:      service.SchedulerOptions{Debounce: debounce},
	})
	eventually(t, 30*time.Second, func() bool { return r.recorder.finished() == 1 }, "the start cycle")
	require.NoError(t, r.recorder.all()[0].err)
	opened := w.prsByBranch()
	require.NotEmpty(t, opened)

	plane.RestartAPIServer(t, 3*time.Second)
	// The relist after the restart replays every object: none changed.
	time.Sleep(quiet + 2*time.Second)
	assert.Equal(t, 1, r.recorder.count(), "the restart alone starts no cycle")

	// search is labelled for 1-25-0: its indexer still runs the default
	// revision, its other workloads already run 1-25-0. Labelled for the
	// default revision, the drift turns around.
	require.Equal(t, []string{"indexer"}, workloadsIn(r.recorder.all()[0].report.Plan, "search"))
	before := r.recorder.count()
	relabelNamespace("search", "istio.io/rev", "default")(t.Context(), t, adminClient)
	eventually(t, 30*time.Second, func() bool { return r.recorder.finished() > before }, "a cycle after the relabel")
	after := r.recorder.all()[before]
	require.NoError(t, after.err)
	assert.Equal(t, []string{"search-api", "synonyms"}, workloadsIn(after.report.Plan, "search"), "planned with the relabel made after the restart")

	// A change that moves no workload: the cycle it starts must be quiet.
	pushes, calls := w.git.Pushes(), len(w.gh.Calls())
	before = r.recorder.count()
	relabelNamespace("shop", "team", "storefront")(t.Context(), t, adminClient)
	eventually(t, 30*time.Second, func() bool { return r.recorder.finished() > before }, "the converging cycle")
	require.NoError(t, r.recorder.all()[before].err)
	assert.Equal(t, pushes, w.git.Pushes(), "no push")
	for _, c := range w.gh.Calls()[calls:] {
		assert.False(t, c.Mutating(), "no GitHub write: %s %s", c.Method, c.Path)
	}
	for branch, n := range w.prsByBranch() {
		assert.Equal(t, 1, n, "one pull request ever opened on %s", branch)
	}
	assert.Equal(t, opened, w.prsByBranch(), "no pull request opened after the start cycle")

	// `make chaos` shows this fault beside the fault matrix.
	if path := os.Getenv("KEDGE_CHAOS_LIVE_TABLE"); path != "" {
		outcome := chaos.Outcome{Scenario: "API server restarted mid-watch (down 3 s), relabel after", Cycles: 1}
		for branch, n := range w.prsByBranch() {
			if n > 1 {
				outcome.Damage.Duplicates = append(outcome.Damage.Duplicates, branch)
			}
		}
		if t.Failed() {
			outcome.Problems = append(outcome.Problems, "the test failed")
		}
		require.NoError(t, os.WriteFile(path, []byte(chaos.Table([]chaos.Outcome{outcome})), 0o644))
	}
}

func workloadsIn(p drift.Plan, namespace string) []string {
	var out []string
	for _, wl := range p.Workloads {
		if wl.Namespace == namespace {
			out = append(out, wl.Name)
		}
	}
	return out
}
