package flux

import (
	"fmt"

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
	// dir is the repo-relative directory the Kustomization builds.
	dir string
	src index.Source
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
		if o := ix.Object(i); o.Source == src && applies(f.Directory(), o) {
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
	site := &Site{manifest: m, dir: f.Directory(), src: src, target: ix.PatchTargetName(o), rendered: restart.WorkloadID{Namespace: ns, Kind: o.Kind, Name: NameOf(ix, o, f)}}
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
	before, err := document.ObjectAt(e.Before, s.manifest.Document)
	if err != nil {
		return s.failed(e, err)
	}
	after, err := document.ObjectAt(e.After, s.manifest.Document)
	if err != nil {
		return s.failed(e, err)
	}
	b := Render(ix, s.dir, before, true)
	if b.Err != nil {
		return s.failed(e, b.Err)
	}
	if err := restart.CompareRenders(b, Render(ix, s.dir, after, false), want); err != nil {
		return s.failed(e, err)
	}
	return nil
}

func (s *Site) failed(e restart.FileEdit, err error) error {
	return fmt.Errorf("rendering the path of the Flux Kustomization in %s with the edit: %v", e.Path, err)
}

// Render builds a Flux Kustomization (k is the whole object) at the
// repo-relative directory dir, its path, the way kustomize-controller does,
// with its own generator: the path's kustomization, or one listing its
// manifests and the kustomization directories below it, with the
// Kustomization's targetNamespace, namePrefix, nameSuffix, patches, images
// and components written into it.
func Render(ix *index.Index, dir string, k map[string]any, compact bool) index.Render {
	return ix.BuildFlux(dir, k, nil, compact)
}
