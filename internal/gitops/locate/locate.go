// Package locate finds where each drifted workload is defined in a
// checkout, and where its restart can be written: it asks the index which
// documents render the workload, reads what the GitOps object applying it
// does to identities (internal/gitops/flux, internal/gitops/argo), and
// decides between the workload's own document, a patch in an overlay, and
// the sites the object's source offers (a Flux Kustomization's or an
// Application's patch list, a HelmRelease's post-renderer, a chart value).
// The index is only read.
package locate

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/argo"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/flux"
	"github.com/kedge-io/kedge/internal/gitops/helmrelease"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/repofs"
)

// WorkloadID names a workload of the plan.
type WorkloadID = restart.WorkloadID

// Location is where a workload is defined and how it is to be edited: what
// a source found, with the hints it was found with.
type Location struct {
	restart.Found
	// Hints are those the location was found with.
	Hints Hints
}

// Renames is how the GitOps object applying the workload renames what it
// renders; nil when it does not.
func (l Location) Renames() restart.Renamer {
	var out renamers
	if l.Hints.Flux != nil {
		out = append(out, flux.Renamer{F: l.Hints.Flux, TargetNamespace: l.Hints.TargetNamespace})
	}
	if len(l.Hints.Directories) > 0 {
		out = append(out, argo.Renamer{Dirs: l.Hints.Directories})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type renamers []restart.Renamer

func (rs renamers) RendersAs(ix *index.Index, o *index.Object, id WorkloadID) bool {
	for _, r := range rs {
		if r.RendersAs(ix, o, id) {
			return true
		}
	}
	return false
}

// Locations are where the workloads of a plan are defined, by workload.
type Locations map[WorkloadID]Location

// locator reads one index.
type locator struct {
	*index.Index
	// prober probes the chart values of a plan's drifted workloads a
	// release at a time; nil probes each workload alone.
	prober *chart.Prober
}

// Locate finds the source of every workload. hints may be nil (no GitOps
// metadata known).
func Locate(ix *index.Index, workloads []drift.Workload, hints func(drift.Workload) Hints) Locations {
	return After(ix, Prior{}, workloads, hints)
}

// One finds the source of one workload.
func One(ix *index.Index, w drift.Workload, hints Hints) Location {
	return Location{Found: locator{Index: ix}.locate(w, hints), Hints: hints}
}

func notFound(format string, args ...any) restart.Found {
	return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestNotFound, Detail: fmt.Sprintf(format, args...)}}
}

func (ix locator) locate(w drift.Workload, hints Hints) restart.Found {
	if hints.Release != nil {
		found := ix.locate(hints.Release.Workload(), Hints{Paths: hints.Paths, Applied: hints.Applied, appliedByPath: hints.appliedByPath})
		return helmrelease.Locate(ix.Index, w, *hints.Release, found, helmrelease.Options{PreferValues: hints.PreferValues,
			Values: helmrelease.ValuesOptions{HelmRepositories: hints.helmRepositories, Pulled: hints.pulled, Prober: ix.prober}})
	}
	if loc, ok := argo.LocatePulledChart(ix.Index, w, hints.ChartSources, hints.Via, ix.argoLocating(hints)); ok && hints.Helm != "" {
		return loc
	}
	if hints.Helm != "" {
		return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: hints.Helm}}
	}
	if hints.NoRepo != "" {
		return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestNoRepo, Detail: hints.NoRepo}}
	}
	if hints.OtherRepo != "" {
		return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestNoRepo,
			Detail: fmt.Sprintf("%s applies it from %s, not this repository", hints.Via, hints.OtherRepo)}}
	}
	for _, p := range hints.Paths {
		// Argo CD renders a directory holding a chart with Helm. A
		// HelmRelease is searched for in every applied path, and a chart
		// an Application renders there is the source of other workloads.
		if !ix.chartIn(p) || document.IsHelmRelease(w.APIVersion, w.Kind) {
			continue
		}
		// A chart that does not render the workload leaves it to the
		// Application's other sources.
		if loc, renders := argo.LocateChart(ix.Index, w, argo.DirectoryAt(hints.Directories, p), hints.Via, p, ix.argoLocating(hints), othersApplying(hints, p)); renders {
			return loc
		}
	}

	var exact, loose, generated []int
	for _, i := range ix.candidates(w, hints) {
		o := ix.Object(i)
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
			if ix.Object(i).GeneratedBy != "" {
				generated = append(generated, i)
			} else {
				matches = append(matches, i)
			}
		}
	}
	if len(matches) == 0 {
		if len(generated) > 0 {
			return notFound("%s %s/%s is generated (%s), not written in a file", w.Kind, w.Namespace, w.Name, ix.Object(generated[0]).GeneratedBy)
		}
		return ix.notFoundDetail(w, hints)
	}

	bySource := map[index.Source][]int{}
	for _, i := range matches {
		bySource[ix.Object(i).Source] = append(bySource[ix.Object(i).Source], i)
	}
	if len(bySource) > 1 {
		var paths []string
		for src := range bySource {
			if !slices.Contains(paths, src.Path) {
				paths = append(paths, src.Path)
			}
		}
		sort.Strings(paths)
		return restart.Found{Manifest: drift.Manifest{
			Status:     drift.ManifestAmbiguous,
			Detail:     fmt.Sprintf("%d definitions match %s %s/%s", len(bySource), w.Kind, w.Namespace, w.Name),
			Candidates: paths,
		}}
	}
	var src index.Source
	for s := range bySource {
		src = s
	}
	loc := ix.chooseEdit(w, hints, src, matches)
	switch site := loc.Site.(type) {
	case *flux.Site:
		// kedge's entry in the Flux Kustomization is part of what the
		// workload renders as, though the index renders the path alone.
		loc.TemplateAnnotations = site.AnnotationsOver(loc.TemplateAnnotations, src.Kind)
	case *argo.Site:
		loc.TemplateAnnotations = site.AnnotationsOver(loc.TemplateAnnotations, src.Kind)
	}
	return loc
}

// chartIn reports whether dir of the repository holds a chart.
func (ix locator) chartIn(dir string) bool { return ix.FS().IsRegular(path.Join(dir, "Chart.yaml")) }

func (ix locator) notFoundDetail(w drift.Workload, hints Hints) restart.Found {
	// A workload the Application's paths do not hold may come from its
	// charts.
	if loc, ok := argo.LocatePulledChart(ix.Index, w, hints.ChartSources, hints.Via, ix.argoLocating(hints)); ok {
		return loc
	}
	if hints.Charts != "" {
		return restart.Found{Manifest: drift.Manifest{Status: drift.ManifestHelm,
			Detail: fmt.Sprintf("%s; no %s %s/%s under %s", hints.Charts, w.Kind, w.Namespace, w.Name, strings.Join(hints.Paths, ", "))}}
	}
	if detail := argo.Unbuildable(ix.Index, hints.Directories, hints.Via); detail != "" {
		return notFound("%s", detail)
	}
	for _, p := range hints.Paths {
		if _, err := ix.FS().Resolve(p); !filepath.IsLocal(p) && p != "." || repofs.IsOutside(err) {
			return notFound("%s applies %s, which is outside the repository: kedge reads nothing outside it", hints.Via, p)
		}
	}
	for _, p := range hints.Paths {
		if r := ix.RootAt(p); r != nil && r.Problem != nil {
			return notFound("%s applies %s, which was skipped: %s", hints.Via, p, r.Problem.Err)
		}
	}
	if len(hints.Paths) > 0 {
		return notFound("no %s %s/%s under %s", w.Kind, w.Namespace, w.Name, pathsApplied(hints))
	}
	return notFound("no %s %s/%s in the indexed paths", w.Kind, w.Namespace, w.Name)
}

// pathsApplied names the hinted paths with what applies them: "apps/web
// (Flux Kustomization flux-system/web)", several joined by commas.
func pathsApplied(hints Hints) string {
	if hints.Via != "" {
		return strings.Join(hints.Paths, ", ") + " (" + hints.Via + ")"
	}
	parts := make([]string, len(hints.Paths))
	for i, p := range hints.Paths {
		var vias []string
		for _, a := range hints.Applied {
			if a.Path == p && a.Via != "" && !slices.Contains(vias, a.Via) {
				vias = append(vias, a.Via)
			}
		}
		parts[i] = p
		if len(vias) > 0 {
			parts[i] += " (" + strings.Join(vias, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// chooseEdit decides between editing the source in place and patching an
// overlay, for a workload whose single source is src and which the given
// objects (one per rendering root) render.
func (ix locator) chooseEdit(w drift.Workload, hints Hints, src index.Source, matches []int) (loc restart.Found) {
	roots := make([]string, 0, len(matches))
	for _, i := range matches {
		if r := ix.Object(i).Root; r != "" && !slices.Contains(roots, r) {
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
	loc = restart.Found{
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: src.Path, Edit: drift.EditInPlace},
		Source:   src,
		Site:     restart.InPlace{Src: src},
	}
	overlay := func(root string) restart.Found {
		loc.Root = root
		loc.Manifest.Edit = drift.EditOverlayPatch
		loc.Site = restart.Overlay{Root: root, RootFile: ix.RootAt(root).File, Src: src}
		return loc
	}
	inSite := func(site restart.Site) restart.Found {
		loc.Root = ""
		loc.Site = site
		loc.Manifest.Edit = drift.EditOverlayPatch
		loc.Manifest.Detail = ""
		return loc
	}
	applies := func(dir string, o *index.Object) bool { return ix.applies(dir, o) }
	shared := ix.sharedFor(src.Path, src.Document, hints)
	if len(roots) == 0 {
		loc.TemplateAnnotations = ix.Object(matches[0]).TemplateAnnotations
		if site := ix.fluxSite(w, hints, src, applies); site != nil && (shared || site.HasRestart(src.Kind)) {
			return inSite(site)
		}
		if shared {
			loc.Manifest.Edit = drift.EditOverlayPatch
			loc.Site = nil
			loc.Manifest.Detail = fmt.Sprintf("%s is deployed as several workloads and no kustomization renders it; add one per deployment to let kedge patch %s %s/%s alone",
				src.Path, w.Kind, w.Namespace, w.Name)
		}
		return loc
	}
	loc.Root = roots[0]
	defer func() {
		// What the workload renders as tells whether the restart is there:
		// preferably the render of the chosen root.
		loc.TemplateAnnotations = ix.Object(matches[0]).TemplateAnnotations
		for _, i := range matches {
			if ix.Object(i).Root == loc.Root {
				loc.TemplateAnnotations = ix.Object(i).TemplateAnnotations
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
		for _, inner := range ix.RootAt(r).Includes() {
			if !slices.Contains(candidates, inner) && len(ix.rendersOf(inner, src)) > 0 {
				candidates = append(slices.Clip(candidates), inner)
			}
		}
	}
	// An overlay that already carries kedge's patch for this workload must
	// keep being the place of the edit, or the patch would override it.
	for _, r := range candidates {
		if ix.RootAt(r).HasRestartPatch(src.Kind+"/"+src.Name) && ix.patchSafe(r, src, w, hints) {
			return overlay(r)
		}
	}
	fluxSite := ix.fluxSite(w, hints, src, applies)
	if fluxSite != nil && fluxSite.HasRestart(src.Kind) {
		return inSite(fluxSite)
	}
	argoSite := argo.PatchSite(ix.Index, w, hints.Directories, src)
	if argoSite != nil && argoSite.HasRestart(src.Kind) {
		return inSite(argoSite)
	}
	if !shared {
		return loc
	}
	for _, r := range candidates {
		if ix.patchSafe(r, src, w, hints) {
			return overlay(r)
		}
	}
	if fluxSite != nil {
		return inSite(fluxSite)
	}
	if argoSite != nil {
		return inSite(argoSite)
	}
	loc.Root = ""
	loc.Site = nil
	loc.Manifest.Edit = drift.EditOverlayPatch
	loc.Manifest.Detail = fmt.Sprintf("%s is deployed as several workloads and no overlay renders it only as %s %s/%s",
		src.Path, w.Kind, w.Namespace, w.Name)
	return loc
}

// fluxSite is the Flux Kustomization site of w, nil when none.
func (ix locator) fluxSite(w drift.Workload, hints Hints, src index.Source, applies func(string, *index.Object) bool) *flux.Site {
	if hints.Flux == nil {
		return nil
	}
	return flux.PatchSite(ix.Index, w, hints.Flux, src, applies)
}

func (ix locator) countIncluded(root string, among []string) int {
	n := 0
	for _, other := range among {
		if other != root && slices.Contains(ix.RootAt(root).Includes(), other) {
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
func (ix locator) deployedAs(o *index.Object, hints Hints) []deployment {
	var out []deployment
	for _, a := range ix.appliedCandidates(o, hints) {
		if !ix.appliedBy(a, o) {
			continue
		}
		ns := o.Namespace
		name, argoNS, forced := argo.Deployed(ix.Index, a.Directory, o)
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
	if o.Namespace == "" && o.Root != "" && len(ix.IncludedBy(o.Root)) > 0 {
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
			out = append(slices.Clip(out), Applied{Path: p, Namespace: hints.TargetNamespace, Force: hints.TargetNamespace != "", Via: hints.Via, Directory: argo.DirectoryAt(hints.Directories, p)})
		}
	}
	return out
}

// appliedCandidates returns, in appliedFor's order, the entries of
// appliedFor(hints) whose path applies can accept for o: o's root (or, for
// a plain file, its path), a directory above it, or ".". The list holds
// every GitOps object of the cluster, and a base shared by hundreds of
// overlays asks for each of its renders, so it is looked up, not scanned.
func (ix locator) appliedCandidates(o *index.Object, hints Hints) []Applied {
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
			all = append(slices.Clip(all), Applied{Path: p, Namespace: hints.TargetNamespace, Force: hints.TargetNamespace != "", Via: hints.Via, Directory: argo.DirectoryAt(hints.Directories, p)})
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

// applies reports whether Flux applying the repository path p deploys
// object o: p is o's root, or p is a directory without kustomization, for
// which kustomize-controller generates one listing the manifests and the
// outermost kustomize roots below it (index.GeneratedApplies).
func (ix locator) applies(p string, o *index.Object) bool {
	if o.Root == p {
		return true
	}
	if ix.RootAt(p) != nil {
		return false
	}
	return ix.GeneratedApplies(p, o)
}

// rendersOf returns the objects root renders from document src.
func (ix locator) rendersOf(root string, src index.Source) []*index.Object {
	var out []*index.Object
	for _, i := range ix.ByPath(src.Path) {
		if o := ix.Object(i); o.Root == root && o.Source == src {
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
func (ix locator) patchSafe(root string, src index.Source, w drift.Workload, hints Hints) bool {
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
	line := append([]string{root}, ix.RootAt(root).Includes()...)
	for _, outer := range ix.IncludedBy(root) {
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
func (ix locator) fromSibling(outer string, line []string, own, o *index.Object) bool {
	keeps := func(inner *index.Object) bool {
		return inner.Name == o.Name && (inner.Namespace == "" || inner.Namespace == o.Namespace)
	}
	if keeps(own) {
		return false
	}
	for _, sib := range ix.RootAt(outer).Includes() {
		if slices.Contains(line, sib) || slices.Contains(ix.IncludedBy(sib), line[0]) {
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
func (ix locator) sharedFor(file string, doc int, hints Hints) bool {
	type render struct {
		root string
		deployment
	}
	perDoc := map[int][]render{}
	namespaces := map[string]bool{}
	for _, i := range ix.ByPath(file) {
		o := ix.Object(i)
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
			builtOn := r.root != "" && slices.ContainsFunc(ix.IncludedBy(r.root), func(outer string) bool { return rendering[outer] })
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
// paths: the root itself, or, for a path that is not a kustomize root, what
// the kustomization Flux generates there renders.
func (ix locator) inScope(o *index.Object, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		if ix.applies(p, o) {
			return true
		}
	}
	return false
}

func under(p, dir string) bool { return index.Under(p, dir) }

func sameGroup(a, b string) bool {
	// A workload's name is shared by thousands of objects of a fleet
	// (every team's "api"), nearly all of the same apiVersion.
	if a == b || a == "" || b == "" {
		return true
	}
	ga, gb := document.Group(a), document.Group(b)
	if ga == "extensions" {
		ga = "apps"
	}
	if gb == "extensions" {
		gb = "apps"
	}
	return ga == gb
}

// inHintedScope reports whether o is applied from one of the hinted paths,
// each read the way the tool applying it reads it.
func (ix locator) inHintedScope(o *index.Object, h Hints) bool {
	if len(h.Directories) == 0 || len(h.Paths) == 0 {
		return ix.inScope(o, h.Paths)
	}
	for _, p := range h.Paths {
		ds := argo.DirectoriesAt(h.Directories, p)
		if len(ds) == 0 && ix.inScope(o, []string{p}) {
			return true
		}
		for _, d := range ds {
			if argo.Applies(ix.Index, d, o) {
				return true
			}
		}
	}
	return false
}

// appliedBy reports whether the applied path a deploys object o.
func (ix locator) appliedBy(a Applied, o *index.Object) bool {
	if a.Directory != nil {
		return argo.Applies(ix.Index, *a.Directory, o)
	}
	return ix.applies(a.Path, o)
}

// candidates are the objects that may be w: those rendered under its kind
// and name, and, when the GitOps object applying it renames, those that
// become that name.
func (ix locator) candidates(w drift.Workload, hints Hints) []int {
	if !flux.Renames(ix.Index, hints.Flux) {
		if argo.Renames(ix.Index, hints.Directories) {
			return argo.Candidates(ix.Index, w, hints.Directories)
		}
		return ix.ByKindName(w.Kind + "/" + w.Name)
	}
	return flux.Candidates(ix.Index, w, hints.Flux, ix.inScope)
}

// namespaceFor is the namespace o has once its GitOps object applied it
// for w: the one an Argo CD source's kustomize block sets, the one written
// or rendered, or w's when Flux's substitution turns it into w's.
func (ix locator) namespaceFor(o *index.Object, w drift.Workload, hints Hints) string {
	if ns, ok := argo.NamespaceFor(ix.Index, o, hints.Directories); ok {
		return ns
	}
	return flux.NamespaceOf(ix.Index, o, hints.Flux, w.Namespace)
}

// Shared reports whether a repo-relative source file is deployed as several
// workloads (several namespaces or names), so that editing it would restart
// more than one of them.
func Shared(ix *index.Index, path string) bool {
	return locator{Index: ix}.sharedFor(path, -1, Hints{})
}

// PatchSafe reports whether a patch in root restarts only w.
func PatchSafe(ix *index.Index, root string, src index.Source, w drift.Workload, hints Hints) bool {
	return locator{Index: ix}.patchSafe(root, src, w, hints)
}

// othersApplying names the GitOps objects besides the hints' own that
// apply the repository path p.
func othersApplying(hints Hints, p string) []string {
	var out []string
	for _, a := range hints.Applied {
		if a.Path == p && a.Via != hints.Via && !slices.Contains(out, a.Via) {
			out = append(out, a.Via)
		}
	}
	return out
}

// argoLocating is what locating a chart's workload knows of the plan and
// the cluster.
func (ix locator) argoLocating(hints Hints) argo.Locating {
	return argo.Locating{Prober: ix.prober, Readers: hints.readers}
}
