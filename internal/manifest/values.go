package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/kedge-io/kedge/internal/sandbox"
	"github.com/kedge-io/kedge/internal/yamlguard"
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

// chartSite names a chart kedge renders: a directory of the checkout, or
// a chart pulled from a chart repository into kedge's cache.
type chartSite struct {
	dir     string
	archive string
	// release and namespace are those the chart renders as.
	release, namespace string
}

// maxPulledArchive bounds the pulled archive read back from the cache.
const maxPulledArchive = 64 << 20

// renderChart renders the chart with each set of values, as `helm template`
// does for the release, in a render worker: the chart and its templates
// are the repository's (or a chart repository's), and may be hostile. It
// returns the chart's own values and a render (or why none) per set.
func (ix *Index) renderChart(c chartSite, values ...map[string]any) (map[string]any, []chartRender, []error, error) {
	job := sandbox.ChartJob{Release: c.release, Namespace: c.namespace, MaxBytes: ix.maxChartBytes}
	switch info, err := os.Stat(c.archive); {
	case c.archive == "":
		job.Root, job.Dir = ix.fs.Dir(), c.dir
	case err != nil:
		return nil, nil, nil, err
	case info.IsDir():
		// A chart unpacked in kedge's cache is confined to its directory.
		job.Root, job.Dir = c.archive, "."
	default:
		f, err := os.Open(c.archive)
		if err != nil {
			return nil, nil, nil, err
		}
		job.Archive, err = yamlguard.ReadAll(f, maxPulledArchive)
		f.Close()
		if err != nil {
			return nil, nil, nil, err
		}
	}
	for _, v := range values {
		job.Values = append(job.Values, copyValues(v))
	}
	res := sandbox.Chart(context.Background(), job)
	if res.Failure != nil {
		return nil, nil, nil, chartFailure(res.Failure)
	}
	renders := make([]chartRender, len(res.Renders))
	errs := make([]error, len(res.Renders))
	for i, r := range res.Renders {
		if r.Failure != nil {
			errs[i] = chartFailure(r.Failure)
			continue
		}
		renders[i] = chartRender{}
		for id, data := range r.Objects {
			var body map[string]any
			if err := json.Unmarshal(data, &body); err != nil {
				errs[i] = err
				break
			}
			renders[i][id] = body
		}
	}
	return res.Defaults, renders, errs, nil
}

// chartFailure says why a chart could not be loaded or rendered, in the
// words a plan's detail carries.
func chartFailure(f *sandbox.Failure) error {
	switch f.Kind {
	case sandbox.FailOverBudget:
		if f.File != "" {
			return fmt.Errorf("over budget: %s (%s)", f.Message, f.File)
		}
		return fmt.Errorf("over budget: %s", f.Message)
	case sandbox.FailOutside:
		return fmt.Errorf("kedge reads nothing outside the repository: %s", f.Message)
	}
	return f
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
func (ix *Index) findPodAnnotationValue(c chartSite, values map[string]any, workload string) ([]string, chartRender, error) {
	defaults, renders, errs, err := ix.renderChart(c, values)
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return nil, nil, err
	}
	before := renders[0]
	if _, ok := before[workload]; !ok {
		return nil, before, fmt.Errorf("the chart renders no %s", workload)
	}
	var keys [][]string
	var probes []map[string]any
	for _, key := range podAnnotationCandidates(defaults) {
		if probed, ok := withValue(values, key, probeKey, probeValue); ok {
			keys = append(keys, key)
			probes = append(probes, probed)
		}
	}
	_, renders, errs, err = ix.renderChart(c, probes...)
	if err != nil {
		return nil, before, err
	}
	for i, key := range keys {
		// A value of the wrong shape for this chart fails to render.
		if errs[i] == nil && onlyProbed(before, renders[i], workload) {
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
