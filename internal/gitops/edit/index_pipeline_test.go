package edit_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

func TestSharedSourceFiles(t *testing.T) {
	tests := []struct {
		repo, path string
		want       bool
	}{
		{"shared-base", "base/web.yaml", true},
		{"kustomize-prefix", "apps/shop/deployment.yaml", false},
		// One namespace, but two workloads (a-app, b-app) from one document.
		{"verify-refusal", "base/app.yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			ix, err := index.Read(gitopstest.FixtureRepo(tt.repo), index.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, locate.Shared(ix, tt.path))
		})
	}
}

// TestEditsReportFilesThatCannotBeRead: a file that vanished or turned into
// something else since the index was built is a refusal, not a failure of
// the whole plan.
func TestEditsReportFilesThatCannotBeRead(t *testing.T) {
	repo := gitopstest.CopyCase(t, "plain")
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{
		gitopstest.Drifted("payments", "Deployment", "api", gitopstest.Istio125),
		gitopstest.Drifted("kube-system", "DaemonSet", "node-agent", drift.Desired{Revision: "1-26-0"}),
	}}
	locs := locate.Locate(ix, plan.Workloads, nil)
	require.NoError(t, os.Remove(filepath.Join(repo, "apps", "multi.yaml")))
	require.NoError(t, os.Remove(filepath.Join(repo, "apps", "agent.yaml")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(repo, "apps", "agent.yaml"), 0o644))

	set, outcomes := edit.Compute(ix, plan.Workloads, locs, edit.Options{Annotations: restart.Annotations{}})
	assert.Empty(t, set.Namespaces)
	var refused []string
	for _, r := range set.Refused {
		refused = append(refused, r.Path)
	}
	assert.Equal(t, []string{"apps/agent.yaml", "apps/multi.yaml"}, refused)
	for _, w := range plan.Workloads {
		assert.Equal(t, drift.ManifestRefused, outcomes[restart.IDOf(w)].Status, w.Name)
		assert.Contains(t, outcomes[restart.IDOf(w)].Detail, "apps/", w.Name)
	}
}

// TestPlainVerificationAgreesWithKustomize computes every edit case twice:
// verifying plain kustomizations by reading them, and rendering every root
// with kustomize. The edits, the refusals and the plan must not differ.
func TestPlainVerificationAgreesWithKustomize(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			fastPlan, fast := planEdits(t, c, gitopstest.FixtureRepo(c.repo))
			slowPlan, slow := planEditsWith(t, c, gitopstest.FixtureRepo(c.repo), index.Options{KustomizeEveryRoot: true})
			assert.Equal(t, edit.UnifiedDiff(slow.All()), edit.UnifiedDiff(fast.All()))
			assert.Equal(t, slow.Refused, fast.Refused)
			assert.Equal(t, slowPlan, fastPlan)
		})
	}
}
