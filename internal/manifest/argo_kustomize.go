package manifest

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// argoKustomizes reports whether Argo CD builds the source's path with
// kustomize options of its own: the path holds a kustomization file and no
// directory block stands beside them (both make Argo CD refuse the source).
// A kustomize block on a path without the file does not make it build:
// `kustomize edit` and the build both need it
// (https://argo-cd.readthedocs.io/en/stable/user-guide/kustomize/).
func (ix *Index) argoKustomizes(d ArgoDirectory) bool {
	_, isRoot := ix.roots[d.Path]
	return isRoot && !d.directory
}

// argoOverrides returns the kustomize block of d when Argo CD writes it into
// the kustomization that renders o, else nil.
func (ix *Index) argoOverrides(o *Object, d ArgoDirectory) *objects.ApplicationSourceKustomize {
	if d.Kustomize == nil || o.Root != d.Path || !ix.argoKustomizes(d) {
		return nil
	}
	return d.Kustomize
}

// argoName is the name o is applied under through d: `kustomize edit set
// nameprefix` and `namesuffix` replace those of the path's kustomization.
func (ix *Index) argoName(o *Object, d ArgoDirectory) string {
	k := ix.argoOverrides(o, d)
	if k == nil || k.NamePrefix == "" && k.NameSuffix == "" {
		return o.Name
	}
	name := o.Name
	if r := ix.roots[o.Root]; r != nil {
		if k.NamePrefix != "" {
			name = strings.TrimPrefix(name, r.namePrefix)
		}
		if k.NameSuffix != "" {
			name = strings.TrimSuffix(name, r.nameSuffix)
		}
	}
	return k.NamePrefix + name + k.NameSuffix
}

// argoNamespace is the namespace o is rendered in through d: `kustomize edit
// set namespace` replaces the kustomization's, which kustomize sets on every
// namespaced object.
func (ix *Index) argoNamespace(o *Object, d ArgoDirectory) string {
	if k := ix.argoOverrides(o, d); k != nil && k.Namespace != "" {
		return k.Namespace
	}
	return o.Namespace
}

// argoRenames reports whether an Application the hints name renames what
// one of its kustomize sources renders.
func (ix *Index) argoRenames(hints Hints) bool {
	for _, d := range hints.Directories {
		if d.Kustomize != nil && (d.Kustomize.NamePrefix != "" || d.Kustomize.NameSuffix != "") && ix.argoKustomizes(d) {
			return true
		}
	}
	return false
}

// argoCandidates are the objects of w's kind that one of the hints'
// sources applies under w's name.
func (ix *Index) argoCandidates(w drift.Workload, hints Hints) []int {
	out := slices.Clone(ix.byKindName[w.Kind+"/"+w.Name])
	for _, d := range hints.Directories {
		if ix.argoOverrides(&Object{Root: d.Path}, d) == nil {
			continue
		}
		for i := range ix.objects {
			o := &ix.objects[i]
			if o.Root == d.Path && o.Kind == w.Kind && ix.argoName(o, d) == w.Name {
				out = append(out, i)
			}
		}
	}
	// Renamed objects leave their rendered name: keep only those some
	// source applies as w.
	kept := out[:0]
	for _, i := range out {
		o := &ix.objects[i]
		if ix.argoAppliesAs(o, hints, w.Name) {
			kept = append(kept, i)
		}
	}
	slices.Sort(kept)
	return slices.Compact(kept)
}

// argoAppliesAs reports whether o is applied under name by a source of the
// hints, or by none of them (the scope check then decides).
func (ix *Index) argoAppliesAs(o *Object, hints Hints, name string) bool {
	applied := false
	for _, d := range hints.Directories {
		if ix.argoApplies(d, o) {
			applied = true
			if ix.argoName(o, d) == name {
				return true
			}
		}
	}
	return !applied && o.Name == name
}

// argoNamespaceFor is the namespace a kustomize source of the hints sets
// on o, when one does.
func (ix *Index) argoNamespaceFor(o *Object, hints Hints) (string, bool) {
	for _, d := range hints.Directories {
		if k := ix.argoOverrides(o, d); k != nil && k.Namespace != "" {
			return k.Namespace, true
		}
	}
	return "", false
}

// argoDeployed is how an Application source a applies o: its kustomize
// block's name and namespace, else o's.
func (ix *Index) argoDeployed(a Applied, o *Object) (name, namespace string, forced bool) {
	if a.Directory == nil {
		return o.Name, "", false
	}
	if k := ix.argoOverrides(o, *a.Directory); k != nil && k.Namespace != "" {
		return ix.argoName(o, *a.Directory), k.Namespace, true
	}
	return ix.argoName(o, *a.Directory), "", false
}

// argoRendersAs reports whether a kustomize source of the Application the
// intended workload was located through turns o into that workload.
func (ix *Index) argoRendersAs(o *Object, in intent) bool {
	if o.Kind != in.id.Kind {
		return false
	}
	for _, d := range in.hints.Directories {
		if ix.argoOverrides(o, d) == nil || ix.argoName(o, d) != in.id.Name {
			continue
		}
		if ns := ix.argoNamespace(o, d); ns == "" || ns == in.id.Namespace {
			return true
		}
	}
	return false
}

// argoUnbuildable names a kustomize block on a path Argo CD cannot build,
// for a workload not found there.
func (ix *Index) argoUnbuildable(hints Hints) string {
	for _, d := range hints.Directories {
		if d.Kustomize != nil && !ix.argoKustomizes(d) {
			return fmt.Sprintf("%s sets kustomize options on %s, which has no kustomization file: Argo CD cannot build it", hints.Via, d.Path)
		}
	}
	return ""
}

// argoManifest is an Argo CD Application document of the repository.
type argoManifest struct {
	File     string // repo-relative
	Document int
	App      objects.Application
}

// argoKind finds files that may hold an Application.
var argoKind = regexp.MustCompile(`kind"?\s*:\s*["']?Application\b`)

func argoManifestsIn(rel string, data []byte) []argoManifest {
	var out []argoManifest
	eachObjectNode(data, func(index int, n *yaml.Node) {
		var doc map[string]any
		if isApplicationKind(scalarAt(n, "apiVersion"), scalarAt(n, "kind")) && n.Decode(&doc) == nil {
			if app, ok := applicationFrom(doc); ok {
				out = append(out, argoManifest{File: rel, Document: index, App: app})
			}
		}
	})
	return out
}

// argoManifestOf finds the repository's copy of the Application that ref
// names, reading the source at the same place with the same path: exactly
// one, or nil.
func (ix *Index) argoManifestOf(ref ArgoSourceRef, path string) (*argoManifest, *objects.ApplicationSource) {
	var found *argoManifest
	var source *objects.ApplicationSource
	for i := range ix.argo {
		m := &ix.argo[i]
		if m.App.Name != ref.Name || (m.App.Namespace != "" && m.App.Namespace != ref.Namespace) {
			continue
		}
		for _, s := range argoSources(&m.App) {
			if s.at == ref.At && cleanRepoPath(s.src.Path) == path {
				if found != nil {
					return nil, nil // two copies: which one the cluster runs is unknown
				}
				found, source = m, &s.src
			}
		}
	}
	return found, source
}

// argoSite is an Application of the repository that gets kedge's restart
// patch in one source's kustomize.patches: the source's path renders the
// workload's document there once, as that workload.
type argoSite struct {
	manifest *argoManifest
	// at is the source's place in the Application ("spec.sources[1]").
	at   string
	path string
	// patches are the source's kustomize patches in the repository copy.
	patches []objects.KustomizePatch
	// rendered is the workload's identity in the path's build with the
	// source's kustomize block.
	rendered WorkloadID
	// target is the name the patch selects: the document's, as the path's
	// kustomization sees it before its own prefix and Argo CD's.
	target string
}

// argoPatchSite returns where a patch in an Application source of the
// hints restarts w alone, or nil.
func (ix *Index) argoPatchSite(w drift.Workload, hints Hints, src Source) *argoSite {
	for _, d := range hints.Directories {
		if !ix.argoKustomizes(d) {
			continue
		}
		renders := ix.rendersOf(d.Path, src)
		if len(renders) != 1 {
			continue
		}
		o := renders[0]
		id := WorkloadID{Namespace: ix.argoNamespace(o, d), Kind: o.Kind, Name: ix.argoName(o, d)}
		if id.Name != w.Name || (id.Namespace != "" && id.Namespace != w.Namespace) {
			continue
		}
		m, source := ix.argoManifestOf(d.Source, d.Path)
		if m == nil {
			continue
		}
		site := &argoSite{manifest: m, at: d.Source.At, path: d.Path, rendered: id, target: ix.patchTargetName(o)}
		if source.Kustomize != nil {
			site.patches = source.Kustomize.Patches
		}
		return site
	}
	return nil
}

// inArgoPatch makes loc an overlay patch in the site's Application.
func (ix *Index) inArgoPatch(loc Location, site *argoSite) Location {
	loc.Root = ""
	loc.argo = site
	loc.Manifest.Edit = drift.EditOverlayPatch
	loc.Manifest.Detail = ""
	return loc
}

// restartEntry returns kedge's entry of the site's patches for kind, or nil.
func (s *argoSite) restartEntry(kind string) *objects.KustomizePatch {
	for i, p := range s.patches {
		if p.Path == "" && len(p.Options) == 0 && len(p.Target) == 2 && p.Target["kind"] == kind && p.Target["name"] == s.target && restartShaped(p.Patch) != nil {
			return &s.patches[i]
		}
	}
	return nil
}

func (s *argoSite) hasRestart(kind string) bool { return s.restartEntry(kind) != nil }

// annotationsOver returns the render's template annotations with those of
// kedge's entry on top, as Argo CD's build applies them.
func (s *argoSite) annotationsOver(rendered map[string]string, kind string) map[string]string {
	if p := s.restartEntry(kind); p != nil {
		return withRestartPatch(rendered, p.Patch)
	}
	return rendered
}

// argoEdit is one restart that goes in an Application source's patches.
type argoEdit struct {
	site *argoSite
	edit podTemplateEdit
}

// applyArgoPatches writes kedge's entries into the Application sources of
// one file.
func (ix *Index) applyArgoPatches(f *pendingFile) ([]FileEdit, *Refusal) {
	edits := make([]patchListEdit, 0, len(f.argo))
	for _, ae := range f.argo {
		list := yamledit.PatchList{Kind: "Application", At: ae.site.at + ".kustomize"}
		edits = append(edits, patchListEdit{edit: ae.edit, target: ae.site.target, document: ae.site.manifest.Document, list: list})
	}
	return ix.applyPatchListEdits(f, edits, "an Argo CD Application")
}

// checkArgo builds the path of every Application source an edit patches,
// as Argo CD builds it, with the Application as it was and as edited, and
// reports the edits whose render changes anything but the intended
// restarts.
func (v *verifier) checkArgo(edits []FileEdit, intended []intent, failed map[int]string) {
	type site struct {
		file string
		doc  int
		at   string
	}
	sites := map[site]map[WorkloadID]intent{}
	for _, in := range intended {
		if in.argo == nil {
			continue
		}
		k := site{in.argo.manifest.File, in.argo.manifest.Document, in.argo.at}
		if sites[k] == nil {
			sites[k] = map[WorkloadID]intent{}
		}
		sites[k][in.argo.rendered] = in
	}
	keys := make([]site, 0, len(sites))
	for k := range sites {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for i, e := range edits {
		for _, k := range keys {
			if k.file != e.Path {
				continue
			}
			if err := v.compareArgo(e, k.doc, k.at, sites[k]); err != nil {
				if _, done := failed[i]; !done {
					failed[i] = fmt.Sprintf("building the path of the Argo CD Application source in %s with the edit: %v", e.Path, err)
				}
			}
		}
	}
}

func (v *verifier) compareArgo(e FileEdit, doc int, at string, want map[WorkloadID]intent) error {
	before, err := argoSourceAt(e.Before, doc, at)
	if err != nil {
		return err
	}
	after, err := argoSourceAt(e.After, doc, at)
	if err != nil {
		return err
	}
	b := v.ix.renderArgo(before, true)
	if b.err != nil {
		return b.err
	}
	return compareRenders(b, v.ix.renderArgo(after, false), want)
}

// argoSourceAt reads the source at `at` of the Application in document doc.
func argoSourceAt(data []byte, doc int, at string) (objects.ApplicationSource, error) {
	for _, m := range argoManifestsIn("", data) {
		if m.Document != doc {
			continue
		}
		for _, s := range argoSources(&m.App) {
			if s.at == at {
				return s.src, nil
			}
		}
	}
	return objects.ApplicationSource{}, fmt.Errorf("document %d has no Argo CD Application source at %s", doc, at)
}

// renderArgo builds a kustomize source the way Argo CD's repo server does:
// the path's kustomization with the source's name prefix, suffix and
// namespace in place of its own, and its labels, images, patches and
// components added.
func (ix *Index) renderArgo(src objects.ApplicationSource, compact bool) renderResult {
	dir := ix.abs(cleanRepoPath(src.Path))
	name, data, err := argoKustomizationFile(ix.fs, dir, src.Kustomize)
	if err != nil {
		return renderResult{err: err}
	}
	return builtObjects(buildRoot(ix.fs, dir, map[string][]byte{filepath.Join(dir, name): data}), compact)
}

func argoKustomizationFile(fsys *repofs.FS, dir string, opts *objects.ApplicationSourceKustomize) (string, []byte, error) {
	var k types.Kustomization
	name := ""
	for _, n := range kustomizationFileNames {
		data, err := readRegular(fsys, filepath.Join(dir, n))
		if err != nil {
			continue
		}
		if err := sigsyaml.Unmarshal(data, &k); err != nil {
			return "", nil, err
		}
		name = n
		break
	}
	if name == "" {
		return "", nil, errors.New("no kustomization file: Argo CD cannot build the source")
	}
	if opts == nil {
		data, err := sigsyaml.Marshal(&k)
		return name, data, err
	}
	if opts.NamePrefix != "" {
		k.NamePrefix = opts.NamePrefix
	}
	if opts.NameSuffix != "" {
		k.NameSuffix = opts.NameSuffix
	}
	for _, img := range opts.Images {
		k.Images = setImage(k.Images, parseImageArg(img))
	}
	if len(opts.CommonLabels) > 0 {
		if k.CommonLabels == nil {
			k.CommonLabels = map[string]string{}
		}
		for key, value := range opts.CommonLabels {
			if _, set := k.CommonLabels[key]; set && !opts.ForceCommonLabels {
				return "", nil, fmt.Errorf("commonLabels already has %s: Argo CD's kustomize edit refuses it without forceCommonLabels", key)
			}
			k.CommonLabels[key] = value
		}
	}
	if opts.Namespace != "" {
		k.Namespace = opts.Namespace
	}
	for _, p := range opts.Patches {
		patch := types.Patch{Path: p.Path, Patch: p.Patch}
		if len(p.Options) > 0 {
			patch.Options = &types.PatchArgs{AllowNameChange: p.Options["allowNameChange"], AllowKindChange: p.Options["allowKindChange"]}
		}
		if len(p.Target) > 0 {
			raw, err := sigsyaml.Marshal(p.Target)
			if err != nil {
				return "", nil, err
			}
			patch.Target = &types.Selector{}
			if err := sigsyaml.Unmarshal(raw, patch.Target); err != nil {
				return "", nil, err
			}
		}
		k.Patches = append(k.Patches, patch)
	}
	for _, c := range opts.Components {
		if info, err := statIn(fsys, filepath.Join(dir, c)); opts.IgnoreMissingComponents && (err != nil || !info.IsDir()) {
			continue
		}
		if !slices.Contains(k.Components, c) {
			k.Components = append(k.Components, c)
		}
	}
	data, err := sigsyaml.Marshal(&k)
	return name, data, err
}

// parseImageArg reads a `kustomize edit set image` argument: name, or
// name=newName, each with an optional :tag or @digest.
func parseImageArg(arg string) types.Image {
	name, rest, renamed := strings.Cut(arg, "=")
	if !renamed {
		rest = arg
	}
	img := types.Image{}
	ref := rest
	if at := strings.Index(ref, "@"); at >= 0 {
		img.Digest, ref = ref[at+1:], ref[:at]
	} else if colon := strings.LastIndex(ref, ":"); colon > strings.LastIndex(ref, "/") {
		img.NewTag, ref = ref[colon+1:], ref[:colon]
	}
	if renamed {
		img.Name = name
		if ref != name && ref != "*" {
			img.NewName = ref
		}
	} else {
		img.Name = ref
	}
	return img
}

// setImage replaces the entry for img's name, or appends it.
func setImage(list []types.Image, img types.Image) []types.Image {
	for i, existing := range list {
		if existing.Name == img.Name {
			out := slices.Clone(list)
			out[i] = img
			return out
		}
	}
	return append(list, img)
}
