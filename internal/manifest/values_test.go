package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
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
			chrt, err := loader.Load(writeTree(t, valueCharts[tt.chart]))
			require.NoError(t, err)
			got, before, err := findPodAnnotationValue(chrt, tt.values, "rel", "shop", tt.workload)
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
