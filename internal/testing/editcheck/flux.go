package editcheck

import (
	"cmp"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/types"
)

// compareFlux holds a changed Flux Kustomization to the promise: its spec
// changes in patches only, and the build kustomize-controller runs for it
// (https://fluxcd.io/flux/components/kustomize/kustomizations/#patches)
// changes nothing but intended restarts.
func (c Check) compareFlux(where string, b, a *unstructured.Unstructured, res *Result) {
	where += " (Flux Kustomization " + a.GetNamespace() + "/" + a.GetName() + ")"
	if !reflect.DeepEqual(without(b, []string{"spec", "patches"}), without(a, []string{"spec", "patches"})) {
		res.problem(where, "changes beyond spec.patches")
		return
	}
	// The build sets the namespace itself: no directory forces one.
	inner := c
	inner.TargetNamespaces = nil
	compareRendered(c, inner, where, b, a, buildFlux, true, res)
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
	if err := convert(k.Object["spec"], &spec); err != nil {
		return nil, err
	}
	dir, err := pathIn(repo, spec.Path)
	if err != nil {
		return nil, err
	}
	kus, file, err := readKustomization(dir)
	if kus == nil && err == nil {
		kus, file, err = generatedKustomization(dir)
	}
	if err != nil {
		return nil, err
	}
	kus.Namespace = cmp.Or(spec.TargetNamespace, kus.Namespace)
	kus.NamePrefix = cmp.Or(spec.NamePrefix, kus.NamePrefix)
	kus.NameSuffix = cmp.Or(spec.NameSuffix, kus.NameSuffix)
	kus.Patches = append(kus.Patches, spec.Patches...)
	kus.Components = append(kus.Components, spec.Components...)
	return buildEdited(dir, file, kus)
}

// generatedKustomization is the kustomization kustomize-controller
// generates for a directory without one: every directory below holding a
// kustomization, and every other manifest.
func generatedKustomization(dir string) (*types.Kustomization, string, error) {
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

// FluxApply is what a Flux Kustomization does to the identity of what it
// applies after the build: its name prefix and suffix, and the variables
// its post-build substitution sets (nil: none runs).
type FluxApply struct {
	NamePrefix, NameSuffix string
	Vars                   map[string]string
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
