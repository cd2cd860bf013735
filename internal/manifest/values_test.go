package manifest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

const chartYAML = "apiVersion: v2\nname: app\nversion: 0.1.0\n"

// deploymentTemplate renders a Deployment whose pod template annotations
// come from the given template text (indented under annotations).
func deploymentTemplate(name, annotations string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\nspec:\n" +
		"  selector:\n    matchLabels:\n      app: " + name + "\n  template:\n    metadata:\n      labels:\n        app: " + name + "\n" +
		annotations + "    spec:\n      containers:\n        - name: app\n          image: app:1\n"
}

// Charts in the shapes charts expose pod annotations.
var valueCharts = map[string]map[string]string{
	"podAnnotations": {
		"Chart.yaml":  chartYAML,
		"values.yaml": "replicas: 1\npodAnnotations: {}\n",
		"templates/deployment.yaml": deploymentTemplate("web",
			"      {{- with .Values.podAnnotations }}\n      annotations:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}\n"),
		"templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  ports:\n    - port: 80\n",
	},
	"component": {
		"Chart.yaml":  chartYAML,
		"values.yaml": "podAnnotations: {}\nweb:\n  podAnnotations: {}\nworker:\n  podAnnotations:\n    team: jobs\n",
		"templates/web.yaml": deploymentTemplate("web",
			"      annotations:\n        {{- with .Values.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n        {{- with .Values.web.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n"),
		"templates/worker.yaml": deploymentTemplate("worker",
			"      annotations:\n        {{- with .Values.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n        {{- with .Values.worker.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n"),
	},
	"none": {
		"Chart.yaml":                chartYAML,
		"values.yaml":               "podAnnotations: {}\n",
		"templates/deployment.yaml": deploymentTemplate("web", "      annotations:\n        fixed: \"yes\"\n"),
	},
}

func TestFindPodAnnotationValue(t *testing.T) {
	tests := []struct {
		name, chart, workload string
		values                map[string]any
		want                  []string
		wantErr               string
	}{
		{name: "a chart-wide podAnnotations", chart: "podAnnotations", workload: "Deployment/rel-web", want: []string{"podAnnotations"}},
		{name: "the release's own annotations kept", chart: "podAnnotations", workload: "Deployment/rel-web",
			values: map[string]any{"podAnnotations": map[string]any{"a": "b"}}, want: []string{"podAnnotations"}},
		{name: "a component's value when the chart-wide one reaches two workloads", chart: "component", workload: "Deployment/rel-web", want: []string{"web", "podAnnotations"}},
		{name: "the other component", chart: "component", workload: "Deployment/rel-worker", want: []string{"worker", "podAnnotations"}},
		{name: "no value reaches the template", chart: "none", workload: "Deployment/rel-web", wantErr: noPodAnnotationValue},
		{name: "a workload the chart does not render", chart: "podAnnotations", workload: "Deployment/other", wantErr: "the chart renders no Deployment/other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := BuildIndex(writeTree(t, valueCharts[tt.chart]), IndexOptions{})
			require.NoError(t, err)
			got, before, err := ix.findPodAnnotationValue(chartSite{dir: ".", release: "rel", namespace: "shop"}, tt.values, tt.workload)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, templateAnnotations(before[tt.workload]), probeKey, "the render returned is the one without the probe")
		})
	}
}

func TestWithValueLeavesTheValuesAlone(t *testing.T) {
	values := map[string]any{"web": map[string]any{"podAnnotations": map[string]any{"a": "b"}}, "image": "x"}
	got, ok := withValue(values, []string{"web", "podAnnotations"}, "k", "v")
	require.True(t, ok)
	assert.Equal(t, map[string]any{"a": "b", "k": "v"}, got["web"].(map[string]any)["podAnnotations"])
	assert.Equal(t, map[string]any{"a": "b"}, values["web"].(map[string]any)["podAnnotations"])
	_, ok = withValue(values, []string{"image", "podAnnotations"}, "k", "v")
	assert.False(t, ok, "a string stands where a map would go")
}

func TestValuePathString(t *testing.T) {
	assert.Equal(t, `web.podAnnotations.kedge\.io/restart`, valuePathString([]string{"web", "podAnnotations", "kedge.io/restart"}))
}

// TestChartSourceBesidePaths: a workload an Application's paths do not
// hold is found in the pulled chart of its other source.
func TestChartSourceBesidePaths(t *testing.T) {
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\nspec:\n" +
		"  destination:\n    namespace: shop\n  sources:\n    - repoURL: https://github.com/example-org/fleet\n      path: apps/web\n" +
		"    - repoURL: https://charts.example.com\n      chart: app\n      targetRevision: 0.1.0\n"
	repo := writeTree(t, map[string]string{
		"argocd/shop.yaml":  app,
		"apps/web/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers: []\n",
	})
	chartDir := packChart(t, "app", valueCharts["podAnnotations"])
	ix, err := BuildIndex(repo, IndexOptions{})
	require.NoError(t, err)
	set := WithRepositoryApplications(&objects.Set{}, ix)
	hints := HintsFor(set, "https://github.com/example-org/fleet")
	key := ChartKey("https://charts.example.com", "app", "0.1.0")
	tests := []struct {
		name   string
		pulled map[string]PulledChart
		want   drift.Manifest
	}{
		{name: "pulled", pulled: map[string]PulledChart{key: {Archive: chartDir}},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "argocd/shop.yaml", Edit: drift.EditHelmValues,
				Detail: "Argo CD Application argocd/shop (release shop, value podAnnotations)"}},
		{name: "not pulled", pulled: map[string]PulledChart{key: {Error: "chart app 0.1.0 from https://charts.example.com: reading the repository's index: offline"}},
			want: drift.Manifest{Status: drift.ManifestHelm,
				Detail: "Argo CD Application argocd/shop renders chart app 0.1.0 from https://charts.example.com; chart app 0.1.0 from https://charts.example.com: reading the repository's index: offline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := argoTracked(drifted("shop", "Deployment", "shop-web", istio125), "shop")
			loc := ix.LocateOne(w, WithPulledCharts(hints(w), tt.pulled))
			assert.Equal(t, tt.want, loc.Manifest)
			web := argoTracked(drifted("shop", "Deployment", "web", istio125), "shop")
			assert.Equal(t, drift.EditInPlace, ix.LocateOne(web, WithPulledCharts(hints(web), tt.pulled)).Manifest.Edit, "the path's own workload")
		})
	}
}

// packChart packages chart files as `helm package` does, into a .tgz whose
// entries sit under the chart's name.
func packChart(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, p := range sortedKeys(files) {
		data := []byte(files[p])
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	out := filepath.Join(t.TempDir(), name+".tgz")
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	return out
}
