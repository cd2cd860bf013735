package manifest

import (
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
)

type workloadKey struct{ Namespace, Kind, Name string }

func keyOf(w drift.Workload) workloadKey { return workloadKey{w.Namespace, w.Kind, w.Name} }

// Location is where a workload is defined and how it is to be edited.
type Location struct {
	// Manifest is the plan's view of the location.
	Manifest drift.Manifest
	// Source is the file and document defining the workload (found only).
	Source Source
	// Root is the kustomize root that renders the workload; for an
	// overlay-patch edit, the root whose kustomization gets the patch. Empty
	// for plain files.
	Root string
	// TemplateAnnotations are the workload's rendered pod template
	// annotations.
	TemplateAnnotations map[string]string
}

// LocateAll fills the manifest of every workload of the plan. hints may be
// nil (no GitOps metadata known).
func (ix *Index) LocateAll(plan *drift.Plan, hints func(drift.Workload) Hints) {
	for i := range plan.Workloads {
		var h Hints
		if hints != nil {
			h = hints(plan.Workloads[i])
		}
		plan.Workloads[i].Manifest = ix.Locate(plan.Workloads[i], h).Manifest
	}
}

// Locate finds the source of one workload. The result is also remembered
// for Edits.
func (ix *Index) Locate(w drift.Workload, hints Hints) Location {
	loc := ix.locate(w, hints)
	ix.mu.Lock()
	ix.located[keyOf(w)] = loc
	ix.mu.Unlock()
	return loc
}

func notFound(format string, args ...any) Location {
	return Location{Manifest: drift.Manifest{Status: drift.ManifestNotFound, Detail: fmt.Sprintf(format, args...)}}
}

func (ix *Index) locate(w drift.Workload, hints Hints) Location {
	if hints.Helm != "" {
		return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: hints.Helm}}
	}
	if hints.OtherRepo != "" {
		return notFound("%s applies it from %s, not this repository", hints.Via, hints.OtherRepo)
	}
	for _, p := range hints.Paths {
		// Argo CD renders a directory holding a chart with Helm.
		if _, err := os.Stat(ix.abs(path.Join(p, "Chart.yaml"))); err == nil {
			return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: hints.Via + " renders the chart in " + p}}
		}
	}

	var exact, loose, generated []int
	for _, i := range ix.byKindName[w.Kind+"/"+w.Name] {
		o := &ix.objects[i]
		if !sameGroup(o.APIVersion, w.APIVersion) || !ix.inScope(o, hints.Paths) {
			continue
		}
		switch {
		case hints.TargetNamespace != "":
			// Flux sets the namespace of every object of the path.
			if hints.TargetNamespace != w.Namespace {
				continue
			}
		case o.Namespace == w.Namespace:
		case o.Namespace == "":
			loose = append(loose, i)
			continue
		default:
			continue
		}
		if o.GeneratedBy != "" {
			generated = append(generated, i)
			continue
		}
		exact = append(exact, i)
	}
	matches := exact
	if len(matches) == 0 {
		for _, i := range loose {
			if ix.objects[i].GeneratedBy != "" {
				generated = append(generated, i)
			} else {
				matches = append(matches, i)
			}
		}
	}
	if len(matches) == 0 {
		if len(generated) > 0 {
			return notFound("%s %s/%s is generated (%s), not written in a file", w.Kind, w.Namespace, w.Name, ix.objects[generated[0]].GeneratedBy)
		}
		return ix.notFoundDetail(w, hints)
	}

	bySource := map[Source][]int{}
	for _, i := range matches {
		bySource[ix.objects[i].Source] = append(bySource[ix.objects[i].Source], i)
	}
	if len(bySource) > 1 {
		var paths []string
		for src := range bySource {
			if !slices.Contains(paths, src.Path) {
				paths = append(paths, src.Path)
			}
		}
		sort.Strings(paths)
		return Location{Manifest: drift.Manifest{
			Status:     drift.ManifestAmbiguous,
			Detail:     fmt.Sprintf("%d definitions match %s %s/%s", len(bySource), w.Kind, w.Namespace, w.Name),
			Candidates: paths,
		}}
	}
	var src Source
	for s := range bySource {
		src = s
	}
	return ix.chooseEdit(w, hints, src, matches)
}

func (ix *Index) notFoundDetail(w drift.Workload, hints Hints) Location {
	for _, p := range hints.Paths {
		if r := ix.roots[p]; r != nil && r.Problem != nil {
			return notFound("%s applies %s, which was skipped: %s", hints.Via, p, r.Problem.Err)
		}
	}
	if len(hints.Paths) > 0 {
		return notFound("no %s %s/%s under %s (%s)", w.Kind, w.Namespace, w.Name, strings.Join(hints.Paths, ", "), hints.Via)
	}
	return notFound("no %s %s/%s in the indexed paths", w.Kind, w.Namespace, w.Name)
}

// chooseEdit decides between editing the source in place and patching an
// overlay, for a workload whose single source is src and which the given
// objects (one per rendering root) render.
func (ix *Index) chooseEdit(w drift.Workload, hints Hints, src Source, matches []int) (loc Location) {
	roots := make([]string, 0, len(matches))
	for _, i := range matches {
		if r := ix.objects[i].Root; r != "" && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	// Innermost first: a root including fewer of the other candidates is
	// closer to the source, so a patch there touches the fewest renders.
	sort.Slice(roots, func(a, b int) bool {
		ia, ib := ix.countIncluded(roots[a], roots), ix.countIncluded(roots[b], roots)
		if ia != ib {
			return ia < ib
		}
		return roots[a] < roots[b]
	})
	loc = Location{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: src.Path, Edit: drift.EditInPlace},
		Source:   src,
	}
	if len(roots) == 0 {
		loc.TemplateAnnotations = ix.objects[matches[0]].TemplateAnnotations
		return loc
	}
	loc.Root = roots[0]
	defer func() {
		// What the chosen root renders tells whether the restart is there.
		for _, i := range matches {
			if ix.objects[i].Root == loc.Root || loc.Root == "" {
				loc.TemplateAnnotations = ix.objects[i].TemplateAnnotations
				break
			}
		}
	}()

	// An overlay that already carries kedge's patch for this workload must
	// keep being the place of the edit, or the patch would override it.
	patched := ""
	for _, r := range roots {
		if ix.roots[r].restartPatch[src.Kind+"/"+src.Name] {
			patched = r
			break
		}
	}
	if patched == "" && !ix.sharedFor(src.Path, hints) {
		return loc
	}
	loc.Manifest.Edit = drift.EditOverlayPatch
	if patched != "" {
		loc.Root = patched
		return loc
	}
	for _, r := range roots {
		if ix.patchSafe(r, src, w, hints) {
			loc.Root = r
			return loc
		}
	}
	loc.Root = ""
	loc.Manifest.Detail = fmt.Sprintf("%s is deployed as several workloads and no overlay renders it only as %s %s/%s",
		src.Path, w.Kind, w.Namespace, w.Name)
	return loc
}

func (ix *Index) countIncluded(root string, among []string) int {
	n := 0
	for _, other := range among {
		if other != root && slices.Contains(ix.roots[root].includes, other) {
			n++
		}
	}
	return n
}

// patchSafe reports whether a patch in root restarts only this workload:
// every root that builds on root must render src as the same workload.
func (ix *Index) patchSafe(root string, src Source, w drift.Workload, hints Hints) bool {
	for _, outer := range ix.includedBy[root] {
		for _, i := range ix.byPath[src.Path] {
			o := &ix.objects[i]
			if o.Root != outer || o.Source != src {
				continue
			}
			ns := o.Namespace
			switch {
			case hints.TargetNamespace != "" && slices.Contains(hints.Paths, outer):
				ns = hints.TargetNamespace
			case ns == "" && len(ix.includedBy[outer]) > 0:
				continue // an input of further roots, checked on its own
			}
			if ns != w.Namespace || o.Name != w.Name {
				return false
			}
		}
	}
	return true
}

// sharedFor reports whether the objects of a source file are deployed as
// more than one workload: into several namespaces (a base under overlays
// for several teams), or under several names in one namespace. Editing such
// a file restarts workloads that did not drift. A namespace-less render
// counts when its root is deployed on its own (no other root includes it),
// with the hint's target namespace when it is the hinted root.
func (ix *Index) sharedFor(file string, hints Hints) bool {
	type deployed struct{ namespace, name string }
	perDoc := map[int]map[deployed]bool{}
	namespaces := map[string]bool{}
	for _, i := range ix.byPath[file] {
		o := &ix.objects[i]
		if o.Root == "" {
			continue
		}
		ns := o.Namespace
		switch {
		case hints.TargetNamespace != "" && slices.Contains(hints.Paths, o.Root):
			ns = hints.TargetNamespace
		case ns == "" && len(ix.includedBy[o.Root]) > 0:
			continue
		}
		if perDoc[o.Source.Document] == nil {
			perDoc[o.Source.Document] = map[deployed]bool{}
		}
		perDoc[o.Source.Document][deployed{ns, o.Name}] = true
		namespaces[ns] = true
	}
	for _, set := range perDoc {
		if len(set) > 1 {
			return true
		}
	}
	return len(namespaces) > 1
}

// inScope reports whether an object is applied from one of the hinted
// paths: the root itself, or, for a path that is not a kustomize root (Flux
// then applies the directory tree), anything beneath it.
func (ix *Index) inScope(o *Object, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		if o.Root != "" {
			if o.Root == p {
				return true
			}
			if _, isRoot := ix.roots[p]; !isRoot && under(o.Root, p) {
				return true
			}
			continue
		}
		if _, isRoot := ix.roots[p]; !isRoot && under(o.Source.Path, p) {
			return true
		}
	}
	return false
}

func under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

func sameGroup(a, b string) bool {
	if a == "" || b == "" {
		return true
	}
	ga, gb := apiGroup(a), apiGroup(b)
	if ga == "extensions" {
		ga = "apps"
	}
	if gb == "extensions" {
		gb = "apps"
	}
	return ga == gb
}
