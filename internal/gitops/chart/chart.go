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
	"reflect"
	"slices"
	"strings"
	"sync"

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
	defaults, renders, _, errs, err := renderJob(ix, c, nil, values...)
	return defaults, renders, errs, err
}

// renderJob is RenderWith with replace (chart-relative paths) standing in
// for the content of files of a chart directory; it also names the
// template of each object of each render.
func renderJob(ix *index.Index, c Chart, replace map[string][]byte, values ...map[string]any) (map[string]any, []Render, []map[string]string, []error, error) {
	job := sandbox.ChartJob{Release: c.Release, Namespace: c.Namespace, MaxBytes: ix.MaxChartBytes(), Replace: replace}
	switch info, err := os.Stat(c.Archive); {
	case c.Archive == "":
		job.Root, job.Dir = ix.FS().Dir(), c.Dir
	case err != nil:
		return nil, nil, nil, nil, err
	case info.IsDir():
		// A chart unpacked in kedge's cache is confined to its directory.
		job.Root, job.Dir = c.Archive, "."
	default:
		f, err := os.Open(c.Archive)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		job.Archive, err = yamlguard.ReadAll(f, maxPulledArchive)
		f.Close()
		if err != nil {
			return nil, nil, nil, nil, err
		}
	}
	for _, v := range values {
		job.Values = append(job.Values, document.CopyValues(v))
	}
	res := sandbox.Chart(context.Background(), job)
	if res.Failure != nil {
		return nil, nil, nil, nil, failure(res.Failure)
	}
	renders := make([]Render, len(res.Renders))
	templates := make([]map[string]string, len(res.Renders))
	errs := make([]error, len(res.Renders))
	for i, r := range res.Renders {
		if r.Failure != nil {
			errs[i] = failure(r.Failure)
			continue
		}
		renders[i], templates[i] = Render{}, r.Templates
		for id, data := range r.Objects {
			var body map[string]any
			if err := json.Unmarshal(data, &body); err != nil {
				errs[i] = err
				break
			}
			renders[i][id] = body
		}
	}
	return res.Defaults, renders, templates, errs, nil
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

// Found is what probing a chart's values found for the drifted workloads
// of one release ("Kind/name" each).
type Found struct {
	// Before is the render without kedge's values.
	Before Render
	// Keys are the value each workload is restarted through.
	Keys map[string][]string
	// Groups are, for a workload restarted through a value it shares with
	// other drifted workloads, all of them (itself included), sorted.
	Groups map[string][]string
	// Errs say why a workload has no value.
	Errs map[string]error
}

// FindValue returns the key of the chart's values that puts an annotation
// on the pod template of workload ("Kind/name") alone, and the render
// without it; ErrNoValue when no candidate does.
func FindValue(ix *index.Index, c Chart, values map[string]any, workload string) ([]string, Render, error) {
	f, err := FindValues(ix, c, values, []string{workload})
	if err != nil {
		return nil, f.Before, err
	}
	return f.Keys[workload], f.Before, f.Errs[workload]
}

// FindValues finds, for the drifted workloads of one release, the chart
// values that restart them in one change: each its own value (a
// component's podAnnotations) when setting it puts an annotation on that
// workload's pod template and changes nothing else, or, for those without
// one, a value that puts it on exactly them. The chart is rendered as is
// twice, and what differs between those renders (randAlphaNum, uuidv4, now
// in a Secret, a test hook, a checksum annotation) is left out of every
// comparison: it differs on every render, whatever the values. err says
// why the chart could not be probed at all.
func FindValues(ix *index.Index, c Chart, values map[string]any, workloads []string) (Found, error) {
	out := Found{Keys: map[string][]string{}, Groups: map[string][]string{}, Errs: map[string]error{}}
	defaults, renders, errs, err := RenderWith(ix, c, values, values)
	if err == nil {
		err = joinDistinct(errs)
	}
	if err != nil {
		return out, err
	}
	var keys [][]string
	var probes []map[string]any
	for _, key := range candidates(defaults) {
		if probed, ok := document.WithValue(values, key, probeKey, probeValue); ok {
			keys = append(keys, key)
			probes = append(probes, probed)
		}
	}
	_, probed, probeErrs, err := RenderWith(ix, c, probes...)
	if err != nil {
		return out, err
	}
	renders = append(renders, probed...)
	errs = append(errs, probeErrs...)
	out.Before = renders[0]
	volatile := Volatile(renders[0], renders[1])
	drifted := map[string]bool{}
	for _, w := range workloads {
		if _, ok := out.Before[w]; !ok {
			out.Errs[w] = fmt.Errorf("the chart renders no %s", w)
			continue
		}
		drifted[w] = true
	}
	// reach is, for each candidate that changes nothing but the probe on
	// workloads' pod templates, the workloads it annotates.
	reach := make([][]string, len(keys))
	for i := range keys {
		if errs[i+2] != nil {
			continue // a value of the wrong shape for this chart fails to render
		}
		reach[i] = probedOnly(out.Before, renders[i+2], volatile)
	}
	var rest []string
	for _, w := range slices.Sorted(maps.Keys(drifted)) {
		i := slices.IndexFunc(reach, func(r []string) bool { return len(r) == 1 && r[0] == w })
		if i < 0 {
			rest = append(rest, w)
			continue
		}
		out.Keys[w] = keys[i]
	}
	if len(rest) > 1 {
		if i := slices.IndexFunc(reach, func(r []string) bool { return slices.Equal(r, rest) }); i >= 0 {
			for _, w := range rest {
				out.Keys[w], out.Groups[w] = keys[i], rest
			}
			rest = nil
		}
	}
	for _, w := range rest {
		out.Errs[w] = ErrNoValue
	}
	return out, nil
}

// probedOnly returns the workloads whose pod template gains the probe
// annotation alone in after, sorted, when nothing else of the render
// changes (volatile paths aside); nil otherwise.
func probedOnly(before, after Render, volatile Paths) []string {
	if !sameObjects(before, after, volatile) {
		return nil
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(before)) {
		if volatile.whole(id) {
			continue
		}
		a := after[id]
		switch annotatedOnly(before[id], a, volatile[id], map[string]string{probeKey: probeValue}) {
		case unchanged:
		case annotated:
			out = append(out, id)
		default:
			return nil
		}
	}
	return out
}

type change int

const (
	unchanged change = iota
	annotated
	other
)

// templateAnnotationsPath is where a workload's pod template annotations
// are.
var templateAnnotationsPath = []string{"spec", "template", "metadata", "annotations"}

// annotatedOnly classifies how after differs from before, the paths of
// volatile aside: not at all, by exactly the annotations set on the pod
// template, or otherwise.
func annotatedOnly(before, after map[string]any, volatile [][]string, set map[string]string) change {
	diffs := differences(before, after, nil, volatile)
	if len(diffs) == 0 {
		return unchanged
	}
	for _, d := range diffs {
		if !hasPrefix(d, templateAnnotationsPath) {
			return other
		}
	}
	want := document.TemplateAnnotations(before)
	got := document.TemplateAnnotations(after)
	for _, p := range volatile {
		if len(p) == len(templateAnnotationsPath)+1 && hasPrefix(p, templateAnnotationsPath) {
			delete(want, p[len(p)-1])
			delete(got, p[len(p)-1])
		}
	}
	maps.Copy(want, set)
	if !maps.Equal(got, want) {
		return other
	}
	return annotated
}

// Paths are, by object, the paths of its body that differ between two
// renders of the same values; an object that one render lacks (its name
// drawn at random) differs as a whole, the empty path.
type Paths map[string][][]string

// Volatile returns what differs between two renders of a chart with the
// same values: the output of randAlphaNum, uuidv4, now and the like.
func Volatile(a, b Render) Paths {
	out := Paths{}
	for id, x := range a {
		if d := differences(x, b[id], nil, nil); len(d) > 0 {
			out[id] = d
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			out[id] = [][]string{nil}
		}
	}
	return out
}

// whole reports whether an object differs as a whole between two renders
// of the same values: it is not one object of both.
func (p Paths) whole(id string) bool {
	return slices.ContainsFunc(p[id], func(path []string) bool { return len(path) == 0 })
}

// sameObjects reports whether after renders the objects before does, those
// the renders of the same values do not agree on aside.
func sameObjects(before, after Render, volatile Paths) bool {
	count := func(r Render) int {
		n := 0
		for id := range r {
			if !volatile.whole(id) {
				n++
			}
		}
		return n
	}
	unstable := false
	for id := range volatile {
		unstable = unstable || volatile.whole(id)
	}
	for id := range before {
		if _, ok := after[id]; !ok && !volatile.whole(id) {
			return false
		}
	}
	// Objects of random names leave the count of the others to compare.
	if unstable {
		return true
	}
	return count(before) == count(after)
}

// differences lists the paths at which two decoded JSON values differ,
// leaving out those at or below a path of skip. A list whose length
// differs is one difference.
func differences(a, b any, at []string, skip [][]string) [][]string {
	for _, s := range skip {
		if hasPrefix(at, s) {
			return nil
		}
	}
	here := func() [][]string { return [][]string{slices.Clone(at)} }
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return here()
		}
		var out [][]string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, differences(x[k], y[k], append(at, k), skip)...)
		}
		for _, k := range slices.Sorted(maps.Keys(y)) {
			if _, seen := x[k]; !seen {
				out = append(out, differences(nil, y[k], append(at, k), skip)...)
			}
		}
		return out
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return here()
		}
		var out [][]string
		for i := range x {
			out = append(out, differences(x[i], y[i], append(at, fmt.Sprint(i)), skip)...)
		}
		return out
	}
	if !reflect.DeepEqual(document.NormalJSON(map[string]any{"v": a}), document.NormalJSON(map[string]any{"v": b})) {
		return here()
	}
	return nil
}

func hasPrefix(p, prefix []string) bool {
	return len(p) >= len(prefix) && slices.Equal(p[:len(prefix)], prefix)
}

// OnlyAnnotated reports how after differs from before beyond the
// annotations set on each workload's pod template (set, by "Kind/name"),
// the paths of volatile aside.
func OnlyAnnotated(before, after Render, set map[string]map[string]string, volatile Paths) error {
	if !sameObjects(before, after, volatile) {
		for id := range before {
			if _, ok := after[id]; !ok && !volatile.whole(id) {
				return fmt.Errorf("%s is no longer rendered", id)
			}
		}
		return fmt.Errorf("%d objects instead of %d", len(after), len(before))
	}
	for _, id := range slices.Sorted(maps.Keys(before)) {
		if volatile.whole(id) {
			continue
		}
		a := after[id]
		want, intended := set[id]
		switch annotatedOnly(before[id], a, volatile[id], want) {
		case unchanged:
			if intended && len(want) > 0 {
				return fmt.Errorf("%s: the restart annotations do not reach its pod template", id)
			}
		case annotated:
			if !intended {
				return fmt.Errorf("%s changes", id)
			}
		default:
			if intended {
				return fmt.Errorf("%s changes beyond its template annotations %v", id, slices.Sorted(maps.Keys(want)))
			}
			return fmt.Errorf("%s changes", id)
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
	// Group are the workloads ("Kind/name") that share Key, when it is
	// shared: one restart of all of them.
	Group []string
}

// Rendered is the workload as the chart renders it.
func (v Value) Rendered() restart.WorkloadID {
	kind, name, _ := strings.Cut(v.Workload, "/")
	return restart.WorkloadID{Kind: kind, Name: name}
}

// CheckAll checks the edit for every intent of the release at once: the
// release is rendered once with all its values, as it is upgraded.
func (v Value) CheckAll(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent, valuesIn func([]byte) (map[string]any, error)) error {
	set := map[string]map[string]string{}
	for id, in := range intents {
		set[id.Kind+"/"+id.Name] = in.Set
	}
	if err := v.Check(ix, e, set, valuesIn); err != nil {
		return fmt.Errorf("rendering the chart of the release in %s with the edit: %v", e.Path, err)
	}
	return nil
}

// Check renders the chart with the values a version of the site's file
// gives it (valuesIn), before (twice: what differs between those two is
// not the edit's) and after the edit: the intended workloads' pod
// templates gain exactly their annotations (set, by "Kind/name"), and
// nothing else of the render changes.
func (v Value) Check(ix *index.Index, e restart.FileEdit, set map[string]map[string]string, valuesIn func([]byte) (map[string]any, error)) error {
	before, err := valuesIn(e.Before)
	if err != nil {
		return err
	}
	after, err := valuesIn(e.After)
	if err != nil {
		return err
	}
	_, renders, errs, err := RenderWith(ix, v.Chart, before, before, after)
	if err == nil {
		err = joinDistinct(errs)
	}
	if err != nil {
		return err
	}
	return OnlyAnnotated(renders[0], renders[2], set, Volatile(renders[0], renders[1]))
}

// GroupIDs names the workloads sharing the value, as restart IDs in ns.
func (v Value) GroupIDs(ns string) []restart.WorkloadID {
	var out []restart.WorkloadID
	for _, w := range v.Group {
		kind, name, _ := strings.Cut(w, "/")
		out = append(out, restart.WorkloadID{Namespace: ns, Kind: kind, Name: name})
	}
	return out
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

// Prober finds the values of a plan's drifted workloads: a release's
// workloads are probed together, once, however many of them ask.
type Prober struct {
	// peers are the drifted workloads of each namespace, "Kind/name".
	peers map[string][]string
	mu    sync.Mutex
	found map[string]*probe
}

type probe struct {
	once  sync.Once
	found Found
	err   error
}

// NewProber returns a prober for the drifted workloads peers, by
// namespace.
func NewProber(peers map[string][]string) *Prober {
	return &Prober{peers: peers, found: map[string]*probe{}}
}

// Find probes the chart c with values for the drifted workloads of
// namespace it renders, workload among them. A nil prober probes for
// workload alone.
func (p *Prober) Find(ix *index.Index, c Chart, values map[string]any, namespace, workload string) (Found, error) {
	if p == nil {
		return FindValues(ix, c, values, []string{workload})
	}
	workloads := p.peers[namespace]
	if !slices.Contains(workloads, workload) {
		workloads = append(slices.Clone(workloads), workload)
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return Found{}, err
	}
	key := fmt.Sprintf("%q %q %q %q %s %q", c.Dir, c.Archive, c.Release, c.Namespace, raw, workloads)
	p.mu.Lock()
	e, ok := p.found[key]
	if !ok {
		e = &probe{}
		p.found[key] = e
	}
	p.mu.Unlock()
	e.once.Do(func() { e.found, e.err = FindValues(ix, c, values, workloads) })
	return e.found, e.err
}

// joinDistinct joins the errors of several renders of one chart: the same
// chart rendered twice (to tell what differs on every render) fails the
// same way twice, which is said once.
func joinDistinct(errs []error) error {
	var distinct []error
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil || seen[err.Error()] {
			continue
		}
		seen[err.Error()] = true
		distinct = append(distinct, err)
	}
	return errors.Join(distinct...)
}
