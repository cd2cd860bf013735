// Package edit computes the edits that restart a plan's workloads: each
// namespace's restarts grouped by the file they are written in, written by
// their site's kind (internal/gitops/restart and the sources' packages),
// verified by rendering what the edits reach, and kept for the next plan
// to reuse while nothing they read changed. Nothing is written to the
// checkout.
package edit

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"sort"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
)

type (
	// WorkloadID names a workload of the plan.
	WorkloadID = restart.WorkloadID
	// FileEdit is one file's change.
	FileEdit = restart.FileEdit
	// Refusal is a file kedge will not touch, and why.
	Refusal = restart.Refusal
)

// Set is every change for one plan, by namespace (one branch and pull
// request each, all branched from the same base).
type Set struct {
	Namespaces map[string][]FileEdit
	Refused    []Refusal
}

// NamespaceNames returns the namespaces with edits, sorted.
func (s Set) NamespaceNames() []string { return slices.Sorted(maps.Keys(s.Namespaces)) }

// All returns every edit of every namespace, in namespace then path order.
func (s Set) All() []FileEdit {
	var out []FileEdit
	for _, ns := range s.NamespaceNames() {
		out = append(out, s.Namespaces[ns]...)
	}
	return out
}

// Outcomes are what the edit stage makes of each workload, in the plan's
// terms: where it is defined, how it is edited, or why it is not.
type Outcomes map[WorkloadID]drift.Manifest

// Options are what edits are computed with.
type Options struct {
	Annotations restart.Annotations
	// OmitBefore leaves every FileEdit's Before out of the results. Before
	// is read only to show a diff; a caller that keeps the results between
	// plans and never shows one (the service) then keeps half the file
	// contents it would.
	OmitBefore bool
}

// planned is one workload's restart, before it is written.
type planned struct {
	loc     locate.Location
	restart restart.Restart
}

// Compute computes the edits restarting every workload found at its
// location; a workload without a location is located with no hints.
// Workloads already restarted for their target get the edit
// "already-bumped" and no change. No file kedge cannot read or edit safely
// stops the others: it is reported in Refused, and its workloads' outcome
// is "refused".
func Compute(ix *index.Index, workloads []drift.Workload, locs locate.Locations, opts Options) (Set, Outcomes) {
	set, outcomes, _ := After(ix, Prior{}, workloads, locs, opts)
	return set, outcomes
}

// After is Compute given the results of an earlier call on this checkout,
// and returns its own for the next. A namespace whose planned restarts are
// the same, and none of whose inputs changed since, keeps its earlier
// edits and refusals: it is neither edited nor verified again, the bulk of
// an unchanged cycle's work otherwise.
func After(ix *index.Index, prior Prior, workloads []drift.Workload, locs locate.Locations, opts Options) (Set, Outcomes, Prior) {
	ann := opts.Annotations.WithDefaults()
	set := Set{Namespaces: map[string][]FileEdit{}}
	outcomes := make(Outcomes, len(workloads))
	byNamespace := map[string][]planned{}
	for _, w := range workloads {
		id := restart.IDOf(w)
		loc, ok := locs[id]
		if !ok {
			loc = locate.One(ix, w, locate.Hints{})
		}
		outcomes[id] = loc.Manifest
		if loc.Manifest.Status != drift.ManifestFound {
			continue
		}
		target := restart.TargetValue(w.Desired)
		if loc.TemplateAnnotations[ann.Target] == target {
			outcomes[id] = withEdit(loc.Manifest, drift.EditAlreadyBumped)
			continue
		}
		if !restart.Possible(loc.Site) {
			set.Refused = append(set.Refused, Refusal{Namespace: w.Namespace, Path: loc.Source.Path, Reason: loc.Manifest.Detail, Workloads: []WorkloadID{id}})
			continue
		}
		apiVersion := loc.Source.APIVersion
		if v, ok := loc.Site.(restart.Versioned); ok {
			apiVersion = v.APIVersionOf(w)
		}
		byNamespace[w.Namespace] = append(byNamespace[w.Namespace], planned{loc: loc, restart: restart.Restart{
			ID:         id,
			Set:        map[string]string{ann.Restart: restart.ValueFor(w, loc.Site, target), ann.Target: target},
			APIVersion: apiVersion,
			Site:       loc.Site,
			Renames:    loc.Renames(),
		}})
	}

	// Namespaces are edited and verified concurrently: verifying renders
	// every root an edit reaches, twice, and a fleet has thousands.
	verifier := restart.NewVerifier(ix)
	namespaces := slices.Sorted(maps.Keys(byNamespace))
	results := make([]*namespaceResult, len(namespaces))
	applied := &locate.AppliedComparisons{}
	index.InParallel(len(namespaces), func(i int) {
		items := byNamespace[namespaces[i]]
		if prev := prior.reusable(ix, namespaces[i], items, applied, opts.OmitBefore); prev != nil {
			reused := *prev
			reused.reused = true
			results[i] = &reused
			return
		}
		results[i] = editNamespace(ix, items, verifier)
	})
	next := Prior{namespaces: make(map[string]*namespaceResult, len(namespaces)), located: locate.Record(ix, workloads, locs), omitBefore: opts.OmitBefore}
	for i, ns := range namespaces {
		r := results[i]
		if !r.reused {
			// Copied here, one after another, rather than as each
			// namespace ends: a namespace's contents outlive the cycle, and
			// allocated amid the verifier's garbage they would each keep a
			// mostly empty stretch of the heap from being given back.
			r.edits = withoutSpareCapacity(r.edits, opts.OmitBefore)
		}
		next.namespaces[ns] = r
		for _, refusal := range r.refused {
			refusal.Namespace = ns
			set.Refused = append(set.Refused, refusal)
		}
		if len(r.edits) > 0 {
			set.Namespaces[ns] = r.edits
		}
		for _, id := range r.patched {
			outcomes[id] = withEdit(outcomes[id], drift.EditOverlayPatch)
		}
	}
	restart.SortRefusals(set.Refused)
	return set, outcomes.WithRefusals(set.Refused), next
}

// editNamespace edits and verifies one namespace's restarts, turning those
// an overlay overrides into patches in it, and records what it read.
func editNamespace(ix *index.Index, items []planned, verifier *restart.Verifier) *namespaceResult {
	edits, refused, overridden, files := namespaceEdits(ix, items, verifier)
	r := &namespaceResult{items: items}
	if patched, moved := patchOverridden(ix, items, overridden); len(moved) > 0 {
		edits, refused, _, _ = namespaceEdits(ix, patched, verifier)
		r.patched = moved
	}
	r.edits, r.refused = edits, refused
	r.inputs = recordInputs(ix, items, files, len(overridden) > 0)
	return r
}

// withoutSpareCapacity returns the edits with contents copied to their
// length, and without Before when omitBefore is set: a namespace's result
// is kept for the next cycle, and the buffers its files were read and
// written into can be twice their length.
func withoutSpareCapacity(edits []FileEdit, omitBefore bool) []FileEdit {
	out := make([]FileEdit, len(edits))
	for i, e := range edits {
		if omitBefore {
			e.Before = nil
		} else {
			e.Before = exactly(e.Before)
		}
		e.After = exactly(e.After)
		out[i] = e
	}
	return out
}

func exactly(b []byte) []byte {
	if cap(b) == len(b) {
		return b
	}
	return bytes.Clone(b)
}

// WithRefusals returns the outcomes with every found workload that a
// refusal names marked refused: the file and the reason are its detail.
func (o Outcomes) WithRefusals(refusals []Refusal) Outcomes {
	out := maps.Clone(o)
	for _, r := range refusals {
		for _, id := range r.Workloads {
			if m, ok := out[id]; ok && m.Status == drift.ManifestFound {
				out[id] = drift.Manifest{Status: drift.ManifestRefused, Path: m.Path, Detail: restart.Prefixed(r.Path, r.Reason)}
			}
		}
	}
	return out
}

func withEdit(m drift.Manifest, edit string) drift.Manifest {
	m.Edit = edit
	return m
}

// namespaceEdits writes and verifies the restarts of one namespace: those
// of each file together, by their kind. It also returns the workloads
// whose restart an in-place edit cannot carry because an overlay overrides
// their template annotations, and the files it wrote or read to edit.
func namespaceEdits(ix *index.Index, items []planned, verifier *restart.Verifier) ([]FileEdit, []Refusal, map[WorkloadID]bool, []string) {
	byFile := map[string][]restart.Restart{}
	for _, it := range items {
		f := it.restart.Site.File()
		byFile[f] = append(byFile[f], it.restart)
	}
	var edits []FileEdit
	var refused []Refusal
	var intended []restart.Intent
	files := slices.Sorted(maps.Keys(byFile))
	for _, file := range files {
		out, in, err := writeFile(ix, file, byFile[file])
		if err != nil {
			r := restart.Refuse(file, byFile[file], err)
			var other *restart.FileError
			if errors.As(err, &other) {
				r.Path = other.Path
			}
			refused = append(refused, *r)
			continue
		}
		edits = append(edits, out...)
		intended = append(intended, in...)
	}
	edits, failed, overridden := verifier.Check(edits, intended)
	sort.Slice(edits, func(i, j int) bool { return edits[i].Path < edits[j].Path })
	return edits, append(refused, failed...), overridden, files
}

// writeFile writes the restarts of one file, each kind's by its kind: a
// file holds restarts of one kind, and of the kinds that go with it.
func writeFile(ix *index.Index, file string, restarts []restart.Restart) ([]FileEdit, []restart.Intent, error) {
	var kinds []restart.Kind
	byKind := map[restart.Kind][]restart.Restart{}
	for _, r := range restarts {
		k := r.Site.Kind()
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], r)
	}
	var intents []restart.Intent
	for _, k := range kinds {
		intents = append(intents, k.Intents(byKind[k])...)
	}
	if len(kinds) == 1 {
		out, err := kinds[0].Write(ix, file, restarts)
		return out, intents, err
	}
	main, companions, err := companionsOf(kinds)
	if err != nil {
		return nil, nil, err
	}
	out, err := main.Write(ix, file, byKind[main])
	if err != nil {
		return nil, nil, err
	}
	before, err := ix.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	after := before
	if len(out) == 1 && out[0].Path == file {
		after = out[0].After
	}
	for _, c := range companions {
		if after, err = c.WriteAfter(after, byKind[c]); err != nil {
			return nil, nil, err
		}
	}
	if bytes.Equal(before, after) {
		return nil, intents, nil
	}
	var ids []WorkloadID
	for _, k := range kinds {
		ids = append(ids, restart.IDs(restart.ByID(byKind[k]))...)
	}
	return []FileEdit{{Path: file, Before: before, After: after, Workloads: ids}}, intents, nil
}

// companionsOf splits the kinds of one file into the one that writes
// first and those that go with it; an error when two cannot share it.
func companionsOf(kinds []restart.Kind) (restart.Kind, []restart.Companion, error) {
	var main restart.Kind
	var companions []restart.Companion
	for _, k := range kinds {
		if c, ok := k.(restart.Companion); ok {
			companions = append(companions, c)
			continue
		}
		if main != nil {
			return nil, nil, restart.MixedError(kinds)
		}
		main = k
	}
	if main == nil {
		main, companions = companions[0], companions[1:]
	}
	for _, c := range companions {
		if !c.GoesWith(main) {
			return nil, nil, restart.MixedError(kinds)
		}
	}
	return main, companions, nil
}

// patchOverridden returns the items with the in-place restarts that an
// overlay overrides turned into patches in that overlay, which kustomize
// applies after the overlay's own patches, and the workloads it moved.
func patchOverridden(ix *index.Index, items []planned, overridden map[WorkloadID]bool) ([]planned, []WorkloadID) {
	out := slices.Clone(items)
	var moved []WorkloadID
	for i := range out {
		it := &out[i]
		if _, inPlace := it.restart.Site.(restart.InPlace); !overridden[it.restart.ID] || !inPlace || it.loc.Root == "" {
			continue
		}
		w := drift.Workload{Namespace: it.restart.ID.Namespace, Kind: it.restart.ID.Kind, Name: it.restart.ID.Name}
		if !locate.PatchSafe(ix, it.loc.Root, it.loc.Source, w, it.loc.Hints) {
			continue
		}
		it.loc.Manifest.Edit = drift.EditOverlayPatch
		it.loc.Site = restart.Overlay{Root: it.loc.Root, RootFile: ix.RootAt(it.loc.Root).File, Src: it.loc.Source}
		it.restart.Site = it.loc.Site
		moved = append(moved, it.restart.ID)
	}
	return out, moved
}
