package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
)

// TestLocateAfterReusesOnlyWhatHolds: a location found before is taken
// again only on the same index generation, for the same API version and
// hints, and never when the hints carry pulled charts; otherwise the
// workload is searched for again, and the answer is what a fresh search
// gives.
func TestLocateAfterReusesOnlyWhatHolds(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("kustomize-prefix"), IndexOptions{})
	require.NoError(t, err)
	cart := workload("shop", "Deployment", "prod-cart-v1")
	before := Hints{Via: "Flux Kustomization flux-system/shop"}
	found := ix.Locate([]drift.Workload{cart}, func(drift.Workload) Hints { return before })
	require.Equal(t, "apps/shop", found[IDOf(cart)].Root)
	_, _, prior := ix.EditsAfter(PriorEdits{}, []drift.Workload{cart}, found, EditOptions{})

	rebuilt, err := BuildIndex(fixtureRepo("kustomize-prefix"), IndexOptions{})
	require.NoError(t, err)
	extensions := cart
	extensions.APIVersion = "extensions/v1beta1"
	tests := []struct {
		name   string
		ix     *Index
		w      drift.Workload
		hints  Hints
		reused bool
	}{
		{name: "same index, workload and hints", ix: ix, w: cart, hints: before, reused: true},
		{name: "hints name another path", ix: ix, w: cart, hints: Hints{Via: before.Via, Paths: []string{"clusters/prod"}}},
		{name: "hints name another applier", ix: ix, w: cart, hints: Hints{Via: "Argo CD Application shop"}},
		{name: "another API version", ix: ix, w: extensions, hints: before},
		{name: "hints with pulled charts", ix: ix, w: cart, hints: Hints{Via: before.Via, pulled: map[string]PulledChart{"chart": {}}}},
		{name: "the index built again", ix: rebuilt, w: cart, hints: before},
		{name: "a workload not located before", ix: ix, w: workload("shop", "StatefulSet", "prod-redis-v1"), hints: before},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hints := func(drift.Workload) Hints { return tc.hints }
			_, ok := prior.located.answer(tc.ix, tc.w, tc.hints, &appliedComparisons{})
			assert.Equal(t, tc.reused, ok)
			want := tc.ix.Locate([]drift.Workload{tc.w}, hints)
			assert.Equal(t, want, tc.ix.LocateAfter(prior, []drift.Workload{tc.w}, hints))
		})
	}
}
