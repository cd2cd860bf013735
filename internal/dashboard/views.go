package dashboard

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// The views below are the data the templates receive. Each embeds what the
// caller gave and adds what every template would otherwise compute itself:
// sorted lists, totals, and lists cut to fit GitHub's body limit.

// Listing is a list as shown: Items may be cut, Omitted says by how many.
type Listing[T any] struct {
	Items   []T
	Omitted int
}

func listing[T any](all []T, limit int) Listing[T] {
	if limit < 0 || limit >= len(all) {
		return Listing[T]{Items: all}
	}
	return Listing[T]{Items: all[:limit], Omitted: len(all) - limit}
}

// WorkloadTable is one table of drifted workloads (the shared partial
// "kedge/workload-table"). Files link to RepoWebURL on Branch when both
// are set.
type WorkloadTable struct {
	Listing[drift.Workload]
	Now        time.Time
	RepoWebURL string
	Branch     string
}

// PieSlice is one proxy version's share of a namespace's pods.
type PieSlice struct {
	Label string
	Pods  int
}

// Totals counts drifted workloads and their pods.
type Totals struct {
	// Count is the number of workloads.
	Count       int
	DriftedPods int
	TotalPods   int
	// Targets are the distinct desired revisions ("" for no sidecar) and
	// TargetVersions their proxy versions, sorted.
	Targets        []string
	TargetVersions []string
	// Reasons are the distinct reasons, sorted.
	Reasons []drift.Reason
}

func totalsOf(ws []drift.Workload) Totals {
	t := Totals{Count: len(ws)}
	revs, images, reasons := map[string]bool{}, map[string]bool{}, map[drift.Reason]bool{}
	for _, w := range ws {
		t.DriftedPods += w.Pods.Drifted
		t.TotalPods += w.Pods.Total
		revs[w.Desired.Revision] = true
		images[w.Desired.Image] = true
		for _, r := range w.Reasons {
			reasons[r] = true
		}
	}
	// A fleet's ten thousand workloads want two or three images: each is
	// parsed once.
	vers := map[string]bool{}
	for image := range images {
		vers[ProxyVersion(image)] = true
	}
	t.Targets = sortedKeys(revs)
	t.TargetVersions = sortedKeys(vers)
	t.Reasons = sortedKeys(reasons)
	return t
}

// PRView is what pr-title, pr-body and commit-message receive.
type PRView struct {
	NamespacePR
	// Fix is every workload the PR restarts (manifest found), sorted;
	// Table is the same list as the body shows it.
	Fix   []drift.Workload
	Table WorkloadTable
	Totals
	// Carried are the workloads of Fix whose pods another controller runs
	// from their template (a Flagger Canary, an Argo Rollout's
	// workloadRef): the body says what it does with the change.
	Carried []drift.Workload
	// Unfixable are the namespace's drifted workloads this PR cannot
	// restart (manifest not found, Helm, ambiguous, no repository).
	Unfixable Listing[UnfixableRow]
	Pie       []PieSlice
	PiePods   int
	// StateBlock is the hidden state comment; it must end the body.
	StateBlock string
}

func newPRView(pr NamespacePR, limit int) PRView {
	fix, unfixable := splitFixable(pr.Workloads)
	if pr.State.Cluster == "" && pr.State.Namespace == "" && len(pr.State.Targets) == 0 {
		// No state given: the PR's target is what it restarts.
		pr.State = prstate.NewState(pr.Cluster, pr.Namespace, fix)
	}
	v := PRView{
		NamespacePR: pr,
		Fix:         fix,
		Table: WorkloadTable{
			Listing:    listing(fix, limit),
			Now:        pr.Now,
			RepoWebURL: pr.RepoWebURL,
			Branch:     pr.Branch,
		},
		Totals:     totalsOf(fix),
		Carried:    carried(fix),
		Unfixable:  listing(unfixableRows(unfixable), limit),
		StateBlock: pr.State.Block(),
	}
	v.Pie, v.PiePods = pieOf(pr.ProxyVersions)
	return v
}

// carried are the workloads whose pods another controller runs.
func carried(ws []drift.Workload) []drift.Workload {
	var out []drift.Workload
	for _, w := range ws {
		if w.Via != nil {
			out = append(out, w)
		}
	}
	return out
}

// splitFixable sorts workloads and separates those the PR can edit.
func splitFixable(ws []drift.Workload) (fix, unfixable []drift.Workload) {
	sorted := sortWorkloads(ws)
	for _, w := range sorted {
		if w.Manifest.Status == drift.ManifestFound {
			fix = append(fix, w)
		} else {
			unfixable = append(unfixable, w)
		}
	}
	return fix, unfixable
}

// pieOf orders slices by pod count, largest first, then by label, and
// drops empty ones (mermaid draws nothing for them anyway).
func pieOf(versions map[string]int) ([]PieSlice, int) {
	var slices []PieSlice
	total := 0
	for k, n := range versions {
		if n <= 0 {
			continue
		}
		label := k
		if label == "" {
			label = noSidecar
		}
		slices = append(slices, PieSlice{Label: label, Pods: n})
		total += n
	}
	sort.Slice(slices, func(i, j int) bool {
		if slices[i].Pods != slices[j].Pods {
			return slices[i].Pods > slices[j].Pods
		}
		return slices[i].Label < slices[j].Label
	})
	return slices, total
}

// MeshView is the mesh as the dashboard and the plan show it.
type MeshView struct {
	Revisions []Revision
	// DanglingTags are tags pointing at a revision that does not exist.
	DanglingTags []TagRef
}

// TagRef is a revision tag and the revision it points at.
type TagRef struct {
	Tag      string
	Revision string
}

func newMeshView(m Mesh) MeshView {
	v := MeshView{}
	known := map[string]bool{}
	for _, r := range m.Revisions {
		r.Tags = sortedCopy(r.Tags)
		r.Namespaces = sortedCopy(r.Namespaces)
		v.Revisions = append(v.Revisions, r)
		known[r.Name] = true
	}
	sort.Slice(v.Revisions, func(i, j int) bool { return v.Revisions[i].Name < v.Revisions[j].Name })
	for _, tag := range sortedKeys(m.Tags) {
		if !known[m.Tags[tag]] {
			v.DanglingTags = append(v.DanglingTags, TagRef{Tag: tag, Revision: m.Tags[tag]})
		}
	}
	return v
}

// NamespaceRow is one namespace on the dashboard.
type NamespaceRow struct {
	NamespaceStatus
	Totals
	// Fixable and Unfixable count its workloads kedge can and cannot edit.
	Fixable   int
	Unfixable int
	// Status is the row's Status cell, Markdown: the pull request's state
	// and, when unhealthy workloads of the namespace stop a rollout, which
	// wave they stop and why.
	Status string
}

// UnfixableRow is a drifted workload kedge cannot edit.
type UnfixableRow struct {
	drift.Workload
	// Files are the files it is defined in or may come from.
	Files []string
}

// StragglerRow is one workload still drifted after its PR merged.
type StragglerRow struct {
	drift.Workload
	PRNumber int
	PRURL    string
	MergedAt time.Time
}

// StateCount is how many namespaces are in one PR state.
type StateCount struct {
	State prstate.PRState
	Count int
}

// DashboardView is what dashboard-issue receives.
type DashboardView struct {
	ClusterDashboard
	MeshView
	// Now is the reference time for ages: the last cycle.
	Now time.Time
	Totals
	// RepositoryMismatch is Mismatch.Sentence: "" unless the cluster
	// applies drifted workloads from another repository.
	RepositoryMismatch string
	// NamespaceCount counts the namespaces with drifted workloads; a row
	// whose PR rolled out has none.
	NamespaceCount int
	StateCounts    []StateCount
	Rows           Listing[NamespaceRow]
	UnfixableRows  Listing[UnfixableRow]
	SkippedRows    Listing[drift.Skipped]
	RefusedRows    Listing[RefusedFile]
	StragglerRows  Listing[StragglerRow]
	// HeldMigrations are the migrations kedge does not make now, by
	// namespace.
	HeldMigrations Listing[drift.Migration]
	Rollouts       []RolloutView
}

// stateOrder is the order states are counted in: what needs a person
// first.
var stateOrder = []prstate.PRState{prstate.PREdited, prstate.PROtherRepository, prstate.PRRefused, prstate.PRMergedRollingOut, prstate.PROpen, prstate.PRRateLimited, prstate.PRNotYetOpened, prstate.PRWaitingForWave, prstate.PRClosedIgnored, prstate.PRRolledOut}

// cut returns the view with every listing at most limit long (-1: all).
func (v DashboardView) cut(limit int) DashboardView {
	v.Rows = listing(v.Rows.Items, limit)
	v.UnfixableRows = listing(v.UnfixableRows.Items, limit)
	v.SkippedRows = listing(v.SkippedRows.Items, limit)
	v.RefusedRows = listing(v.RefusedRows.Items, limit)
	v.StragglerRows = listing(v.StragglerRows.Items, limit)
	v.HeldMigrations = listing(v.HeldMigrations.Items, limit)
	return v
}

// newDashboardView builds the whole view with every listing in full; cut
// shortens them. The dashboard is fitted to GitHub's limit by rendering it
// a dozen times with fewer rows, and a fleet's view (its totals parse
// every workload's proxy image) is built once for all of them.
func newDashboardView(d ClusterDashboard) DashboardView {
	v := DashboardView{ClusterDashboard: d, MeshView: newMeshView(d.Mesh), Now: d.LastCycle}
	v.RepositoryMismatch = sortedMismatch(d.Mismatch).Sentence()

	namespaces := append([]NamespaceStatus(nil), d.Namespaces...)
	sort.Slice(namespaces, func(i, j int) bool { return namespaces[i].Namespace < namespaces[j].Namespace })
	var rows []NamespaceRow
	var all []drift.Workload
	var unfixable []UnfixableRow
	counts := map[prstate.PRState]int{}
	blocks := blocksByNamespace(d.Rollouts)
	for _, ns := range namespaces {
		fix, unfix := splitFixable(ns.Workloads)
		ns.Workloads = append(fix, unfix...)
		rows = append(rows, NamespaceRow{NamespaceStatus: ns, Totals: totalsOf(ns.Workloads), Fixable: len(fix), Unfixable: len(unfix),
			Status: rowStatus(ns, blocks[ns.Namespace])})
		all = append(all, ns.Workloads...)
		unfixable = append(unfixable, unfixableRows(unfix)...)
		counts[ns.State]++
		if len(ns.Workloads) > 0 {
			v.NamespaceCount++
		}
	}
	v.Totals = totalsOf(all)
	for _, s := range stateOrder {
		if counts[s] > 0 {
			v.StateCounts = append(v.StateCounts, StateCount{State: s, Count: counts[s]})
			delete(counts, s)
		}
	}
	for _, s := range sortedKeys(counts) {
		v.StateCounts = append(v.StateCounts, StateCount{State: s, Count: counts[s]})
	}
	v.Rows = listing(rows, -1)
	v.UnfixableRows = listing(unfixable, -1)
	v.SkippedRows = listing(sortSkipped(d.Skipped), -1)

	refused := append([]RefusedFile(nil), d.Refused...)
	for i := range refused {
		refused[i].Workloads = sortedCopy(refused[i].Workloads)
	}
	sort.Slice(refused, func(i, j int) bool {
		if refused[i].Namespace != refused[j].Namespace {
			return refused[i].Namespace < refused[j].Namespace
		}
		return refused[i].Path < refused[j].Path
	})
	v.RefusedRows = listing(refused, -1)

	var stragglers []StragglerRow
	for _, s := range d.Stragglers {
		for _, w := range sortWorkloads(s.Workloads) {
			if w.Namespace == "" {
				w.Namespace = s.Namespace
			}
			stragglers = append(stragglers, StragglerRow{Workload: w, PRNumber: s.PRNumber, PRURL: s.PRURL, MergedAt: s.MergedAt})
		}
	}
	sort.SliceStable(stragglers, func(i, j int) bool { return lessWorkload(stragglers[i].Workload, stragglers[j].Workload) })
	v.StragglerRows = listing(stragglers, -1)
	var held []drift.Migration
	for _, m := range d.Migrations {
		if m.Blocked != "" {
			held = append(held, m)
		}
	}
	sort.Slice(held, func(i, j int) bool { return held[i].Namespace < held[j].Namespace })
	v.HeldMigrations = listing(held, -1)
	v.Rollouts = rolloutViews(d.Rollouts, d.LastCycle, d.ResumeLabel)
	return v
}

// waveBlock is a wave that a namespace's unhealthy workloads stop.
type waveBlock struct {
	wave     waves.Status
	blockers []waves.Blocker
}

// blocksByNamespace are the blocked waves of every rollout, under each
// namespace whose workloads block them.
func blocksByNamespace(rollouts []waves.Rollout) map[string][]waveBlock {
	out := map[string][]waveBlock{}
	for _, r := range rollouts {
		w, ok := r.Blocked()
		if !ok {
			continue
		}
		byNamespace := map[string][]waves.Blocker{}
		for _, b := range w.Blocking {
			byNamespace[b.Namespace] = append(byNamespace[b.Namespace], b)
		}
		for _, ns := range sortedKeys(byNamespace) {
			out[ns] = append(out[ns], waveBlock{wave: w, blockers: byNamespace[ns]})
		}
	}
	return out
}

// rowStatus is a namespace's Status cell. A namespace whose workloads stop
// a rollout wave says so, beside the waves table that names it: its PR
// may have rolled out, but the namespace is not done.
func rowStatus(ns NamespaceStatus, blocks []waveBlock) string {
	state := meaning(ns.State)
	if ns.State == prstate.PRRolledOut && len(blocks) > 0 {
		state = "merged and rolled out, but unhealthy"
	}
	s := EscapeMarkdown(state)
	if ns.Detail != "" {
		s += ": " + EscapeMarkdown(ns.Detail)
	}
	for _, b := range blocks {
		number := fmt.Sprint(b.wave.Index + 1)
		if b.wave.Name == waves.RestName {
			number = "last"
		}
		var why []string
		for _, w := range b.blockers {
			why = append(why, EscapeCell(w.Kind+" "+w.Name)+" ("+EscapeCell(w.Why)+")")
		}
		s += "; **blocks** rollout wave " + number + " (" + EscapeCell(b.wave.Name) + "): " + strings.Join(why, ", ")
	}
	return s
}

func sortedMismatch(m Mismatch) Mismatch {
	foreign := make([]ForeignRepository, 0, len(m.Foreign))
	for _, f := range m.Foreign {
		foreign = append(foreign, ForeignRepository{Repository: f.Repository, Namespaces: sortedCopy(f.Namespaces)})
	}
	sort.Slice(foreign, func(i, j int) bool { return foreign[i].Repository < foreign[j].Repository })
	return Mismatch{Configured: m.Configured, Foreign: foreign}
}

func unfixableRows(ws []drift.Workload) []UnfixableRow {
	rows := make([]UnfixableRow, 0, len(ws))
	for _, w := range ws {
		rows = append(rows, UnfixableRow{Workload: w, Files: manifestFiles(w)})
	}
	return rows
}

// manifestFiles are the files a workload kedge cannot edit is defined in
// or may come from.
func manifestFiles(w drift.Workload) []string {
	files := sortedCopy(w.Manifest.Candidates)
	if w.Manifest.Path != "" {
		files = append([]string{w.Manifest.Path}, files...)
	}
	return files
}

// PlanNamespace is one namespace of the plan.
type PlanNamespace struct {
	Namespace string
	Table     WorkloadTable
	Totals
	Unfixable int
	Pie       []PieSlice
	PiePods   int
}

// PlanDoc is what plan.tmpl receives.
type PlanDoc struct {
	PlanView
	MeshView
	HasMesh bool
	Totals
	Namespaces    []PlanNamespace
	UnfixableRows []UnfixableRow
	SkippedRows   []drift.Skipped
}

func newPlanDoc(p PlanView) PlanDoc {
	doc := PlanDoc{PlanView: p, HasMesh: p.Mesh != nil}
	if p.Mesh != nil {
		doc.MeshView = newMeshView(*p.Mesh)
	}
	byNS := map[string][]drift.Workload{}
	for _, w := range p.Plan.Workloads {
		byNS[w.Namespace] = append(byNS[w.Namespace], w)
	}
	doc.Totals = totalsOf(p.Plan.Workloads)
	for _, ns := range sortedKeys(byNS) {
		fix, unfix := splitFixable(byNS[ns])
		pie, piePods := pieOf(p.ProxyVersions[ns])
		doc.Namespaces = append(doc.Namespaces, PlanNamespace{
			Namespace: ns,
			Table:     WorkloadTable{Listing: listing(fix, -1), Now: p.Now},
			Totals:    totalsOf(byNS[ns]),
			Unfixable: len(unfix),
			Pie:       pie, PiePods: piePods,
		})
		doc.UnfixableRows = append(doc.UnfixableRows, unfixableRows(unfix)...)
	}
	doc.SkippedRows = sortSkipped(p.Plan.Skipped)
	return doc
}

// CommentView is what the comment templates receive when given
// CommentData.
type CommentView struct {
	CommentData
	TargetRows    Listing[prstate.Target]
	ClosedRows    Listing[ClosedTarget]
	StragglerRows Listing[drift.Workload]
	// StragglerTotals counts the stragglers and their pods.
	StragglerTotals Totals
}

func newCommentView(c CommentData, limit int) CommentView {
	targets := prstate.State{Targets: c.Targets}.Normalized().Targets
	stragglers := sortWorkloads(c.Stragglers)
	return CommentView{
		CommentData:     c,
		TargetRows:      listing(targets, limit),
		ClosedRows:      listing(sortClosed(c.Closed), limit),
		StragglerRows:   listing(stragglers, limit),
		StragglerTotals: totalsOf(stragglers),
	}
}

func sortClosed(c []ClosedTarget) []ClosedTarget {
	out := append([]ClosedTarget(nil), c...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Target, out[j].Target
		return lessWorkload(drift.Workload{Namespace: a.Namespace, Kind: a.Kind, Name: a.Name},
			drift.Workload{Namespace: b.Namespace, Kind: b.Kind, Name: b.Name})
	})
	return out
}

func lessWorkload(a, b drift.Workload) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Name < b.Name
}

func sortWorkloads(ws []drift.Workload) []drift.Workload {
	out := append([]drift.Workload(nil), ws...)
	sort.SliceStable(out, func(i, j int) bool { return lessWorkload(out[i], out[j]) })
	return out
}

func sortSkipped(s []drift.Skipped) []drift.Skipped {
	out := append([]drift.Skipped(nil), s...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
