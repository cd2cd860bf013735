package edit

import (
	"path"
	"reflect"
	"slices"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
)

// Prior are the results of an After call, per namespace, each with what it
// was computed from. The next call on the same checkout (its index updated
// since, or not) takes them back and reuses a namespace's results when its
// planned restarts and everything its edits read are unchanged, and
// locating reuses the locations they were planned from (Located). The zero
// value reuses nothing.
type Prior struct {
	namespaces map[string]*namespaceResult
	located    locate.Prior
	// omitBefore is the Options.OmitBefore the results were computed
	// with: results without Before do not serve a call that wants it.
	omitBefore bool
}

// Located are the locations the results were planned from.
func (p Prior) Located() locate.Prior { return p.located }

// Reused is how many namespaces' results the call that returned p took
// from its prior instead of editing and verifying them again.
func (p Prior) Reused() int {
	n := 0
	for _, r := range p.namespaces {
		if r.reused {
			n++
		}
	}
	return n
}

// namespaceResult is one namespace's edits, refusals and the workloads
// whose in-place restarts became overlay patches, with their inputs.
type namespaceResult struct {
	items   []planned
	edits   []FileEdit
	refused []Refusal
	patched []WorkloadID
	inputs  editInputs
	// reused is set when the call that returned it took it from its prior.
	reused bool
}

// editInputs are what one namespace's edits read besides its planned
// items. A namespace whose edits read only files and kustomize roots
// records each of them; one that reads more of the index (Flux
// substitutions, Argo CD applications, the applied paths of an overridden
// restart) holds for the index it was computed on only; one that reads
// charts (pulled, or rendered for values) is never reused, as the charts
// are not the index's to stamp.
type editInputs struct {
	// at is the index generation the edits were computed on: with it
	// unchanged, so is everything they read.
	at         *index.Generation
	wholeIndex bool
	never      bool
	// files are the stamps of the files read.
	files map[string]*index.Generation
	// roots are the kustomize roots whose renders the edits read.
	roots map[string]index.RootStamp
	// readers are the roots that read each edited file, which the verifier
	// renders.
	readers map[string][]string
}

// reusable returns the prior result of a namespace when it holds for items
// on ix, or nil.
func (p Prior) reusable(ix *index.Index, ns string, items []planned, applied *locate.AppliedComparisons, omitBefore bool) *namespaceResult {
	prev := p.namespaces[ns]
	if prev == nil || p.omitBefore != omitBefore || prev.inputs.never || !sameItems(prev.items, items, prev.inputs.wholeIndex, applied) {
		return nil
	}
	if !prev.inputs.holdOn(ix) {
		return nil
	}
	return prev
}

// holdOn reports whether everything recorded reads the same on ix.
func (in editInputs) holdOn(ix *index.Index) bool {
	if in.at == ix.Generation() {
		return true
	}
	if in.wholeIndex {
		return false
	}
	for rel, g := range in.files {
		if ix.FileStamp(rel) != g {
			return false
		}
	}
	for dir, want := range in.roots {
		if ix.RootStamp(dir) != want {
			return false
		}
	}
	for rel, readers := range in.readers {
		if !slices.Equal(ix.Readers(rel), readers) {
			return false
		}
	}
	return true
}

// sameItems compares planned restarts. Unless the edits read the hints'
// applied paths (withApplied: an in-place restart an overlay overrides is
// checked against them), those are left out: the list is the cluster's
// whole, handed to every workload, and rebuilt every plan.
func sameItems(prev, cur []planned, withApplied bool, applied *locate.AppliedComparisons) bool {
	if len(prev) != len(cur) {
		return false
	}
	for i := range cur {
		if withApplied && !applied.Same(prev[i].loc.Hints.Applied, cur[i].loc.Hints.Applied) {
			return false
		}
		if !reflect.DeepEqual(withoutApplied(prev[i]), withoutApplied(cur[i])) {
			return false
		}
	}
	return true
}

// withoutApplied leaves out the applied paths and their index, which
// AppliedComparisons compares: the index is made from the list.
func withoutApplied(p planned) planned {
	p.loc.Hints = p.loc.Hints.WithoutApplied()
	return p
}

// recordInputs lists what namespaceEdits read for items: the files it
// edits or reads (the pending files, the kustomizations of patch roots,
// the workloads' sources), the roots of the workloads and those the
// verifier renders for the edits, and who reads each edited file.
func recordInputs(ix *index.Index, items []planned, pending []string, overridden bool) editInputs {
	in := editInputs{at: ix.Generation(), wholeIndex: overridden}
	for _, it := range items {
		switch reads := restart.ReadsOf(it.loc.Site); {
		case reads == restart.ReadsCharts || it.loc.Hints.ReadsPulled():
			in.never = true
		case reads == restart.ReadsIndex || it.loc.Hints.ReadsIndex():
			in.wholeIndex = true
		}
	}
	if in.never || in.wholeIndex {
		return in
	}
	in.files, in.roots, in.readers = map[string]*index.Generation{}, map[string]index.RootStamp{}, map[string][]string{}
	addFile := func(rel string) {
		if rel == "" {
			return
		}
		in.files[rel] = ix.FileStamp(rel)
		// A file read through a symlink is stamped where it lives too.
		if r, err := ix.FS().Resolve(rel); err == nil && r != rel {
			in.files[r] = ix.FileStamp(r)
		}
	}
	addRoot := func(dir string) {
		if dir == "" {
			return
		}
		in.roots[dir] = ix.RootStamp(dir)
		addFile(ix.KustomizationPath(dir))
	}
	for _, it := range items {
		addFile(it.loc.Source.Path)
		addRoot(it.loc.Root)
	}
	for _, p := range pending {
		addFile(p)
		// A created file is verified through its directory's
		// kustomization's readers.
		for _, rel := range []string{p, ix.KustomizationPath(path.Dir(p))} {
			in.readers[rel] = ix.Readers(rel)
			for _, r := range ix.Readers(rel) {
				addRoot(r)
			}
		}
	}
	return in
}
