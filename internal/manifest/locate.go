package manifest

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
)

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
	// hints are those the location was found with.
	hints Hints
	// flux is set for an overlay-patch edit that goes in a Flux
	// Kustomization's spec.patches (Root is then empty).
	flux *fluxSite
	// release is set for a workload restarted through its HelmRelease.
	release *releaseLocation
	// argo is set for an overlay-patch edit that goes in an Argo CD
	// Application source's kustomize.patches (Root is then empty).
	argo *argoSite
	// values is set for a workload restarted through a chart value in an
	// Argo CD Application.
	values *valuesSite
}

// Locations are where the workloads of a plan are defined, by workload.
type Locations map[WorkloadID]Location

// Locate finds the source of every workload. hints may be nil (no GitOps
// metadata known). The index is only read.
func (ix *Index) Locate(workloads []drift.Workload, hints func(drift.Workload) Hints) Locations {
	return ix.LocateAfter(PriorEdits{}, workloads, hints)
}

// LocateOne finds the source of one workload.
func (ix *Index) LocateOne(w drift.Workload, hints Hints) Location {
	loc := ix.locate(w, hints)
	loc.hints = hints
	return loc
}

func notFound(format string, args ...any) Location {
	return Location{Manifest: drift.Manifest{Status: drift.ManifestNotFound, Detail: fmt.Sprintf(format, args...)}}
}

func (ix *Index) locate(w drift.Workload, hints Hints) Location {
	if hints.Release != nil {
		return ix.locateRelease(w, hints)
	}
	if loc, ok := ix.locatePulledChart(w, hints); ok && hints.Helm != "" {
		return loc
	}
	if hints.Helm != "" {
		return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: hints.Helm}}
	}
	if hints.OtherRepo != "" {
		return Location{Manifest: drift.Manifest{Status: drift.ManifestNoRepo,
			Detail: fmt.Sprintf("%s applies it from %s, not this repository", hints.Via, hints.OtherRepo)}}
	}
	for _, p := range hints.Paths {
		// Argo CD renders a directory holding a chart with Helm. A
		// HelmRelease is searched for in every applied path, and a chart
		// an Application renders there is the source of other workloads.
		if !ix.chartIn(p) || isHelmReleaseKind(w.APIVersion, w.Kind) {
			continue
		}
		// A chart that does not render the workload leaves it to the
		// Application's other sources.
		if loc, renders := ix.locateChart(w, hints, p); renders {
			return loc
		}
	}

	var exact, loose, generated []int
	for _, i := range ix.candidates(w, hints) {
		o := &ix.objects[i]
		if !sameGroup(o.APIVersion, w.APIVersion) || !ix.inHintedScope(o, hints) {
			continue
		}
		switch ns := ix.namespaceFor(o, w, hints); {
		case hints.TargetNamespace != "":
			// Flux sets the namespace of every object of the path.
			if hints.TargetNamespace != w.Namespace {
				continue
			}
		case ns == w.Namespace:
		case ns == "":
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
	loc := ix.chooseEdit(w, hints, src, matches)
	if loc.flux != nil {
		// kedge's entry in the Flux Kustomization is part of what the
		// workload renders as, though the index renders the path alone.
		loc.TemplateAnnotations = loc.flux.annotationsOver(loc.TemplateAnnotations, src.Kind)
	}
	if loc.argo != nil {
		loc.TemplateAnnotations = loc.argo.annotationsOver(loc.TemplateAnnotations, src.Kind)
	}
	return loc
}

func (ix *Index) notFoundDetail(w drift.Workload, hints Hints) Location {
	// A workload the Application's paths do not hold may come from its
	// charts.
	if loc, ok := ix.locatePulledChart(w, hints); ok {
		return loc
	}
	if hints.Charts != "" {
		return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm,
			Detail: fmt.Sprintf("%s; no %s %s/%s under %s", hints.Charts, w.Kind, w.Namespace, w.Name, strings.Join(hints.Paths, ", "))}}
	}
	if detail := ix.argoUnbuildable(hints); detail != "" {
		return notFound("%s", detail)
	}
	for _, p := range hints.Paths {
		if !filepath.IsLocal(p) && p != "." {
			return notFound("%s applies %s, which is outside the repository: kedge reads nothing outside it", hints.Via, p)
		}
	}
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
	shared := ix.sharedFor(src.Path, src.Document, hints)
	if len(roots) == 0 {
		loc.TemplateAnnotations = ix.objects[matches[0]].TemplateAnnotations
		if site := ix.fluxPatchSite(w, hints, src); site != nil && (shared || site.hasRestart(src.Kind)) {
			return ix.inFluxPatch(loc, site)
		}
		if shared {
			loc.Manifest.Edit = drift.EditOverlayPatch
			loc.Manifest.Detail = fmt.Sprintf("%s is deployed as several workloads and no kustomization renders it; add one per deployment to let kedge patch %s %s/%s alone",
				src.Path, w.Kind, w.Namespace, w.Name)
		}
		return loc
	}
	loc.Root = roots[0]
	defer func() {
		// What the workload renders as tells whether the restart is there:
		// preferably the render of the chosen root.
		loc.TemplateAnnotations = ix.objects[matches[0]].TemplateAnnotations
		for _, i := range matches {
			if ix.objects[i].Root == loc.Root {
				loc.TemplateAnnotations = ix.objects[i].TemplateAnnotations
				break
			}
		}
	}()

	// The roots that render the workload under its own identity come first:
	// their patch sits in the workload's own overlay. Failing those, a root
	// they include may render the document for this workload alone (an
	// intermediate overlay adding a name prefix).
	candidates := roots
	for _, r := range roots {
		for _, inner := range ix.roots[r].includes {
			if !slices.Contains(candidates, inner) && len(ix.rendersOf(inner, src)) > 0 {
				candidates = append(slices.Clip(candidates), inner)
			}
		}
	}
	// An overlay that already carries kedge's patch for this workload must
	// keep being the place of the edit, or the patch would override it.
	for _, r := range candidates {
		if ix.roots[r].restartPatch[src.Kind+"/"+src.Name] && ix.patchSafe(r, src, w, hints) {
			loc.Root = r
			loc.Manifest.Edit = drift.EditOverlayPatch
			return loc
		}
	}
	site := ix.fluxPatchSite(w, hints, src)
	if site != nil && site.hasRestart(src.Kind) {
		return ix.inFluxPatch(loc, site)
	}
	argo := ix.argoPatchSite(w, hints, src)
	if argo != nil && argo.hasRestart(src.Kind) {
		return ix.inArgoPatch(loc, argo)
	}
	if !shared {
		return loc
	}
	loc.Manifest.Edit = drift.EditOverlayPatch
	for _, r := range candidates {
		if ix.patchSafe(r, src, w, hints) {
			loc.Root = r
			return loc
		}
	}
	if site != nil {
		return ix.inFluxPatch(loc, site)
	}
	if argo != nil {
		return ix.inArgoPatch(loc, argo)
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

// deployment is a workload as the cluster runs it.
type deployment struct{ namespace, name string }

// deployedAs returns how the cluster runs a rendered object: once for every
// GitOps object applying its root (or, for a plain file, a directory above
// it), in the namespace that object forces or fills in. A render no GitOps
// object is known to apply runs as it renders, except a namespace-less
// render of a root that other roots include: that is a base, an input of
// the including roots, which are counted in their own right.
func (ix *Index) deployedAs(o *Object, hints Hints) []deployment {
	var out []deployment
	for _, a := range ix.appliedCandidates(o, hints) {
		if !ix.appliedBy(a, o) {
			continue
		}
		ns := o.Namespace
		name, argoNS, forced := ix.argoDeployed(a, o)
		if forced {
			ns = argoNS
		}
		if a.Namespace != "" && (a.Force || ns == "") {
			ns = a.Namespace
		}
		out = append(out, deployment{ns, name})
	}
	if len(out) > 0 {
		return out
	}
	if o.Namespace == "" && o.Root != "" && len(ix.includedBy[o.Root]) > 0 {
		return nil
	}
	return []deployment{{o.Namespace, o.Name}}
}

// appliedFor is what the cluster applies from the repository: the hints'
// list, and the workload's own paths when that list lacks them.
func appliedFor(hints Hints) []Applied {
	out := hints.Applied
	for _, p := range hints.Paths {
		known := false
		for _, a := range hints.Applied {
			known = known || a.Path == p
		}
		if !known {
			out = append(slices.Clip(out), Applied{Path: p, Namespace: hints.TargetNamespace, Force: hints.TargetNamespace != "", Via: hints.Via, Directory: hints.argoDirectoryAt(p)})
		}
	}
	return out
}

// appliedCandidates returns, in appliedFor's order, the entries of
// appliedFor(hints) whose path applies can accept for o: o's root (or, for
// a plain file, its path), a directory above it, or ".". The list holds
// every GitOps object of the cluster, and a base shared by hundreds of
// overlays asks for each of its renders, so it is looked up, not scanned.
func (ix *Index) appliedCandidates(o *Object, hints Hints) []Applied {
	if len(hints.Applied) <= 16 {
		return appliedFor(hints)
	}
	byPath := hints.appliedByPath
	if byPath == nil {
		byPath = appliedByPath(hints.Applied)
	}
	// appliedFor without its scan: the hints' paths the list lacks follow
	// the list.
	all := hints.Applied
	for _, p := range hints.Paths {
		if _, known := byPath[p]; !known {
			all = append(slices.Clip(all), Applied{Path: p, Namespace: hints.TargetNamespace, Force: hints.TargetNamespace != "", Via: hints.Via, Directory: hints.argoDirectoryAt(p)})
		}
	}
	target := o.Root
	if target == "" {
		target = o.Source.Path
	}
	var picked []int
	pick := func(p string) {
		picked = append(picked, byPath[p]...)
		for j := len(hints.Applied); j < len(all); j++ {
			if all[j].Path == p {
				picked = append(picked, j)
			}
		}
	}
	pick(".")
	pick(target)
	for i := len(target) - 1; i >= 0; i-- {
		if target[i] == '/' {
			pick(target[:i])
		}
	}
	slices.Sort(picked)
	picked = slices.Compact(picked)
	out := make([]Applied, len(picked))
	for i, j := range picked {
		out[i] = all[j]
	}
	return out
}

// appliedByPath indexes an Applied list by path.
func appliedByPath(list []Applied) map[string][]int {
	paths := make(map[string][]int, len(list))
	for i, a := range list {
		paths[a.Path] = append(paths[a.Path], i)
	}
	return paths
}

// applies reports whether applying the repository path p deploys object o:
// p is o's root, or p is a directory without kustomization (which Flux and
// Argo CD apply as the manifests and kustomize roots below it) holding o's
// file or o's root, unless another root below p includes o's root.
func (ix *Index) applies(p string, o *Object) bool {
	if o.Root == p {
		return true
	}
	if _, isRoot := ix.roots[p]; isRoot {
		return false
	}
	if o.Root == "" {
		return under(o.Source.Path, p)
	}
	if !under(o.Root, p) {
		return false
	}
	return !anyUnder(ix.includedBy[o.Root], p)
}

// anyUnder reports whether a path of sorted (as includedBy's lists are)
// is dir or below it. A base shared by hundreds of overlays is asked this
// once per overlay for each of them, so it must not scan the list.
func anyUnder(sorted []string, dir string) bool {
	if dir == "." {
		return len(sorted) > 0
	}
	if _, found := slices.BinarySearch(sorted, dir); found {
		return true
	}
	// Paths below dir sort together, from the first one at or after
	// dir+"/" ("dir-x" sorts between dir and them).
	i, _ := slices.BinarySearch(sorted, dir+"/")
	return i < len(sorted) && strings.HasPrefix(sorted[i], dir+"/")
}

// rendersOf returns the objects root renders from document src.
func (ix *Index) rendersOf(root string, src Source) []*Object {
	var out []*Object
	for _, i := range ix.byPath[src.Path] {
		if o := &ix.objects[i]; o.Root == root && o.Source == src {
			out = append(out, o)
		}
	}
	return out
}

// patchSafe reports whether a patch in root restarts only this workload.
// Root must render the document once (kustomize matches the patch by the
// written name and refuses several matches), deployed as this workload or
// not deployed itself; and every root building on it must deploy what
// descends from that render as this workload. In an including root, a
// render of the document that another included root (not on root's line)
// renders under the same identity descends from that one instead. The
// verifier renders the result in the end, so this only has to pick well.
func (ix *Index) patchSafe(root string, src Source, w drift.Workload, hints Hints) bool {
	want := deployment{w.Namespace, w.Name}
	own := ix.rendersOf(root, src)
	if len(own) != 1 {
		return false
	}
	for _, d := range ix.deployedAs(own[0], hints) {
		if d != want {
			return false
		}
	}
	line := append([]string{root}, ix.roots[root].includes...)
	for _, outer := range ix.includedBy[root] {
		for _, o := range ix.rendersOf(outer, src) {
			if ix.fromSibling(outer, line, own[0], o) {
				continue
			}
			for _, d := range ix.deployedAs(o, hints) {
				if d != want {
					return false
				}
			}
		}
	}
	return true
}

// fromSibling reports whether o, rendered by outer, comes from another root
// outer includes than those on line: one of them renders o's document under
// an identity o keeps (the namespace may be added by outer), and the render
// on line does not.
func (ix *Index) fromSibling(outer string, line []string, own, o *Object) bool {
	keeps := func(inner *Object) bool {
		return inner.Name == o.Name && (inner.Namespace == "" || inner.Namespace == o.Namespace)
	}
	if keeps(own) {
		return false
	}
	for _, sib := range ix.roots[outer].includes {
		if slices.Contains(line, sib) || slices.Contains(ix.includedBy[sib], line[0]) {
			continue
		}
		for _, s := range ix.rendersOf(sib, own.Source) {
			if keeps(s) {
				return true
			}
		}
	}
	return false
}

// sharedFor reports whether editing document doc of a source file restarts
// more than one workload: the document is deployed by several overlays
// (a base under overlays for several teams or clusters, a directory two
// GitOps objects apply), into several namespaces, or under several names.
// A render that another render of the document builds on (an overlay an
// aggregating root includes) is the same deployment. doc < 0 asks about
// every document. Objects of the file that kustomize roots render into
// several namespaces count as well, whichever document they come from: one
// pull request per namespace would then each change the same file.
func (ix *Index) sharedFor(file string, doc int, hints Hints) bool {
	type render struct {
		root string
		deployment
	}
	perDoc := map[int][]render{}
	namespaces := map[string]bool{}
	for _, i := range ix.byPath[file] {
		o := &ix.objects[i]
		for _, d := range ix.deployedAs(o, hints) {
			perDoc[o.Source.Document] = append(perDoc[o.Source.Document], render{o.Root, d})
			if o.Root != "" {
				namespaces[d.namespace] = true
			}
		}
	}
	for d, renders := range perDoc {
		if doc >= 0 && d != doc {
			continue
		}
		// A render is built on when a root that includes its root renders
		// the document too. Asked through includedBy, a base under
		// thousands of overlays costs its renders, not their square.
		rendering := map[string]bool{}
		for _, r := range renders {
			if r.root != "" {
				rendering[r.root] = true
			}
		}
		independent := map[render]bool{}
		for _, r := range renders {
			builtOn := r.root != "" && slices.ContainsFunc(ix.includedBy[r.root], func(outer string) bool { return rendering[outer] })
			if !builtOn {
				independent[r] = true
			}
		}
		if len(independent) > 1 {
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
	// A workload's name is shared by thousands of objects of a fleet
	// (every team's "api"), nearly all of the same apiVersion.
	if a == b || a == "" || b == "" {
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
