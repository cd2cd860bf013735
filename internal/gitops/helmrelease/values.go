package helmrelease

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/untrusted"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

// A team that prefers values (config helm.prefer: values) has a workload
// of a Flux HelmRelease restarted through a chart value in the release's
// spec.values instead of a post-renderer, when the chart is in the
// repository (a GitRepository source), or pulled before the plan from the
// cluster's HelmRepository the release names, and has such a value.
// Anything else keeps the post-renderer, which works for every chart.

// ValuesOptions are where a HelmRelease's chart comes from.
type ValuesOptions struct {
	// HelmRepositories are the cluster's.
	HelmRepositories []objects.HelmRepository
	// Pulled are the charts pulled before the plan, by chart.Key.
	Pulled map[string]chart.Pulled
	// Prober probes a release's values for all its drifted workloads at
	// once; nil probes for each alone.
	Prober *chart.Prober
}

// spec is what a HelmRelease says about rendering its chart.
type spec struct {
	Spec struct {
		ReleaseName     string         `json:"releaseName"`
		TargetNamespace string         `json:"targetNamespace"`
		Values          map[string]any `json:"values"`
		ValuesFrom      []any          `json:"valuesFrom"`
		Chart           struct {
			Spec struct {
				Chart     string `json:"chart"`
				Version   string `json:"version"`
				SourceRef struct {
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart"`
		// ChartRef names a chart artifact another object in the cluster
		// makes (an OCIRepository, a HelmChart), instead of spec.chart.
		ChartRef struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"chartRef"`
	} `json:"spec"`
}

// ValuesSite is a chart value of a HelmRelease's spec.values that restarts
// a workload.
type ValuesSite struct {
	src   index.Source
	value chart.Value
	// namespace is the workloads'.
	namespace string
}

type valuesKind struct{}

func (s *ValuesSite) File() string                 { return s.src.Path }
func (s *ValuesSite) Kind() restart.Kind           { return valuesKind{} }
func (s *ValuesSite) Source() index.Source         { return s.src }
func (s *ValuesSite) Reads() restart.Reads         { return restart.ReadsCharts }
func (s *ValuesSite) Rendered() restart.WorkloadID { return s.value.Rendered() }

// CheckKey groups the restarts of one release: its chart is rendered once
// with all of them.
func (s *ValuesSite) CheckKey() string {
	return fmt.Sprintf("release values %s#%d", s.src.Path, s.src.Document)
}

// Group names the workloads that share the site's value.
func (s *ValuesSite) Group() []restart.WorkloadID { return s.value.GroupIDs(s.namespace) }

// Check renders the chart with the release as it was and as edited.
func (s *ValuesSite) Check(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent) error {
	return s.value.CheckAll(ix, e, intents, func(data []byte) (map[string]any, error) { return valuesOf(data, s.src.Document) })
}

func (valuesKind) Name() string { return "chart values of a Flux HelmRelease" }

func (valuesKind) Intents(restarts []restart.Restart) []restart.Intent {
	return restart.OneIntentEach(restarts)
}

func (valuesKind) Write(ix *index.Index, file string, restarts []restart.Restart) ([]restart.FileEdit, error) {
	return restart.WriteEach(ix, file, restarts, func(data []byte, r restart.Restart) ([]byte, bool, error) {
		s := r.Site.(*ValuesSite)
		return helmedit.SetChartValues(data, s.src.Document, helmedit.ValuesMap{Kind: "HelmRelease", At: "spec.values"}, s.value.Key, r.Set)
	})
}

// locateValue returns the restart of w turned into a values edit of the
// HelmRelease found, or why the release's chart gives no value for w.
func locateValue(ix *index.Index, w drift.Workload, ref Ref, found restart.Found, opts ValuesOptions) (restart.Found, string) {
	hr, err := specAt(ix, found.Source)
	switch {
	case err != nil:
		return found, fmt.Sprintf("reading %s: %v", found.Source.Path, err)
	case hr.Spec.ChartRef.Kind != "":
		cr := hr.Spec.ChartRef
		return found, fmt.Sprintf("its chart is the artifact of the %s %s/%s its spec.chartRef names, which kedge does not pull", cr.Kind, sourceNamespace(cr.Namespace, ref.Namespace), cr.Name)
	case hr.Spec.Chart.Spec.Chart == "":
		return found, "it names no chart: neither spec.chart.spec.chart nor spec.chartRef"
	case len(hr.Spec.ValuesFrom) > 0:
		// valuesFrom reads ConfigMaps and Secrets of the cluster, which a
		// render of the repository does not see.
		return found, "its valuesFrom reads the cluster's ConfigMaps and Secrets"
	}
	site := &ValuesSite{src: found.Source, namespace: w.Namespace, value: chart.Value{
		Chart:    chart.Chart{Release: releaseName(ref, hr), Namespace: ref.Namespace},
		Workload: w.Kind + "/" + w.Name,
	}}
	if why := chartOf(ix, hr, ref.Namespace, opts, &site.value.Chart); why != "" {
		return found, why
	}
	if hr.Spec.TargetNamespace != "" {
		site.value.Chart.Namespace = hr.Spec.TargetNamespace
	}
	f, err := opts.Prober.Find(ix, site.value.Chart, hr.Spec.Values, w.Namespace, site.value.Workload)
	if err == nil {
		err = f.Errs[site.value.Workload]
	}
	if err != nil {
		return found, untrusted.Error(err)
	}
	site.value.Key, site.value.Group = f.Keys[site.value.Workload], f.Groups[site.value.Workload]
	out := found
	out.Site = site
	out.Manifest.Edit = drift.EditHelmValues
	out.Manifest.Detail = fmt.Sprintf("%s (release %s, value %s)", ref, site.value.Chart.Release, chart.ValuePath(site.value.Key))
	if len(site.value.Group) > 1 {
		out.Manifest.Detail = fmt.Sprintf("%s (release %s, value %s, shared by %s)", ref, site.value.Chart.Release, chart.ValuePath(site.value.Key), strings.Join(site.value.Group, ", "))
	}
	out.TemplateAnnotations = document.TemplateAnnotations(f.Before[site.value.Workload])
	return out, ""
}

// specAt reads the HelmRelease of the repository at src.
func specAt(ix *index.Index, src index.Source) (spec, error) {
	var hr spec
	data, err := ix.ReadFile(src.Path)
	if err != nil {
		return hr, err
	}
	body, err := document.ObjectAt(data, src.Document)
	if err != nil {
		return hr, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return hr, err
	}
	return hr, json.Unmarshal(raw, &hr)
}

// chartOf points c at the release's chart: a directory of the checkout for
// a GitRepository source, the pulled archive for a HelmRepository one. It
// says why when kedge has no copy of the chart.
func chartOf(ix *index.Index, hr spec, namespace string, opts ValuesOptions, c *chart.Chart) string {
	s := hr.Spec.Chart.Spec
	switch s.SourceRef.Kind {
	case "":
		return "its spec.chart.spec.sourceRef names no kind of source"
	case "GitRepository":
		dir := route.CleanPath(s.Chart)
		c.Dir = dir
		if _, err := ix.FS().Resolve(dir); !filepath.IsLocal(dir) && dir != "." || repofs.IsOutside(err) {
			return fmt.Sprintf("its chart %s is outside the repository, and kedge reads nothing outside it", s.Chart)
		}
		if !ix.FS().IsRegular(path.Join(dir, "Chart.yaml")) {
			return fmt.Sprintf("no chart at %s in the repository", s.Chart)
		}
		return ""
	case "HelmRepository":
		sourceNS := sourceNamespace(s.SourceRef.Namespace, namespace)
		url, ok := RepositoryURL(opts.HelmRepositories, sourceNS, s.SourceRef.Name)
		if !ok {
			return fmt.Sprintf("the cluster has no HelmRepository %s/%s", sourceNS, s.SourceRef.Name)
		}
		pulled := opts.Pulled[chart.Key(url, s.Chart, s.Version)]
		c.Archive = pulled.Archive
		switch {
		case pulled.Archive != "":
			return ""
		case pulled.Error != "":
			return pulled.Error
		}
		return fmt.Sprintf("chart %s %s of %s was not pulled", s.Chart, s.Version, url)
	}
	return fmt.Sprintf("its chart comes from a %s, which kedge does not read", s.SourceRef.Kind)
}

// sourceNamespace is the namespace of a Flux source reference, which
// defaults to the referring object's.
func sourceNamespace(ref, referrer string) string {
	if ref != "" {
		return ref
	}
	return referrer
}

// RepositoryURL is the URL of the HelmRepository namespace/name; an empty
// namespace (a HelmRelease of the repository that does not say) matches
// any.
func RepositoryURL(repos []objects.HelmRepository, namespace, name string) (string, bool) {
	for _, r := range repos {
		if r.Name == name && (namespace == "" || r.Namespace == namespace) && r.Spec.URL != "" {
			return r.Spec.URL, true
		}
	}
	return "", false
}

// RepositoryCharts are the charts the repository's HelmReleases take from
// the cluster's HelmRepositories, to pull before the plan: the index reads
// files only.
func RepositoryCharts(ix *index.Index, repos []objects.HelmRepository) []chart.Ref {
	var out []chart.Ref
	seen := map[string]bool{}
	for i := range ix.Len() {
		obj := ix.Object(i)
		if !document.IsHelmRelease(obj.APIVersion, obj.Kind) {
			continue
		}
		hr, err := specAt(ix, obj.Source)
		s := hr.Spec.Chart.Spec
		if err != nil || s.SourceRef.Kind != "HelmRepository" || s.Chart == "" {
			continue
		}
		url, ok := RepositoryURL(repos, sourceNamespace(s.SourceRef.Namespace, obj.Namespace), s.SourceRef.Name)
		ref := chart.Ref{RepoURL: url, Chart: s.Chart, Version: s.Version}
		if !ok || seen[ref.Key()] {
			continue
		}
		seen[ref.Key()] = true
		out = append(out, ref)
	}
	return out
}

// releaseName is helm-controller's default release name: the HelmRelease's
// name, prefixed with its target namespace when it has one, unless
// spec.releaseName says otherwise.
func releaseName(ref Ref, hr spec) string {
	switch {
	case hr.Spec.ReleaseName != "":
		return hr.Spec.ReleaseName
	case hr.Spec.TargetNamespace != "":
		return hr.Spec.TargetNamespace + "-" + ref.Name
	}
	return ref.Name
}

// valuesOf reads spec.values of the HelmRelease at document doc.
func valuesOf(data []byte, doc int) (map[string]any, error) {
	body, err := document.ObjectAt(data, doc)
	if err != nil {
		return nil, err
	}
	s, _ := body["spec"].(map[string]any)
	values, _ := s["values"].(map[string]any)
	return values, nil
}
