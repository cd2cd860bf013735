package locate

import (
	"reflect"
	"sync"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
)

// Prior are the locations a plan's edits were made from, on one index
// generation. Where a workload is written is a function of the index, the
// workload's identity and API version, and its hints: with all of them
// unchanged, so is the answer. A namespace relabelled in a fleet of
// thousands then costs the next plan its own workloads' search, not
// everyone's. The zero value reuses nothing.
type Prior struct {
	at    *index.Generation
	found map[WorkloadID]locatedWorkload
}

type locatedWorkload struct {
	apiVersion string
	loc        Location
}

// After is Locate given the locations an earlier plan on this checkout
// found: a workload found on the same index generation, under the same API
// version and with the same hints, keeps its location.
func After(ix *index.Index, prior Prior, workloads []drift.Workload, hints func(drift.Workload) Hints) Locations {
	found := make([]Location, len(workloads))
	applied := &AppliedComparisons{}
	peers := map[string][]string{}
	for _, w := range workloads {
		peers[w.Namespace] = append(peers[w.Namespace], w.Kind+"/"+w.Name)
	}
	l := locator{Index: ix, prober: chart.NewProber(peers)}
	// Each workload is located alone against an index nothing writes to,
	// so a fleet's ten thousand drifted workloads spread over every core.
	index.InParallel(len(workloads), func(i int) {
		w := workloads[i]
		var h Hints
		if hints != nil {
			h = hints(w)
		}
		if loc, ok := prior.answer(ix, w, h, applied); ok {
			found[i] = loc
			return
		}
		found[i] = Location{Found: l.locate(w, h), Hints: h}
	})
	out := make(Locations, len(workloads))
	for i, w := range workloads {
		out[restart.IDOf(w)] = found[i]
	}
	return out
}

// answer returns the location found before for w, when it holds.
func (b Prior) answer(ix *index.Index, w drift.Workload, h Hints, applied *AppliedComparisons) (Location, bool) {
	if b.at == nil || b.at != ix.Generation() || !reusableHints(h) {
		return Location{}, false
	}
	prev, ok := b.found[restart.IDOf(w)]
	if !ok || prev.apiVersion != w.APIVersion || !SameHints(prev.loc.Hints, h, applied) {
		return Location{}, false
	}
	loc := prev.loc
	// The hints are equal; the current ones share this plan's applied
	// list, and let the last plan's go.
	loc.Hints = h
	return loc, true
}

// Holds reports whether the location found before for w holds on ix.
func (b Prior) Holds(ix *index.Index, w drift.Workload, h Hints, applied *AppliedComparisons) bool {
	_, ok := b.answer(ix, w, h, applied)
	return ok
}

// reusableHints leaves out workloads whose location reads pulled charts:
// those are pulled again each cycle and are not the index's to stamp.
func reusableHints(h Hints) bool {
	return len(h.pulled) == 0 && len(h.ChartSources) == 0
}

// SameHints compares two workloads' hints, the applied lists once per pair
// of lists.
func SameHints(a, b Hints, applied *AppliedComparisons) bool {
	if !applied.same(a.Applied, b.Applied) {
		return false
	}
	return reflect.DeepEqual(a.withoutApplied(), b.withoutApplied())
}

// ReadsPulled reports whether the hints read charts pulled before the plan
// (or name a HelmRelease, whose chart may be): what those give is not the
// index's to stamp.
func (h Hints) ReadsPulled() bool {
	return len(h.pulled) > 0 || len(h.ChartSources) > 0 || h.Release != nil
}

// ReadsIndex reports whether locating with the hints read more of the index
// than the workload's files: Argo CD directories, or a Flux substitution.
func (h Hints) ReadsIndex() bool {
	return len(h.Directories) > 0 || h.Flux != nil && h.Flux.PostBuild != nil
}

// WithoutApplied is the hints without the applied paths, which
// AppliedComparisons compares apart.
func (h Hints) WithoutApplied() Hints { return h.withoutApplied() }

// Record keeps the locations of workloads for the next plan.
func Record(ix *index.Index, workloads []drift.Workload, locs Locations) Prior {
	b := Prior{at: ix.Generation(), found: make(map[WorkloadID]locatedWorkload, len(workloads))}
	for _, w := range workloads {
		id := restart.IDOf(w)
		// A chart value is probed with the other drifted workloads of the
		// release: with another drifted set, another value may be right.
		if loc, ok := locs[id]; ok && !readsCharts(loc) {
			b.found[id] = locatedWorkload{apiVersion: w.APIVersion, loc: loc}
		}
	}
	return b
}

// AppliedComparisons compares applied-path lists once per pair: every
// workload of a plan holds the same list, thousands of them, and lists are
// never written once made.
type AppliedComparisons struct {
	mu    sync.Mutex
	known map[[2]*Applied]bool
}

// Same reports whether two applied lists are equal.
func (c *AppliedComparisons) Same(a, b []Applied) bool { return c.same(a, b) }

func (c *AppliedComparisons) same(a, b []Applied) bool {
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

// readsCharts reports whether a location was found by rendering a chart.
func readsCharts(loc Location) bool {
	return loc.Manifest.Status == drift.ManifestHelm || loc.Site != nil && restart.ReadsOf(loc.Site) == restart.ReadsCharts
}
