package editcheck

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Applier is a GitOps object of the cluster that applies part of the
// checkout, as the cluster holds it: a Flux Kustomization or an Argo CD
// Application. Checking an edit against the appliers builds what each of
// them applies, as its controller builds it, before and after the edit.
type Applier struct {
	Object *unstructured.Unstructured
	// Dir is, for a Flux Kustomization, the repo-relative directory it
	// builds: spec.path, or where an ExternalArtifact's path is in the
	// repository.
	Dir string
	// Vars are the post-build variables a Flux Kustomization substitutes,
	// nil when it runs no substitution.
	Vars map[string]string
	// Sources lists, for an Argo CD Application, which of its sources
	// (by index in spec.sources, or 0 for spec.source) read the checkout;
	// Refs are its ref: sources of the checkout by name.
	Sources []int
	Refs    map[string]bool
}

func (a Applier) name() string {
	return a.Object.GetKind() + " " + a.Object.GetNamespace() + "/" + a.Object.GetName()
}

// compareAppliers builds what each applier applies before and after the
// edit and holds the objects to the edit's promise: what they deploy
// changes by intended restarts alone.
func (c Check) compareAppliers(res *Result) {
	for _, a := range c.Appliers {
		where := a.name()
		var before, after []*unstructured.Unstructured
		var errB, errA error
		switch a.Object.GetKind() {
		case "Kustomization":
			before, errB = a.buildFlux(c.Before)
			after, errA = a.buildFlux(c.After)
		case "Application":
			// Its charts may render differently every time.
			before, after, errB, errA = renderSettled(func() ([]*unstructured.Unstructured, error) { return c.buildApplication(c.Before, a) },
				func() ([]*unstructured.Unstructured, error) { return c.buildApplication(c.After, a) })
		default:
			res.problem(where, "not a GitOps object kedge's checks build")
			continue
		}
		switch {
		case errB != nil:
			continue // it never built: not the edit's doing
		case errA != nil:
			res.problem(where, "builds before the edit, not after: %v", errA)
			continue
		}
		inner := c
		inner.TargetNamespaces, inner.Flux, inner.Argo = nil, nil, nil
		inner.compare(where, before, after, true, res)
	}
}

// buildFlux builds a Flux Kustomization of the cluster at its directory
// as kustomize-controller does (the generator, then the post-build
// substitution with the variables known).
func (a Applier) buildFlux(repo string) ([]*unstructured.Unstructured, error) {
	k := a.Object.DeepCopy()
	if a.Dir != "" {
		_ = unstructured.SetNestedField(k.Object, a.Dir, "spec", "path")
	}
	objs, err := buildFlux(repo, k)
	if err != nil || a.Vars == nil {
		return objs, err
	}
	const disabled = "kustomize.toolkit.fluxcd.io/substitute"
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if o.GetLabels()[disabled] == "disabled" || o.GetAnnotations()[disabled] == "disabled" {
			out = append(out, o)
			continue
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		text, err := envsubst.Eval(string(data), func(v string) (string, bool) { return a.Vars[v], true })
		if err != nil {
			return nil, fmt.Errorf("substituting %s: %w", name(o), err)
		}
		s := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(text), &s.Object); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// buildApplication renders the sources of an Application that read the
// checkout as Argo CD's repo server does: a path holding a Chart.yaml with
// `helm template`, one with a kustomization with kustomize and the
// source's kustomize block, any other as a directory of manifests; a
// chart: source from its copy in Charts. Objects without a namespace land
// in the destination's.
func (c Check) buildApplication(repo string, a Applier) ([]*unstructured.Unstructured, error) {
	app := a.Object
	namespace, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace")
	sources := sourcesOf(app)
	var out []*unstructured.Unstructured
	for _, i := range a.Sources {
		if i >= len(sources) {
			return nil, fmt.Errorf("source %d is not in the Application", i)
		}
		src := sources[i]
		p, _ := src["path"].(string)
		chartName, _ := src["chart"].(string)
		dir, err := pathIn(repo, p)
		if err != nil {
			return nil, err
		}
		var objs []*unstructured.Unstructured
		_, statErr := os.Stat(filepath.Join(dir, "Chart.yaml"))
		k, _, _ := readKustomization(dir)
		_, hasDirectory := src["directory"]
		switch {
		case chartName != "" || statErr == nil:
			objs, err = renderArgoChartRefs(repo, c.Charts, app.GetName(), namespace, src, a.Refs)
		case k != nil && !hasDirectory:
			objs, err = buildArgo(repo, src)
		default:
			objs, err = argoDirectory(dir, src)
		}
		if err != nil {
			return nil, fmt.Errorf("source %d: %w", i, err)
		}
		out = append(out, objs...)
	}
	for _, o := range out {
		if o.GetNamespace() == "" && namespace != "" && namespaced(o) {
			o.SetNamespace(namespace)
		}
	}
	return out, nil
}

// namespaced reports whether an object's kind is a namespaced one, for the
// kinds a GitOps repository writes.
func namespaced(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "ClusterIssuer",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "StorageClass", "PersistentVolume", "PriorityClass":
		return false
	}
	return true
}

// argoDirectory reads a directory source: its files at the top (all below
// with recurse) that match include and not exclude, globs on the path
// relative to the source's path, `*` crossing directories
// (https://argo-cd.readthedocs.io/en/stable/user-guide/directory/).
func argoDirectory(dir string, src map[string]any) ([]*unstructured.Unstructured, error) {
	d, _ := src["directory"].(map[string]any)
	recurse, _ := d["recurse"].(bool)
	include, _ := d["include"].(string)
	exclude, _ := d["exclude"].(string)
	var out []*unstructured.Unstructured
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if p != dir && (!recurse || strings.HasPrefix(e.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		switch strings.ToLower(path.Ext(rel)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if exclude != "" && globMatch(exclude, rel) || include != "" && !globMatch(include, rel) {
			return nil
		}
		objs, err := decodeFile(p)
		if err != nil {
			return err
		}
		out = append(out, objs...)
		return nil
	})
	return out, err
}

func globMatch(pattern, name string) bool {
	g, err := glob.Compile(pattern)
	return err == nil && g.Match(name)
}

// renderArgoChartRefs renders a Helm source whose values files may name
// the checkout's ref sources ($<ref>/<path>, at the root of the checkout),
// skipping missing files under ignoreMissingValueFiles.
func renderArgoChartRefs(repo string, charts map[string]string, app, namespace string, source map[string]any, refs map[string]bool) ([]*unstructured.Unstructured, error) {
	helm, _ := source["helm"].(map[string]any)
	files, _ := helm["valueFiles"].([]any)
	if len(files) == 0 {
		return renderArgoChart(repo, charts, app, namespace, source)
	}
	ignoreMissing, _ := helm["ignoreMissingValueFiles"].(bool)
	p, _ := source["path"].(string)
	var merged []map[string]any
	for _, f := range files {
		file, _ := f.(string)
		var at string
		if ref, rest, ok := strings.Cut(file, "/"); ok && strings.HasPrefix(ref, "$") {
			if !refs[strings.TrimPrefix(ref, "$")] {
				return nil, fmt.Errorf("values file %s is read from another repository", file)
			}
			at = filepath.Join(repo, filepath.FromSlash(rest))
		} else {
			at = filepath.Join(repo, filepath.FromSlash(strings.TrimPrefix(p, "./")), filepath.FromSlash(file))
		}
		data, err := os.ReadFile(at)
		if os.IsNotExist(err) && ignoreMissing {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		merged = append(merged, m)
	}
	// The files merged in their order, lowest precedence first, stand in
	// for the list; values and parameters still go over them.
	src := cloneMap(source)
	h := cloneMap(helm)
	delete(h, "valueFiles")
	src["helm"] = h
	return renderArgoChartWith(repo, charts, app, namespace, src, merged)
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
