package manifest

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	sigsyaml "sigs.k8s.io/yaml"
)

// A chart exposes a value that reaches a workload's pod template
// annotations when setting it makes the render differ by exactly that:
// one annotation more on that workload's pod template, and nothing else
// anywhere. kedge finds such a value by rendering the chart, as is and with
// a probe annotation at each candidate key, rather than by reading the
// templates: a chart's own wiring (a component's podAnnotations merged with
// the global one, a value the chart ignores) is only known from its output.

// noPodAnnotationValue is the reason a chart keeps the status helm.
const noPodAnnotationValue = "chart exposes no pod-annotation value; Flux post-renderer not available for Argo CD"

const (
	probeKey   = "kedge.io/probe"
	probeValue = "probe"
)

// chartRender is one render of a chart: its objects by "Kind/name".
type chartRender map[string]map[string]any

// renderChart renders a loaded chart with values, as `helm template` does
// for a release of that name and namespace. Nothing is read but the chart.
func renderChart(chrt *chart.Chart, values map[string]any, release, namespace string) (chartRender, error) {
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}
	top, err := chartutil.ToRenderValues(chrt, copyValues(values), opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	out := chartRender{}
	for _, name := range sortedKeys(files) {
		if path.Ext(name) != ".yaml" && path.Ext(name) != ".yml" || strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(files[name]) {
			var obj map[string]any
			if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(obj) == 0 {
				continue
			}
			kind, _ := obj["kind"].(string)
			meta, _ := obj["metadata"].(map[string]any)
			objName, _ := meta["name"].(string)
			out[kind+"/"+objName] = obj
		}
	}
	return out, nil
}

// podAnnotationCandidates are the keys tried, in order: the chart-wide
// podAnnotations, then <component>.podAnnotations for every top-level map
// of the chart's values that has one.
func podAnnotationCandidates(defaults map[string]any) [][]string {
	out := [][]string{{"podAnnotations"}}
	for _, k := range sortedKeys(defaults) {
		if m, ok := defaults[k].(map[string]any); ok {
			if _, has := m["podAnnotations"]; has {
				out = append(out, []string{k, "podAnnotations"})
			}
		}
	}
	return out
}

// errNoValue says no candidate reaches the workload's pod template alone.
var errNoValue = errors.New(noPodAnnotationValue)

// findPodAnnotationValue returns the key of the chart's values that puts an
// annotation on the pod template of workload ("Kind/name") and changes
// nothing else, and the render without it; errNoValue when no candidate
// does.
func findPodAnnotationValue(chrt *chart.Chart, values map[string]any, release, namespace, workload string) ([]string, chartRender, error) {
	before, err := renderChart(chrt, values, release, namespace)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := before[workload]; !ok {
		return nil, before, fmt.Errorf("the chart renders no %s", workload)
	}
	for _, key := range podAnnotationCandidates(chrt.Values) {
		probed, ok := withValue(values, key, probeKey, probeValue)
		if !ok {
			continue
		}
		after, err := renderChart(chrt, probed, release, namespace)
		if err != nil {
			continue // a value of the wrong shape for this chart
		}
		if onlyProbed(before, after, workload) {
			return key, before, nil
		}
	}
	return nil, before, errNoValue
}

// onlyProbed reports whether after is before with the probe annotation
// added to the workload's pod template, and nothing else changed.
func onlyProbed(before, after chartRender, workload string) bool {
	if len(before) != len(after) {
		return false
	}
	for id, b := range before {
		a, ok := after[id]
		if !ok {
			return false
		}
		if id != workload {
			if !jsonEqual(b, a) {
				return false
			}
			continue
		}
		want := templateAnnotations(b)
		want[probeKey] = probeValue
		if !maps.Equal(templateAnnotations(a), want) || !jsonEqual(withoutTemplateAnnotations(b), withoutTemplateAnnotations(a)) {
			return false
		}
	}
	return true
}

// withoutTemplateAnnotations is a copy of obj without its pod template
// annotations.
func withoutTemplateAnnotations(obj map[string]any) map[string]any {
	out := copyValues(obj)
	spec, _ := out["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	if meta, ok := tmpl["metadata"].(map[string]any); ok {
		delete(meta, "annotations")
		if len(meta) == 0 {
			delete(tmpl, "metadata")
		}
	}
	return out
}

// withValue returns a copy of values with key=value set in the map at
// key path p, created where missing; false when something that is not a
// map stands on the way.
func withValue(values map[string]any, p []string, key, value string) (map[string]any, bool) {
	out := copyValues(values)
	if out == nil {
		out = map[string]any{}
	}
	m := out
	for _, k := range p {
		switch next := m[k].(type) {
		case map[string]any:
			m = next
		case nil:
			created := map[string]any{}
			m[k] = created
			m = created
		default:
			return nil, false
		}
	}
	m[key] = value
	return out, true
}

// copyValues deep-copies a tree of maps and lists.
func copyValues(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyValues(t)
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = copyValue(t[i])
		}
		return out
	default:
		return v
	}
}

// mergeValues lays over on top of base, as Helm merges values files: maps
// merge key by key, anything else is replaced.
func mergeValues(base, over map[string]any) map[string]any {
	out := copyValues(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(bm, om)
				continue
			}
		}
		out[k] = copyValue(v)
	}
	return out
}

// valuePathString spells a value's key path as Helm's --set does.
func valuePathString(p []string) string {
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = strings.ReplaceAll(k, ".", `\.`)
	}
	return strings.Join(parts, ".")
}
