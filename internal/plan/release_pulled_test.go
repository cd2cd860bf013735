package plan_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/testing/helmcluster"
)

const helmRepositoryRelease = `# podinfo, from the team's chart repository.
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: podinfo
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: 6.7.0
      sourceRef:
        kind: HelmRepository
        name: charts
        namespace: flux-system
  # Values the team tunes.
  values:
    replicaCount: 2
`

// TestHelmReleaseChartFromAHelmRepository: under helm.prefer: values, a
// HelmRelease whose chart comes from a HelmRepository is restarted through
// the chart's value in spec.values, rendered from the chart pulled from the
// repository's URL; rendering the release before and after the edit shows
// the restart and nothing else. A cluster without the HelmRepository says
// nothing of where the chart is, and a pull the policy refuses fetches
// nothing: the release keeps the post-renderer, its fallback saying why.
func TestHelmReleaseChartFromAHelmRepository(t *testing.T) {
	srv := chartRepository(t)
	charts := &objects.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "charts"},
		Spec: objects.HelmRepositorySpec{URL: srv.URL}}
	tests := []struct {
		name  string
		repos []objects.HelmRepository
		// release is the HelmRelease's file, helmRepositoryRelease unless set.
		release string
		want    drift.Manifest
		// fallbackHas is part of a Fallback that names a port.
		fallbackHas string
	}{
		{name: "with the HelmRepository", repos: []objects.HelmRepository{*charts}, want: drift.Manifest{Status: drift.ManifestFound,
			Path: "apps/podinfo/release.yaml", Edit: drift.EditHelmValues, Detail: "HelmRelease podinfo/podinfo (release podinfo, value podAnnotations)"}},
		{name: "at a host the pull policy refuses", repos: []objects.HelmRepository{{ObjectMeta: charts.ObjectMeta,
			Spec: objects.HelmRepositorySpec{URL: strings.Replace(srv.URL, "127.0.0.1", "127.0.0.2", 1)}}},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer,
				Detail: "HelmRelease podinfo/podinfo"},
			fallbackHas: "/index.yaml\": refused to connect to 127.0.0.2, a loopback address: chart pulls reach loopback"},
		{name: "without it", want: drift.Manifest{Status: drift.ManifestFound,
			Path: "apps/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease podinfo/podinfo",
			Fallback: "not chart values: the cluster has no HelmRepository flux-system/charts"}},
		{name: "a chart of an OCIRepository by spec.chartRef", repos: []objects.HelmRepository{*charts},
			release: strings.Replace(helmRepositoryRelease, `  chart:
    spec:
      chart: podinfo
      version: 6.7.0
      sourceRef:
        kind: HelmRepository
        name: charts
        namespace: flux-system
`, `  chartRef:
    kind: OCIRepository
    name: podinfo
`, 1),
			want: drift.Manifest{Status: drift.ManifestFound,
				Path: "apps/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease podinfo/podinfo",
				Fallback: "not chart values: its chart is the artifact of the OCIRepository podinfo/podinfo its spec.chartRef names, which kedge does not pull"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := copyRepo(t, filepath.Join(manifestFixtures, "helm-values", "repo"))
			release := tt.release
			if release == "" {
				release = helmRepositoryRelease
			}
			require.NoError(t, os.WriteFile(filepath.Join(before, "apps", "podinfo", "release.yaml"), []byte(release), 0o644))
			set := helmcluster.New(helmcluster.Release{Namespace: "podinfo", ReleaseNamespace: "podinfo", ReleaseName: "podinfo", Deployment: "podinfo"})
			set.HelmRepositories = tt.repos
			ix, err := index.Read(before, index.Options{})
			require.NoError(t, err)
			puller := &chartpull.Puller{Dir: t.TempDir(), Timeout: 10 * time.Second, AllowedHosts: []string{"127.0.0.1"}} // the test repository listens on loopback
			pulled := assemble.PullCharts(context.Background(), set, ix, puller)

			res, err := plan.Build(set, plan.Options{RepoRoot: before, Index: ix, HelmValues: true, Charts: pulled})
			require.NoError(t, err)
			require.Len(t, res.Plan.Workloads, 1)
			w := res.Plan.Workloads[0]
			got := w.Manifest
			if tt.fallbackHas != "" {
				assert.Contains(t, got.Fallback, tt.fallbackHas)
				assert.True(t, strings.HasPrefix(got.Fallback, "not chart values: chart podinfo 6.7.0 from http://127.0.0.2:"), got.Fallback)
				got.Fallback = ""
			}
			assert.Equal(t, tt.want, got)
			edits := res.Edits.All()
			require.Len(t, edits, 1)
			if tt.want.Edit == drift.EditHelmPostRenderer {
				for _, p := range pulled {
					assert.Empty(t, p.Archive, "nothing is pulled")
				}
				return
			}
			assert.Contains(t, string(edits[0].After), "  values:\n    replicaCount: 2\n    podAnnotations:\n      kedge.io/restart-target: ")

			after := copyRepo(t, before)
			require.NoError(t, os.WriteFile(filepath.Join(after, filepath.FromSlash(edits[0].Path)), edits[0].After, 0o644))
			archive := pulled[chart.Key(srv.URL, "podinfo", "6.7.0")].Archive
			require.NotEmpty(t, archive)
			target := restart.TargetValue(w.Desired)
			res2, err := editcheck.CompareRepos(editcheck.Check{
				Before: before, After: after, Changed: []string{edits[0].Path},
				Restarts: []editcheck.Restart{{Namespace: w.Namespace, Kind: w.Kind, Name: w.Name, Annotations: map[string]string{
					restart.DefaultTargetAnnotation: target, restart.DefaultRestartAnnotation: restart.RestartValue(w, target)}}},
				Charts:           map[string]string{fmt.Sprintf("%s podinfo 6.7.0", srv.URL): archive},
				HelmRepositories: map[string]string{"flux-system/charts": srv.URL},
			})
			require.NoError(t, err)
			assert.Empty(t, res2.Problems)
			assert.True(t, res2.Restarted["Deployment podinfo/podinfo"], "the render after the edit restarts podinfo: %v", res2.Restarted)

			again, err := plan.Build(set, plan.Options{RepoRoot: after, HelmValues: true, Charts: pulled})
			require.NoError(t, err)
			assert.Empty(t, again.Edits.All(), "a second plan over the edited checkout writes nothing")
			assert.Equal(t, drift.EditAlreadyBumped, again.Plan.Workloads[0].Manifest.Edit)
		})
	}
}
