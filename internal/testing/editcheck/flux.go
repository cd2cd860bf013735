package editcheck

import (
	"reflect"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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

// buildFlux builds the path of a Flux Kustomization in a checkout as
// kustomize-controller does: the kustomization its own generator
// (github.com/fluxcd/pkg/kustomize) writes at the path, the path's own or
// one listing its manifests and the kustomization directories below it,
// with the Kustomization's targetNamespace, namePrefix, nameSuffix,
// patches, images and components written into it
// (https://fluxcd.io/flux/components/kustomize/kustomizations/#generating-a-kustomizationyaml-file).
func buildFlux(repo string, k *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	p, _, _ := unstructured.NestedString(k.Object, "spec", "path")
	top, err := resolved(repo)
	if err != nil {
		return nil, err
	}
	dir, err := pathIn(repo, p)
	if err != nil {
		return nil, err
	}
	data, file, _, err := fluxkustomize.NewGenerator(top, *k.DeepCopy()).GenerateManifest(dir)
	if err != nil {
		return nil, err
	}
	return kustomizeBuild(overlaid{FileSystem: filesys.MakeFsOnDisk(), path: file, data: data}, dir)
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
