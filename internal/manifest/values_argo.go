package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// An Argo CD Application whose source path holds a chart is rendered by
// `helm template` with the source's helm block, and Argo CD has no
// post-renderers: a workload of the chart is restarted through a chart
// value that reaches its pod template, written into that helm block
// (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/).

// valuesSite is where a chart value key that restarts a workload is
// written: an Application source of the repository, or a Flux HelmRelease's
// spec.values.
type valuesSite struct {
	// manifest is the Application; nil for a HelmRelease.
	manifest *argoManifest
	// helmRelease is the HelmRelease's document; nil for an Application.
	helmRelease *Source
	// at is the source's place in the Application ("spec.sources[1]").
	at       string
	chartDir string
	// chartArchive is a chart pulled from a chart repository, in place of
	// chartDir.
	chartArchive string
	release      string
	// namespace is the one the chart renders in.
	namespace string
	// key is the chart value, a map of pod annotations.
	key []string
	// workload is "Kind/name" as the chart renders it.
	workload string
}

// locateChart finds the chart value restarting w, a workload the chart in
// dir renders for the Application the hints name. What kedge cannot edit
// keeps the status helm, with the reason. renders is false when the chart,
// rendered, has no such workload.
func (ix *Index) locateChart(w drift.Workload, hints Hints, dir string) (loc Location, renders bool) {
	via := hints.Via + " renders the chart in " + dir
	helm := func(detail string) (Location, bool) {
		return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: detail}}, true
	}
	d := hints.argoDirectoryAt(dir)
	if d == nil {
		return helm(via)
	}
	m, src := ix.argoManifestOf(d.Source, dir)
	if m == nil {
		return helm(via + "; its Application is not in the repository")
	}
	values, err := ix.argoChartValues(dir, src.Helm)
	if err != nil {
		return helm(fmt.Sprintf("%s; reading its values: %v", via, err))
	}
	site := &valuesSite{manifest: m, at: d.Source.At, chartDir: dir, release: argoReleaseName(m, src),
		namespace: m.App.Spec.Destination.Namespace, workload: w.Kind + "/" + w.Name}
	if site.namespace == "" {
		site.namespace = w.Namespace
	}
	key, before, err := ix.findPodAnnotationValue(site.chart(), values, site.workload)
	if before != nil && before[site.workload] == nil {
		return Location{}, false
	}
	if err != nil {
		return helm(fmt.Sprintf("%s: %v", via, err))
	}
	return argoValuesLocation(m, site, key, before), true
}

// argoValuesLocation is a workload restarted through the chart value key of
// the Application m; before is the chart's render without kedge's value.
func argoValuesLocation(m *argoManifest, site *valuesSite, key []string, before map[string]map[string]any) Location {
	site.key = key
	return Location{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: m.File, Edit: drift.EditHelmValues,
			Detail: fmt.Sprintf("%s (release %s, value %s)", argoVia(&m.App), site.release, valuePathString(key))},
		Source:              Source{Path: m.File, Document: m.Document, APIVersion: m.App.APIVersion, Kind: "Application", Name: m.App.Name, Namespace: m.App.Namespace},
		TemplateAnnotations: templateAnnotations(before[site.workload]),
		values:              site,
	}
}

// argoReleaseName is the release Argo CD renders the chart as: the helm
// block's releaseName, else the Application's name.
func argoReleaseName(m *argoManifest, src *objects.ApplicationSource) string {
	if src.Helm != nil && src.Helm.ReleaseName != "" {
		return src.Helm.ReleaseName
	}
	return m.App.Name
}

// argoChartValues are the values Argo CD passes to Helm for a chart in
// dir, lowest precedence first: valueFiles, then values or valuesObject
// (valuesObject, when set, replaces values), then parameters. The chart's
// values.yaml is Helm's to add.
func (ix *Index) argoChartValues(dir string, h *objects.ApplicationSourceHelm) (map[string]any, error) {
	out := map[string]any{}
	if h == nil {
		return out, nil
	}
	for _, f := range h.ValueFiles {
		if strings.HasPrefix(f, "$") || strings.Contains(f, "://") {
			return nil, fmt.Errorf("values file %s is not in the chart's directory", f)
		}
		data, err := ix.readInside(path.Join(dir, f))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = mergeValues(out, m)
	}
	inline := h.ValuesObject
	if inline == nil && h.Values != "" {
		if err := sigsyaml.Unmarshal([]byte(h.Values), &inline); err != nil {
			return nil, fmt.Errorf("helm.values: %w", err)
		}
	}
	out = mergeValues(out, inline)
	for _, p := range h.Parameters {
		set := strvals.ParseInto
		if p.ForceString {
			set = strvals.ParseIntoString
		}
		if err := set(p.Name+"="+argoSetValue(p.Value), out); err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
	}
	return out, nil
}

// file is the repository file the value is written in.
func (s *valuesSite) file() string {
	if s.helmRelease != nil {
		return s.helmRelease.Path
	}
	return s.manifest.File
}

// valuesIn reads the values the site's release is rendered with from a
// version of its file.
func (s *valuesSite) valuesIn(ix *Index, data []byte) (map[string]any, error) {
	if s.helmRelease != nil {
		return releaseValuesOf(data, s.helmRelease.Document)
	}
	src, err := argoSourceAt(data, s.manifest.Document, s.at)
	if err != nil {
		return nil, err
	}
	return ix.argoChartValues(s.chartDir, src.Helm)
}

// chart is the site's chart, in the checkout or as pulled.
func (s *valuesSite) chart() chartSite {
	return chartSite{dir: s.chartDir, archive: s.chartArchive, release: s.release, namespace: s.namespace}
}

// valuesEdit is one restart that goes in an Application source's values.
type valuesEdit struct {
	site *valuesSite
	edit podTemplateEdit
}

// applyValues writes each restart's annotations under its chart value in
// the helm block of its Application source: in valuesObject, or in the
// YAML text of values when the source writes its values there.
func (ix *Index) applyValues(f *pendingFile) ([]FileEdit, *Refusal) {
	all := make([]podTemplateEdit, 0, len(f.values))
	for _, ve := range f.values {
		all = append(all, ve.edit)
	}
	if len(f.inPlace) > 0 || f.patchRoot != "" || len(f.flux) > 0 || len(f.argo) > 0 || len(f.releases) > 0 {
		return nil, refusalFor(f.path, all, errors.New("the file holds a release kedge sets chart values of and another edit"))
	}
	before, err := ix.readInside(f.path)
	if err != nil {
		return nil, refusalFor(f.path, all, err)
	}
	sort.Slice(f.values, func(i, j int) bool { return f.values[i].edit.id.String() < f.values[j].edit.id.String() })
	after := before
	var ids []WorkloadID
	for _, ve := range f.values {
		ids = append(ids, ve.edit.id)
		out, changed, err := setValues(after, ve.site, ve.edit.set)
		if err != nil {
			return nil, refusalFor(f.path, all, err)
		}
		if changed {
			after = out
		}
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return []FileEdit{{Path: f.path, Before: before, After: after, Workloads: ids}}, nil
}

// setValues sets the annotations under the site's value: in a
// HelmRelease's spec.values, or in the Application source as the
// repository's copy writes its values.
func setValues(data []byte, site *valuesSite, set map[string]string) ([]byte, bool, error) {
	if site.helmRelease != nil {
		return yamledit.SetChartValues(data, site.helmRelease.Document, yamledit.ValuesMap{Kind: "HelmRelease", At: "spec.values"}, site.key, set)
	}
	var h *objects.ApplicationSourceHelm
	for _, s := range argoSources(&site.manifest.App) {
		if s.at == site.at {
			h = s.src.Helm
		}
	}
	doc, helmAt := site.manifest.Document, site.at+".helm"
	switch {
	case h == nil || h.ValuesObject != nil:
	case h.Values != "":
		return yamledit.SetChartValuesText(data, doc, yamledit.ValuesMap{Kind: "Application", At: helmAt + ".values"}, site.key, set)
	case len(h.Parameters) > 0:
		return setArgoParameters(data, doc, helmAt, site.key, set)
	}
	return yamledit.SetChartValues(data, doc, yamledit.ValuesMap{Kind: "Application", At: helmAt + ".valuesObject"}, site.key, set)
}

// setArgoParameters writes one string parameter per annotation: Argo CD
// passes each as --set-string, where a dot in a key is written \.
func setArgoParameters(data []byte, doc int, helmAt string, key []string, set map[string]string) ([]byte, bool, error) {
	changed := false
	for _, k := range sortedKeys(set) {
		name := valuePathString(append(append([]string{}, key...), k))
		out, ch, err := yamledit.SetChartParameter(data, doc, yamledit.ValuesMap{Kind: "Application", At: helmAt}, name, set[k])
		if err != nil {
			return nil, false, err
		}
		if ch {
			data, changed = out, true
		}
	}
	return data, changed, nil
}

// checkValues renders the chart of every Application source an edit sets
// values in, with the source as it was and as edited, and reports the
// edits whose render changes anything but the intended restarts.
func (v *verifier) checkValues(edits []FileEdit, intended []intent, failed map[int]string) {
	for i, e := range edits {
		for _, in := range intended {
			if in.values == nil || in.values.file() != e.Path {
				continue
			}
			if err := v.compareValues(e, in); err != nil {
				if _, done := failed[i]; !done {
					failed[i] = fmt.Sprintf("rendering the chart of the release in %s with the edit: %v", e.Path, err)
				}
			}
		}
	}
}

// compareValues renders the chart of one intended restart before and after
// the edit: the intended workload's pod template gains exactly the intended
// annotations, and nothing else of the render changes.
func (v *verifier) compareValues(e FileEdit, in intent) error {
	site := in.values
	beforeValues, err := site.valuesIn(v.ix, e.Before)
	if err != nil {
		return err
	}
	afterValues, err := site.valuesIn(v.ix, e.After)
	if err != nil {
		return err
	}
	_, renders, errs, err := v.ix.renderChart(site.chart(), beforeValues, afterValues)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return err
	}
	return onlyAnnotated(renders[0], renders[1], site.workload, in.set)
}

// onlyAnnotated reports how after differs from before beyond the given
// annotations set on the workload's pod template.
func onlyAnnotated(before, after chartRender, workload string, set map[string]string) error {
	if len(before) != len(after) {
		return fmt.Errorf("%d objects instead of %d", len(after), len(before))
	}
	for _, id := range sortedKeys(before) {
		b, a := before[id], after[id]
		if a == nil {
			return fmt.Errorf("%s is no longer rendered", id)
		}
		if id != workload {
			if !jsonEqual(b, a) {
				return fmt.Errorf("%s changes", id)
			}
			continue
		}
		want := templateAnnotations(b)
		maps.Copy(want, set)
		if got := templateAnnotations(a); !maps.Equal(got, want) {
			return fmt.Errorf("%s: template annotations %v, want %v", id, got, want)
		}
		if !jsonEqual(withoutTemplateAnnotations(b), withoutTemplateAnnotations(a)) {
			return fmt.Errorf("%s changes beyond its template annotations", id)
		}
	}
	return nil
}

// chartIn reports whether dir of the repository holds a chart.
func (ix *Index) chartIn(dir string) bool {
	return ix.fs.IsRegular(path.Join(dir, "Chart.yaml"))
}

// argoSetValue is a parameter's value as Argo CD hands it to --set: every
// comma not already escaped is escaped, unless the value is a {list}.
func argoSetValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	var b strings.Builder
	prev := rune(0)
	for _, r := range v {
		if r == ',' && prev != '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}
