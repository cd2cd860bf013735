package edit

import (
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

// TestEditsAfterEqualFreshEdits commits at random in copies of every
// fixture repository and of generated fleets' and moves workloads' desired
// targets, and after each step checks that the edits and outcomes of
// EditsAfter, given the step before's results and the updated index, are
// what Edits gives on a fresh build; and that no namespace whose results
// were reused has a changed file among those its edits read or rendered.
func TestEditsAfterEqualFreshEdits(t *testing.T) {
	type repoCase struct {
		name   string
		dir    func(t *testing.T) string
		opts   index.Options
		seed   uint64
		sample int
	}
	fleetRepo := func(seed uint64) func(t *testing.T) string {
		return func(t *testing.T) string {
			fleet, err := synth.New(synth.Spec{Seed: seed, Namespaces: 24, Workloads: 80, Pods: 160, Drift: 0.5})
			require.NoError(t, err)
			dir := t.TempDir()
			_, err = fleet.WriteRepo(dir)
			require.NoError(t, err)
			return dir
		}
	}
	cases := []repoCase{
		{name: "synth", dir: fleetRepo(7), seed: 199, sample: 40},
		{name: "synth-paths", dir: fleetRepo(8), opts: index.Options{Paths: []string{"tenants", "clusters"}}, seed: 200, sample: 40},
	}
	entries, err := os.ReadDir(gitopstest.Fixtures)
	require.NoError(t, err)
	for i, e := range entries {
		cases = append(cases, repoCase{name: e.Name(), dir: func(t *testing.T) string { return gitopstest.CopyCase(t, e.Name()) }, seed: uint64(300 + i)})
	}
	reusedAnywhere := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reusedAnywhere += checkReuse(t, tc.dir(t), tc.opts, tc.seed, tc.sample)
		})
	}
	assert.Positive(t, reusedAnywhere, "no step reused a namespace's edits")
}

// checkReuse runs the steps on one checkout and returns how many
// namespaces' results were reused in all.
func checkReuse(t *testing.T, dir string, opts index.Options, seed uint64, sample int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 18))
	ix, err := index.Read(dir, opts)
	require.NoError(t, err)
	workloads := gitopstest.WorkloadsOf(ix.Objects())
	if sample > 0 && len(workloads) > sample {
		rng.Shuffle(len(workloads), func(i, j int) { workloads[i], workloads[j] = workloads[j], workloads[i] })
		workloads = workloads[:sample]
	}
	_, _, prior := After(ix, Prior{}, workloads, locateAll(ix, workloads), Options{})

	// Nothing changed: every namespace whose edits read only files and
	// roots, or whose index is the same, keeps its results.
	_, _, again := After(ix, prior, workloads, locateAll(ix, workloads), Options{})
	for ns, r := range again.namespaces {
		assert.Equal(t, !r.inputs.never, r.reused, "namespace %s on the same index", ns)
	}
	reused := again.Reused()
	prior = again

	for step := range gitopstest.CommitsPerRepo {
		what := "no commit"
		var changed []string
		if rng.IntN(4) > 0 {
			c := gitopstest.RandomCommit(t, rng, dir, step)
			what, changed = c.What, c.Changed
		}
		workloads = retarget(rng, workloads)
		next, err := ix.Update(changed)
		require.NoError(t, err, what)
		fresh, err := index.Read(dir, opts)
		require.NoError(t, err, what)

		wantLocations := locateAll(fresh, workloads)
		gotLocations := locate.After(next, prior.Located(), workloads, hintsOf(next))
		require.Equal(t, wantLocations, gotLocations, "locations after step %d (%s)", step, what)
		relocated := relocations(next, prior, workloads)
		if len(changed) == 0 {
			assert.Equal(t, len(workloads), relocated, "locations reused on the same index after step %d", step)
		} else if next != ix {
			assert.Zero(t, relocated, "locations reused on a new index after step %d (%s)", step, what)
		}
		wantEdits, wantOutcomes := Compute(fresh, workloads, wantLocations, Options{Annotations: restart.Annotations{}})
		gotEdits, gotOutcomes, results := After(next, prior, workloads, gotLocations, Options{})
		t.Logf("step %d: %s %v; %d of %d namespaces reused", step, what, changed, results.Reused(), len(results.namespaces))
		require.Equal(t, wantEdits, gotEdits, "edits after step %d (%s)", step, what)
		require.Equal(t, wantOutcomes, gotOutcomes, "outcomes after step %d (%s)", step, what)
		for ns, r := range results.namespaces {
			if !r.reused {
				continue
			}
			for _, p := range changed {
				assert.NotContains(t, readBy(fresh, r), p, "namespace %s reused after step %d (%s) changed a file it reads", ns, step, what)
			}
		}
		reused += results.Reused()
		ix, prior = next, results
	}
	return reused
}

func locateAll(ix *index.Index, workloads []drift.Workload) locate.Locations {
	return locate.Locate(ix, workloads, hintsOf(ix))
}

func hintsOf(ix *index.Index) func(drift.Workload) locate.Hints {
	return locate.HintsIn(nil, index.WithRepositoryApplications(&objects.Set{}, ix))
}

// relocations counts the workloads LocateAfter answers from prior on ix.
func relocations(ix *index.Index, prior Prior, workloads []drift.Workload) int {
	hints, applied := hintsOf(ix), &locate.AppliedComparisons{}
	n := 0
	for _, w := range workloads {
		if prior.located.Holds(ix, w, hints(w), applied) {
			n++
		}
	}
	return n
}

// retarget moves a few workloads to the other target, as a new control
// plane revision does to the namespaces that follow it.
func retarget(rng *rand.Rand, workloads []drift.Workload) []drift.Workload {
	out := slices.Clone(workloads)
	if len(out) == 0 {
		return out
	}
	for range rng.IntN(3) {
		i := rng.IntN(len(out))
		if out[i].Desired == gitopstest.Istio125 {
			out[i].Desired = gitopstest.Istio126
		} else {
			out[i].Desired = gitopstest.Istio125
		}
	}
	return out
}

// readBy lists, from the index alone, the files a namespace's edits read
// or render: its workloads' sources and roots, the files it edits, and
// everything each root reading them reads.
func readBy(ix *index.Index, r *namespaceResult) []string {
	var files []string
	addRoot := func(dir string) {
		if root := ix.RootAt(dir); root != nil {
			files = append(files, path.Join(dir, root.File))
			files = append(files, root.Reads()...)
		}
	}
	for _, it := range r.items {
		files = append(files, it.loc.Source.Path)
		addRoot(it.loc.Root)
	}
	for _, e := range r.edits {
		files = append(files, e.Path)
		for _, dir := range ix.Readers(e.Path) {
			addRoot(dir)
		}
	}
	for _, refusal := range r.refused {
		files = append(files, refusal.Path)
	}
	return files
}

// TestKeptEditsHoldNoSpareCapacity: a namespace's result outlives its
// cycle, so its contents are kept at about their length, byte for byte, and a
// created file still has no Before.
func TestKeptEditsHoldNoSpareCapacity(t *testing.T) {
	grown := append(make([]byte, 0, 4096), "spec: {}\n"...)
	edits := []restart.FileEdit{
		{Path: "apps/web.yaml", Before: grown, After: append(make([]byte, 0, 64), "spec: {x: 1}\n"...)},
		{Path: "apps/patch.yaml", After: []byte("kind: Deployment\n"), Created: true},
	}
	kept := withoutSpareCapacity(edits, false)
	require.Len(t, kept, 2)
	for i, e := range kept {
		assert.Equal(t, edits[i].Before, e.Before, e.Path)
		assert.Equal(t, edits[i].After, e.After, e.Path)
		// At most what the allocator rounds a buffer of that length up to.
		assert.LessOrEqual(t, cap(e.Before), len(e.Before)+len(e.Before)/8+16, e.Path)
		assert.LessOrEqual(t, cap(e.After), len(e.After)+len(e.After)/8+16, e.Path)
	}
	assert.Nil(t, kept[1].Before, "a created file has no Before")
	assert.Equal(t, 4096, cap(edits[0].Before), "the edits given are left as they were")

	omitted := withoutSpareCapacity(edits, true)
	for i, e := range omitted {
		assert.Nil(t, e.Before, e.Path)
		assert.Equal(t, edits[i].After, e.After, e.Path)
	}
	assert.Equal(t, "spec: {}\n", string(edits[0].Before), "the edits given are left as they were")
}

// TestOmitBeforeKeepsAfterAndIsNotReusedAcross: edits computed with
// OmitBefore are the full edits without Before; results kept without Before
// never answer a call that wants it, nor the other way round, while each
// kind answers its own.
func TestOmitBeforeKeepsAfterAndIsNotReusedAcross(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("kustomize-prefix"), index.Options{})
	require.NoError(t, err)
	workloads := gitopstest.WorkloadsOf(ix.Objects())
	require.NotEmpty(t, workloads)
	locs := locateAll(ix, workloads)

	full, fullOutcomes, withBefore := After(ix, Prior{}, workloads, locs, Options{})
	omitted, omittedOutcomes, withoutBefore := After(ix, Prior{}, workloads, locs, Options{OmitBefore: true})
	require.NotEmpty(t, full.Namespaces)
	assert.Equal(t, fullOutcomes, omittedOutcomes)
	require.Equal(t, full.NamespaceNames(), omitted.NamespaceNames())
	hadBefore := false
	for ns, edits := range full.Namespaces {
		require.Len(t, omitted.Namespaces[ns], len(edits), ns)
		for i, e := range edits {
			hadBefore = hadBefore || e.Before != nil
			o := omitted.Namespaces[ns][i]
			assert.Nil(t, o.Before, e.Path)
			e.Before = nil
			assert.Equal(t, e, o, e.Path)
		}
	}
	require.True(t, hadBefore, "the fixture edits no existing file")

	for _, tc := range []struct {
		name   string
		prior  Prior
		opts   Options
		reused bool
	}{
		{name: "with Before, then with", prior: withBefore, opts: Options{}, reused: true},
		{name: "without, then without", prior: withoutBefore, opts: Options{OmitBefore: true}, reused: true},
		{name: "without, then with", prior: withoutBefore, opts: Options{}},
		{name: "with, then without", prior: withBefore, opts: Options{OmitBefore: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, next := After(ix, tc.prior, workloads, locs, tc.opts)
			if tc.reused {
				assert.Equal(t, len(next.namespaces), next.Reused())
			} else {
				assert.Zero(t, next.Reused())
			}
			want := full
			if tc.opts.OmitBefore {
				want = omitted
			}
			assert.Equal(t, want, got)
		})
	}
}
