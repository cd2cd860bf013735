package index_test

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

// TestUpdateEqualsFreshBuild applies random commits to copies of every
// fixture repository and of a generated fleet's, and after each one
// checks that updating the previous index gives what a fresh build gives.
func TestUpdateEqualsFreshBuild(t *testing.T) {
	entries, err := os.ReadDir(gitopstest.Fixtures)
	require.NoError(t, err)
	for i, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			checkUpdates(t, gitopstest.CopyCase(t, e.Name()), index.Options{}, uint64(i), 0)
		})
	}
	t.Run("synth", func(t *testing.T) {
		fleet, err := synth.New(synth.Spec{Seed: 7, Namespaces: 24, Workloads: 80, Pods: 160, Drift: 0.5})
		require.NoError(t, err)
		dir := t.TempDir()
		_, err = fleet.WriteRepo(dir)
		require.NoError(t, err)
		// Edits verify by rendering; a sample of the fleet's workloads
		// covers every shape it has.
		checkUpdates(t, dir, index.Options{}, 99, 40)
	})
	t.Run("synth-paths", func(t *testing.T) {
		fleet, err := synth.New(synth.Spec{Seed: 8, Namespaces: 24, Workloads: 80, Pods: 160, Drift: 0.5})
		require.NoError(t, err)
		dir := t.TempDir()
		_, err = fleet.WriteRepo(dir)
		require.NoError(t, err)
		// The overlays' shared bases lie outside the indexed paths.
		checkUpdates(t, dir, index.Options{Paths: []string{"tenants", "clusters"}}, 100, 40)
	})
}

// checkUpdates commits at random in dir and compares the updated index
// with a fresh build after every commit. sample > 0 limits the workloads
// Locate and Edits are compared on.
func checkUpdates(t *testing.T, dir string, opts index.Options, seed uint64, sample int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 18))
	ix, err := index.Read(dir, opts)
	require.NoError(t, err)
	unchanged, err := ix.Update(nil)
	require.NoError(t, err)
	assertSameIndex(t, ix, unchanged, rng, sample)
	for step := range gitopstest.CommitsPerRepo {
		c := gitopstest.RandomCommit(t, rng, dir, step)
		objects, roots, problems := ix.Objects(), ix.Roots(), slices.Clone(ix.Problems)
		next, err := ix.Update(c.Changed)
		require.NoError(t, err, c.What)
		// The index updated from is a value: what it served stands.
		require.Equal(t, objects, ix.Objects())
		require.Equal(t, roots, ix.Roots())
		require.Equal(t, problems, ix.Problems)
		fresh, err := index.Read(dir, opts)
		require.NoError(t, err, c.What)
		t.Logf("commit %d: %s %v; %d of %d roots kept", step, c.What, c.Changed, index.KeptRoots(ix, next), len(index.RootsOf(next)))
		if !assertSameIndex(t, fresh, next, rng, sample) {
			t.Fatalf("after commit %d (%s)", step, c.What)
		}
		ix = next
	}
}

// assertSameIndex compares everything an index serves, and what Locate
// and Edits answer for its objects.
func assertSameIndex(t *testing.T, want, got *index.Index, rng *rand.Rand, sample int) bool {
	t.Helper()
	ok := assert.Equal(t, want.Objects(), got.Objects(), "objects") &&
		assert.Equal(t, want.Roots(), got.Roots(), "roots") &&
		assert.Equal(t, want.Namespaces(), got.Namespaces(), "namespaces") &&
		assert.Equal(t, want.Problems, got.Problems, "problems") &&
		assert.Equal(t, want.Applications(), got.Applications(), "applications") &&
		assert.Equal(t, index.WithoutCache(want), index.WithoutCache(got), "index")
	if !ok {
		return false
	}
	workloads := gitopstest.WorkloadsOf(want.Objects())
	if sample > 0 && len(workloads) > sample {
		rng.Shuffle(len(workloads), func(i, j int) { workloads[i], workloads[j] = workloads[j], workloads[i] })
		workloads = workloads[:sample]
	}
	wantLocs := locate.Locate(want, workloads, locate.HintsIn(nil, index.WithRepositoryApplications(&objects.Set{}, want)))
	gotLocs := locate.Locate(got, workloads, locate.HintsIn(nil, index.WithRepositoryApplications(&objects.Set{}, got)))
	if !assert.Equal(t, wantLocs, gotLocs, "locations") {
		return false
	}
	wantEdits, wantOutcomes := edit.Compute(want, workloads, wantLocs, edit.Options{Annotations: restart.Annotations{}})
	gotEdits, gotOutcomes := edit.Compute(got, workloads, gotLocs, edit.Options{Annotations: restart.Annotations{}})
	return assert.Equal(t, wantEdits, gotEdits, "edits") && assert.Equal(t, wantOutcomes, gotOutcomes, "outcomes")
}

// TestWalkOrderIsTheWalks holds the order an update keeps its file list in
// to the order filepath.WalkDir visits files, on names that sort apart
// from the paths holding them.
func TestWalkOrderIsTheWalks(t *testing.T) {
	dir := t.TempDir()
	var sorted []string
	for _, f := range []string{"a-b/x.yaml", "a.b", "a/b/c.yaml", "ab/x.yaml", "a b/x.yaml", "a/b-c.yaml", "Z.yaml", "a/b.yaml"} {
		p := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		sorted = append(sorted, p)
	}
	slices.SortFunc(sorted, index.WalkOrder)
	var walked []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			walked = append(walked, p)
		}
		return err
	}))
	assert.Equal(t, walked, sorted)
}
