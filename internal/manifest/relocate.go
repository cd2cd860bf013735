package manifest

import (
	"reflect"

	"github.com/kedge-io/kedge/internal/drift"
)

// locatedBefore are the locations a plan's edits were made from, on one
// index generation. Where is a workload written is a function of the index,
// the workload's identity and API version, and its hints: with all of them
// unchanged, so is the answer. A namespace relabelled in a fleet of
// thousands then costs the next plan its own workloads' search, not
// everyone's.
type locatedBefore struct {
	at    *generation
	found map[WorkloadID]locatedWorkload
}

type locatedWorkload struct {
	apiVersion string
	loc        Location
}

// LocateAfter is Locate given the results an earlier plan on this checkout
// returned: a workload found on the same index generation, under the same
// API version and with the same hints, keeps its location.
func (ix *Index) LocateAfter(prior PriorEdits, workloads []drift.Workload, hints func(drift.Workload) Hints) Locations {
	found := make([]Location, len(workloads))
	applied := &appliedComparisons{}
	// Each workload is located alone against an index nothing writes to,
	// so a fleet's ten thousand drifted workloads spread over every core.
	inParallel(len(workloads), func(i int) {
		w := workloads[i]
		var h Hints
		if hints != nil {
			h = hints(w)
		}
		if loc, ok := prior.located.answer(ix, w, h, applied); ok {
			found[i] = loc
			return
		}
		found[i] = ix.LocateOne(w, h)
	})
	out := make(Locations, len(workloads))
	for i, w := range workloads {
		out[IDOf(w)] = found[i]
	}
	return out
}

// answer returns the location found before for w, when it holds.
func (b locatedBefore) answer(ix *Index, w drift.Workload, h Hints, applied *appliedComparisons) (Location, bool) {
	if b.at == nil || b.at != ix.generation || !reusableHints(h) {
		return Location{}, false
	}
	prev, ok := b.found[IDOf(w)]
	if !ok || prev.apiVersion != w.APIVersion || !sameHints(prev.loc.hints, h, applied) {
		return Location{}, false
	}
	loc := prev.loc
	// The hints are equal; the current ones share this plan's applied
	// list, and let the last plan's go.
	loc.hints = h
	return loc, true
}

// reusableHints leaves out workloads whose location reads pulled charts:
// those are pulled again each cycle and are not the index's to stamp.
func reusableHints(h Hints) bool {
	return len(h.pulled) == 0 && len(h.ChartSources) == 0
}

// sameHints compares two workloads' hints, the applied lists once per pair
// of lists.
func sameHints(a, b Hints, applied *appliedComparisons) bool {
	if !applied.same(a.Applied, b.Applied) {
		return false
	}
	return reflect.DeepEqual(a.withoutApplied(), b.withoutApplied())
}

// locatedOn records the locations of workloads for the next plan.
func locatedOn(ix *Index, workloads []drift.Workload, locs Locations) locatedBefore {
	b := locatedBefore{at: ix.generation, found: make(map[WorkloadID]locatedWorkload, len(workloads))}
	for _, w := range workloads {
		id := IDOf(w)
		if loc, ok := locs[id]; ok {
			b.found[id] = locatedWorkload{apiVersion: w.APIVersion, loc: loc}
		}
	}
	return b
}
