package editcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/yamlguard"
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
}

// Result is what comparing a checkout before and after a patch found.
type Result struct {
	// Restarted are the restarts seen applied, under the workload's own
	// identity, in a render that is deployed as it is.
	Restarted map[string]bool
	// Problems are changes beyond the intended restart annotations.
	Problems []string
}

// CompareRepos builds every kustomize root of both checkouts with the
// kustomize library, reads the changed files no build read (plain manifests
// a GitOps controller applies as they are), and checks that every object
// after the patch is the object before it, or that object with exactly one
// intended restart's annotations set on its pod template.
func CompareRepos(c Check) (Result, error) {
	res := Result{Restarted: map[string]bool{}}
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
			res.Problems = append(res.Problems, fmt.Sprintf("%s: builds before the patch, not after: %v", root, err))
			continue
		}
		c.compare(root, before, after, !included[root], &res)
	}
	for _, f := range c.Changed {
		if read[f] {
			continue
		}
		if _, err := os.Stat(filepath.Join(c.Before, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: created, but no kustomization reads it", f))
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
	return res, nil
}

// compare holds the objects one root (or plain file) gives after the patch
// to those it gave before. deployed says the objects are applied as they
// are, so a restart must sit on the workload it names.
func (c Check) compare(where string, before, after []*unstructured.Unstructured, deployed bool, res *Result) {
	problem := func(format string, args ...any) {
		res.Problems = append(res.Problems, where+": "+fmt.Sprintf(format, args...))
	}
	if len(before) != len(after) {
		problem("%d objects instead of %d", len(after), len(before))
		return
	}
	for i, b := range before {
		a := after[i]
		if name(a) != name(b) {
			problem("%s rendered where %s was", name(a), name(b))
			continue
		}
		if reflect.DeepEqual(b.Object, a.Object) {
			continue
		}
		if isFluxKustomization(a) {
			c.compareFlux(where, b, a, res)
			continue
		}
		if isHelmRelease(a) {
			c.compareRelease(where, b, a, deployed, res)
			continue
		}
		if isArgoApplication(a) {
			if !c.compareArgoValues(where, b, a, res) {
				c.compareArgo(where, b, a, res)
			}
			continue
		}
		r := c.restartOn(a)
		if r == nil {
			problem("%s changed without carrying an intended restart", name(a))
			continue
		}
		if deployed && !c.restarts(a, where, r) {
			problem("%s carries the restart of %s", name(a), r)
			continue
		}
		if !reflect.DeepEqual(restarted(b, r), a.Object) {
			problem("%s changed beyond the restart annotations", name(a))
			continue
		}
		if deployed {
			res.Restarted[r.String()] = true
		}
	}
}

var templateAnnotations = []string{"spec", "template", "metadata", "annotations"}

// restartOn returns the restart whose annotations all sit on the object's
// pod template. Restart values differ per workload, so there is at most one.
func (c Check) restartOn(o *unstructured.Unstructured) *Restart {
	got, _, _ := unstructured.NestedMap(o.Object, templateAnnotations...)
	for i, r := range c.Restarts {
		carried := len(r.Annotations) > 0
		for k, v := range r.Annotations {
			carried = carried && got[k] == any(v)
		}
		if carried {
			return &c.Restarts[i]
		}
	}
	return nil
}

// restarts reports whether the object, once applied from where, is the
// workload r names.
func (c Check) restarts(o *unstructured.Unstructured, where string, r *Restart) bool {
	ns, name := o.GetNamespace(), o.GetName()
	if f, ok := c.fluxApplying(where); ok {
		ns, name = f.identity(o, kustomizationIn(filepath.Join(c.Before, filepath.FromSlash(where))))
	}
	if a, ok := c.argoApplying(where); ok {
		ns, name = a.identity(o, kustomizationIn(filepath.Join(c.Before, filepath.FromSlash(where))))
	}
	if forced := c.forcedNamespace(where); forced != "" {
		ns = forced
	}
	return o.GetKind() == r.Kind && name == r.Name && (ns == "" || ns == r.Namespace)
}

// forcedNamespace is the namespace the deepest TargetNamespaces directory
// holding p forces on what is applied from it.
func (c Check) forcedNamespace(p string) string {
	best, ns := -1, ""
	for dir, n := range c.TargetNamespaces {
		if (dir == "." || p == dir || strings.HasPrefix(p, dir+"/")) && len(dir) > best {
			best, ns = len(dir), n
		}
	}
	return ns
}

// restarted is what the restart makes of the object: a copy with the
// restart's annotations set on the pod template, mappings created as needed.
func restarted(o *unstructured.Unstructured, r *Restart) map[string]any {
	out := runtime.DeepCopyJSON(o.Object)
	ann, _, _ := unstructured.NestedMap(out, templateAnnotations...)
	if ann == nil {
		ann = map[string]any{}
	}
	for k, v := range r.Annotations {
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

func name(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// build renders one kustomize root of a checkout as Flux does (plugins off,
// any file of the checkout may be loaded), and when it builds, notes in read
// every repo-relative file it read.
func build(repo, root string, read map[string]bool) ([]*unstructured.Unstructured, error) {
	top, err := resolved(repo)
	if err != nil {
		return nil, err
	}
	disk := readsOf{FileSystem: filesys.MakeFsOnDisk(), read: map[string]bool{}}
	out, err := kustomizeBuild(disk, filepath.Join(repo, filepath.FromSlash(root)))
	if err != nil {
		return nil, err
	}
	for p := range disk.read {
		if rel, err := filepath.Rel(top, p); err == nil {
			read[filepath.ToSlash(rel)] = true
		}
	}
	return out, nil
}

// readsOf is the disk, noting the files a build reads.
type readsOf struct {
	filesys.FileSystem
	read map[string]bool
}

// A file over the repository budget reads as an error, as it does for
// kedge: kustomize would expand its aliases without bound.
func (d readsOf) ReadFile(p string) ([]byte, error) {
	data, err := d.FileSystem.ReadFile(p)
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if err == nil {
		if real, err := resolved(p); err == nil {
			d.read[real] = true
		}
	}
	return data, err
}

func resolved(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// decode reads one object from its JSON, as generic maps.
func decode(data []byte) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// decodeFile decodes every object of a YAML or JSON file, List items one by
// one.
func decodeFile(p string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(p)
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		o, err := decode(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !o.IsList() {
			out = append(out, o)
			continue
		}
		err = o.EachListItem(func(item runtime.Object) error {
			out = append(out, item.(*unstructured.Unstructured))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
}

var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Roots lists the kustomize roots of a checkout (repo-relative,
// slash-separated) and tells which of them other roots include as a base or
// component: those are inputs, not necessarily applied as they render.
func Roots(repo string) (roots []string, included map[string]bool, err error) {
	included = map[string]bool{}
	err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != repo && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		k := kustomizationIn(p)
		if k == nil {
			return nil
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil {
			return err
		}
		roots = append(roots, filepath.ToSlash(rel))
		for _, ref := range append(append(append([]string{}, k.Resources...), k.Bases...), k.Components...) { //nolint:staticcheck // bases are still read
			target := filepath.Join(p, filepath.FromSlash(ref))
			if kustomizationIn(target) == nil {
				continue
			}
			if r, err := filepath.Rel(repo, target); err == nil {
				included[filepath.ToSlash(r)] = true
			}
		}
		return nil
	})
	sort.Strings(roots)
	return roots, included, err
}

// kustomizationIn reads the kustomization of dir; nil when there is none.
func kustomizationIn(dir string) *types.Kustomization {
	for _, name := range kustomizationFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var k types.Kustomization
		if yaml.Unmarshal(data, &k) != nil {
			return &types.Kustomization{}
		}
		return &k
	}
	return nil
}

// kustomizeBuild runs kustomize on dir from the library's defaults, with no load
// restrictions and no plugins, and decodes what it renders.
func kustomizeBuild(fs filesys.FileSystem, dir string) ([]*unstructured.Unstructured, error) {
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	rm, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		o, err := decode(data)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}
