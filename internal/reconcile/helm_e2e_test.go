package reconcile_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/helmcluster"
)

// TestHelmReleaseRestartEndToEnd: workloads that Flux helm-controller
// installed from a HelmRelease in a shared base get, in one cycle, their
// namespace's PR with the overlay's post-renderer patch, in one push; the
// PR says that helm-controller upgrades the release and links the
// HelmRelease file; a second cycle writes nothing.
func TestHelmReleaseRestartEndToEnd(t *testing.T) {
	w := newWorld(t)
	abs, err := filepath.Abs("../../testdata/manifest/helm-shared-base/repo")
	require.NoError(t, err)
	const helmRepo = "helm-fleet"
	w.git.CreateRepo(t, helmRepo, abs)
	w.cfg.Repo.Name, w.cfg.Repo.URL = helmRepo, w.git.RepoURL(helmRepo)
	w.gh = ghemu.New(t, ghemu.Options{
		Owner: "example-org", Repo: helmRepo,
		Tokens:   map[string]string{token: "kedge-bot"},
		Branches: ghemu.GitBranches(w.git.RepoPath(helmRepo)),
	})
	w.cfg.GitHub.APIURL = w.gh.URL + "/"
	w.set = helmcluster.New(
		helmcluster.Release{Namespace: "team-a", ReleaseNamespace: "team-a", ReleaseName: "podinfo", Deployment: "podinfo"},
		helmcluster.Release{Namespace: "team-b", ReleaseNamespace: "team-b", ReleaseName: "cache", Deployment: "cache"},
	)

	report := w.cycle()
	assert.Equal(t, 1, w.git.Pushes(), "both namespaces in one push")
	assert.Equal(t, 1, report.Pushes)
	prs := openPRs(w.gh)
	require.Len(t, prs, 2)
	assert.ElementsMatch(t, []string{"overlays/team-a/kedge-helm-podinfo.yaml", "overlays/team-a/kustomization.yaml"},
		changedFilesIn(t, w, helmRepo, "kedge/prod-eu-1/team-a"))
	assert.ElementsMatch(t, []string{"overlays/team-b/kedge-helm-cache.yaml", "overlays/team-b/kustomization.yaml"},
		changedFilesIn(t, w, helmRepo, "kedge/prod-eu-1/team-b"))
	patch := w.git.ReadFile(t, helmRepo, "kedge/prod-eu-1/team-a", "overlays/team-a/kedge-helm-podinfo.yaml")
	assert.Contains(t, patch, "path: /spec/postRenderers/-")

	pr, _ := w.gh.PR(prs["kedge/prod-eu-1/team-a"])
	body := pr.GetBody()
	assert.Contains(t, body, "Flux helm-controller (upgrading HelmRelease team-a/podinfo)")
	assert.Contains(t, body, "post-renderer patch in its HelmRelease; helm-controller upgrades the release")
	assert.Contains(t, body, "/blob/kedge/prod-eu-1/team-a/base/podinfo/release.yaml", "the workload links the HelmRelease file")
	for _, c := range w.gh.OutOfSurfaceCalls() {
		t.Errorf("call outside the REST surface: %s %s", c.Method, c.Path)
	}

	pushes := w.git.Pushes()
	w.gh.ResetCalls()
	report = w.cycle()
	assert.Equal(t, pushes, w.git.Pushes(), "no push")
	assert.Zero(t, report.Pushes)
	assert.Empty(t, callNames(w.gh.MutatingCalls()), "no mutating GitHub call")
}

func changedFilesIn(t *testing.T, w *world, repo, branch string) []string {
	t.Helper()
	var out []string
	for _, f := range w.git.Files(t, repo, branch) {
		if !slices.Contains(w.git.Files(t, repo, "main"), f) || w.git.ReadFile(t, repo, "main", f) != w.git.ReadFile(t, repo, branch, f) {
			out = append(out, f)
		}
	}
	return out
}
