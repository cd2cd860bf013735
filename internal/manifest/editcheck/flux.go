package editcheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// isFluxKustomization tells a Flux Kustomization from kustomize's own kind
// of the same name.
func isFluxKustomization(o *unstructured.Unstructured) bool {
	group, _, _ := strings.Cut(o.GetAPIVersion(), "/")
	return group == "kustomize.toolkit.fluxcd.io" && o.GetKind() == "Kustomization"
}

// compareFlux holds a changed Flux Kustomization to the promise: its spec
// changes in patches only, and the build kustomize-controller runs for it
// (https://fluxcd.io/flux/components/kustomize/kustomizations/#patches)
// changes nothing but intended restarts.
func (c Check) compareFlux(where string, b, a *unstructured.Unstructured, res *Result) {
	name := "Flux Kustomization " + a.GetNamespace() + "/" + a.GetName()
	problem := func(format string, args ...any) {
		res.Problems = append(res.Problems, where+": "+name+": "+fmt.Sprintf(format, args...))
	}
	bs, as := withoutPatches(b), withoutPatches(a)
	if !reflect.DeepEqual(bs, as) {
		problem("changes beyond spec.patches")
		return
	}
	before, err := buildFlux(c.Before, b)
	if err != nil {
		problem("does not build before the patch: %v", err)
		return
	}
	after, err := buildFlux(c.After, a)
	if err != nil {
		problem("builds before the patch, not after: %v", err)
		return
	}
	// The build sets the namespace itself: no directory forces one.
	built := c
	built.TargetNamespaces = nil
	built.compare(where+" ("+name+")", before, after, true, res)
}

func withoutPatches(o *unstructured.Unstructured) map[string]any {
	out := runtime.DeepCopyJSON(o.Object)
	unstructured.RemoveNestedField(out, "spec", "patches")
	return out
}

// buildFlux builds the path of a Flux Kustomization in a checkout: the
// path's kustomization, or one listing its manifests, with the
// Kustomization's targetNamespace, namePrefix, nameSuffix, patches and
// components written into it, as kustomize-controller generates it.
func buildFlux(repo string, k *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var spec struct {
		Path            string        `json:"path"`
		TargetNamespace string        `json:"targetNamespace"`
		NamePrefix      string        `json:"namePrefix"`
		NameSuffix      string        `json:"nameSuffix"`
		Components      []string      `json:"components"`
		Patches         []types.Patch `json:"patches"`
	}
	raw, _, _ := unstructured.NestedMap(k.Object, "spec")
	data, err := yaml.Marshal(raw)
	if err == nil {
		err = yaml.Unmarshal(data, &spec)
	}
	if err != nil {
		return nil, err
	}
	top, err := resolved(repo)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(top, filepath.FromSlash(strings.TrimPrefix(spec.Path, "./")))
	kus, file, err := pathKustomization(dir)
	if err != nil {
		return nil, err
	}
	if spec.TargetNamespace != "" {
		kus.Namespace = spec.TargetNamespace
	}
	if spec.NamePrefix != "" {
		kus.NamePrefix = spec.NamePrefix
	}
	if spec.NameSuffix != "" {
		kus.NameSuffix = spec.NameSuffix
	}
	kus.Patches = append(kus.Patches, spec.Patches...)
	kus.Components = append(kus.Components, spec.Components...)
	generated, err := yaml.Marshal(kus)
	if err != nil {
		return nil, err
	}
	return kustomizeBuild(overlaid{FileSystem: filesys.MakeFsOnDisk(), path: file, data: generated}, dir)
}

// pathKustomization reads the kustomization of dir, or makes the one
// kustomize-controller generates for a directory without: every directory
// below holding a kustomization, and every other manifest.
func pathKustomization(dir string) (*types.Kustomization, string, error) {
	for _, name := range kustomizationFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var k types.Kustomization
		return &k, filepath.Join(dir, name), yaml.Unmarshal(data, &k)
	}
	k := &types.Kustomization{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir() && p != dir && kustomizationIn(p) != nil:
			k.Resources = append(k.Resources, filepath.ToSlash(rel))
			return fs.SkipDir
		case d.IsDir():
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if objs, err := decodeFile(p); err == nil && len(objs) > 0 && objs[0].GetKind() != "" {
				k.Resources = append(k.Resources, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return k, filepath.Join(dir, kustomizationFiles[0]), err
}

// overlaid is the disk with one file's content replaced (or added).
type overlaid struct {
	filesys.FileSystem
	path string
	data []byte
}

func (o overlaid) ReadFile(p string) ([]byte, error) {
	if filepath.Clean(p) == o.path {
		return o.data, nil
	}
	return o.FileSystem.ReadFile(p)
}

func (o overlaid) Exists(p string) bool {
	return filepath.Clean(p) == o.path || o.FileSystem.Exists(p)
}

func (o overlaid) IsDir(p string) bool {
	return filepath.Clean(p) != o.path && o.FileSystem.IsDir(p)
}

// isFluxRestartEntry reports whether a run of added lines is one entry of
// a Flux Kustomization's spec.patches (under the patches: key it may add)
// whose patch sets nothing but restart annotations, on the kind and name
// its target selects.
func isFluxRestartEntry(lines []string, keys []string) bool {
	var doc any
	if yaml.Unmarshal([]byte(dedent(lines)), &doc) != nil {
		return false
	}
	doc = unwrapKustomize(doc)
	if m, ok := doc.(map[string]any); ok && len(m) == 1 {
		doc = m["patches"]
	}
	list, ok := doc.([]any)
	if !ok || len(list) != 1 {
		return false
	}
	item, _ := list[0].(map[string]any)
	target, _ := item["target"].(map[string]any)
	patch, _ := item["patch"].(string)
	if len(item) != 2 || len(target) != 2 || target["kind"] == nil || target["name"] == nil {
		return false
	}
	var body map[string]any
	if yaml.Unmarshal([]byte(patch), &body) != nil || body["kind"] != target["kind"] {
		return false
	}
	ann, _, _ := unstructured.NestedStringMap(body, templateAnnotations...)
	if len(ann) == 0 {
		return false
	}
	for k := range ann {
		if !containsString(keys, k) {
			return false
		}
	}
	expected := map[string]any{
		"apiVersion": body["apiVersion"], "kind": target["kind"],
		"metadata": map[string]any{"name": target["name"]},
	}
	restart := map[string]any{}
	for k, v := range ann {
		restart[k] = v
	}
	_ = unstructured.SetNestedMap(expected, restart, templateAnnotations...)
	return reflect.DeepEqual(runtime.DeepCopyJSON(body), runtime.DeepCopyJSON(expected))
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// FluxApply is what a Flux Kustomization does to the identity of what it
// applies after the build: its name prefix and suffix, and the variables
// its post-build substitution sets (nil: none runs).
type FluxApply struct {
	NamePrefix, NameSuffix string
	Vars                   map[string]string
}

// fluxApplying is the FluxApply of the deepest directory holding p.
func (c Check) fluxApplying(p string) (FluxApply, bool) {
	best, found := -1, FluxApply{}
	for dir, f := range c.Flux {
		if (dir == "." || p == dir || strings.HasPrefix(p, dir+"/")) && len(dir) > best {
			best, found = len(dir), f
		}
	}
	return found, best >= 0
}

// identity is the namespace and name o, rendered by the kustomization k
// (nil for a plain file), is applied under: the Kustomization's prefix and
// suffix in place of k's own
// (https://fluxcd.io/flux/components/kustomize/kustomizations/#name-prefix-and-suffix),
// then variables substituted unless o opts out
// (https://fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution).
func (f FluxApply) identity(o *unstructured.Unstructured, k *types.Kustomization) (namespace, name string) {
	namespace, name = o.GetNamespace(), o.GetName()
	if k != nil && f.NamePrefix != "" {
		name = strings.TrimPrefix(name, k.NamePrefix)
	}
	if k != nil && f.NameSuffix != "" {
		name = strings.TrimSuffix(name, k.NameSuffix)
	}
	name = f.NamePrefix + name + f.NameSuffix
	const key = "kustomize.toolkit.fluxcd.io/substitute"
	if f.Vars == nil || o.GetLabels()[key] == "disabled" || o.GetAnnotations()[key] == "disabled" {
		return namespace, name
	}
	lookup := func(v string) (string, bool) { return f.Vars[v], true }
	if out, err := envsubst.Eval(namespace, lookup); err == nil {
		namespace = out
	}
	if out, err := envsubst.Eval(name, lookup); err == nil {
		name = out
	}
	return namespace, name
}
