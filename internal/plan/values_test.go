package plan_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/helmcluster"
)

// TestArgoHelmValuesEndToEnd plans the fixtures whose Applications render
// charts of the repository: each drifted workload of a chart is found
// through the chart value that reaches its pod template alone, written in
// its Application; a chart without one keeps the status helm. Planned again
// over the edited checkout, nothing is left to write.
func TestArgoHelmValuesEndToEnd(t *testing.T) {
	tests := []struct {
		name      string
		repo      string
		workloads []argoWorkload
		want      map[string]want
		written   []string
	}{
		{
			name: "a chart-wide podAnnotations, and a chart with none", repo: "argo-helm-values",
			workloads: []argoWorkload{
				{"shop", "Deployment", "shop-podinfo", "podinfo", false},
				{"labs", "Deployment", "podinfo-new", "podinfo-new", false},
				{"legacy", "Deployment", "podinfo-old", "podinfo-old", false},
				{"tools", "Deployment", "fixed", "fixed", false},
			},
			want: map[string]want{
				"shop/shop-podinfo":  {"found", "helm-values", "argocd/podinfo.yaml"},
				"labs/podinfo-new":   {"found", "helm-values", "argocd/podinfo-new.yaml"},
				"legacy/podinfo-old": {"found", "helm-values", "argocd/podinfo-old.yaml"},
				// No value reaches its pod template: the chart's template
				// gets the annotations, one release alone rendering it.
				"tools/fixed": {"found", "helm-template", "charts/fixed/templates/deployment.yaml"},
			},
			written: []string{"argocd/podinfo.yaml", "argocd/podinfo-new.yaml", "argocd/podinfo-old.yaml", "charts/fixed/templates/deployment.yaml"},
		},
		{
			name: "component values in values text, parameters and a second source", repo: "argo-helm-components",
			workloads: []argoWorkload{
				{"web", "Deployment", "platform-web", "platform", false},
				{"jobs", "Deployment", "platform-jobs-worker", "platform-jobs", false},
				{"multi", "Deployment", "multi-web", "platform-multi", false},
				{"multi", "Deployment", "reporter", "platform-multi", false},
			},
			want: map[string]want{
				"web/platform-web":          {"found", "helm-values", "argocd/platform.yaml"},
				"jobs/platform-jobs-worker": {"found", "helm-values", "argocd/platform-jobs.yaml"},
				"multi/multi-web":           {"found", "helm-values", "argocd/platform-multi.yaml"},
				"multi/reporter":            {"found", "in-place", "apps/extra/cron.yaml"},
			},
			written: []string{"argocd/platform.yaml", "argocd/platform-jobs.yaml", "argocd/platform-multi.yaml", "apps/extra/cron.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := copyRepo(t, filepath.Join(manifestFixtures, tt.repo, "repo"))
			set := argoCluster(t, tt.workloads)
			snap, err := snapshot.Read(filepath.Join(repo, "argocd"))
			require.NoError(t, err)
			set.Applications = snap.Applications
			res, err := plan.Build(set, plan.Options{RepoRoot: repo, RepoURLs: []string{fleetURL}})
			require.NoError(t, err)
			assert.Equal(t, tt.want, manifests(&res.Plan))
			var written []string
			for _, f := range res.Edits.All() {
				written = append(written, f.Path)
				require.NoError(t, os.WriteFile(filepath.Join(repo, filepath.FromSlash(f.Path)), f.After, 0o644))
			}
			assert.ElementsMatch(t, tt.written, written)
			assert.Empty(t, res.Edits.Refused)

			again, err := plan.Build(set, plan.Options{RepoRoot: repo, RepoURLs: []string{fleetURL}})
			require.NoError(t, err)
			assert.Empty(t, again.Edits.All(), "a second plan over the edited checkout writes nothing")
			for _, w := range again.Plan.Workloads {
				if tt.want[w.Namespace+"/"+w.Name].status == drift.ManifestFound {
					assert.Equal(t, drift.EditAlreadyBumped, w.Manifest.Edit, "%s/%s", w.Namespace, w.Name)
				}
			}
		})
	}
}

func manifests(p *drift.Plan) map[string]want {
	got := map[string]want{}
	for _, w := range p.Workloads {
		got[w.Namespace+"/"+w.Name] = want{w.Manifest.Status, w.Manifest.Edit, w.Manifest.Path}
	}
	return got
}

// copyRepo copies a fixture repository into a temporary directory.
func copyRepo(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	}))
	return dst
}

// TestHelmReleaseValuesWhenPreferred: with HelmValues (config helm.prefer:
// values) a workload of a HelmRelease whose chart is in the repository is
// restarted through the chart's value in spec.values; by default it gets a
// post-renderer.
func TestHelmReleaseValuesWhenPreferred(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values bool
		want   drift.Manifest
	}{
		{name: "values preferred", values: true, want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml",
			Edit: drift.EditHelmValues, Detail: "HelmRelease podinfo/podinfo (release podinfo, value podAnnotations)"}},
		{name: "by default", want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml",
			Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease podinfo/podinfo"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := copyRepo(t, filepath.Join(manifestFixtures, "helm-values", "repo"))
			set := helmcluster.New(helmcluster.Release{Namespace: "podinfo", ReleaseNamespace: "podinfo", ReleaseName: "podinfo", Deployment: "podinfo"})
			res, err := plan.Build(set, plan.Options{RepoRoot: repo, HelmValues: tt.values})
			require.NoError(t, err)
			require.Len(t, res.Plan.Workloads, 1)
			assert.Equal(t, tt.want, res.Plan.Workloads[0].Manifest)
			edits := res.Edits.All()
			require.Len(t, edits, 1)
			require.NoError(t, os.WriteFile(filepath.Join(repo, filepath.FromSlash(edits[0].Path)), edits[0].After, 0o644))

			again, err := plan.Build(set, plan.Options{RepoRoot: repo, HelmValues: tt.values})
			require.NoError(t, err)
			assert.Empty(t, again.Edits.All(), "a second plan over the edited checkout writes nothing")
			assert.Equal(t, drift.EditAlreadyBumped, again.Plan.Workloads[0].Manifest.Edit)
		})
	}
}
