package argo

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

// An Application whose source path holds a chart is rendered by `helm
// template` with the source's helm block, and Argo CD has no
// post-renderers: a workload of the chart is restarted through a chart
// value that reaches its pod template, written into that helm block
// (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/).

// ValuesSite is a chart value of one Application source that restarts a
// workload, written where the Application writes its values.
type ValuesSite struct {
	manifest *index.ArgoManifest
	// at is the source's place in the Application ("spec.sources[1]").
	at    string
	value chart.Value
}

type valuesKind struct{}

func (s *ValuesSite) File() string         { return s.manifest.File }
func (s *ValuesSite) Kind() restart.Kind   { return valuesKind{} }
func (s *ValuesSite) Reads() restart.Reads { return restart.ReadsCharts }
func (s *ValuesSite) Source() index.Source {
	m := s.manifest
	return index.Source{Path: m.File, Document: m.Document, APIVersion: m.App.APIVersion, Kind: "Application", Name: m.App.Name, Namespace: m.App.Namespace}
}
func (s *ValuesSite) Rendered() restart.WorkloadID { return s.value.Rendered() }
func (s *ValuesSite) CheckKey() string {
	return fmt.Sprintf("argo values %s#%d %s %s", s.manifest.File, s.manifest.Document, s.at, s.value.Workload)
}

// Check renders the chart with the source as it was and as edited.
func (s *ValuesSite) Check(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent) error {
	return s.value.CheckEach(ix, e, intents, func(data []byte) (map[string]any, error) {
		src, err := sourceAt(data, s.manifest.Document, s.at)
		if err != nil {
			return nil, err
		}
		return chartValues(ix, s.value.Chart.Dir, src.Helm)
	})
}

func (valuesKind) Name() string { return "chart values of an Argo CD Application" }

func (valuesKind) Intents(restarts []restart.Restart) []restart.Intent {
	return restart.OneIntentEach(restarts)
}

// Write writes each restart's annotations under its chart value in the
// helm block of its Application source: in valuesObject, or in the YAML
// text of values when the source writes its values there.
func (valuesKind) Write(ix *index.Index, file string, restarts []restart.Restart) ([]restart.FileEdit, error) {
	return restart.WriteEach(ix, file, restarts, func(data []byte, r restart.Restart) ([]byte, bool, error) {
		return r.Site.(*ValuesSite).set(data, r.Set)
	})
}

// set writes the annotations under the site's value in the Application
// source, as the repository's copy writes its values.
func (s *ValuesSite) set(data []byte, set map[string]string) ([]byte, bool, error) {
	var h *objects.ApplicationSourceHelm
	for _, src := range Sources(&s.manifest.App) {
		if src.At == s.at {
			h = src.Src.Helm
		}
	}
	doc, helmAt := s.manifest.Document, s.at+".helm"
	switch {
	case h == nil || h.ValuesObject != nil:
	case h.Values != "":
		return helmedit.SetChartValuesText(data, doc, helmedit.ValuesMap{Kind: "Application", At: helmAt + ".values"}, s.value.Key, set)
	case len(h.Parameters) > 0:
		return setParameters(data, doc, helmAt, s.value.Key, set)
	}
	return helmedit.SetChartValues(data, doc, helmedit.ValuesMap{Kind: "Application", At: helmAt + ".valuesObject"}, s.value.Key, set)
}

// setParameters writes one string parameter per annotation: Argo CD passes
// each as --set-string, where a dot in a key is written \.
func setParameters(data []byte, doc int, helmAt string, key []string, set map[string]string) ([]byte, bool, error) {
	changed := false
	for _, k := range slices.Sorted(maps.Keys(set)) {
		name := chart.ValuePath(append(append([]string{}, key...), k))
		out, ch, err := helmedit.SetChartParameter(data, doc, helmedit.ValuesMap{Kind: "Application", At: helmAt}, name, set[k])
		if err != nil {
			return nil, false, err
		}
		if ch {
			data, changed = out, true
		}
	}
	return data, changed, nil
}

// LocateChart finds the chart value restarting w, a workload the chart in
// dir renders for the Application source d. What kedge cannot edit keeps
// the status helm, with the reason. renders is false when the chart,
// rendered, has no such workload.
func LocateChart(ix *index.Index, w drift.Workload, d *Directory, via, dir string) (found restart.Found, renders bool) {
	via += " renders the chart in " + dir
	helm := func(detail string) (restart.Found, bool) {
		return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: detail}}, true
	}
	if d == nil {
		return helm(via)
	}
	m, src := manifestOf(ix, d.Source, dir)
	if m == nil {
		return helm(via + "; its Application is not in the repository")
	}
	values, err := chartValues(ix, dir, src.Helm)
	if err != nil {
		return helm(fmt.Sprintf("%s; reading its values: %v", via, err))
	}
	site := &ValuesSite{manifest: m, at: d.Source.At, value: chart.Value{
		Chart:    chart.Chart{Dir: dir, Release: releaseName(m, src), Namespace: m.App.Spec.Destination.Namespace},
		Workload: w.Kind + "/" + w.Name,
	}}
	if site.value.Chart.Namespace == "" {
		site.value.Chart.Namespace = w.Namespace
	}
	key, before, err := chart.FindValue(ix, site.value.Chart, values, site.value.Workload)
	if before != nil && before[site.value.Workload] == nil {
		return restart.Found{}, false
	}
	if err != nil {
		return helm(valuesFailed(via, err))
	}
	return valuesFound(site, key, before), true
}

// valuesFound is a workload restarted through the chart value key of the
// site's Application; before is the chart's render without kedge's value.
func valuesFound(site *ValuesSite, key []string, before chart.Render) restart.Found {
	site.value.Key = key
	m := site.manifest
	return restart.Found{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: m.File, Edit: drift.EditHelmValues,
			Detail: fmt.Sprintf("%s (release %s, value %s)", Via(&m.App), site.value.Chart.Release, chart.ValuePath(key))},
		Source:              site.Source(),
		TemplateAnnotations: document.TemplateAnnotations(before[site.value.Workload]),
		Site:                site,
	}
}

// releaseName is the release Argo CD renders the chart as: the helm
// block's releaseName, else the Application's name.
func releaseName(m *index.ArgoManifest, src *objects.ApplicationSource) string {
	if src.Helm != nil && src.Helm.ReleaseName != "" {
		return src.Helm.ReleaseName
	}
	return m.App.Name
}

// chartValues are the values Argo CD passes to Helm for a chart in dir,
// lowest precedence first: valueFiles, then values or valuesObject
// (valuesObject, when set, replaces values), then parameters. The chart's
// values.yaml is Helm's to add.
func chartValues(ix *index.Index, dir string, h *objects.ApplicationSourceHelm) (map[string]any, error) {
	out := map[string]any{}
	if h == nil {
		return out, nil
	}
	for _, f := range h.ValueFiles {
		if strings.HasPrefix(f, "$") || strings.Contains(f, "://") {
			return nil, fmt.Errorf("values file %s is not in the chart's directory", f)
		}
		data, err := ix.ReadFile(path.Join(dir, f))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = document.MergeValues(out, m)
	}
	inline := h.ValuesObject
	if inline == nil && h.Values != "" {
		if err := sigsyaml.Unmarshal([]byte(h.Values), &inline); err != nil {
			return nil, fmt.Errorf("helm.values: %w", err)
		}
	}
	out = document.MergeValues(out, inline)
	for _, p := range h.Parameters {
		set := strvals.ParseInto
		if p.ForceString {
			set = strvals.ParseIntoString
		}
		if err := set(p.Name+"="+setValue(p.Value), out); err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
	}
	return out, nil
}

// setValue is a parameter's value as Argo CD hands it to --set: every
// comma not already escaped is escaped, unless the value is a {list}.
func setValue(v string) string {
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

// valuesFailed says why the chart's values cannot restart a workload of
// the Application via: Argo CD has no post-renderer for kedge to fall back on.
func valuesFailed(via string, err error) string {
	if errors.Is(err, chart.ErrNoValue) {
		return fmt.Sprintf("%s: %v, and Argo CD has no post-renderer to patch the render with", via, err)
	}
	return fmt.Sprintf("%s: %v", via, err)
}
