package manifest

import (
	"maps"
	"path"
	"reflect"
	"slices"
	"sync"
)

// generation tells apart the builds and updates that read files: two
// stamps are equal only when they are the same build's. It has a size so
// that every one is its own allocation (pointers to distinct zero-size
// values may be equal).
type generation struct{ _ byte }

// stamp gives the index its generation. A full build starts a new base;
// an update keeps its prior's and stamps the paths it re-read with its own.
func (ix *Index) stamp(prior *priorBuild) {
	ix.generation = &generation{}
	if prior == nil {
		ix.base = ix.generation
		return
	}
	ix.base = prior.ix.base
	ix.changedIn = make(map[string]*generation, len(prior.ix.changedIn)+len(prior.changed))
	maps.Copy(ix.changedIn, prior.ix.changedIn)
	for rel := range prior.changed {
		ix.changedIn[rel] = ix.generation
	}
}

// fileStamp is the generation that last read the repo-relative path: the
// same stamp in two indexes means the same content there.
func (ix *Index) fileStamp(rel string) *generation {
	if g, ok := ix.changedIn[rel]; ok {
		return g
	}
	return ix.base
}

// PriorEdits are the results of an Edits call, per namespace, each with
// what it was computed from. The next call on the same checkout (its index
// updated since, or not) takes them back and reuses a namespace's results
// when its planned restarts and everything its edits read are unchanged,
// and LocateAfter reuses the locations they were planned from. The zero
// value reuses nothing.
type PriorEdits struct {
	namespaces map[string]*namespaceResult
	located    locatedBefore
	// omitBefore is the EditOptions.OmitBefore the results were computed
	// with: results without Before do not serve a call that wants it.
	omitBefore bool
}

// Reused is how many namespaces' results the call that returned p took
// from its prior instead of editing and verifying them again.
func (p PriorEdits) Reused() int {
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
	at         *generation
	wholeIndex bool
	never      bool
	// files are the stamps of the files read.
	files map[string]*generation
	// roots are the kustomize roots whose renders the edits read.
	roots map[string]rootInput
	// readers are the roots that read each edited file, which the verifier
	// renders.
	readers map[string][]string
}

// rootInput is what the edits read of a kustomize root: its kustomization
// file name, its render (the same value while nothing it read changed),
// and whether other roots build on it.
type rootInput struct {
	file     string
	render   *renderedRoot
	included bool
}

// reusable returns the prior result of a namespace when it holds for items
// on ix, or nil.
func (p PriorEdits) reusable(ix *Index, ns string, items []planned, applied *appliedComparisons, omitBefore bool) *namespaceResult {
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
func (in editInputs) holdOn(ix *Index) bool {
	if in.at == ix.generation {
		return true
	}
	if in.wholeIndex {
		return false
	}
	for rel, g := range in.files {
		if ix.fileStamp(rel) != g {
			return false
		}
	}
	for dir, want := range in.roots {
		if ix.rootInput(dir) != want {
			return false
		}
	}
	for rel, readers := range in.readers {
		if !slices.Equal(ix.readers[rel], readers) {
			return false
		}
	}
	return true
}

func (ix *Index) rootInput(dir string) rootInput {
	r := ix.roots[dir]
	if r == nil {
		return rootInput{}
	}
	return rootInput{file: r.File, render: ix.cache.rendered[dir], included: len(ix.includedBy[dir]) > 0}
}

// sameItems compares planned restarts. Unless the edits read the hints'
// applied paths (withApplied: an in-place restart an overlay overrides is
// checked against them), those are left out: the list is the cluster's
// whole, handed to every workload, and rebuilt every plan.
func sameItems(prev, cur []planned, withApplied bool, applied *appliedComparisons) bool {
	if len(prev) != len(cur) {
		return false
	}
	for i := range cur {
		if withApplied && !applied.same(prev[i].loc.hints.Applied, cur[i].loc.hints.Applied) {
			return false
		}
		if !reflect.DeepEqual(withoutApplied(prev[i]), withoutApplied(cur[i])) {
			return false
		}
	}
	return true
}

// withoutApplied leaves out the applied paths and their index, which
// appliedComparisons compares: the index is made from the list.
func withoutApplied(p planned) planned {
	p.loc.hints = p.loc.hints.withoutApplied()
	return p
}

func (h Hints) withoutApplied() Hints {
	h.Applied, h.appliedByPath = nil, nil
	return h
}

// appliedComparisons compares applied-path lists once per pair: every
// workload of a plan holds the same list, thousands of them, and lists are
// never written once made.
type appliedComparisons struct {
	mu    sync.Mutex
	known map[[2]*Applied]bool
}

func (c *appliedComparisons) same(a, b []Applied) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	key := [2]*Applied{&a[0], &b[0]}
	c.mu.Lock()
	defer c.mu.Unlock()
	if same, ok := c.known[key]; ok {
		return same
	}
	if c.known == nil {
		c.known = map[[2]*Applied]bool{}
	}
	same := reflect.DeepEqual(a, b)
	c.known[key] = same
	return same
}

// recordInputs lists what namespaceEdits read for items: the files it
// edits or reads (the pending files, the kustomizations of patch roots,
// the workloads' sources), the roots of the workloads and those the
// verifier renders for the edits, and who reads each edited file.
func (ix *Index) recordInputs(items []planned, pending []string, overridden bool) editInputs {
	in := editInputs{at: ix.generation, wholeIndex: overridden}
	for _, it := range items {
		loc := it.loc
		if loc.values != nil || loc.release != nil || len(loc.hints.pulled) > 0 || len(loc.hints.ChartSources) > 0 || loc.hints.Release != nil {
			in.never = true
		}
		if loc.flux != nil || loc.argo != nil || len(loc.hints.Directories) > 0 || loc.hints.Flux != nil && loc.hints.Flux.PostBuild != nil {
			in.wholeIndex = true
		}
	}
	if in.never || in.wholeIndex {
		return in
	}
	in.files, in.roots, in.readers = map[string]*generation{}, map[string]rootInput{}, map[string][]string{}
	addFile := func(rel string) {
		if rel == "" {
			return
		}
		in.files[rel] = ix.fileStamp(rel)
		// A file read through a symlink is stamped where it lives too.
		if resolved, err := resolveIn(ix.fs, ix.abs(rel)); err == nil {
			if r := ix.rel(resolved); r != rel {
				in.files[r] = ix.fileStamp(r)
			}
		}
	}
	addRoot := func(dir string) {
		if dir == "" {
			return
		}
		in.roots[dir] = ix.rootInput(dir)
		addFile(ix.kustomizationPath(dir))
	}
	for _, it := range items {
		addFile(it.loc.Source.Path)
		addRoot(it.loc.Root)
	}
	for _, p := range pending {
		addFile(p)
		// A created file is verified through its directory's
		// kustomization's readers.
		for _, rel := range []string{p, ix.kustomizationPath(path.Dir(p))} {
			in.readers[rel] = ix.readers[rel]
			for _, r := range ix.readers[rel] {
				addRoot(r)
			}
		}
	}
	return in
}
