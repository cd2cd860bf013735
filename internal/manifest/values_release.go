package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// A team that prefers values (config helm.prefer: values) has a workload
// of a Flux HelmRelease restarted through a chart value in the release's
// spec.values instead of a post-renderer, when the chart is in the
// repository (a GitRepository source), or pulled before the plan from the
// cluster's HelmRepository the release names, and has such a value.
// Anything else keeps the post-renderer, which works for every chart.

// releaseSpec is what a HelmRelease says about rendering its chart.
type releaseSpec struct {
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
	} `json:"spec"`
}

// releaseValues returns loc turned into a values edit of the HelmRelease
// it names, or false when the release's chart has no value for w.
func (ix *Index) releaseValues(w drift.Workload, loc Location, hints Hints) (Location, bool) {
	if loc.release == nil || loc.release.overlay {
		return loc, false
	}
	hr, err := ix.releaseSpecAt(loc.Source)
	// valuesFrom reads ConfigMaps and Secrets of the cluster, which a
	// render of the repository does not see.
	if err != nil || hr.Spec.Chart.Spec.Chart == "" || len(hr.Spec.ValuesFrom) > 0 {
		return loc, false
	}
	site := &valuesSite{release: fluxReleaseName(loc.release.ref, hr), namespace: loc.release.ref.Namespace,
		workload: w.Kind + "/" + w.Name, helmRelease: &loc.Source}
	if !ix.releaseChart(hr, loc.release.ref.Namespace, hints, site) {
		return loc, false
	}
	if hr.Spec.TargetNamespace != "" {
		site.namespace = hr.Spec.TargetNamespace
	}
	key, before, err := ix.findPodAnnotationValue(site.chart(), hr.Spec.Values, site.workload)
	if err != nil {
		return loc, false
	}
	site.key = key
	out := loc
	out.release = nil
	out.values = site
	out.Manifest.Edit = drift.EditHelmValues
	out.Manifest.Detail = fmt.Sprintf("%s (release %s, value %s)", loc.release.ref, site.release, valuePathString(key))
	out.TemplateAnnotations = templateAnnotations(before[site.workload])
	return out, true
}

// releaseSpecAt reads the HelmRelease of the repository at src.
func (ix *Index) releaseSpecAt(src Source) (releaseSpec, error) {
	var hr releaseSpec
	data, err := ix.readInside(src.Path)
	if err != nil {
		return hr, err
	}
	body, err := objectAt(data, src.Document)
	if err != nil {
		return hr, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return hr, err
	}
	return hr, json.Unmarshal(raw, &hr)
}

// releaseChart points the site at the release's chart: a directory of the
// checkout for a GitRepository source, the pulled archive for a
// HelmRepository one. false when kedge has no copy of the chart.
func (ix *Index) releaseChart(hr releaseSpec, namespace string, hints Hints, site *valuesSite) bool {
	spec := hr.Spec.Chart.Spec
	switch spec.SourceRef.Kind {
	case "GitRepository":
		dir := cleanRepoPath(spec.Chart)
		site.chartDir = dir
		return ix.chartIn(dir)
	case "HelmRepository":
		url, ok := helmRepositoryURL(hints.helmRepositories, sourceNamespace(spec.SourceRef.Namespace, namespace), spec.SourceRef.Name)
		if !ok {
			return false
		}
		pulled := hints.pulled[ChartKey(url, spec.Chart, spec.Version)]
		site.chartArchive = pulled.Archive
		return pulled.Archive != ""
	}
	return false
}

// sourceNamespace is the namespace of a Flux source reference, which
// defaults to the referring object's.
func sourceNamespace(ref, referrer string) string {
	if ref != "" {
		return ref
	}
	return referrer
}

// helmRepositoryURL is the URL of the HelmRepository namespace/name; an
// empty namespace (a HelmRelease of the repository that does not say)
// matches any.
func helmRepositoryURL(repos []objects.HelmRepository, namespace, name string) (string, bool) {
	for _, r := range repos {
		if r.Name == name && (namespace == "" || r.Namespace == namespace) && r.Spec.URL != "" {
			return r.Spec.URL, true
		}
	}
	return "", false
}

// HelmRepositoryCharts are the charts the repository's HelmReleases take
// from the cluster's HelmRepositories, to pull before the plan: the index
// reads files only.
func (ix *Index) HelmRepositoryCharts(repos []objects.HelmRepository) []ChartRef {
	var out []ChartRef
	seen := map[string]bool{}
	for _, obj := range ix.objects {
		if !isHelmReleaseKind(obj.APIVersion, obj.Kind) {
			continue
		}
		hr, err := ix.releaseSpecAt(obj.Source)
		spec := hr.Spec.Chart.Spec
		if err != nil || spec.SourceRef.Kind != "HelmRepository" || spec.Chart == "" {
			continue
		}
		url, ok := helmRepositoryURL(repos, sourceNamespace(spec.SourceRef.Namespace, obj.Namespace), spec.SourceRef.Name)
		ref := ChartRef{RepoURL: url, Chart: spec.Chart, Version: spec.Version}
		if !ok || seen[ref.Key()] {
			continue
		}
		seen[ref.Key()] = true
		out = append(out, ref)
	}
	return out
}

// fluxReleaseName is helm-controller's default release name: the
// HelmRelease's name, prefixed with its target namespace when it has one,
// unless spec.releaseName says otherwise.
func fluxReleaseName(ref ReleaseRef, hr releaseSpec) string {
	switch {
	case hr.Spec.ReleaseName != "":
		return hr.Spec.ReleaseName
	case hr.Spec.TargetNamespace != "":
		return hr.Spec.TargetNamespace + "-" + ref.Name
	}
	return ref.Name
}

// releaseValuesOf reads spec.values of the HelmRelease at document doc.
func releaseValuesOf(data []byte, doc int) (map[string]any, error) {
	body, err := objectAt(data, doc)
	if err != nil {
		return nil, err
	}
	spec, _ := body["spec"].(map[string]any)
	values, _ := spec["values"].(map[string]any)
	return values, nil
}

// objectAt decodes object doc of a file, counted as Target.Document counts
// (each item of a List one object).
func objectAt(data []byte, doc int) (map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	meter := yamlguard.NewMeter(yamlguard.Repository)
	for index := 0; ; {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no object %d in the file", doc)
		}
		if err != nil {
			return nil, err
		}
		if err := meter.Add(&node); err != nil {
			return nil, err
		}
		if len(node.Content) == 0 {
			continue
		}
		n := node.Content[0]
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			continue
		}
		if items := lookup(n, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(scalarAt(n, "kind"), "List") {
			if doc < index+len(items.Content) {
				var out map[string]any
				return out, items.Content[doc-index].Decode(&out)
			}
			index += len(items.Content)
			continue
		}
		if index == doc {
			var out map[string]any
			return out, n.Decode(&out)
		}
		index++
	}
}
