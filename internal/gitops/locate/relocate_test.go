package locate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestLocateAfterReusesOnlyWhatHolds: a location found before is taken
// again only on the same index generation, for the same API version and
// hints, and never when the hints carry pulled charts; otherwise the
// workload is searched for again, and the answer is what a fresh search
// gives.
func TestLocateAfterReusesOnlyWhatHolds(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("kustomize-prefix"), index.Options{})
	require.NoError(t, err)
	cart := gitopstest.Workload("shop", "Deployment", "prod-cart-v1")
	before := locate.Hints{Via: "Flux Kustomization flux-system/shop"}
	found := locate.Locate(ix, []drift.Workload{cart}, func(drift.Workload) locate.Hints { return before })
	require.Equal(t, "apps/shop", found[restart.IDOf(cart)].Root)
	_, _, prior := edit.After(ix, edit.Prior{}, []drift.Workload{cart}, found, edit.Options{})

	rebuilt, err := index.Read(gitopstest.FixtureRepo("kustomize-prefix"), index.Options{})
	require.NoError(t, err)
	extensions := cart
	extensions.APIVersion = "extensions/v1beta1"
	tests := []struct {
		name   string
		ix     *index.Index
		w      drift.Workload
		hints  locate.Hints
		reused bool
	}{
		{name: "same index, workload and hints", ix: ix, w: cart, hints: before, reused: true},
		{name: "hints name another path", ix: ix, w: cart, hints: locate.Hints{Via: before.Via, Paths: []string{"clusters/prod"}}},
		{name: "hints name another applier", ix: ix, w: cart, hints: locate.Hints{Via: "Argo CD Application shop"}},
		{name: "another API version", ix: ix, w: extensions, hints: before},
		{name: "hints with pulled charts", ix: ix, w: cart, hints: locate.WithPulledCharts(locate.Hints{Via: before.Via}, map[string]chart.Pulled{"chart": {}})},
		{name: "the index built again", ix: rebuilt, w: cart, hints: before},
		{name: "a workload not located before", ix: ix, w: gitopstest.Workload("shop", "StatefulSet", "prod-redis-v1"), hints: before},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hints := func(drift.Workload) locate.Hints { return tc.hints }
			ok := prior.Located().Holds(tc.ix, tc.w, tc.hints, &locate.AppliedComparisons{})
			assert.Equal(t, tc.reused, ok)
			want := locate.Locate(tc.ix, []drift.Workload{tc.w}, hints)
			assert.Equal(t, want, locate.After(tc.ix, prior.Located(), []drift.Workload{tc.w}, hints))
		})
	}
}
