package flux

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// Site is a Flux Kustomization of the repository that gets kedge's restart
// patch for one workload: the path it applies deploys the workload's
// document there and nowhere else as that workload.
type Site struct {
	manifest *index.FluxManifest
	src      index.Source
	// rendered is the workload's identity in the path's build with the
	// Kustomization's fields, before substitution.
	rendered restart.WorkloadID
	// target is the name the patch selects: the document's, as the path's
	// kustomization sees it before its own prefix and Flux's.
	target string
	// Listed finds kedge's entry among the Kustomization's patches.
	restart.Listed
}

var patchKind = restart.PatchListKind{What: "a Flux Kustomization"}

func (s *Site) File() string                 { return s.manifest.File }
func (s *Site) Kind() restart.Kind           { return patchKind }
func (s *Site) Source() index.Source         { return s.src }
func (s *Site) Document() int                { return s.manifest.Document }
func (s *Site) List() yamledit.PatchList     { return yamledit.FluxKustomizationPatches }
func (s *Site) Target() string               { return s.target }
func (s *Site) Rendered() restart.WorkloadID { return s.rendered }
func (s *Site) Reads() restart.Reads         { return restart.ReadsIndex }
func (s *Site) CheckKey() string {
	return fmt.Sprintf("flux %s#%d", s.manifest.File, s.manifest.Document)
}

// PatchSite returns where a patch in the Flux Kustomization f applying w
// restarts w alone, or nil: its copy in the repository must be unique, and
// the path must render w's document once, as w.
func PatchSite(ix *index.Index, w drift.Workload, f *Kustomization, src index.Source, applies func(dir string, o *index.Object) bool) *Site {
	m := manifestOf(ix, f)
	if m == nil {
		return nil
	}
	var renders []*index.Object
	for _, i := range ix.ByPath(src.Path) {
		if o := ix.Object(i); o.Source == src && applies(m.Spec.Path, o) {
			renders = append(renders, o)
		}
	}
	if len(renders) != 1 {
		return nil
	}
	o := renders[0]
	ns := o.Namespace
	if t := m.Spec.TargetNamespace; t != "" {
		ns = t
	}
	site := &Site{manifest: m, src: src, target: ix.PatchTargetName(o), rendered: restart.WorkloadID{Namespace: ns, Kind: o.Kind, Name: NameOf(ix, o, f)}}
	site.Listed = restart.Listed{Target: site.target}
	for _, p := range m.Spec.Patches {
		site.Patches = append(site.Patches, restart.ListedPatch{Patch: p.Patch, Target: p.Target})
	}
	sub := SubstitutionOf(ix, f)
	if o.SubstituteDisabled {
		sub = nil
	}
	if !sub.Matches(site.rendered.Name, w.Name) || !sub.Matches(ns, w.Namespace) {
		return nil
	}
	return site
}

// Check renders the Kustomization's path as kustomize-controller builds it,
// with the Kustomization as it was and as edited.
func (s *Site) Check(ix *index.Index, e restart.FileEdit, want map[restart.WorkloadID]restart.Intent) error {
	before, err := specAt(e.Before, s.manifest.Document)
	if err != nil {
		return s.failed(e, err)
	}
	after, err := specAt(e.After, s.manifest.Document)
	if err != nil {
		return s.failed(e, err)
	}
	b := Render(ix, before, true)
	if b.Err != nil {
		return s.failed(e, b.Err)
	}
	if err := restart.CompareRenders(b, Render(ix, after, false), want); err != nil {
		return s.failed(e, err)
	}
	return nil
}

func (s *Site) failed(e restart.FileEdit, err error) error {
	return fmt.Errorf("rendering the path of the Flux Kustomization in %s with the edit: %v", e.Path, err)
}

// specAt reads the spec of the Flux Kustomization in document doc.
func specAt(data []byte, doc int) (index.FluxSpec, error) {
	for _, m := range index.FluxManifestsIn("", data) {
		if m.Document == doc {
			return m.Spec, nil
		}
	}
	return index.FluxSpec{}, fmt.Errorf("document %d is not a Flux Kustomization", doc)
}

// Render builds a Flux Kustomization's path the way kustomize-controller
// does: the path's kustomization (or one listing its manifests when it has
// none) with the Kustomization's targetNamespace, namePrefix, nameSuffix,
// patches and components written into it.
func Render(ix *index.Index, spec index.FluxSpec, compact bool) index.Render {
	dir := spec.Path
	name, data, err := kustomizationFile(ix, dir, spec)
	if err != nil {
		return index.Render{Err: err}
	}
	return ix.Build(dir, map[string][]byte{path.Join(dir, name): data}, compact)
}

func kustomizationFile(ix *index.Index, dir string, spec index.FluxSpec) (string, []byte, error) {
	var k types.Kustomization
	name := index.KustomizationFileNames[0]
	found := false
	for _, n := range index.KustomizationFileNames {
		data, err := ix.ReadFile(path.Join(dir, n))
		if err != nil {
			continue
		}
		if err := sigsyaml.Unmarshal(data, &k); err != nil {
			return "", nil, err
		}
		name, found = n, true
		break
	}
	if !found {
		resources, err := generatedResources(ix, dir)
		if err != nil {
			return "", nil, err
		}
		k.Resources = resources
	}
	k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
	if spec.TargetNamespace != "" {
		k.Namespace = spec.TargetNamespace
	}
	if spec.NamePrefix != "" {
		k.NamePrefix = spec.NamePrefix
	}
	if spec.NameSuffix != "" {
		k.NameSuffix = spec.NameSuffix
	}
	for _, p := range spec.Patches {
		var sel *types.Selector
		if len(p.Target) > 0 {
			raw, err := sigsyaml.Marshal(p.Target)
			if err != nil {
				return "", nil, err
			}
			sel = &types.Selector{}
			if err := sigsyaml.Unmarshal(raw, sel); err != nil {
				return "", nil, err
			}
		}
		k.Patches = append(k.Patches, types.Patch{Patch: p.Patch, Target: sel})
	}
	k.Components = append(k.Components, spec.Components...)
	data, err := sigsyaml.Marshal(&k)
	return name, data, err
}

// generatedResources lists what kustomize-controller puts in the
// kustomization it generates for a directory without one: each directory
// holding a kustomization as a whole, and every other manifest below it.
func generatedResources(ix *index.Index, dir string) ([]string, error) {
	var out []string
	err := ix.FS().WalkDir(dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			if rel != dir && hasKustomization(ix, rel) {
				out = append(out, relativeTo(rel, dir))
				return fs.SkipDir
			}
			return nil
		}
		if !document.IsYAMLName(d.Name()) || !d.Type().IsRegular() {
			return nil
		}
		data, err := ix.ReadFile(rel)
		if err != nil {
			return err
		}
		if docs, err := document.Parse(data); err == nil && len(docs) > 0 && docs[0].Kind != "" {
			out = append(out, relativeTo(rel, dir))
		}
		return nil
	})
	return out, err
}

func hasKustomization(ix *index.Index, dir string) bool {
	for _, n := range index.KustomizationFileNames {
		if info, err := ix.FS().Stat(path.Join(dir, n)); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

func relativeTo(p, dir string) string {
	if dir == "." {
		return p
	}
	return strings.TrimPrefix(p, dir+"/")
}
