package manifest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// Flux helm-controller renders a HelmRelease's chart and applies its
// spec.postRenderers (kustomize patches and images) to the result before
// installing it (https://fluxcd.io/flux/components/helm/helmreleases/#post-renderers).
// A workload the chart renders is therefore restarted, whatever the chart's
// values offer, by giving its HelmRelease a post-renderer patch that sets
// the restart annotations on the workload's pod template. The HelmRelease
// is a file of the repository like any other: it is located, in place or
// through an overlay, exactly as a Deployment is.

const helmReleaseGroup = "helm.toolkit.fluxcd.io"

func isHelmReleaseKind(apiVersion, kind string) bool {
	return kind == "HelmRelease" && apiGroup(apiVersion) == helmReleaseGroup
}

// isIndexedKind reports whether the index keeps objects of this kind: the
// workloads kedge restarts and the HelmReleases that render workloads.
func isIndexedKind(apiVersion, kind string) bool {
	return isWorkloadKind(apiVersion, kind) || isHelmReleaseKind(apiVersion, kind)
}

// ReleaseRender is what a HelmRelease, as the repository renders it, says
// about post-renderers.
type ReleaseRender struct {
	// PostRenderers counts its spec.postRenderers entries, kedge's included.
	PostRenderers int
	// Restarts are the pod template annotations kedge's entry sets, by
	// "Kind/name" of the workload it targets.
	Restarts map[string]map[string]string
}

func releaseRender(postRenderers any) *ReleaseRender {
	list, _ := postRenderers.([]any)
	return &ReleaseRender{PostRenderers: len(list), Restarts: yamledit.ReleaseRestarts(postRenderers)}
}

// ReleaseRef names the Flux HelmRelease that rendered a workload, as the
// helm-controller labels on the workload say.
type ReleaseRef struct{ Namespace, Name string }

func (r ReleaseRef) String() string { return "HelmRelease " + r.Namespace + "/" + r.Name }

// releaseLocation is how a workload's HelmRelease is edited.
type releaseLocation struct {
	ref ReleaseRef
	// overlay is set when the HelmRelease's file is shared: kedge's entry
	// is then added by a JSON 6902 patch in the namespace's overlay (Root).
	overlay bool
	// postRenderers counts the release's entries as the overlay renders it,
	// kedge's own excluded: a patch appends to a list that exists and
	// creates one that does not.
	postRenderers int
}

// locateRelease finds the HelmRelease that renders w. The release is
// searched for like a workload of kind HelmRelease in its own namespace,
// so that a release in a shared base is patched from the namespace's
// overlay; what kedge cannot edit keeps the status helm, with the reason.
func (ix *Index) locateRelease(w drift.Workload, hints Hints) Location {
	ref := *hints.Release
	rw := drift.Workload{Namespace: ref.Namespace, Kind: "HelmRelease", Name: ref.Name, APIVersion: helmReleaseGroup + "/v2"}
	found := ix.locate(rw, Hints{Paths: hints.Paths, Applied: hints.Applied, appliedByPath: hints.appliedByPath})
	switch found.Manifest.Status {
	case drift.ManifestFound:
	case drift.ManifestAmbiguous:
		found.Manifest.Detail = fmt.Sprintf("%s renders it; %s", ref, found.Manifest.Detail)
		return found
	default:
		return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm,
			Detail: fmt.Sprintf("%s renders it and is not in the repository (%s)", ref, found.Manifest.Detail)}}
	}
	rel := &releaseLocation{ref: ref, overlay: found.Manifest.Edit == drift.EditOverlayPatch}
	loc := Location{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: found.Source.Path, Edit: drift.EditHelmPostRenderer, Detail: ref.String()},
		Source:   found.Source,
		Root:     found.Root,
		release:  rel,
	}
	if rel.overlay && found.Root == "" {
		loc.Manifest.Detail = found.Manifest.Detail
		return loc
	}
	r := ix.releaseIn(found.Root, found.Source)
	// A post-renderer patch kedge wrote before for the workload would be
	// applied after the values, and undo a later restart through them.
	if hints.PreferValues && (r == nil || r.Restarts[w.Kind+"/"+w.Name] == nil) && len(ix.includedBy[found.Root]) == 0 {
		if byValue, ok := ix.releaseValues(w, loc, hints); ok {
			return byValue
		}
	}
	if r != nil {
		loc.TemplateAnnotations = r.Restarts[w.Kind+"/"+w.Name]
		rel.postRenderers = r.PostRenderers
		if r.Restarts != nil {
			rel.postRenderers--
		}
	}
	return loc
}

// releaseIn returns how root renders the HelmRelease document src.
func (ix *Index) releaseIn(root string, src Source) *ReleaseRender {
	for _, i := range ix.byPath[src.Path] {
		if o := &ix.objects[i]; o.Source == src && o.Root == root && o.Release != nil {
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

// releaseRestart is one workload restarted through its HelmRelease.
type releaseRestart struct {
	id    WorkloadID
	patch yamledit.RestartPatch
	loc   Location
}

// releasePatchFile is kedge's JSON 6902 patch of one HelmRelease in an
// overlay; one per release, since a patch file of that kind has one target.
func releasePatchFile(root *Root, release string) string {
	ext := ".yaml"
	if path.Ext(root.File) == ".yml" {
		ext = ".yml"
	}
	return "kedge-helm-" + release + ext
}

// listedReleasePatches returns "HelmRelease/<name>" for every release
// patch file of kedge's the kustomization lists: that overlay must stay the
// place of the release's restarts, or its older entry, applied after an
// edit elsewhere, would undo them.
func listedReleasePatches(kf *kustomizationFile) map[string]bool {
	var out map[string]bool
	for _, f := range kf.files {
		base := path.Base(f)
		for _, ext := range []string{".yaml", ".yml"} {
			if name, ok := strings.CutPrefix(strings.TrimSuffix(base, ext), "kedge-helm-"); ok && strings.HasSuffix(base, ext) && path.Dir(path.Clean(f)) == "." {
				if out == nil {
					out = map[string]bool{}
				}
				out["HelmRelease/"+name] = true
			}
		}
	}
	return out
}

const releasePatchHeader = "# A post-renderer by which kedge restarts workloads of this Helm release in this overlay,\n" +
	"# written here because the file that defines the release is shared.\n"

// setReleaseRestarts writes kedge's post-renderer entry into each
// HelmRelease of a file that restarts workloads, in document order.
func setReleaseRestarts(data []byte, restarts []releaseRestart) ([]byte, error) {
	bySource := map[Source][]yamledit.RestartPatch{}
	var sources []Source
	for _, r := range restarts {
		src := r.loc.Source
		if _, ok := bySource[src]; !ok {
			sources = append(sources, src)
		}
		bySource[src] = append(bySource[src], r.patch)
	}
	sort.Slice(sources, func(i, j int) bool { return sources[i].Document < sources[j].Document })
	for _, src := range sources {
		t := yamledit.Target{Kind: src.Kind, Name: src.Name, Namespace: src.Namespace, Document: src.Document}
		out, changed, err := yamledit.SetReleaseRestarts(data, t, bySource[src])
		if err != nil {
			return nil, err
		}
		if changed {
			data = out
		}
	}
	return data, nil
}

// applyReleasePatch writes kedge's patch file of one HelmRelease in an
// overlay, and the overlay's kustomization entry listing it.
func (ix *Index) applyReleasePatch(f *pendingFile) ([]FileEdit, *Refusal) {
	var patches []yamledit.RestartPatch
	var ids []WorkloadID
	for _, r := range f.releases {
		patches = append(patches, r.patch)
		ids = append(ids, r.id)
	}
	fail := func(p string, err error) ([]FileEdit, *Refusal) {
		r := f.refusal(err)
		r.Path = p
		return nil, r
	}
	first := f.releases[0].loc
	root := ix.roots[f.patchRoot]
	before, err := ix.readInside(f.path)
	created := errors.Is(err, os.ErrNotExist)
	if err != nil && !created {
		return fail(f.path, err)
	}
	file := yamledit.ReleasePatchFile{AddPath: yamledit.AppendPostRenderer}
	if first.release.postRenderers == 0 {
		file.AddPath = yamledit.CreatePostRenderers
	}
	if !created {
		existing, ok := yamledit.ReadReleasePatchFile(before)
		if !ok {
			return fail(f.path, fmt.Errorf("%s is not a post-renderer patch kedge wrote", f.path))
		}
		file = existing
	}
	after, err := file.Render(releasePatchHeader, patches)
	if err != nil {
		return fail(f.path, err)
	}
	target := yamledit.PatchTarget{Kind: first.Source.Kind, Name: first.Source.Name}
	out, failed, err := ix.patchFileEdits(f.path, root, before, after, created, ids, func(kustomization []byte) ([]byte, bool, error) {
		return yamledit.AddKustomizationTargetPatch(kustomization, path.Base(f.path), target)
	})
	if err != nil {
		return fail(failed, err)
	}
	return out, nil
}

// releaseIntents merges the restarts of each HelmRelease into one intent:
// a render holds the release once, with every workload's patch.
func releaseIntents(items []releaseRestart) []intent {
	var out []intent
	bySource := map[Source]int{}
	for _, it := range items {
		i, ok := bySource[it.loc.Source]
		if !ok {
			i = len(out)
			bySource[it.loc.Source] = i
			out = append(out, intent{
				id:      WorkloadID{Namespace: it.loc.release.ref.Namespace, Kind: "HelmRelease", Name: it.loc.release.ref.Name},
				source:  it.loc.Source,
				release: map[string]map[string]string{},
			})
		}
		out[i].release[it.patch.Key()] = it.patch.Annotations
	}
	return out
}

// compareRelease accepts a render of a HelmRelease that, kedge's entry
// aside, is the render before, and whose kedge entry carries the intended
// annotations for every intended workload.
func compareRelease(beforeBody, afterBody map[string]any, in intent, id WorkloadID) error {
	restartsOf := func(body map[string]any) map[string]map[string]string {
		spec, _ := body["spec"].(map[string]any)
		return yamledit.ReleaseRestarts(spec["postRenderers"])
	}
	had, got := restartsOf(beforeBody), restartsOf(afterBody)
	for key, want := range in.release {
		for k, v := range want {
			if got[key][k] != v {
				return fmt.Errorf("%s: post-renderer patch of %s sets %s to %q, want %q", id, key, k, got[key][k], v)
			}
		}
	}
	// The patches of workloads restarted before stay as they were.
	for key, ann := range got {
		if _, intended := in.release[key]; !intended && !maps.Equal(ann, had[key]) {
			return fmt.Errorf("%s: post-renderer patch of %s changes, which restarts it", id, key)
		}
	}
	if !jsonEqual(withoutRestartEntry(beforeBody), withoutRestartEntry(afterBody)) {
		return fmt.Errorf("%s changes beyond kedge's post-renderer", id)
	}
	return nil
}

// withoutRestartEntry returns a copy of a HelmRelease body without kedge's
// post-renderer entry, and without the list when nothing else is in it.
func withoutRestartEntry(body map[string]any) map[string]any {
	out := copyMap(body)
	spec, _ := out["spec"].(map[string]any)
	list, ok := spec["postRenderers"].([]any)
	if !ok {
		return out
	}
	var kept []any
	for _, e := range list {
		if !yamledit.IsRestartEntry(e) {
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

func jsonEqual(a, b map[string]any) bool { return reflect.DeepEqual(normalJSON(a), normalJSON(b)) }
