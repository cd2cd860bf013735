package editcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Restart is a workload a patch restarts, and the pod template annotations
// it gets.
type Restart struct {
	Namespace, Kind, Name string
	Annotations           map[string]string
}

func (r Restart) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Check is one patch to hold to its promises.
type Check struct {
	// Before and After are the checkout without and with the patch.
	Before, After string
	// Changed are the repo-relative paths the patch touches.
	Changed []string
	// Restarts are the workloads the patch may restart.
	Restarts []Restart
	// TargetNamespaces maps repo-relative directories to the namespace the
	// GitOps controller forces on everything it applies from them (Flux's
	// targetNamespace).
	TargetNamespaces map[string]string
	// Flux maps repo-relative directories to how a Flux Kustomization
	// applying them renames what they render.
	Flux map[string]FluxApply
	// Argo maps repo-relative directories to how an Argo CD Application's
	// kustomize block renames what they render.
	Argo map[string]ArgoApply
	// Charts maps a chart of a chart repository, "<repoURL> <chart>
	// <version>" as an Argo CD source names it, to a copy of it on disk.
	// A Flux HelmRelease's chart of a HelmRepository is looked up there by
	// the repository's URL, the chart and spec.chart.spec.version.
	Charts map[string]string
	// HelmRepositories maps a Flux HelmRepository, "<namespace>/<name>",
	// to its URL.
	HelmRepositories map[string]string
	// Changes are the intended changes of objects other than restarts (a
	// namespace's labels, a policy's attachment).
	Changes []Change
	// Repository is the checkout's address, as the cluster's sources name
	// it: an Application's ref: source of it is read from the checkout.
	Repository string
	// Appliers are the cluster's GitOps objects that apply the checkout:
	// what each builds is held to the promise too, built as its
	// controller builds it.
	Appliers []Applier
}

// Change is one object's intended change: Apply returns the object's body
// as the patch must leave it. Namespace matches an object written without
// one too.
type Change struct {
	Kind, Namespace, Name string
	Apply                 func(map[string]any) map[string]any
}

func (c Change) String() string { return c.Kind + " " + c.Namespace + "/" + c.Name }

// changeOf returns the intended change of an object, nil when there is none.
func (c Check) changeOf(o *unstructured.Unstructured) *Change {
	for i, ch := range c.Changes {
		if ch.Kind == o.GetKind() && ch.Name == o.GetName() && (ch.Namespace == o.GetNamespace() || o.GetNamespace() == "") {
			return &c.Changes[i]
		}
	}
	return nil
}

// Result is what comparing a checkout before and after a patch found.
type Result struct {
	// Restarted are the restarts seen applied, under the workload's own
	// identity, in a render that is deployed as it is.
	Restarted map[string]bool
	// Problems are changes beyond the intended restart annotations and
	// Changes.
	Problems []string
	// Changed are the Changes seen made, by Change.String.
	Changed map[string]bool
}

func (res *Result) problem(where, format string, args ...any) {
	res.Problems = append(res.Problems, where+": "+fmt.Sprintf(format, args...))
}

// CompareRepos builds every kustomize root of both checkouts with the
// kustomize library, reads the changed files no build read (plain manifests
// a GitOps controller applies as they are), and checks that every object
// after the patch is the object before it, or that object with exactly one
// intended restart's annotations set on its pod template.
func CompareRepos(c Check) (Result, error) {
	res := Result{Restarted: map[string]bool{}, Changed: map[string]bool{}}
	roots, included, err := Roots(c.Before)
	if err != nil {
		return res, err
	}
	read := map[string]bool{}
	for _, root := range roots {
		before, err := build(c.Before, root, read)
		if err != nil {
			continue // a root that never built (remote base, broken) is not the patch's doing
		}
		after, err := build(c.After, root, read)
		if err != nil {
			res.problem(root, "builds before the patch, not after: %v", err)
			continue
		}
		c.compare(root, before, after, !included[root], &res)
	}
	for _, f := range c.Changed {
		if read[f] {
			continue
		}
		if dir := chartDirOf(c.Before, f); dir != "" {
			// A chart's file: what it does is seen in what the appliers
			// rendering the chart render.
			if !c.rendersChart(dir) {
				res.problem(f, "changed in the chart %s, which no applier renders", dir)
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(c.Before, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			res.problem(f, "created, but no kustomization reads it")
			continue
		}
		before, err := decodeFile(filepath.Join(c.Before, filepath.FromSlash(f)))
		if err != nil {
			return res, err
		}
		after, err := decodeFile(filepath.Join(c.After, filepath.FromSlash(f)))
		if err != nil {
			return res, err
		}
		c.compare(f, before, after, true, &res)
	}
	c.compareAppliers(&res)
	return res, nil
}

// The GitOps objects whose change is proven by what they render.
var (
	fluxKustomization = schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}
	helmRelease       = schema.GroupKind{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}
	argoApplication   = schema.GroupKind{Group: "argoproj.io", Kind: "Application"}
)

// compare holds the objects one root (or plain file) gives after the patch
// to those it gave before. deployed says the objects are applied as they
// are, so a restart must sit on the workload it names.
func (c Check) compare(where string, before, after []*unstructured.Unstructured, deployed bool, res *Result) {
	if len(before) != len(after) {
		res.problem(where, "%d objects instead of %d", len(after), len(before))
		return
	}
	for i, b := range before {
		a := after[i]
		switch {
		case name(a) != name(b):
			res.problem(where, "%s rendered where %s was", name(a), name(b))
		case reflect.DeepEqual(b.Object, a.Object):
		case a.GroupVersionKind().GroupKind() == fluxKustomization:
			c.compareFlux(where, b, a, res)
		case a.GroupVersionKind().GroupKind() == helmRelease:
			c.compareRelease(where, b, a, deployed, res)
		case a.GroupVersionKind().GroupKind() == argoApplication:
			c.compareArgo(where, b, a, res)
		case c.changeOf(b) != nil:
			ch := c.changeOf(b)
			if !reflect.DeepEqual(ch.Apply(runtime.DeepCopyJSON(b.Object)), a.Object) {
				res.problem(where, "%s changed otherwise than intended", name(a))
			} else {
				res.Changed[ch.String()] = true
			}
		default:
			c.compareWorkload(where, b, a, deployed, res)
		}
	}
}

// compareWorkload holds a changed object to one intended restart: its
// annotations, and nothing else, set on the pod template of the workload
// it names.
func (c Check) compareWorkload(where string, b, a *unstructured.Unstructured, deployed bool, res *Result) {
	r := c.restartOn(a)
	switch {
	case r == nil:
		res.problem(where, "%s changed without carrying an intended restart", name(a))
	case deployed && !c.restarts(a, where, r):
		res.problem(where, "%s carries the restart of %s", name(a), r)
	case !reflect.DeepEqual(restarted(b.Object, carriedValues(a, r.Annotations)), a.Object):
		res.problem(where, "%s changed beyond the restart annotations", name(a))
	case deployed:
		res.Restarted[r.String()] = true
	}
}

// compareRendered holds what a GitOps object renders after its change
// (from the After checkout) to what it rendered before, with inner's view
// of where the objects are applied.
func compareRendered[T any](c, inner Check, where string, before, after T, render func(repo string, o T) ([]*unstructured.Unstructured, error), deployed bool, res *Result) {
	b, a, errB, errA := renderSettled(func() ([]*unstructured.Unstructured, error) { return render(c.Before, before) },
		func() ([]*unstructured.Unstructured, error) { return render(c.After, after) })
	if errB != nil {
		res.problem(where, "does not render before the change: %v", errB)
		return
	}
	if errA != nil {
		res.problem(where, "renders before the change, not after: %v", errA)
		return
	}
	inner.compare(where, b, a, deployed, res)
}

var templateAnnotations = []string{"spec", "template", "metadata", "annotations"}

// restartOn returns the restart whose annotations all sit on the object's
// pod template, that of the object's own kind and name first: several
// workloads restarted through one shared chart value carry the same
// annotations. An annotation whose value is "" is carried when the
// template has it set to anything.
func (c Check) restartOn(o *unstructured.Unstructured) *Restart {
	got, _, _ := unstructured.NestedMap(o.Object, templateAnnotations...)
	var found *Restart
	for i, r := range c.Restarts {
		carried := len(r.Annotations) > 0
		for k, v := range r.Annotations {
			if v == "" {
				s, _ := got[k].(string)
				carried = carried && s != ""
				continue
			}
			carried = carried && got[k] == any(v)
		}
		if !carried {
			continue
		}
		if r.Kind == o.GetKind() && r.Name == o.GetName() {
			return &c.Restarts[i]
		}
		if found == nil {
			found = &c.Restarts[i]
		}
	}
	return found
}

// restarts reports whether the object, once applied from where, is the
// workload r names.
func (c Check) restarts(o *unstructured.Unstructured, where string, r *Restart) bool {
	ns, name := o.GetNamespace(), o.GetName()
	if f, ok := deepest(c.Flux, where); ok {
		ns, name = f.identity(o, kustomizationIn(filepath.Join(c.Before, filepath.FromSlash(where))))
	}
	if a, ok := deepest(c.Argo, where); ok {
		ns, name = a.identity(o, kustomizationIn(filepath.Join(c.Before, filepath.FromSlash(where))))
	}
	if forced, _ := deepest(c.TargetNamespaces, where); forced != "" {
		ns = forced
	}
	return o.GetKind() == r.Kind && name == r.Name && (ns == "" || ns == r.Namespace)
}

// deepest is the value of the deepest directory of byDir holding p.
func deepest[T any](byDir map[string]T, p string) (T, bool) {
	best, found := -1, *new(T)
	for dir, v := range byDir {
		if (dir == "." || p == dir || strings.HasPrefix(p, dir+"/")) && len(dir) > best {
			best, found = len(dir), v
		}
	}
	return found, best >= 0
}

// restarted is what a restart makes of an object: a copy with the
// annotations set on the pod template, mappings created as needed.
func restarted(o map[string]any, annotations map[string]string) map[string]any {
	out := runtime.DeepCopyJSON(o)
	ann, _, _ := unstructured.NestedMap(out, templateAnnotations...)
	if ann == nil {
		ann = map[string]any{}
	}
	for k, v := range annotations {
		ann[k] = v
	}
	parent := out
	for _, field := range templateAnnotations[:len(templateAnnotations)-1] {
		next, ok := parent[field].(map[string]any)
		if !ok {
			next = map[string]any{}
			parent[field] = next
		}
		parent = next
	}
	parent["annotations"] = ann
	return out
}

// isRestartPatch reports whether a strategic-merge patch body names kind
// and name and sets the annotations on the pod template, nothing else.
func isRestartPatch(body map[string]any, kind, name any, annotations map[string]string) bool {
	set, _, _ := unstructured.NestedStringMap(body, templateAnnotations...)
	filled := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if v == "" {
			if v = set[k]; v == "" {
				return false
			}
		}
		filled[k] = v
	}
	want := map[string]any{"apiVersion": body["apiVersion"], "kind": kind, "metadata": map[string]any{"name": name}}
	return reflect.DeepEqual(restarted(want, filled), body)
}

// without is a copy of an object's body with the fields at paths removed.
func without(o *unstructured.Unstructured, paths ...[]string) map[string]any {
	out := runtime.DeepCopyJSON(o.Object)
	for _, p := range paths {
		unstructured.RemoveNestedField(out, p...)
	}
	return out
}

func name(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// carriedValues are the annotations with each value left "" (any value)
// filled in from the object's pod template.
func carriedValues(o *unstructured.Unstructured, annotations map[string]string) map[string]string {
	got, _, _ := unstructured.NestedStringMap(o.Object, templateAnnotations...)
	out := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if v == "" {
			v = got[k]
		}
		out[k] = v
	}
	return out
}

// chartDirOf returns the repo-relative directory of the chart holding the
// repo-relative file f (the nearest directory above it with a Chart.yaml),
// "" when none does.
func chartDirOf(repo, f string) string {
	for dir := filepath.Dir(filepath.FromSlash(f)); dir != "." && dir != string(filepath.Separator); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(repo, dir, "Chart.yaml")); err == nil {
			return filepath.ToSlash(dir)
		}
	}
	return ""
}

// rendersChart reports whether an Application applier renders the chart
// in the repo-relative directory dir.
func (c Check) rendersChart(dir string) bool {
	for _, a := range c.Appliers {
		if a.Object.GetKind() != "Application" {
			continue
		}
		sources := sourcesOf(a.Object)
		for _, i := range a.Sources {
			if i < len(sources) {
				if p, _ := sources[i]["path"].(string); strings.Trim(strings.TrimPrefix(p, "./"), "/") == dir {
					return true
				}
			}
		}
	}
	return false
}
