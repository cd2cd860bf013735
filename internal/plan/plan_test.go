package plan_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
)

const (
	demoCluster = "../../testdata/demo/cluster"
	demoRepo    = "../../testdata/demo/gitops"
)

func demoSet(t *testing.T) *objects.Set {
	t.Helper()
	set, err := snapshot.Read(demoCluster)
	require.NoError(t, err)
	return set
}

func snapshotJSON(t *testing.T, set *objects.Set) []byte {
	t.Helper()
	data, err := json.Marshal(set)
	require.NoError(t, err)
	return data
}

// TestBuildLeavesItsInputAlone: the plan is computed from the cluster's
// objects without writing into them, so a service can plan again from the
// same informer cache.
func TestBuildLeavesItsInputAlone(t *testing.T) {
	set := demoSet(t)
	before := snapshotJSON(t, set)
	first, err := plan.Build(set, plan.Options{RepoRoot: demoRepo})
	require.NoError(t, err)
	assert.Equal(t, before, snapshotJSON(t, set))

	again, err := plan.Build(set, plan.Options{RepoRoot: demoRepo})
	require.NoError(t, err)
	assert.Equal(t, first.Plan, again.Plan, "the same input plans the same")
	assert.Equal(t, first.Edits, again.Edits)
}

func TestBuildStages(t *testing.T) {
	set := demoSet(t)
	tests := []struct {
		name string
		opts plan.Options
		// check inspects one result.
		check func(t *testing.T, res *plan.Result)
	}{
		{
			name: "without a repository every workload is no-repo and nothing is edited",
			opts: plan.Options{},
			check: func(t *testing.T, res *plan.Result) {
				require.NotEmpty(t, res.Plan.Workloads)
				for _, w := range res.Plan.Workloads {
					assert.Equal(t, drift.ManifestNoRepo, w.Manifest.Status, w.Name)
				}
				assert.Empty(t, res.Edits.All())
				assert.Nil(t, res.Index)
			},
		},
		{
			name: "every found workload is edited in its namespace's files, and only found ones",
			opts: plan.Options{RepoRoot: demoRepo},
			check: func(t *testing.T, res *plan.Result) {
				edited := map[restart.WorkloadID]bool{}
				for _, f := range res.Edits.All() {
					for _, id := range f.Workloads {
						edited[id] = true
					}
				}
				for _, w := range res.Plan.Workloads {
					id := restart.IDOf(w)
					assert.Equal(t, w.Manifest.Status == drift.ManifestFound && w.Manifest.Edit != drift.EditAlreadyBumped, edited[id],
						"%s: %s %s", id, w.Manifest.Status, w.Manifest.Edit)
				}
			},
		},
		{
			name: "what the pull requests show is computed once, for every namespace",
			opts: plan.Options{RepoRoot: demoRepo},
			check: func(t *testing.T, res *plan.Result) {
				assert.Len(t, res.Namespaces, len(set.Namespaces))
				shop := res.Namespaces["shop"]
				assert.NotEmpty(t, shop.ProxyVersions)
				assert.Contains(t, shop.Applier, "Flux Kustomization ")
				assert.Empty(t, shop.OtherRepo)
				assert.NotEmpty(t, res.Mesh.Revisions)
			},
		},
		{
			name: "a source in another repository is no-repo naming it",
			opts: plan.Options{RepoRoot: demoRepo, RepoURLs: []string{"https://github.com/someone/else"}},
			check: func(t *testing.T, res *plan.Result) {
				var foreign int
				for _, w := range res.Plan.Workloads {
					if w.Manifest.Status == drift.ManifestNoRepo {
						foreign++
						assert.Contains(t, w.Manifest.Detail, "not this repository", w.Name)
						assert.NotEmpty(t, res.Namespaces[w.Namespace].OtherRepo, w.Namespace)
					}
				}
				assert.Positive(t, foreign)
			},
		},
		{
			name: "a migration target the mesh does not know is a configuration error naming its key",
			opts: plan.Options{RepoRoot: demoRepo, Migrations: []migrate.Policy{{Key: "migrations[0]", From: "default", To: "no-such-revision"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := plan.Build(set, tt.opts)
			if tt.check == nil {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "migrations[0]")
				return
			}
			require.NoError(t, err)
			tt.check(t, res)
		})
	}
}
