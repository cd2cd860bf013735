package manifest

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// fluxEdit is one restart that goes in a Flux Kustomization's patches.
type fluxEdit struct {
	site *fluxSite
	edit podTemplateEdit
}

// inFluxPatch makes loc an overlay patch in the site's Flux Kustomization.
func (ix *Index) inFluxPatch(loc Location, site *fluxSite) Location {
	loc.Root = ""
	loc.flux = site
	loc.Manifest.Edit = drift.EditOverlayPatch
	loc.Manifest.Detail = ""
	return loc
}

// restartEntry returns kedge's entry of the site's patches for kind, or nil.
func (s *fluxSite) restartEntry(kind string) *fluxPatch {
	for i, p := range s.manifest.Spec.Patches {
		if len(p.Target) == 2 && p.Target["kind"] == kind && p.Target["name"] == s.target && restartShaped(p.Patch) != nil {
			return &s.manifest.Spec.Patches[i]
		}
	}
	return nil
}

func (s *fluxSite) hasRestart(kind string) bool { return s.restartEntry(kind) != nil }

// annotationsOver returns the render's template annotations with those of
// kedge's entry on top, as kustomize-controller's build applies them.
func (s *fluxSite) annotationsOver(rendered map[string]string, kind string) map[string]string {
	if p := s.restartEntry(kind); p != nil {
		return withRestartPatch(rendered, p.Patch)
	}
	return rendered
}

// withRestartPatch returns the render's template annotations with those a
// restart patch sets on top, as a kustomize build applies it.
func withRestartPatch(rendered map[string]string, patch string) map[string]string {
	out := maps.Clone(rendered)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, restartShaped(patch))
	return out
}

// restartShaped returns the pod template annotations of a patch that sets
// nothing else (besides the name it is written for), or nil: only such a
// patch can be kedge's.
func restartShaped(patch string) map[string]string {
	var doc map[string]any
	if sigsyaml.Unmarshal([]byte(patch), &doc) != nil {
		return nil
	}
	for k := range doc {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "spec" {
			return nil
		}
	}
	md, _ := doc["metadata"].(map[string]any)
	for k := range md {
		if k != "name" {
			return nil
		}
	}
	spec, _ := doc["spec"].(map[string]any)
	if len(spec) != 1 {
		return nil
	}
	return templateAnnotationsOnly(spec)
}

// templateAnnotationsOnly reads spec.template.metadata.annotations of a spec
// holding nothing else.
func templateAnnotationsOnly(spec map[string]any) map[string]string {
	tpl, _ := spec["template"].(map[string]any)
	tmd, _ := tpl["metadata"].(map[string]any)
	ann, _ := tmd["annotations"].(map[string]any)
	if len(tpl) != 1 || len(tmd) != 1 || len(ann) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range ann {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		out[k] = s
	}
	return out
}

// patchListEdit is one restart written as an entry of a patch list in a
// GitOps object's file: a Flux Kustomization's spec.patches, or an Argo CD
// Application source's kustomize.patches.
type patchListEdit struct {
	edit     podTemplateEdit
	target   string // the name kedge's entry targets, as the build sees it
	document int
	list     yamledit.PatchList
}

// applyPatchListEdits writes kedge's entries into the GitOps objects of one
// file (what names them, for the refusal): an entry kedge wrote before for
// the same document is updated in place, never duplicated.
func (ix *Index) applyPatchListEdits(f *pendingFile, edits []patchListEdit, what string) ([]FileEdit, *Refusal) {
	var all []podTemplateEdit
	for _, e := range edits {
		all = append(all, e.edit)
	}
	all = append(all, f.inPlace...)
	if len(f.inPlace) > 0 || f.patchRoot != "" || len(f.flux) > 0 && len(f.argo) > 0 {
		return nil, refusalFor(f.path, all, fmt.Errorf("the file holds %s kedge patches and another edit", what))
	}
	before, err := ix.readInside(f.path)
	if err != nil {
		return nil, refusalFor(f.path, all, err)
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].edit.id.String() < edits[j].edit.id.String() })
	after := before
	var ids []WorkloadID
	for _, e := range edits {
		ids = append(ids, e.edit.id)
		entry, err := restartPatchEntry(e.edit, e.target)
		if err != nil {
			return nil, refusalFor(f.path, all, err)
		}
		out, changed, err := yamledit.SetPatchEntry(after, e.document, e.list, entry, ownsEntry(e.edit, e.target))
		if err != nil {
			return nil, refusalFor(f.path, all, err)
		}
		if changed {
			after = out
		}
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return []FileEdit{{Path: f.path, Before: before, After: after, Workloads: ids}}, nil
}

// applyFluxPatches writes kedge's entries into the Flux Kustomizations of
// one file.
func (ix *Index) applyFluxPatches(f *pendingFile) ([]FileEdit, *Refusal) {
	edits := make([]patchListEdit, 0, len(f.flux))
	for _, fe := range f.flux {
		edits = append(edits, patchListEdit{edit: fe.edit, target: fe.site.target, document: fe.site.manifest.Document, list: yamledit.FluxKustomizationPatches})
	}
	return ix.applyPatchListEdits(f, edits, "a Flux Kustomization")
}

// restartPatchEntry is kedge's entry for one restart: the patch document an
// overlay would get, selecting the document by kind and name.
func restartPatchEntry(e podTemplateEdit, target string) (yamledit.PatchEntry, error) {
	e.target = yamledit.Target{Kind: e.target.Kind, Name: target}
	if e.target.Kind == "" {
		e.target.Kind = e.id.Kind
	}
	doc, err := patchDocument(e)
	if err != nil {
		return yamledit.PatchEntry{}, err
	}
	return yamledit.PatchEntry{Patch: string(doc), Kind: e.target.Kind, Name: target}, nil
}

// ownsEntry recognises kedge's entry for the same document: it selects the
// document by kind and name alone and sets kedge's annotations only.
func ownsEntry(e podTemplateEdit, name string) func(string, map[string]string) bool {
	return func(patch string, target map[string]string) bool {
		if len(target) != 2 || target["kind"] != e.id.Kind || target["name"] != name {
			return false
		}
		ann := restartShaped(patch)
		for k := range e.set {
			if _, ok := ann[k]; !ok {
				return false
			}
		}
		return ann != nil
	}
}

// checkFlux renders the path of every Flux Kustomization an edit patches,
// as kustomize-controller builds it, with the Kustomization as it was and
// as edited, and reports the edits whose render changes anything but the
// intended restarts.
func (v *verifier) checkFlux(edits []FileEdit, intended []intent, failed map[int]string) {
	type site struct {
		file string
		doc  int
	}
	sites := map[site]map[WorkloadID]intent{}
	for _, in := range intended {
		if in.flux == nil {
			continue
		}
		k := site{in.flux.manifest.File, in.flux.manifest.Document}
		if sites[k] == nil {
			sites[k] = map[WorkloadID]intent{}
		}
		sites[k][in.flux.rendered] = in
	}
	for i, e := range edits {
		for k, want := range sites {
			if k.file != e.Path {
				continue
			}
			if err := v.compareFlux(e, k.doc, want); err != nil {
				if _, done := failed[i]; !done {
					failed[i] = fmt.Sprintf("rendering the path of the Flux Kustomization in %s with the edit: %v", e.Path, err)
				}
			}
		}
	}
}

func (v *verifier) compareFlux(e FileEdit, doc int, want map[WorkloadID]intent) error {
	before, err := fluxSpecAt(e.Before, doc)
	if err != nil {
		return err
	}
	after, err := fluxSpecAt(e.After, doc)
	if err != nil {
		return err
	}
	b := v.ix.renderFlux(before, true)
	if b.err != nil {
		return b.err
	}
	return compareRenders(b, v.ix.renderFlux(after, false), want)
}

// fluxSpecAt reads the spec of the Flux Kustomization in document doc.
func fluxSpecAt(data []byte, doc int) (fluxSpec, error) {
	s := &fluxSources{configMaps: map[string]map[string]string{}, secretKeys: map[string][]string{}}
	s.add("", data)
	for _, m := range s.kustomizations {
		if m.Document == doc {
			return m.Spec, nil
		}
	}
	return fluxSpec{}, fmt.Errorf("document %d is not a Flux Kustomization", doc)
}

// renderFlux builds a Flux Kustomization's path the way kustomize-controller
// does: the path's kustomization (or one listing its manifests when it has
// none) with the Kustomization's targetNamespace, namePrefix, nameSuffix,
// patches and components written into it.
func (ix *Index) renderFlux(spec fluxSpec, compact bool) renderResult {
	dir := ix.abs(cleanRepoPath(spec.Path))
	name, data, err := fluxKustomizationFile(ix.fs, dir, spec)
	if err != nil {
		return renderResult{err: err}
	}
	return builtObjects(buildRoot(ix.fs, dir, map[string][]byte{filepath.Join(dir, name): data}), compact)
}

func fluxKustomizationFile(fsys *repofs.FS, dir string, spec fluxSpec) (string, []byte, error) {
	var k types.Kustomization
	name := kustomizationFileNames[0]
	found := false
	for _, n := range kustomizationFileNames {
		data, err := readRegular(fsys, filepath.Join(dir, n))
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
		resources, err := fluxResources(fsys, dir)
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

// fluxResources lists what kustomize-controller puts in the kustomization
// it generates for a directory without one: each directory holding a
// kustomization as a whole, and every other manifest below it.
func fluxResources(fsys *repofs.FS, dir string) ([]string, error) {
	var out []string
	start, ok := fsys.Rel(dir)
	if !ok {
		return nil, fmt.Errorf("%s: %w", dir, errOutsideRepo)
	}
	err := fsys.WalkDir(start, func(rel string, d fs.DirEntry, err error) error {
		p := fsys.Abs(rel)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			if p != dir && hasKustomization(fsys, p) {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
				return fs.SkipDir
			}
			return nil
		}
		if !isYAMLName(d.Name()) || !d.Type().IsRegular() {
			return nil
		}
		data, err := readRegular(fsys, p)
		if err != nil {
			return err
		}
		if docs, err := parseDocuments(data); err == nil && len(docs) > 0 && docs[0].Kind != "" {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

func hasKustomization(fsys *repofs.FS, dir string) bool {
	for _, n := range kustomizationFileNames {
		if info, err := statIn(fsys, filepath.Join(dir, n)); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}
