package locate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestChartSourceBesidePaths: a workload an Application's paths do not
// hold is found in the pulled chart of its other source.
func TestChartSourceBesidePaths(t *testing.T) {
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\nspec:\n" +
		"  destination:\n    namespace: shop\n  sources:\n    - repoURL: https://github.com/example-org/fleet\n      path: apps/web\n" +
		"    - repoURL: https://charts.example.com\n      chart: app\n      targetRevision: 0.1.0\n"
	repo := gitopstest.WriteTree(t, map[string]string{
		"argocd/shop.yaml":  app,
		"apps/web/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers: []\n",
	})
	chartDir := gitopstest.PackChart(t, "app", gitopstest.ValueCharts["podAnnotations"])
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	set := index.WithRepositoryApplications(&objects.Set{}, ix)
	hints := locate.HintsIn(nil, set, "https://github.com/example-org/fleet")
	key := chart.Key("https://charts.example.com", "app", "0.1.0")
	tests := []struct {
		name   string
		pulled map[string]chart.Pulled
		want   drift.Manifest
	}{
		{name: "pulled", pulled: map[string]chart.Pulled{key: {Archive: chartDir}},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "argocd/shop.yaml", Edit: drift.EditHelmValues,
				Detail: "Argo CD Application argocd/shop (release shop, value podAnnotations)"}},
		{name: "not pulled", pulled: map[string]chart.Pulled{key: {Error: "chart app 0.1.0 from https://charts.example.com: reading the repository's index: offline"}},
			want: drift.Manifest{Status: drift.ManifestHelm,
				Detail: "Argo CD Application argocd/shop renders chart app 0.1.0 from https://charts.example.com; chart app 0.1.0 from https://charts.example.com: reading the repository's index: offline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "shop-web", gitopstest.Istio125), "shop")
			loc := locate.One(ix, w, locate.WithPulledCharts(hints(w), tt.pulled))
			assert.Equal(t, tt.want, loc.Manifest)
			web := gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "web", gitopstest.Istio125), "shop")
			assert.Equal(t, drift.EditInPlace, locate.One(ix, web, locate.WithPulledCharts(hints(web), tt.pulled)).Manifest.Edit, "the path's own workload")
		})
	}
}
