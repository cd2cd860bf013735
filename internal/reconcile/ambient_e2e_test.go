package reconcile_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

// newAmbientWorld is the demo with ambient mode installed (ztunnel Ready,
// istio-cni with ambient enabled) and the search team's namespace moving
// from revision 1-25-0 out of sidecars.
func newAmbientWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	w.cfg.Migrations = []config.Migration{{From: "1-25-0", To: "ambient", Namespaces: map[string]string{"team": "search"}}}
	require.NoError(t, w.cfg.Validate(config.ModeRun))
	w.set.DaemonSets = append(slices.Clone(w.set.DaemonSets), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel"},
		Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, NumberReady: 3},
	})
	w.set.ConfigMaps = append(append([]corev1.ConfigMap(nil), w.set.ConfigMaps...), corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istio-cni-config"},
		Data:       map[string]string{"AMBIENT_ENABLED": "true"},
	})
	return w
}

func TestAmbientMigrationIsOnePRAndIsFollowedUntilZtunnelCaptures(t *testing.T) {
	w := newAmbientWorld(t)
	report := w.cycle()
	var search drift.Migration
	for _, m := range report.Plan.Migrations {
		if m.Namespace == "search" {
			search = m
		}
	}
	require.Empty(t, search.Blocked, search.Detail)
	assert.Equal(t, []string{"istio.io/rev"}, search.RemoveLabels)
	assert.Equal(t, map[string]string{"istio.io/dataplane-mode": "ambient"}, search.SetLabels)

	branch := "kedge/prod-eu-1/search"
	number := openPRs(w.gh)[branch]
	require.NotZero(t, number)
	// Every workload with a sidecar restarts with the relabel, not only
	// those that drifted before.
	assert.ElementsMatch(t, []string{namespacesFile, "apps/prod-eu-1/search/indexer.yaml", "apps/prod-eu-1/search/search-api.yaml", "apps/prod-eu-1/search/synonyms.yaml"},
		changedFiles(t, w.git, branch))
	base := w.git.ReadFile(t, repoName, "main", namespacesFile)
	assert.Equal(t,
		strings.Replace(base, "    team: search\n    istio.io/rev: 1-25-0\n", "    team: search\n    istio.io/dataplane-mode: \"ambient\"\n", 1),
		w.git.ReadFile(t, repoName, branch, namespacesFile), "only the search Namespace changes")
	pr, _ := w.gh.PR(number)
	assert.Contains(t, pr.GetBody(), "into **ambient mode**")
	assert.Contains(t, pr.GetBody(), "1-25-0 → **no sidecar**", "the indexer restarts onto no sidecar")

	// Merged and applied: the namespace carries the ambient label, the
	// indexer's new pods have no sidecar, but istio-cni has not captured
	// them yet.
	require.NoError(t, w.gh.MergePR(number, ghemu.GitFastForward(w.git.RepoPath(repoName))))
	w.mu.Lock()
	w.set.Namespaces = ambientNamespace(w.set.Namespaces, "search")
	w.set.Pods = withoutSidecars(w.set.Pods, "search", false)
	w.mu.Unlock()
	report = w.cycle()
	assert.Equal(t, prstate.PRMergedRollingOut, only(t, report, "search").State, "pods not captured by ztunnel yet")
	assert.Empty(t, w.gh.Comments(number))

	w.mu.Lock()
	w.set.Pods = withoutSidecars(w.set.Pods, "search", true)
	w.mu.Unlock()
	report = w.cycle()
	assert.Equal(t, prstate.PRRolledOut, only(t, report, "search").State)
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].GetBody(), "kedge:comment rolled-out")
}

func TestAmbientMigrationWaitsForZtunnel(t *testing.T) {
	w := newAmbientWorld(t)
	w.set.DaemonSets = w.set.DaemonSets[:len(w.set.DaemonSets)-1]
	report := w.cycle()
	for _, m := range report.Plan.Migrations {
		if m.Namespace == "search" {
			assert.Equal(t, drift.BlockAmbientNotReady, m.Blocked)
			assert.Equal(t, "DaemonSet ztunnel: no ztunnel DaemonSet: ambient mode is not installed [Install ambient components: https://istio.io/latest/docs/ambient/migrate/install-ambient-components/]", m.Detail)
		}
	}
	assert.NotContains(t, changedFiles(t, w.git, "kedge/prod-eu-1/search"), namespacesFile, "nothing is relabelled")
	body, _ := dashboardBody(t, w.gh)
	assert.Contains(t, body, "## Migrations held back\n\nMigration policies select these namespaces, but kedge does not move them now:\n\n"+
		"- **search**, 1-25-0 → ambient: `ambient-not-ready`, what Istio's migration guide refuses:\n"+
		"  - DaemonSet ztunnel: no ztunnel DaemonSet: ambient mode is not installed ([Install ambient components](https://istio.io/latest/docs/ambient/migrate/install-ambient-components/))\n",
		"the dashboard says which namespace waits, and for what")
}

func ambientNamespace(namespaces []corev1.Namespace, name string) []corev1.Namespace {
	out := append([]corev1.Namespace(nil), namespaces...)
	for i := range out {
		if out[i].Name == name {
			labels := map[string]string{}
			for k, v := range out[i].Labels {
				labels[k] = v
			}
			delete(labels, "istio.io/rev")
			labels["istio.io/dataplane-mode"] = "ambient"
			out[i].Labels = labels
		}
	}
	return out
}

// withoutSidecars replaces the namespace's pods by ones without a sidecar,
// annotated by istio-cni when captured.
func withoutSidecars(pods []*objects.Pod, namespace string, captured bool) []*objects.Pod {
	out := slices.Clone(pods)
	for i := range out {
		if out[i].Namespace != namespace {
			continue
		}
		p := *out[i]
		out[i] = &p
		annotations := map[string]string{}
		if captured {
			annotations["ambient.istio.io/redirection"] = "enabled"
		}
		p.Annotations = annotations
		p.Proxy = nil
	}
	return out
}
