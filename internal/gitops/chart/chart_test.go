package chart_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

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
		{name: "no value reaches the template", chart: "none", workload: "Deployment/rel-web", wantErr: chart.NoValue},
		{name: "a workload the chart does not render", chart: "podAnnotations", workload: "Deployment/other", wantErr: "the chart renders no Deployment/other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := index.Read(gitopstest.WriteTree(t, gitopstest.ValueCharts[tt.chart]), index.Options{})
			require.NoError(t, err)
			got, before, err := chart.FindValue(ix, chart.Chart{Dir: ".", Release: "rel", Namespace: "shop"}, tt.values, tt.workload)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, document.TemplateAnnotations(before[tt.workload]), "kedge.io/probe", "the render returned is the one without the probe")
		})
	}
}

func TestValuePathString(t *testing.T) {
	assert.Equal(t, `web.podAnnotations.kedge\.io/restart`, chart.ValuePath([]string{"web", "podAnnotations", "kedge.io/restart"}))
}
