package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// A team that prefers values (config helm.prefer: values) has a workload
// of a Flux HelmRelease restarted through a chart value in the release's
// spec.values instead of a post-renderer, when the chart is in the
// repository (a GitRepository source) and has such a value. Anything else
// keeps the post-renderer, which works for every chart.

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
				SourceRef struct {
					Kind string `json:"kind"`
				} `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart"`
	} `json:"spec"`
}

// releaseValues returns loc turned into a values edit of the HelmRelease
// it names, or false when the release's chart has no value for w.
func (ix *Index) releaseValues(w drift.Workload, loc Location) (Location, bool) {
	if loc.release == nil || loc.release.overlay {
		return loc, false
	}
	data, err := ix.readInside(loc.Source.Path)
	if err != nil {
		return loc, false
	}
	body, err := objectAt(data, loc.Source.Document)
	if err != nil {
		return loc, false
	}
	var hr releaseSpec
	if raw, err := json.Marshal(body); err != nil || json.Unmarshal(raw, &hr) != nil {
		return loc, false
	}
	chartPath := hr.Spec.Chart.Spec.Chart
	// valuesFrom reads ConfigMaps and Secrets of the cluster, which a
	// render of the repository does not see.
	if hr.Spec.Chart.Spec.SourceRef.Kind != "GitRepository" || chartPath == "" || len(hr.Spec.ValuesFrom) > 0 {
		return loc, false
	}
	dir := cleanRepoPath(chartPath)
	if !ix.chartIn(dir) {
		return loc, false
	}
	chrt, err := loader.Load(ix.abs(dir))
	if err != nil {
		return loc, false
	}
	site := &valuesSite{release: fluxReleaseName(loc.release.ref, hr), namespace: loc.release.ref.Namespace,
		chartDir: dir, workload: w.Kind + "/" + w.Name, helmRelease: &loc.Source}
	if hr.Spec.TargetNamespace != "" {
		site.namespace = hr.Spec.TargetNamespace
	}
	key, before, err := findPodAnnotationValue(chrt, hr.Spec.Values, site.release, site.namespace, site.workload)
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
