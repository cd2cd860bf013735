package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/helmcluster"
)

// TestBuildRestartsHelmReleases: a workload rendered by a Flux HelmRelease
// is found through the release's file and restarted by a post-renderer
// patch; what kedge cannot edit stays helm, saying why.
func TestBuildRestartsHelmReleases(t *testing.T) {
	tests := []struct {
		name, repo, ns, releaseNS string
		want                      drift.Manifest
		files                     []string
		applier                   string
	}{
		{
			name: "release in the repository", repo: "helm-release", ns: "podinfo", releaseNS: "podinfo",
			want:    drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease podinfo/podinfo"},
			files:   []string{"apps/podinfo/release.yaml"},
			applier: "Flux helm-controller (upgrading HelmRelease podinfo/podinfo)",
		},
		{
			name: "release in a base two overlays share", repo: "helm-shared-base", ns: "team-a", releaseNS: "team-a",
			want:    drift.Manifest{Status: drift.ManifestFound, Path: "base/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease team-a/podinfo"},
			files:   []string{"overlays/team-a/kedge-helm-podinfo.yaml", "overlays/team-a/kustomization.yaml"},
			applier: "Flux helm-controller (upgrading HelmRelease team-a/podinfo)",
		},
		{
			name: "already restarted for the target", repo: "helm-rerun", ns: "podinfo", releaseNS: "podinfo",
			want:    drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml", Edit: drift.EditAlreadyBumped, Detail: "HelmRelease podinfo/podinfo"},
			applier: "Flux helm-controller (upgrading HelmRelease podinfo/podinfo)",
		},
		{
			name: "release not in the repository", repo: "helm-release", ns: "podinfo", releaseNS: "flux-system",
			want: drift.Manifest{Status: drift.ManifestHelm,
				Detail: "HelmRelease flux-system/podinfo renders it; no HelmRelease flux-system/podinfo in the indexed paths"},
			applier: "Flux helm-controller (upgrading HelmRelease flux-system/podinfo)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := helmcluster.New(helmcluster.Release{Namespace: tt.ns, ReleaseNamespace: tt.releaseNS, ReleaseName: "podinfo", Deployment: "podinfo"})
			res, err := plan.Build(set, plan.Options{RepoRoot: "../../testdata/manifest/" + tt.repo + "/repo"})
			require.NoError(t, err)
			require.Len(t, res.Plan.Workloads, 1)
			w := res.Plan.Workloads[0]
			assert.Equal(t, drift.Desired{Revision: "1-25-0", Image: helmcluster.NewProxy}, w.Desired)
			assert.Equal(t, tt.want, w.Manifest)
			var files []string
			for _, e := range res.Edits.Namespaces[tt.ns] {
				files = append(files, e.Path)
			}
			assert.Equal(t, tt.files, files)
			assert.Equal(t, tt.applier, res.Namespaces[tt.ns].Applier)
		})
	}
}
