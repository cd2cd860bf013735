package editcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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

func isArgoApplication(o *unstructured.Unstructured) bool {
	group, _, _ := strings.Cut(o.GetAPIVersion(), "/")
	return group == "argoproj.io" && o.GetKind() == "Application"
}

// compareArgo holds a changed Application to the promise: only its
// sources' kustomize.patches change, and the build Argo CD's repo server
// runs for each changed source changes nothing but intended restarts.
func (c Check) compareArgo(where string, b, a *unstructured.Unstructured, res *Result) {
	name := "Argo CD Application " + a.GetNamespace() + "/" + a.GetName()
	problem := func(format string, args ...any) {
		res.Problems = append(res.Problems, where+": "+name+": "+fmt.Sprintf(format, args...))
	}
	before, after := sourcesOf(b), sourcesOf(a)
	if len(before) != len(after) || !reflect.DeepEqual(withoutSourcePatches(b), withoutSourcePatches(a)) {
		problem("changes beyond the sources' kustomize.patches")
		return
	}
	built := c
	built.TargetNamespaces, built.Flux, built.Argo = nil, nil, nil
	for i := range after {
		if reflect.DeepEqual(before[i], after[i]) {
			continue
		}
		objsBefore, err := buildArgo(c.Before, before[i])
		if err != nil {
			problem("source %d does not build before the patch: %v", i, err)
			continue
		}
		objsAfter, err := buildArgo(c.After, after[i])
		if err != nil {
			problem("source %d builds before the patch, not after: %v", i, err)
			continue
		}
		built.compare(fmt.Sprintf("%s (%s, source %d)", where, name, i), objsBefore, objsAfter, true, res)
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

func withoutSourcePatches(o *unstructured.Unstructured) map[string]any {
	out := runtime.DeepCopyJSON(o.Object)
	strip := func(src any) {
		s, _ := src.(map[string]any)
		k, _ := s["kustomize"].(map[string]any)
		if k == nil {
			return
		}
		delete(k, "patches")
		if len(k) == 0 {
			delete(s, "kustomize")
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
	data, err := yaml.Marshal(source)
	if err == nil {
		err = yaml.Unmarshal(data, &src)
	}
	if err != nil {
		return nil, err
	}
	top, err := resolved(repo)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(top, filepath.FromSlash(strings.TrimPrefix(src.Path, "./")))
	var kus types.Kustomization
	file := ""
	for _, n := range kustomizationFiles {
		raw, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		if err := yaml.Unmarshal(raw, &kus); err != nil {
			return nil, err
		}
		file = filepath.Join(dir, n)
		break
	}
	if file == "" {
		return nil, fmt.Errorf("%s has no kustomization file", src.Path)
	}
	opts := src.Kustomize
	if opts.NamePrefix != "" {
		kus.NamePrefix = opts.NamePrefix
	}
	if opts.NameSuffix != "" {
		kus.NameSuffix = opts.NameSuffix
	}
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
	if opts.Namespace != "" {
		kus.Namespace = opts.Namespace
	}
	kus.Patches = append(kus.Patches, opts.Patches...)
	for _, comp := range opts.Components {
		if !containsString(kus.Components, comp) {
			kus.Components = append(kus.Components, comp)
		}
	}
	generated, err := yaml.Marshal(kus)
	if err != nil {
		return nil, err
	}
	return kustomizeBuild(overlaid{FileSystem: filesys.MakeFsOnDisk(), path: file, data: generated}, dir)
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

// argoApplying is the ArgoApply of the deepest directory holding p.
func (c Check) argoApplying(p string) (ArgoApply, bool) {
	best, found := -1, ArgoApply{}
	for dir, a := range c.Argo {
		if (dir == "." || p == dir || strings.HasPrefix(p, dir+"/")) && len(dir) > best {
			best, found = len(dir), a
		}
	}
	return found, best >= 0
}

// unwrapKustomize takes the patches list out of an added `kustomize:`
// mapping that holds nothing else: an Application source without a
// kustomize block gets one to carry the entry.
func unwrapKustomize(doc any) any {
	if m, ok := doc.(map[string]any); ok && len(m) == 1 {
		if k, ok := m["kustomize"].(map[string]any); ok && len(k) == 1 {
			return k
		}
	}
	return doc
}
