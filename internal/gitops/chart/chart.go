// Package chart renders the Helm charts GitOps objects install (a chart of
// the repository, or one pulled from a chart repository) as `helm
// template` does, in a render worker, and finds the chart value that puts
// an annotation on one workload's pod template and changes nothing else.
// A chart exposes such a value when setting it makes the render differ by
// exactly that: kedge finds it by rendering the chart, as is and with a
// probe annotation at each candidate key, rather than by reading the
// templates: a chart's own wiring (a component's podAnnotations merged with
// the global one, a value the chart ignores) is only known from its output.
package chart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/sandbox"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// NoValue says the chart's values cannot restart the workload.
const NoValue = "the chart exposes no value that reaches the pod template's annotations"

// ErrNoValue says no candidate reaches the workload's pod template alone.
var ErrNoValue = errors.New(NoValue)

const (
	probeKey   = "kedge.io/probe"
	probeValue = "probe"
)

// Chart names a chart kedge renders: a directory of the checkout, or a
// chart pulled from a chart repository into kedge's cache, and the release
// it renders as.
type Chart struct {
	Dir     string
	Archive string
	// Release and Namespace are those the chart renders as.
	Release, Namespace string
}

// Render is one render of a chart: its objects by "Kind/name".
type Render map[string]map[string]any

// maxPulledArchive bounds the pulled archive read back from the cache.
const maxPulledArchive = 64 << 20

// RenderWith renders the chart with each set of values, as `helm template`
// does for the release, in a render worker: the chart and its templates
// are the repository's (or a chart repository's), and may be hostile. It
// returns the chart's own values and a render (or why none) per set.
func RenderWith(ix *index.Index, c Chart, values ...map[string]any) (map[string]any, []Render, []error, error) {
	job := sandbox.ChartJob{Release: c.Release, Namespace: c.Namespace, MaxBytes: ix.MaxChartBytes()}
	switch info, err := os.Stat(c.Archive); {
	case c.Archive == "":
		job.Root, job.Dir = ix.FS().Dir(), c.Dir
	case err != nil:
		return nil, nil, nil, err
	case info.IsDir():
		// A chart unpacked in kedge's cache is confined to its directory.
		job.Root, job.Dir = c.Archive, "."
	default:
		f, err := os.Open(c.Archive)
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
		job.Values = append(job.Values, document.CopyValues(v))
	}
	res := sandbox.Chart(context.Background(), job)
	if res.Failure != nil {
		return nil, nil, nil, failure(res.Failure)
	}
	renders := make([]Render, len(res.Renders))
	errs := make([]error, len(res.Renders))
	for i, r := range res.Renders {
		if r.Failure != nil {
			errs[i] = failure(r.Failure)
			continue
		}
		renders[i] = Render{}
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

// failure says why a chart could not be loaded or rendered, in the words a
// plan's detail carries.
func failure(f *sandbox.Failure) error {
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

// candidates are the keys tried, in order: the chart-wide podAnnotations,
// then <component>.podAnnotations for every top-level map of the chart's
// values that has one.
func candidates(defaults map[string]any) [][]string {
	out := [][]string{{"podAnnotations"}}
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		if m, ok := defaults[k].(map[string]any); ok {
			if _, has := m["podAnnotations"]; has {
				out = append(out, []string{k, "podAnnotations"})
			}
		}
	}
	return out
}

// FindValue returns the key of the chart's values that puts an annotation
// on the pod template of workload ("Kind/name") and changes nothing else,
// and the render without it; ErrNoValue when no candidate does.
func FindValue(ix *index.Index, c Chart, values map[string]any, workload string) ([]string, Render, error) {
	defaults, renders, errs, err := RenderWith(ix, c, values)
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
	for _, key := range candidates(defaults) {
		if probed, ok := document.WithValue(values, key, probeKey, probeValue); ok {
			keys = append(keys, key)
			probes = append(probes, probed)
		}
	}
	_, renders, errs, err = RenderWith(ix, c, probes...)
	if err != nil {
		return nil, before, err
	}
	for i, key := range keys {
		// A value of the wrong shape for this chart fails to render.
		if errs[i] == nil && onlyProbed(before, renders[i], workload) {
			return key, before, nil
		}
	}
	return nil, before, ErrNoValue
}

// onlyProbed reports whether after is before with the probe annotation
// added to the workload's pod template, and nothing else changed.
func onlyProbed(before, after Render, workload string) bool {
	return OnlyAnnotated(before, after, workload, map[string]string{probeKey: probeValue}) == nil
}

// OnlyAnnotated reports how after differs from before beyond the given
// annotations set on the workload's pod template.
func OnlyAnnotated(before, after Render, workload string, set map[string]string) error {
	if len(before) != len(after) {
		return fmt.Errorf("%d objects instead of %d", len(after), len(before))
	}
	for _, id := range slices.Sorted(maps.Keys(before)) {
		b, a := before[id], after[id]
		if a == nil {
			return fmt.Errorf("%s is no longer rendered", id)
		}
		if id != workload {
			if !document.JSONEqual(b, a) {
				return fmt.Errorf("%s changes", id)
			}
			continue
		}
		want := document.TemplateAnnotations(b)
		maps.Copy(want, set)
		if got := document.TemplateAnnotations(a); !maps.Equal(got, want) {
			return fmt.Errorf("%s: template annotations %v, want %v", id, got, want)
		}
		if !document.JSONEqual(document.WithoutTemplateAnnotations(b), document.WithoutTemplateAnnotations(a)) {
			return fmt.Errorf("%s changes beyond its template annotations", id)
		}
	}
	return nil
}

// ValuePath spells a value's key path as Helm's --set does.
func ValuePath(p []string) string {
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = strings.ReplaceAll(k, ".", `\.`)
	}
	return strings.Join(parts, ".")
}

// Value is a restart written as a chart value: the sites of Argo CD
// Applications and Flux HelmReleases share it.
type Value struct {
	Chart Chart
	// Key is the chart value, a map of pod annotations.
	Key []string
	// Workload is "Kind/name" as the chart renders it.
	Workload string
}

// Rendered is the workload as the chart renders it.
func (v Value) Rendered() restart.WorkloadID {
	kind, name, _ := strings.Cut(v.Workload, "/")
	return restart.WorkloadID{Kind: kind, Name: name}
}

// CheckEach checks the edit for each intent of the site.
func (v Value) CheckEach(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent, valuesIn func([]byte) (map[string]any, error)) error {
	for _, in := range intents {
		if err := v.Check(ix, e, in.Set, valuesIn); err != nil {
			return fmt.Errorf("rendering the chart of the release in %s with the edit: %v", e.Path, err)
		}
	}
	return nil
}

// Check renders the chart with the values a version of the site's file
// gives it (valuesIn), before and after the edit: the intended workload's
// pod template gains exactly the intended annotations, and nothing else of
// the render changes.
func (v Value) Check(ix *index.Index, e restart.FileEdit, set map[string]string, valuesIn func([]byte) (map[string]any, error)) error {
	before, err := valuesIn(e.Before)
	if err != nil {
		return err
	}
	after, err := valuesIn(e.After)
	if err != nil {
		return err
	}
	_, renders, errs, err := RenderWith(ix, v.Chart, before, after)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return err
	}
	return OnlyAnnotated(renders[0], renders[1], v.Workload, set)
}

// Pulled is the outcome of pulling one chart of a chart repository before
// the plan: its archive in kedge's cache, or why there is none.
type Pulled struct {
	Archive string
	Error   string
}

// Ref is a chart of a chart repository (HTTP or OCI) at a version or semver
// constraint.
type Ref struct {
	RepoURL, Chart, Version string
}

// Key names the chart as pulled charts are looked up.
func (c Ref) Key() string { return Key(c.RepoURL, c.Chart, c.Version) }

// Key names a chart of a chart repository at a version.
func Key(repoURL, chart, version string) string {
	return repoURL + " " + chart + " " + version
}
