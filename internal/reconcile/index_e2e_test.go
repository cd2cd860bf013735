package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
)

// TestCyclesUpdateTheIndexFromGit runs cycles of one service: the first
// indexes the checkout, a cycle with nothing new in Git reuses the index
// as it is, and one after a commit updates it from the commit's files to
// what a fresh index of the checkout holds.
func TestCyclesUpdateTheIndexFromGit(t *testing.T) {
	w := newWorld(t)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)
	run := func() *reconcile.Report {
		t.Helper()
		report, err := svc.Reconciler.RunOnce(context.Background())
		require.NoError(t, err)
		return report
	}

	first := run()
	assert.Equal(t, reconcile.IndexUpdate{}, first.Index, "the first cycle reads the whole checkout")

	second := run()
	assert.Equal(t, reconcile.IndexUpdate{Incremental: true}, second.Index)
	assert.Same(t, first.Result.Index, second.Result.Index, "nothing changed in Git: the index is the same")

	w.git.CommitAsHuman(t, repoName, "main", map[string]string{
		"apps/prod-eu-1/search/indexer.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: indexer-v2\n  namespace: search\nspec:\n  template:\n    spec:\n      containers:\n        - name: indexer\n          image: example.com/indexer:2\n",
		"apps/prod-eu-1/extra/worker.yaml":   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\n  namespace: extra\nspec:\n  template:\n    spec:\n      containers:\n        - name: worker\n          image: example.com/worker:1\n",
	}, "Rename the indexer, add a worker")
	third := run()
	assert.Equal(t, reconcile.IndexUpdate{Incremental: true, ChangedFiles: 2}, third.Index)
	fresh, err := index.Read(third.Result.Index.Root(), index.Options{Paths: w.cfg.Repo.Paths})
	require.NoError(t, err)
	updated := third.Result.Index
	assert.Equal(t, fresh.Objects(), updated.Objects())
	assert.Equal(t, fresh.Roots(), updated.Roots())
	assert.Equal(t, fresh.Namespaces(), updated.Namespaces())
	assert.Equal(t, fresh.Problems, updated.Problems)
	names := map[string]bool{}
	for _, o := range updated.Objects() {
		names[o.Name] = true
	}
	assert.True(t, names["indexer-v2"] && names["worker"], "the commit's workloads are indexed")
}

// TestCyclesReplanOnlyWhatChanged runs cycles of one service whose source
// hands the same Set while the cluster did not change: a cycle with the
// same Set and nothing new in Git takes the last plan; a commit, or a new
// Set, plans again, and that plan is what a fresh service plans.
func TestCyclesReplanOnlyWhatChanged(t *testing.T) {
	w := newWorld(t)
	set, err := w.source(context.Background())
	require.NoError(t, err)
	same := func(context.Context) (*objects.Set, error) { return set, nil }
	svc, err := assemble.New(context.Background(), w.cfg, same, assemble.Options{})
	require.NoError(t, err)
	run := func() *reconcile.Report {
		t.Helper()
		report, err := svc.Reconciler.RunOnce(context.Background())
		require.NoError(t, err)
		return report
	}

	before, err := json.Marshal(set)
	require.NoError(t, err)
	first := run()
	var stages []string
	for _, st := range first.Stages {
		stages = append(stages, st.Name)
		assert.GreaterOrEqual(t, st.Took, time.Duration(0), st.Name)
	}
	assert.Equal(t, []string{"cluster", "checkouts", "plan", "listings", "branches", "push", "pull requests", "dashboard"}, stages,
		"a cycle says how long each of its steps took")
	second := run()
	assert.Same(t, first.Result, second.Result, "the same Set and checkout: the same plan")
	after, err := json.Marshal(set)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "cycles read the Set they share with the live caches and never write into it")

	w.git.CommitAsHuman(t, repoName, "main", map[string]string{
		"apps/prod-eu-1/search/indexer.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: indexer-v2\n  namespace: search\nspec:\n  template:\n    spec:\n      containers:\n        - name: indexer\n          image: example.com/indexer:2\n",
	}, "Rename the indexer")
	third := run()
	assert.NotSame(t, second.Result, third.Result, "a commit: planned again")
	fresh := w.cycle()
	assert.Equal(t, fresh.Result.Plan, third.Result.Plan)
	assert.Equal(t, fresh.Result.Edits, third.Result.Edits)

	set = w.set
	fourth := run()
	assert.NotSame(t, third.Result, fourth.Result, "another Set: planned again")
	assert.Equal(t, third.Result.Plan, fourth.Result.Plan)
}

func TestStagesReadAsOneLine(t *testing.T) {
	stages := reconcile.Stages{{Name: "cluster", Took: 4 * time.Millisecond}, {Name: "push", Took: 1234567 * time.Microsecond}}
	assert.Equal(t, "cluster 4ms, push 1.235s", stages.String())
	assert.Empty(t, reconcile.Stages(nil).String())
}
