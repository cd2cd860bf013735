package argo

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
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
	refs  []Ref
	value chart.Value
	// namespace is the workload's.
	namespace string
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

// CheckKey groups the restarts of one release: its chart is rendered once
// with all of them.
func (s *ValuesSite) CheckKey() string {
	return fmt.Sprintf("argo values %s#%d %s", s.manifest.File, s.manifest.Document, s.at)
}

// Group names the workloads that share the site's value.
func (s *ValuesSite) Group() []restart.WorkloadID { return s.value.GroupIDs(s.namespace) }

// Check renders the chart with the source as it was and as edited.
func (s *ValuesSite) Check(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent) error {
	return s.value.CheckAll(ix, e, intents, func(data []byte) (map[string]any, error) {
		src, err := sourceAt(data, s.manifest.Document, s.at)
		if err != nil {
			return nil, err
		}
		return chartValues(ix, s.value.Chart, src.Helm, s.refs)
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

// Locating is what locating a workload of a chart knows of the rest of
// the plan and the cluster.
type Locating struct {
	// Prober probes a release's values for all its drifted workloads.
	Prober *chart.Prober
	// Readers name, by repo-relative values file, the Application sources
	// of the cluster that read it.
	Readers map[string][]string
}

// LocateChart finds the chart value restarting w, a workload the chart in
// dir renders for the Application source d, probed together with the other
// drifted workloads at.Prober knows of; when no value reaches it and no
// other release (others) renders the chart, the chart's template. What
// kedge cannot edit keeps the status helm, with the reason. renders is
// false when the chart, rendered, has no such workload.
func LocateChart(ix *index.Index, w drift.Workload, d *Directory, via, dir string, at Locating, others []string) (found restart.Found, renders bool) {
	via += " renders the chart in " + dir
	if d == nil {
		return helmFound(via + "; its Application source is not known"), true
	}
	c := chart.Chart{Dir: dir, Namespace: cmp.Or(d.Namespace, w.Namespace)}
	found, renders = locateValues(ix, w, d.Source, d.Helm, d.Refs, c, via, at)
	if !renders || found.Manifest.Status != drift.ManifestHelm || !strings.Contains(found.Manifest.Detail, ": "+chart.NoValue) {
		return found, renders
	}
	// No value reaches the pod template: the chart's template, the
	// repository's own file, can carry the annotations when this release
	// alone renders the chart.
	if len(others) > 0 {
		found.Manifest.Detail = fmt.Sprintf("%s: %s, and %s render the chart too, so editing its template would restart theirs as well", via, chart.NoValue, strings.Join(others, ", "))
		return found, true
	}
	helm := d.Helm
	if m, src := manifestOf(ix, d.Source, dir); m != nil {
		helm = src.Helm
	}
	c.Release = cmp.Or(releaseOf(helm), d.Source.Name)
	values, err := chartValues(ix, c, helm, d.Refs)
	if err != nil {
		return found, true
	}
	site, before, err := chart.TemplateOf(ix, c, values, w.Kind+"/"+w.Name)
	if err != nil {
		found.Manifest.Detail = fmt.Sprintf("%s: %s, and its template cannot carry one: %v", via, chart.NoValue, err)
		return found, true
	}
	return restart.Found{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: site.File(), Edit: drift.EditHelmTemplate,
			Detail: fmt.Sprintf("%s, alone; no value reaches the pod template, so the restart goes in the chart's template", via)},
		Source:              site.Source(),
		TemplateAnnotations: document.TemplateAnnotations(before[w.Kind+"/"+w.Name]),
		Site:                site,
	}, true
}

// releaseOf is the release name a helm block sets, "" when none.
func releaseOf(h *objects.ApplicationSourceHelm) string {
	if h == nil {
		return ""
	}
	return h.ReleaseName
}

// locateValues probes the chart c of the Application source ref, whose
// helm block the cluster runs is helm, for w's value, and turns it into a
// site in the Application's copy in the repository.
func locateValues(ix *index.Index, w drift.Workload, ref SourceRef, helm *objects.ApplicationSourceHelm, refs []Ref, c chart.Chart, via string, at Locating) (restart.Found, bool) {
	clusterHelm := helm
	m, src := manifestOf(ix, ref, sourcePath(c))
	if m != nil {
		// The repository's copy is what an edit changes.
		helm = src.Helm
	}
	c.Release = ref.Name
	if helm != nil && helm.ReleaseName != "" {
		c.Release = helm.ReleaseName
	}
	values, err := chartValues(ix, c, helm, refs)
	if err != nil {
		return helmFound(fmt.Sprintf("%s; reading its values: %v", via, err)), true
	}
	workload := w.Kind + "/" + w.Name
	f, err := at.Prober.Find(ix, c, values, w.Namespace, workload)
	switch {
	case err != nil:
		return helmFound(fmt.Sprintf("%s: %v", via, err)), true
	case f.Before[workload] == nil:
		return restart.Found{}, false
	case f.Errs[workload] != nil:
		return helmFound(valuesFailed(via, f.Errs[workload])), true
	case m == nil:
		// The Application is not the repository's: its values files may be.
		readers := slices.DeleteFunc(slices.Clone(at.Readers[lastValuesFile(c, clusterHelm, refs)]), func(v string) bool { return v == readerName(ref) })
		site, err := valuesFileSite(ix, c, clusterHelm, refs, f.Keys[workload], f.Groups[workload], w.Namespace, via, map[string][]string{lastValuesFile(c, clusterHelm, refs): readers})
		if err != nil {
			return helmFound(fmt.Sprintf("%s; chart value %s would restart it, but %s, and %v", via, chart.ValuePath(f.Keys[workload]), notInRepository(ix, ref), err)), true
		}
		return valuesFileFound(site, workload, f.Before), true
	}
	site := &ValuesSite{manifest: m, at: ref.At, refs: refs, namespace: w.Namespace, value: chart.Value{
		Chart: c, Key: f.Keys[workload], Workload: workload, Group: f.Groups[workload],
	}}
	return valuesFound(site, f.Before), true
}

// sourcePath is the path an Application source names for a chart: the
// chart's directory, or "." for a chart of a chart repository.
func sourcePath(c chart.Chart) string {
	if c.Dir == "" {
		return "."
	}
	return c.Dir
}

// notInRepository says why the Application of ref has no copy in the
// repository kedge could write the value into.
func notInRepository(ix *index.Index, ref SourceRef) string {
	for _, m := range ix.ArgoManifests() {
		if m.App.Name == ref.Name && (m.App.Namespace == "" || m.App.Namespace == ref.Namespace) {
			return fmt.Sprintf("Application %s/%s is written in %s without this source", ref.Namespace, ref.Name, m.File)
		}
	}
	return fmt.Sprintf("Application %s/%s is not written in the repository", ref.Namespace, ref.Name)
}

func helmFound(detail string) restart.Found {
	return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: detail}}
}

// valuesFound is a workload restarted through the chart value of the
// site's Application; before is the chart's render without kedge's value.
func valuesFound(site *ValuesSite, before chart.Render) restart.Found {
	m := site.manifest
	detail := fmt.Sprintf("%s (release %s, value %s)", Via(&m.App), site.value.Chart.Release, chart.ValuePath(site.value.Key))
	if len(site.value.Group) > 1 {
		detail = fmt.Sprintf("%s (release %s, value %s, shared by %s)", Via(&m.App), site.value.Chart.Release, chart.ValuePath(site.value.Key), strings.Join(site.value.Group, ", "))
	}
	return restart.Found{
		Manifest:            drift.Manifest{Status: drift.ManifestFound, Path: m.File, Edit: drift.EditHelmValues, Detail: detail},
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

// chartValues are the values Argo CD's repo server passes to Helm for the
// chart c, lowest precedence first: valueFiles in their order (relative to
// the chart's directory, or $<ref>/<path> at the root of a ref source's
// repository; a missing one skipped under ignoreMissingValueFiles), then
// values or valuesObject (valuesObject, when set, replaces values), then
// parameters. The chart's values.yaml is Helm's to add.
func chartValues(ix *index.Index, c chart.Chart, h *objects.ApplicationSourceHelm, refs []Ref) (map[string]any, error) {
	return chartValuesReplaced(ix, c, h, refs, nil)
}

// chartValuesReplaced is chartValues with replace (repo-relative paths)
// standing in for the content of values files.
func chartValuesReplaced(ix *index.Index, c chart.Chart, h *objects.ApplicationSourceHelm, refs []Ref, replace map[string][]byte) (map[string]any, error) {
	out := map[string]any{}
	if h == nil {
		return out, nil
	}
	for _, f := range h.ValueFiles {
		file, err := valuesFile(c, f, refs)
		if err != nil {
			return nil, err
		}
		data, replaced := replace[file]
		if !replaced {
			data, err = ix.ReadFile(file)
		}
		if errors.Is(err, fs.ErrNotExist) && h.IgnoreMissingValueFiles {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
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

// valuesFile is the repo-relative file a values file entry names: $<ref>/
// is the root of the ref source's repository, which must be this one; any
// other entry is relative to the chart's directory, which must be in the
// repository.
func valuesFile(c chart.Chart, f string, refs []Ref) (string, error) {
	if name, rest, ok := strings.Cut(f, "/"); ok && strings.HasPrefix(name, "$") {
		for _, r := range refs {
			if "$"+r.Name != name {
				continue
			}
			if !r.Indexed {
				return "", fmt.Errorf("values file %s is read from %s, another repository than this one", f, r.RepoURL)
			}
			return cleanValuesPath(rest, f)
		}
		return "", fmt.Errorf("values file %s names no ref source of the Application", f)
	}
	switch {
	case strings.Contains(f, "://"):
		return "", fmt.Errorf("values file %s is fetched from an address, which kedge does not", f)
	case strings.ContainsAny(f, "*?["):
		return "", fmt.Errorf("values file %s is a glob pattern, which kedge does not expand", f)
	case c.Dir == "":
		return "", fmt.Errorf("values file %s is read from the pulled chart, which kedge does not", f)
	case strings.HasPrefix(f, "/"):
		return cleanValuesPath(f, f)
	}
	return cleanValuesPath(path.Join(c.Dir, f), f)
}

func cleanValuesPath(p, entry string) (string, error) {
	p = path.Clean(strings.TrimPrefix(p, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("values file %s is outside the repository", entry)
	}
	return p, nil
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

// lastValuesFile is the repo-relative file of a helm block's last values
// file, "" when it has none in the repository.
func lastValuesFile(c chart.Chart, h *objects.ApplicationSourceHelm, refs []Ref) string {
	if h == nil || len(h.ValueFiles) == 0 {
		return ""
	}
	f, err := valuesFile(c, h.ValueFiles[len(h.ValueFiles)-1], refs)
	if err != nil {
		return ""
	}
	return f
}

// readerName names an Application source among the readers of values
// files.
func readerName(ref SourceRef) string { return ref.Namespace + "/" + ref.Name + " " + ref.At }

// ValuesReaders lists, by repo-relative values file, the Application
// sources of the cluster that read it: each source with a helm block's
// values files in the repository (indexed tells a ref source of it).
func ValuesReaders(apps []objects.Application, indexed func(*objects.Application, objects.ApplicationSource) bool) map[string][]string {
	var out map[string][]string
	for i := range apps {
		app := &apps[i]
		refs := RefsOf(app, func(s objects.ApplicationSource) bool { return indexed(app, s) })
		for _, s := range Sources(app) {
			if s.Src.Helm == nil || s.Src.Chart == "" && !indexed(app, s.Src) {
				continue
			}
			c := chart.Chart{Dir: cleanPath(s.Src.Path)}
			if s.Src.Chart != "" {
				c.Dir = ""
			}
			for _, f := range s.Src.Helm.ValueFiles {
				if file, err := valuesFile(c, f, refs); err == nil {
					name := readerName(SourceRef{Namespace: app.Namespace, Name: app.Name, At: s.At})
					if out == nil {
						out = map[string][]string{}
					}
					if !slices.Contains(out[file], name) {
						out[file] = append(out[file], name)
					}
				}
			}
		}
	}
	return out
}
