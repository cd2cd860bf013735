package editcheck

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// A HelmRelease's change is proven by what helm-controller would install:
// the chart rendered with the release's values, then each post-renderer
// applied in turn, as a kustomization whose only resource is the previous
// output (https://fluxcd.io/flux/components/helm/helmreleases/#post-renderers).
// The workloads of the render before and after the change must then differ
// by the restart annotations alone, like the objects of a kustomize root.

// compareRelease renders a changed HelmRelease before and after and
// compares what it installs. A release changed in spec.values alone is
// rendered with its new values; one changed in its post-renderers alone is
// rendered with them, or judged by them alone when its chart is elsewhere.
func (c Check) compareRelease(where string, before, after *unstructured.Unstructured, deployed bool, res *Result) {
	valuesOnly := reflect.DeepEqual(without(before, []string{"spec", "values"}), without(after, []string{"spec", "values"}))
	if !valuesOnly && !reflect.DeepEqual(without(before, []string{"spec", "postRenderers"}), without(after, []string{"spec", "postRenderers"})) {
		res.problem(where, "%s changed beyond its post-renderers", name(after))
		return
	}
	_, err := c.releaseChartDir(c.Before, before)
	switch {
	case errors.Is(err, errChartElsewhere) && valuesOnly:
		res.problem(where, "%s: its values changed and its chart is not in the repository to render", name(after))
	case errors.Is(err, errChartElsewhere):
		if after.GetNamespace() == "" {
			// A release written without a namespace installs where the
			// GitOps object applying it puts it.
			if ns, ok := deepest(c.TargetNamespaces, where); ok {
				after = after.DeepCopy()
				after.SetNamespace(ns)
			}
		}
		c.comparePostRenderers(where+": "+name(after), before, after, deployed, res)
	default:
		compareRendered(c, c, where+" ("+name(after)+")", before, after, c.installed, deployed, res)
	}
}

// releaseChartDir is where the HelmRelease's chart is: in the checkout for
// a GitRepository source, the copy in Charts of a HelmRepository's chart.
func (c Check) releaseChartDir(repo string, hr *unstructured.Unstructured) (string, error) {
	spec := func(field ...string) string {
		v, _, _ := unstructured.NestedString(hr.Object, append([]string{"spec", "chart", "spec"}, field...)...)
		return v
	}
	chart, kind := spec("chart"), spec("sourceRef", "kind")
	switch {
	case chart == "":
	case kind == "GitRepository":
		return filepath.Join(repo, filepath.FromSlash(path.Clean(strings.TrimPrefix(chart, "./")))), nil
	case kind == "HelmRepository":
		namespace := spec("sourceRef", "namespace")
		if namespace == "" {
			namespace = hr.GetNamespace()
		}
		url, ok := c.HelmRepositories[namespace+"/"+spec("sourceRef", "name")]
		if dir, pulled := c.Charts[url+" "+chart+" "+spec("version")]; ok && pulled {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: %s %q", errChartElsewhere, kind, chart)
}

// errChartElsewhere: the chart is not in the checkout (a HelmRepository,
// an OCI repository), and these checks never reach the network.
var errChartElsewhere = errors.New("the chart is not in the repository")

// comparePostRenderers judges a release whose chart cannot be rendered
// here by its post-renderers alone: the list after is the list before with
// one entry added or one restart entry replaced, and that entry only sets
// the annotations of intended restarts on the pod templates of the
// workloads it targets, by kind and name, in the release's namespace.
func (c Check) comparePostRenderers(where string, before, after *unstructured.Unstructured, deployed bool, res *Result) {
	b, _, _ := unstructured.NestedSlice(before.Object, "spec", "postRenderers")
	a, _, _ := unstructured.NestedSlice(after.Object, "spec", "postRenderers")
	changed := -1
	switch {
	case len(a) == len(b)+1 && (len(b) == 0 || reflect.DeepEqual(a[:len(b)], b)):
		changed = len(b)
	case len(a) == len(b):
		for i := range a {
			if reflect.DeepEqual(a[i], b[i]) {
				continue
			}
			if changed >= 0 || c.restartsOf(b[i], after) == nil {
				res.problem(where, "post-renderers changed beyond one restart entry")
				return
			}
			changed = i
		}
	}
	if changed < 0 {
		res.problem(where, "post-renderers changed beyond one restart entry")
		return
	}
	restarts := c.restartsOf(a[changed], after)
	if restarts == nil {
		res.problem(where, "post-renderer %d does more than set intended restart annotations", changed)
		return
	}
	for _, r := range restarts {
		if deployed {
			res.Restarted[r.String()] = true
		}
	}
}

// restartsOf returns the intended restarts a post-renderer entry carries,
// or nil when it does anything else: images, a patch that is not a
// strategic merge of pod template annotations, or annotations no intended
// restart of the release's namespace has.
func (c Check) restartsOf(entry any, release *unstructured.Unstructured) []Restart {
	patches := restartPatches(entry)
	var out []Restart
	for _, p := range patches {
		pm, _ := p.(map[string]any)
		target, _ := pm["target"].(map[string]any)
		text, _ := pm["patch"].(string)
		var body map[string]any
		if yaml.Unmarshal([]byte(text), &body) != nil {
			return nil
		}
		r := c.restartFor(releaseNamespace(release), target, body)
		if r == nil {
			return nil
		}
		out = append(out, *r)
	}
	return out
}

// restartPatches is the patches of a post-renderer entry that is one
// kustomize block of patches and nothing else; nil for any other entry.
func restartPatches(entry any) []any {
	m, _ := entry.(map[string]any)
	k, _ := m["kustomize"].(map[string]any)
	patches, _ := k["patches"].([]any)
	if len(m) != 1 || len(k) != 1 {
		return nil
	}
	return patches
}

// restartFor finds the intended restart a patch of target is: its body
// names the target and sets exactly that restart's annotations.
func (c Check) restartFor(namespace string, target, body map[string]any) *Restart {
	for k := range target {
		if k != "kind" && k != "name" && k != "group" && k != "version" {
			return nil
		}
	}
	for i, r := range c.Restarts {
		if r.Kind == target["kind"] && r.Name == target["name"] && r.Namespace == namespace && isRestartPatch(body, r.Kind, r.Name, r.Annotations) {
			return &c.Restarts[i]
		}
	}
	return nil
}

// releaseNamespace is where a HelmRelease installs: its targetNamespace,
// else its own.
func releaseNamespace(hr *unstructured.Unstructured) string {
	if t, _, _ := unstructured.NestedString(hr.Object, "spec", "targetNamespace"); t != "" {
		return t
	}
	return hr.GetNamespace()
}

// installed renders what helm-controller installs for a HelmRelease of the
// checkout at repo: a chart the repository holds (a GitRepository source),
// with the release's inline values, and its post-renderers.
func (c Check) installed(repo string, hr *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	dir, err := c.releaseChartDir(repo, hr)
	if err != nil {
		return nil, err
	}
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	values, _, _ := unstructured.NestedMap(hr.Object, "spec", "values")
	namespace := releaseNamespace(hr)
	rendered, err := renderChart(chrt, values, releaseName(hr), namespace)
	if err != nil {
		return nil, err
	}
	postRenderers, _, _ := unstructured.NestedSlice(hr.Object, "spec", "postRenderers")
	for i, pr := range postRenderers {
		k, _ := pr.(map[string]any)["kustomize"].(map[string]any)
		if k == nil {
			continue
		}
		if rendered, err = postRender(rendered, k); err != nil {
			return nil, fmt.Errorf("post-renderer %d: %w", i, err)
		}
	}
	return decodeInstalled(rendered, namespace)
}

// releaseName is Flux's default: the release's name, prefixed with its
// target namespace when it has one, unless spec.releaseName says otherwise.
func releaseName(hr *unstructured.Unstructured) string {
	if n, _, _ := unstructured.NestedString(hr.Object, "spec", "releaseName"); n != "" {
		return n
	}
	if t, _, _ := unstructured.NestedString(hr.Object, "spec", "targetNamespace"); t != "" {
		return t + "-" + hr.GetName()
	}
	return hr.GetName()
}

// postRender applies one kustomize post-renderer the way helm-controller
// does: a kustomization in memory whose resource is the rendered stream,
// with the entry's patches and images, built with plugins off.
func postRender(manifests []byte, spec map[string]any) ([]byte, error) {
	var entry struct {
		Patches []types.Patch `json:"patches"`
		Images  []types.Image `json:"images"`
	}
	if err := convert(spec, &entry); err != nil {
		return nil, err
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile("helm-output.yaml", manifests); err != nil {
		return nil, err
	}
	k := types.Kustomization{Resources: []string{"helm-output.yaml"}, Patches: entry.Patches, Images: entry.Images}
	k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
	kdata, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", kdata); err != nil {
		return nil, err
	}
	opts := &krusty.Options{LoadRestrictions: types.LoadRestrictionsNone, PluginConfig: types.DisabledPluginConfig()}
	rm, err := krusty.MakeKustomizer(opts).Run(fs, ".")
	if err != nil {
		return nil, err
	}
	return rm.AsYaml()
}

// renderChart renders a chart as `helm install` would, its manifests in
// Helm's install order as one YAML stream.
func renderChart(chrt *chart.Chart, values map[string]any, release, namespace string) ([]byte, error) {
	top, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var stream bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&stream, "---\n%s\n", m.Content)
	}
	return stream.Bytes(), nil
}

// decodeInstalled decodes a rendered release; Helm installs an object that
// names no namespace in the release's.
func decodeInstalled(rendered []byte, namespace string) ([]*unstructured.Unstructured, error) {
	objs, err := decodeStream(rendered)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetNamespace() == "" {
			o.SetNamespace(namespace)
		}
	}
	return objs, nil
}
