package argo

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// Kustomizes reports whether Argo CD builds the source's path with
// kustomize options of its own: the path holds a kustomization file and no
// directory block stands beside them (both make Argo CD refuse the source).
// A kustomize block on a path without the file does not make it build:
// `kustomize edit` and the build both need it
// (https://argo-cd.readthedocs.io/en/stable/user-guide/kustomize/).
func Kustomizes(ix *index.Index, d Directory) bool {
	return ix.RootAt(d.Path) != nil && !d.directory
}

// overrides returns the kustomize block of d when Argo CD writes it into
// the kustomization that renders o, else nil.
func overrides(ix *index.Index, o *index.Object, d Directory) *objects.ApplicationSourceKustomize {
	if d.Kustomize == nil || o.Root != d.Path || !Kustomizes(ix, d) {
		return nil
	}
	return d.Kustomize
}

// NameOf is the name o is applied under through d: `kustomize edit set
// nameprefix` and `namesuffix` replace those of the path's kustomization.
func NameOf(ix *index.Index, o *index.Object, d Directory) string {
	k := overrides(ix, o, d)
	if k == nil || k.NamePrefix == "" && k.NameSuffix == "" {
		return o.Name
	}
	name := o.Name
	if r := ix.RootAt(o.Root); r != nil {
		if k.NamePrefix != "" {
			name = strings.TrimPrefix(name, r.NamePrefix())
		}
		if k.NameSuffix != "" {
			name = strings.TrimSuffix(name, r.NameSuffix())
		}
	}
	return k.NamePrefix + name + k.NameSuffix
}

// namespaceOf is the namespace o is rendered in through d: `kustomize edit
// set namespace` replaces the kustomization's, which kustomize sets on every
// namespaced object.
func namespaceOf(ix *index.Index, o *index.Object, d Directory) string {
	if k := overrides(ix, o, d); k != nil && k.Namespace != "" {
		return k.Namespace
	}
	return o.Namespace
}

// Renames reports whether an Application source renames what one of its
// kustomize paths renders.
func Renames(ix *index.Index, dirs []Directory) bool {
	for _, d := range dirs {
		if d.Kustomize != nil && (d.Kustomize.NamePrefix != "" || d.Kustomize.NameSuffix != "") && Kustomizes(ix, d) {
			return true
		}
	}
	return false
}

// Candidates are the objects of w's kind that one of the sources applies
// under w's name.
func Candidates(ix *index.Index, w drift.Workload, dirs []Directory) []int {
	out := slices.Clone(ix.ByKindName(w.Kind + "/" + w.Name))
	for _, d := range dirs {
		if overrides(ix, &index.Object{Root: d.Path}, d) == nil {
			continue
		}
		for i := range ix.Len() {
			o := ix.Object(i)
			if o.Root == d.Path && o.Kind == w.Kind && NameOf(ix, o, d) == w.Name {
				out = append(out, i)
			}
		}
	}
	// Renamed objects leave their rendered name: keep only those some
	// source applies as w.
	kept := out[:0]
	for _, i := range out {
		if appliesAs(ix, ix.Object(i), dirs, w.Name) {
			kept = append(kept, i)
		}
	}
	slices.Sort(kept)
	return slices.Compact(kept)
}

// appliesAs reports whether o is applied under name by one of the sources,
// or by none of them (the scope check then decides).
func appliesAs(ix *index.Index, o *index.Object, dirs []Directory, name string) bool {
	applied := false
	for _, d := range dirs {
		if Applies(ix, d, o) {
			applied = true
			if NameOf(ix, o, d) == name {
				return true
			}
		}
	}
	return !applied && o.Name == name
}

// NamespaceFor is the namespace a kustomize source sets on o, when one
// does.
func NamespaceFor(ix *index.Index, o *index.Object, dirs []Directory) (string, bool) {
	for _, d := range dirs {
		if k := overrides(ix, o, d); k != nil && k.Namespace != "" {
			return k.Namespace, true
		}
	}
	return "", false
}

// Deployed is how an Application source d applies o: its kustomize block's
// name and namespace, else o's.
func Deployed(ix *index.Index, d *Directory, o *index.Object) (name, namespace string, forced bool) {
	if d == nil {
		return o.Name, "", false
	}
	if k := overrides(ix, o, *d); k != nil && k.Namespace != "" {
		return NameOf(ix, o, *d), k.Namespace, true
	}
	return NameOf(ix, o, *d), "", false
}

// Renamer is how Application sources rename what they render, for the
// verifier.
type Renamer struct{ Dirs []Directory }

// RendersAs reports whether a kustomize source turns o into the workload
// id.
func (r Renamer) RendersAs(ix *index.Index, o *index.Object, id restart.WorkloadID) bool {
	if o.Kind != id.Kind {
		return false
	}
	for _, d := range r.Dirs {
		if overrides(ix, o, d) == nil || NameOf(ix, o, d) != id.Name {
			continue
		}
		if ns := namespaceOf(ix, o, d); ns == "" || ns == id.Namespace {
			return true
		}
	}
	return false
}

// Unbuildable names a kustomize block on a path Argo CD cannot build, for
// a workload not found there.
func Unbuildable(ix *index.Index, dirs []Directory, via string) string {
	for _, d := range dirs {
		if d.Kustomize != nil && !Kustomizes(ix, d) {
			return fmt.Sprintf("%s sets kustomize options on %s, which has no kustomization file: Argo CD cannot build it", via, d.Path)
		}
	}
	return ""
}

// manifestOf finds the repository's copy of the Application that ref
// names, reading the source at the same place with the same path: exactly
// one, or nil.
func manifestOf(ix *index.Index, ref SourceRef, p string) (*index.ArgoManifest, *objects.ApplicationSource) {
	var found *index.ArgoManifest
	var source *objects.ApplicationSource
	list := ix.ArgoManifests()
	for i := range list {
		m := &list[i]
		if m.App.Name != ref.Name || (m.App.Namespace != "" && m.App.Namespace != ref.Namespace) {
			continue
		}
		for _, s := range Sources(&m.App) {
			if s.At == ref.At && cleanPath(s.Src.Path) == p {
				if found != nil {
					return nil, nil // two copies: which one the cluster runs is unknown
				}
				found, source = m, &s.Src
			}
		}
	}
	return found, source
}

// Site is an Application of the repository that gets kedge's restart patch
// in one source's kustomize.patches: the source's path renders the
// workload's document there once, as that workload.
type Site struct {
	manifest *index.ArgoManifest
	src      index.Source
	// at is the source's place in the Application ("spec.sources[1]").
	at   string
	path string
	// rendered is the workload's identity in the path's build with the
	// source's kustomize block.
	rendered restart.WorkloadID
	// target is the name the patch selects: the document's, as the path's
	// kustomization sees it before its own prefix and Argo CD's.
	target string
	// Listed finds kedge's entry among the source's kustomize patches in
	// the repository copy.
	restart.Listed
}

var patchKind = restart.PatchListKind{What: "an Argo CD Application"}

func (s *Site) File() string                 { return s.manifest.File }
func (s *Site) Kind() restart.Kind           { return patchKind }
func (s *Site) Source() index.Source         { return s.src }
func (s *Site) Document() int                { return s.manifest.Document }
func (s *Site) Target() string               { return s.target }
func (s *Site) Rendered() restart.WorkloadID { return s.rendered }
func (s *Site) Reads() restart.Reads         { return restart.ReadsIndex }
func (s *Site) List() yamledit.PatchList {
	return yamledit.PatchList{Kind: "Application", At: s.at + ".kustomize"}
}
func (s *Site) CheckKey() string {
	return fmt.Sprintf("argo %s#%d %s", s.manifest.File, s.manifest.Document, s.at)
}

// PatchSite returns where a patch in an Application source restarts w
// alone, or nil.
func PatchSite(ix *index.Index, w drift.Workload, dirs []Directory, src index.Source) *Site {
	for _, d := range dirs {
		if !Kustomizes(ix, d) {
			continue
		}
		renders := rendersOf(ix, d.Path, src)
		if len(renders) != 1 {
			continue
		}
		o := renders[0]
		id := restart.WorkloadID{Namespace: namespaceOf(ix, o, d), Kind: o.Kind, Name: NameOf(ix, o, d)}
		if id.Name != w.Name || (id.Namespace != "" && id.Namespace != w.Namespace) {
			continue
		}
		m, source := manifestOf(ix, d.Source, d.Path)
		if m == nil {
			continue
		}
		site := &Site{manifest: m, src: src, at: d.Source.At, path: d.Path, rendered: id, target: ix.PatchTargetName(o)}
		site.Listed = restart.Listed{Target: site.target}
		if source.Kustomize != nil {
			for _, p := range source.Kustomize.Patches {
				site.Patches = append(site.Patches, restart.ListedPatch{Patch: p.Patch, Target: p.Target, Other: p.Path != "" || len(p.Options) > 0})
			}
		}
		return site
	}
	return nil
}

// rendersOf returns the objects root renders from document src.
func rendersOf(ix *index.Index, root string, src index.Source) []*index.Object {
	var out []*index.Object
	for _, i := range ix.ByPath(src.Path) {
		if o := ix.Object(i); o.Root == root && o.Source == src {
			out = append(out, o)
		}
	}
	return out
}

// Check builds the source's path as Argo CD builds it, with the
// Application as it was and as edited.
func (s *Site) Check(ix *index.Index, e restart.FileEdit, want map[restart.WorkloadID]restart.Intent) error {
	fail := func(err error) error {
		return fmt.Errorf("building the path of the Argo CD Application source in %s with the edit: %v", e.Path, err)
	}
	before, err := sourceAt(e.Before, s.manifest.Document, s.at)
	if err != nil {
		return fail(err)
	}
	after, err := sourceAt(e.After, s.manifest.Document, s.at)
	if err != nil {
		return fail(err)
	}
	b := render(ix, before, true)
	if b.Err != nil {
		return fail(b.Err)
	}
	if err := restart.CompareRenders(b, render(ix, after, false), want); err != nil {
		return fail(err)
	}
	return nil
}

// sourceAt reads the source at `at` of the Application in document doc.
func sourceAt(data []byte, doc int, at string) (objects.ApplicationSource, error) {
	for _, m := range index.ArgoManifestsIn("", data) {
		if m.Document != doc {
			continue
		}
		for _, s := range Sources(&m.App) {
			if s.At == at {
				return s.Src, nil
			}
		}
	}
	return objects.ApplicationSource{}, fmt.Errorf("document %d has no Argo CD Application source at %s", doc, at)
}

// render builds a kustomize source the way Argo CD's repo server does: the
// path's kustomization with the source's name prefix, suffix and namespace
// in place of its own, and its labels, images, patches and components
// added.
func render(ix *index.Index, src objects.ApplicationSource, compact bool) index.Render {
	dir := cleanPath(src.Path)
	name, data, err := kustomizationFile(ix, dir, src.Kustomize)
	if err != nil {
		return index.Render{Err: err}
	}
	return ix.Build(dir, map[string][]byte{path.Join(dir, name): data}, compact)
}

func kustomizationFile(ix *index.Index, dir string, opts *objects.ApplicationSourceKustomize) (string, []byte, error) {
	var k types.Kustomization
	name := ""
	for _, n := range index.KustomizationFileNames {
		data, err := ix.ReadFile(path.Join(dir, n))
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
		for _, key := range slices.Sorted(maps.Keys(opts.CommonLabels)) {
			if _, set := k.CommonLabels[key]; set && !opts.ForceCommonLabels {
				return "", nil, fmt.Errorf("commonLabels already has %s: Argo CD's kustomize edit refuses it without forceCommonLabels", key)
			}
			k.CommonLabels[key] = opts.CommonLabels[key]
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
		if info, err := ix.FS().Stat(path.Join(dir, c)); opts.IgnoreMissingComponents && (err != nil || !info.IsDir()) {
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

func cleanPath(p string) string { return route.CleanPath(p) }
