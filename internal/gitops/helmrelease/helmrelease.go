// Package helmrelease is the Flux HelmRelease source. helm-controller
// renders a HelmRelease's chart and applies its spec.postRenderers
// (kustomize patches and images) to the result before installing it
// (https://fluxcd.io/flux/components/helm/helmreleases/#post-renderers). A
// workload the chart renders is therefore restarted, whatever the chart's
// values offer, by giving its HelmRelease a post-renderer patch that sets
// the restart annotations on the workload's pod template. The HelmRelease
// is a file of the repository like any other: it is located, in place or
// through an overlay, exactly as a Deployment is. A team that prefers
// values has the restart written as a chart value in spec.values instead,
// when the chart has one (values.go).
package helmrelease

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/yamledit"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

// Ref names the Flux HelmRelease that rendered a workload, as the
// helm-controller labels on the workload say.
type Ref struct{ Namespace, Name string }

func (r Ref) String() string { return "HelmRelease " + r.Namespace + "/" + r.Name }

// Workload is the HelmRelease named, as a workload to locate in the
// repository like any other object.
func (r Ref) Workload() drift.Workload {
	return drift.Workload{Namespace: r.Namespace, Kind: "HelmRelease", Name: r.Name, APIVersion: document.HelmReleaseGroup + "/v2"}
}

// Options are what a HelmRelease's restart may be written as.
type Options struct {
	// PreferValues restarts through a chart value when the chart has one.
	PreferValues bool
	Values       ValuesOptions
}

// Locate turns the location of w's HelmRelease (found, as the repository
// writes it) into the restart of w through that release: kedge's
// post-renderer entry, or a chart value with PreferValues. What kedge
// cannot edit keeps the status helm, with the reason.
func Locate(ix *index.Index, w drift.Workload, ref Ref, found restart.Found, opts Options) restart.Found {
	switch found.Manifest.Status {
	case drift.ManifestFound:
	case drift.ManifestAmbiguous:
		found.Manifest.Detail = fmt.Sprintf("%s renders it; %s", ref, found.Manifest.Detail)
		return found
	default:
		return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestHelm,
			Detail: fmt.Sprintf("%s renders it; %s", ref, found.Manifest.Detail)}}
	}
	overlay := found.Manifest.Edit == drift.EditOverlayPatch
	out := restart.Found{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: found.Source.Path, Edit: drift.EditHelmPostRenderer, Detail: ref.String()},
		Source:   found.Source,
		Root:     found.Root,
	}
	if overlay && found.Root == "" {
		out.Manifest.Detail = found.Manifest.Detail
		out.Site = &Overlay{ref: ref, src: found.Source}
		return out
	}
	r := renderIn(ix, found.Root, found.Source)
	// A post-renderer patch kedge wrote before for the workload would be
	// applied after the values, and undo a later restart through them.
	valuesNot := ""
	switch {
	case !opts.PreferValues:
	case r != nil && r.Restarts[w.Kind+"/"+w.Name] != nil:
		valuesNot = "kedge restarted it through a post-renderer before, which would undo a later restart through values"
	case len(ix.IncludedBy(found.Root)) > 0 || overlay:
		valuesNot = "its HelmRelease is patched from an overlay"
	default:
		byValue, why := locateValue(ix, w, ref, out, opts.Values)
		if why == "" {
			return byValue
		}
		valuesNot = why
	}
	if valuesNot != "" {
		out.Manifest.Fallback = "not chart values: " + valuesNot
	}
	postRenderers := 0
	if r != nil {
		out.TemplateAnnotations = r.Restarts[w.Kind+"/"+w.Name]
		postRenderers = r.PostRenderers
		if r.Restarts != nil {
			postRenderers--
		}
	}
	if overlay {
		root := ix.RootAt(found.Root)
		out.Site = &Overlay{ref: ref, src: found.Source, root: found.Root, rootFile: root.File, postRenderers: postRenderers}
		return out
	}
	out.Site = &PostRenderer{ref: ref, src: found.Source}
	return out
}

// renderIn returns how root renders the HelmRelease document src.
func renderIn(ix *index.Index, root string, src index.Source) *document.ReleaseRender {
	for _, i := range ix.ByPath(src.Path) {
		if o := ix.Object(i); o.Source == src && o.Root == root && o.Release != nil {
			return o.Release
		}
	}
	return nil
}

// workloadAPIVersion is the apiVersion a post-renderer patch names: the
// live object's, else the one its kind is served as.
func workloadAPIVersion(w drift.Workload) string {
	if w.APIVersion != "" {
		return w.APIVersion
	}
	if w.Kind == "Rollout" {
		return "argoproj.io/v1alpha1"
	}
	return "apps/v1"
}

// PostRenderer is kedge's entry in a HelmRelease's spec.postRenderers,
// written in the release's own file.
type PostRenderer struct {
	ref Ref
	src index.Source
}

func (s *PostRenderer) File() string                         { return s.src.Path }
func (s *PostRenderer) Kind() restart.Kind                   { return postRendererKind{} }
func (s *PostRenderer) Source() index.Source                 { return s.src }
func (s *PostRenderer) Reads() restart.Reads                 { return restart.ReadsCharts }
func (s *PostRenderer) APIVersionOf(w drift.Workload) string { return workloadAPIVersion(w) }

type postRendererKind struct{}

func (postRendererKind) Name() string { return "HelmRelease post-renderers" }

func (k postRendererKind) Write(ix *index.Index, file string, restarts []restart.Restart) ([]restart.FileEdit, error) {
	before, err := ix.ReadFile(file)
	if err != nil {
		return nil, err
	}
	after, err := k.WriteAfter(before, restarts)
	if err != nil || string(before) == string(after) {
		return nil, err
	}
	return []restart.FileEdit{{Path: file, Before: before, After: after, Workloads: restart.IDs(restarts)}}, nil
}

// WriteAfter writes kedge's post-renderer entry into each HelmRelease of
// data that restarts workloads, in document order. It goes with in-place
// restarts of the same file.
func (postRendererKind) WriteAfter(data []byte, restarts []restart.Restart) ([]byte, error) {
	bySource := map[index.Source][]helmedit.RestartPatch{}
	var sources []index.Source
	for _, r := range restarts {
		src := r.Site.Source()
		if _, ok := bySource[src]; !ok {
			sources = append(sources, src)
		}
		bySource[src] = append(bySource[src], patchOf(r))
	}
	slices.SortFunc(sources, func(a, b index.Source) int { return a.Document - b.Document })
	for _, src := range sources {
		t := yamledit.Target{Kind: src.Kind, Name: src.Name, Namespace: src.Namespace, Document: src.Document}
		out, changed, err := helmedit.SetReleaseRestarts(data, t, bySource[src])
		if err != nil {
			return nil, err
		}
		if changed {
			data = out
		}
	}
	return data, nil
}

func (postRendererKind) Intents(restarts []restart.Restart) []restart.Intent {
	return intents(restarts)
}

// GoesWith lets a HelmRelease's post-renderer share a file with in-place
// restarts: both change documents of it, each its own.
func (postRendererKind) GoesWith(k restart.Kind) bool { return restart.IsInPlace(k) }

func patchOf(r restart.Restart) helmedit.RestartPatch {
	return helmedit.RestartPatch{APIVersion: r.APIVersion, Kind: r.ID.Kind, Name: r.ID.Name, Annotations: r.Set}
}

// Overlay is kedge's post-renderer entry added to a HelmRelease from the
// namespace's overlay, when the file that defines the release is shared:
// a JSON 6902 patch (kedge-helm-<release>.yaml, listed under the overlay's
// patches: with a HelmRelease target) that appends to the base's
// postRenderers, or creates the list.
type Overlay struct {
	ref            Ref
	src            index.Source
	root, rootFile string
	// postRenderers counts the release's entries as the overlay renders
	// it, kedge's own excluded.
	postRenderers int
}

func (s *Overlay) File() string {
	return path.Join(s.root, index.ReleasePatchFile(&index.Root{Dir: s.root, File: s.rootFile}, s.src.Name))
}
func (s *Overlay) Kind() restart.Kind                   { return overlayKind{} }
func (s *Overlay) Source() index.Source                 { return s.src }
func (s *Overlay) Reads() restart.Reads                 { return restart.ReadsCharts }
func (s *Overlay) APIVersionOf(w drift.Workload) string { return workloadAPIVersion(w) }

// Possible reports whether the overlay exists: a shared HelmRelease no
// overlay renders alone cannot be patched.
func (s *Overlay) Possible() bool { return s.root != "" }

type overlayKind struct{}

func (overlayKind) Name() string { return "kedge's post-renderer patch in an overlay" }

// PatchHeader opens kedge's post-renderer patch file in an overlay.
const PatchHeader = "# A post-renderer by which kedge restarts workloads of this Helm release in this overlay,\n" +
	"# written here because the file that defines the release is shared.\n"

func (overlayKind) Write(ix *index.Index, file string, restarts []restart.Restart) ([]restart.FileEdit, error) {
	site := restarts[0].Site.(*Overlay)
	root := ix.RootAt(site.root)
	if root == nil {
		return nil, errors.New("unknown kustomize root " + site.root)
	}
	before, err := ix.ReadFile(file)
	created := errors.Is(err, os.ErrNotExist)
	if err != nil && !created {
		return nil, err
	}
	patches := make([]helmedit.RestartPatch, 0, len(restarts))
	for _, r := range restarts {
		patches = append(patches, patchOf(r))
	}
	f := helmedit.ReleasePatchFile{AddPath: helmedit.AppendPostRenderer}
	if site.postRenderers == 0 {
		f.AddPath = helmedit.CreatePostRenderers
	}
	if !created {
		existing, ok := helmedit.ReadReleasePatchFile(before)
		if !ok {
			return nil, fmt.Errorf("%s is not a post-renderer patch kedge wrote", file)
		}
		f = existing
	}
	after, err := f.Render(PatchHeader, patches)
	if err != nil {
		return nil, err
	}
	target := yamledit.PatchTarget{Kind: site.src.Kind, Name: site.src.Name}
	return restart.OverlayFileEdits(ix, file, root, before, after, created, restart.IDs(restarts), func(kustomization []byte) ([]byte, bool, error) {
		return yamledit.AddKustomizationTargetPatch(kustomization, path.Base(file), target)
	})
}

func (overlayKind) Intents(restarts []restart.Restart) []restart.Intent { return intents(restarts) }

// intents merge the restarts of each HelmRelease into one: a render holds
// the release once, with every workload's patch.
func intents(restarts []restart.Restart) []restart.Intent {
	var out []restart.Intent
	wanted := map[index.Source]map[string]map[string]string{}
	for _, r := range restarts {
		src := r.Site.Source()
		release, ok := wanted[src]
		if !ok {
			release = map[string]map[string]string{}
			wanted[src] = release
			id := restart.WorkloadID{Namespace: releaseOf(r.Site).Namespace, Kind: "HelmRelease", Name: releaseOf(r.Site).Name}
			out = append(out, restart.Intent{ID: id, Source: src, Site: r.Site, Renames: r.Renames,
				Compare: func(before, after map[string]any) error { return compare(before, after, release, id) }})
		}
		release[patchOf(r).Key()] = r.Set
	}
	return out
}

func releaseOf(s restart.Site) Ref {
	switch t := s.(type) {
	case *PostRenderer:
		return t.ref
	case *Overlay:
		return t.ref
	}
	return Ref{}
}

// compare accepts a render of a HelmRelease that, kedge's entry aside, is
// the render before, and whose kedge entry carries the intended
// annotations for every intended workload.
func compare(beforeBody, afterBody map[string]any, release map[string]map[string]string, id restart.WorkloadID) error {
	restartsOf := func(body map[string]any) map[string]map[string]string {
		spec, _ := body["spec"].(map[string]any)
		return helmedit.ReleaseRestarts(spec["postRenderers"])
	}
	had, got := restartsOf(beforeBody), restartsOf(afterBody)
	for key, want := range release {
		for k, v := range want {
			if got[key][k] != v {
				return fmt.Errorf("%s: post-renderer patch of %s sets %s to %q, want %q", id, key, k, got[key][k], v)
			}
		}
	}
	// The patches of workloads restarted before stay as they were.
	for key, ann := range got {
		if _, intended := release[key]; !intended && !maps.Equal(ann, had[key]) {
			return fmt.Errorf("%s: post-renderer patch of %s changes, which restarts it", id, key)
		}
	}
	if !document.JSONEqual(withoutRestartEntry(beforeBody), withoutRestartEntry(afterBody)) {
		return fmt.Errorf("%s changes beyond kedge's post-renderer", id)
	}
	return nil
}

// withoutRestartEntry returns a copy of a HelmRelease body without kedge's
// post-renderer entry, and without the list when nothing else is in it.
func withoutRestartEntry(body map[string]any) map[string]any {
	out := document.CopyMap(body)
	spec, _ := out["spec"].(map[string]any)
	list, ok := spec["postRenderers"].([]any)
	if !ok {
		return out
	}
	var kept []any
	for _, e := range list {
		if !helmedit.IsRestartEntry(e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(spec, "postRenderers")
	} else {
		spec["postRenderers"] = kept
	}
	return out
}
