package editcheck

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// ArgoApply is what an Argo CD Application's kustomize block does to the
// identity of what its source's path renders: `kustomize edit set
// nameprefix`, `namesuffix` and `namespace` replace the kustomization's own
// (https://argo-cd.readthedocs.io/en/stable/user-guide/kustomize/).
type ArgoApply struct {
	NamePrefix, NameSuffix, Namespace string
}

// identity is the namespace and name o, rendered by the kustomization k,
// is applied under.
func (a ArgoApply) identity(o *unstructured.Unstructured, k *types.Kustomization) (namespace, name string) {
	namespace, name = o.GetNamespace(), o.GetName()
	if k == nil {
		return namespace, name
	}
	if a.NamePrefix != "" {
		name = a.NamePrefix + strings.TrimPrefix(name, k.NamePrefix)
	}
	if a.NameSuffix != "" {
		name = strings.TrimSuffix(name, k.NameSuffix) + a.NameSuffix
	}
	if a.Namespace != "" {
		namespace = a.Namespace
	}
	return namespace, name
}

// compareArgo holds a changed Application to the promise: only its
// sources' kustomize.patches change, or only their helm values
// (valuesObject, values, parameters), and what Argo CD's repo server
// renders for each changed source changes nothing but intended restarts.
func (c Check) compareArgo(where string, b, a *unstructured.Unstructured, res *Result) {
	label := "Argo CD Application " + a.GetNamespace() + "/" + a.GetName()
	before, after := sourcesOf(b), sourcesOf(a)
	render := buildArgo
	switch {
	case len(before) != len(after):
		res.problem(where, "%s: changes beyond the sources' kustomize.patches", label)
		return
	case reflect.DeepEqual(withoutSourceFields(b, "helm", "values", "valuesObject", "parameters"), withoutSourceFields(a, "helm", "values", "valuesObject", "parameters")):
		// An Application whose source path holds a chart is rendered with
		// `helm template` and the source's helm block.
		namespace, _, _ := unstructured.NestedString(a.Object, "spec", "destination", "namespace")
		refs := c.refsOf(a)
		render = func(repo string, source map[string]any) ([]*unstructured.Unstructured, error) {
			return renderArgoChartRefs(repo, c.Charts, a.GetName(), namespace, source, refs)
		}
	case !reflect.DeepEqual(withoutSourceFields(b, "kustomize", "patches"), withoutSourceFields(a, "kustomize", "patches")):
		res.problem(where, "%s: changes beyond the sources' kustomize.patches", label)
		return
	}
	inner := c
	inner.TargetNamespaces, inner.Flux, inner.Argo = nil, nil, nil
	for i := range after {
		if !reflect.DeepEqual(before[i], after[i]) {
			compareRendered(c, inner, fmt.Sprintf("%s (%s, source %d)", where, label, i), before[i], after[i], render, true, res)
		}
	}
}

// sourcesOf lists the sources Argo CD reads: spec.sources, else
// spec.source.
func sourcesOf(o *unstructured.Unstructured) []map[string]any {
	if list, ok, _ := unstructured.NestedSlice(o.Object, "spec", "sources"); ok && len(list) > 0 {
		out := make([]map[string]any, len(list))
		for i, s := range list {
			out[i], _ = s.(map[string]any)
		}
		return out
	}
	if s, ok, _ := unstructured.NestedMap(o.Object, "spec", "source"); ok {
		return []map[string]any{s}
	}
	return nil
}

// withoutSourceFields is a copy of an Application's body with the fields
// of the block (kustomize, helm) of every source removed, and the block
// too when nothing else is in it.
func withoutSourceFields(o *unstructured.Unstructured, block string, fields ...string) map[string]any {
	out := runtime.DeepCopyJSON(o.Object)
	strip := func(src any) {
		s, _ := src.(map[string]any)
		b, ok := s[block].(map[string]any)
		if !ok {
			return
		}
		for _, f := range fields {
			delete(b, f)
		}
		if len(b) == 0 {
			delete(s, block)
		}
	}
	spec, _ := out["spec"].(map[string]any)
	strip(spec["source"])
	list, _ := spec["sources"].([]any)
	for _, s := range list {
		strip(s)
	}
	return out
}

// buildArgo builds a kustomize source of an Application in a checkout the
// way Argo CD's repo server does: it edits the path's kustomization (which
// must exist) with the source's kustomize options, then builds it.
func buildArgo(repo string, source map[string]any) ([]*unstructured.Unstructured, error) {
	var src struct {
		Path      string `json:"path"`
		Kustomize struct {
			NamePrefix        string            `json:"namePrefix"`
			NameSuffix        string            `json:"nameSuffix"`
			Namespace         string            `json:"namespace"`
			CommonLabels      map[string]string `json:"commonLabels"`
			ForceCommonLabels bool              `json:"forceCommonLabels"`
			Images            []string          `json:"images"`
			Patches           []types.Patch     `json:"patches"`
			Components        []string          `json:"components"`
		} `json:"kustomize"`
	}
	if err := convert(source, &src); err != nil {
		return nil, err
	}
	dir, err := pathIn(repo, src.Path)
	if err != nil {
		return nil, err
	}
	kus, file, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	if kus == nil {
		return nil, fmt.Errorf("%s has no kustomization file", src.Path)
	}
	opts := src.Kustomize
	kus.Namespace = cmp.Or(opts.Namespace, kus.Namespace)
	kus.NamePrefix = cmp.Or(opts.NamePrefix, kus.NamePrefix)
	kus.NameSuffix = cmp.Or(opts.NameSuffix, kus.NameSuffix)
	for _, arg := range opts.Images {
		kus.Images = withImage(kus.Images, imageFromArg(arg))
	}
	for k, v := range opts.CommonLabels {
		if kus.CommonLabels == nil {
			kus.CommonLabels = map[string]string{}
		}
		if _, taken := kus.CommonLabels[k]; taken && !opts.ForceCommonLabels {
			return nil, fmt.Errorf("label %s is set already", k)
		}
		kus.CommonLabels[k] = v
	}
	kus.Patches = append(kus.Patches, opts.Patches...)
	for _, comp := range opts.Components {
		if !slices.Contains(kus.Components, comp) {
			kus.Components = append(kus.Components, comp)
		}
	}
	return buildEdited(dir, file, kus)
}

// imageFromArg reads `kustomize edit set image` arguments: [name=]ref,
// where ref may end in :tag or @digest.
func imageFromArg(arg string) types.Image {
	var img types.Image
	old, ref, renamed := strings.Cut(arg, "=")
	if !renamed {
		ref = arg
	}
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref, img.Digest = ref[:i], ref[i+1:]
	} else if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref, img.NewTag = ref[:i], ref[i+1:]
	}
	img.Name = ref
	if renamed {
		img.Name = old
		if ref != old && ref != "*" {
			img.NewName = ref
		}
	}
	return img
}

func withImage(list []types.Image, img types.Image) []types.Image {
	out := append([]types.Image{}, list...)
	for i := range out {
		if out[i].Name == img.Name {
			out[i] = img
			return out
		}
	}
	return append(out, img)
}

// renderArgoChart renders the chart at a source's path in a checkout as
// Argo CD's repo server does: valueFiles, then values or valuesObject
// (valuesObject replaces values), then parameters
// (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/); objects
// without a namespace land in the destination's.
func renderArgoChart(repo string, charts map[string]string, app, namespace string, source map[string]any) ([]*unstructured.Unstructured, error) {
	return renderArgoChartWith(repo, charts, app, namespace, source, nil)
}

// renderArgoChartWith is renderArgoChart with the values of files read
// already (files, lowest precedence first) under those the source names.
func renderArgoChartWith(repo string, charts map[string]string, app, namespace string, source map[string]any, files []map[string]any) ([]*unstructured.Unstructured, error) {
	var src struct {
		Path           string `json:"path"`
		RepoURL        string `json:"repoURL"`
		Chart          string `json:"chart"`
		TargetRevision string `json:"targetRevision"`
		Helm           struct {
			ReleaseName  string         `json:"releaseName"`
			ValueFiles   []string       `json:"valueFiles"`
			Values       string         `json:"values"`
			ValuesObject map[string]any `json:"valuesObject"`
			Parameters   []struct {
				Name        string `json:"name"`
				Value       string `json:"value"`
				ForceString bool   `json:"forceString"`
			} `json:"parameters"`
		} `json:"helm"`
	}
	if err := convert(source, &src); err != nil {
		return nil, err
	}
	dir, err := pathIn(repo, src.Path)
	if err != nil {
		return nil, err
	}
	if src.Chart != "" {
		var ok bool
		if dir, ok = charts[src.RepoURL+" "+src.Chart+" "+src.TargetRevision]; !ok {
			return nil, fmt.Errorf("no copy of chart %s %s from %s", src.Chart, src.TargetRevision, src.RepoURL)
		}
	}
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	layer := func(over map[string]any) { values = chartutil.MergeTables(over, values) }
	for _, f := range files {
		layer(f)
	}
	for _, f := range src.Helm.ValueFiles {
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		layer(m)
	}
	inline := src.Helm.ValuesObject
	if inline == nil {
		if err := yaml.Unmarshal([]byte(src.Helm.Values), &inline); err != nil {
			return nil, err
		}
	}
	if inline != nil {
		layer(inline)
	}
	for _, p := range src.Helm.Parameters {
		parse := strvals.ParseInto
		if p.ForceString {
			parse = strvals.ParseIntoString
		}
		if err := parse(p.Name+"="+p.Value, values); err != nil {
			return nil, err
		}
	}
	release := src.Helm.ReleaseName
	if release == "" {
		release = app
	}
	rendered, err := renderChart(chrt, values, release, namespace)
	if err != nil {
		return nil, err
	}
	return decodeInstalled(rendered, namespace)
}

// refsOf are the ref: sources of an Application that read the checkout (the
// repository Check.Repository names).
func (c Check) refsOf(app *unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, src := range sourcesOf(app) {
		ref, _ := src["ref"].(string)
		url, _ := src["repoURL"].(string)
		if ref != "" && c.Repository != "" && sameRepository(url, c.Repository) {
			out[ref] = true
		}
	}
	return out
}

// sameRepository compares two repository addresses as host/owner/name.
func sameRepository(a, b string) bool {
	norm := func(u string) string {
		u = strings.ToLower(strings.TrimSpace(u))
		u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
		for _, p := range []string{"https://", "http://", "ssh://", "git@"} {
			u = strings.TrimPrefix(u, p)
		}
		return strings.Replace(u, ":", "/", 1)
	}
	return norm(a) == norm(b)
}
