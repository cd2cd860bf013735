package corpus_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/testing/corpus"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// minimumShare is the share of the corpus's drifted workloads kedge must
// restart correctly, in percent.
const minimumShare = 95

// TestCorpus plans every corpus repository on its modelled cluster and
// holds each drifted workload to its expected outcome: a restart that
// applies, that the controllers' builds show as the restart of that
// workload alone, and that a second plan leaves as it is; or the refusal
// the controllers' documents call for, with the cause in its detail. It
// prints the share restarted correctly per repository and in all, and
// requires at least minimumShare percent.
func TestCorpus(t *testing.T) {
	entries, err := corpus.Entries()
	require.NoError(t, err)
	var rows []string
	total, restarted := 0, 0
	for _, e := range entries {
		var got tally
		t.Run(e.Name, func(t *testing.T) { got = runEntry(t, e) })
		rows = append(rows, fmt.Sprintf("%-32s %3d / %3d", e.Name, got.restarted, got.drifted))
		total += got.drifted
		restarted += got.restarted
	}
	rows = append(rows, fmt.Sprintf("%-32s %3d / %3d (%.1f%%)", "all", restarted, total, 100*float64(restarted)/float64(max(total, 1))))
	fmt.Println("restarted correctly / drifted\n" + strings.Join(rows, "\n"))
	assert.GreaterOrEqual(t, restarted*100, minimumShare*total, "restarted correctly: %d of %d", restarted, total)
	assert.GreaterOrEqual(t, len(entries), 12, "the corpus holds at least twelve repositories")
}

type tally struct{ drifted, restarted int }

func runEntry(t *testing.T, e corpus.Entry) tally {
	set, err := e.Cluster()
	require.NoError(t, err)
	opts := planOptions(e)
	res, err := plan.Build(set, opts)
	require.NoError(t, err)

	byName := map[string]drift.Workload{}
	for _, w := range res.Plan.Workloads {
		byName[label(w)] = w
	}
	var want []string
	for _, o := range e.Workloads {
		want = append(want, o.Workload)
	}
	got := slicesSorted(byName)
	require.ElementsMatch(t, want, got, "the drifted workloads are those the model makes drift")

	// Each repository's edits, namespace by namespace as their pull
	// requests, applied to a copy and held to the promise.
	ok := map[string]bool{}
	for ri, r := range res.Repositories {
		co := checkoutOf(e, ri)
		for _, ns := range r.Edits.NamespaceNames() {
			edits := r.Edits.Namespaces[ns]
			after := copyTree(t, co.root)
			gitopstest.GitApply(t, after, edit.UnifiedDiff(edits))
			var changed []string
			for _, ed := range edits {
				changed = append(changed, ed.Path)
			}
			appliers, err := editcheck.ClusterAppliers(filepath.Join(e.Dir, "cluster"), e.Repository, co.branch, e.FluxDirs)
			require.NoError(t, err)
			check := editcheck.Check{
				Before: co.root, After: after, Changed: changed, Restarts: restartsOf(res.Plan.Workloads, ns),
				Charts: chartDirs(e), HelmRepositories: helmRepositories(set),
				Appliers: appliers, TargetNamespaces: editcheck.TargetNamespaces(appliers), Repository: e.Repository,
			}
			result, err := editcheck.CompareRepos(check)
			require.NoError(t, err)
			assert.Empty(t, result.Problems, "namespace %s", ns)
			for _, ed := range edits {
				for _, id := range ed.Workloads {
					key := id.Kind + " " + id.Namespace + "/" + id.Name
					if result.Restarted[id.String()] && len(result.Problems) == 0 {
						ok[key] = true
					}
				}
			}
		}
	}

	// A second plan on the edited checkouts changes nothing.
	again := rerun(t, e, set, res)
	for _, o := range e.Workloads {
		w := byName[o.Workload]
		m := w.Manifest
		if !o.Restart {
			assert.Equal(t, o.Status, m.Status, "%s: %s", o.Workload, m.Detail)
			assert.Contains(t, m.Detail, o.Detail, "%s", o.Workload)
			ok[o.Workload] = false
			continue
		}
		if !assert.Equal(t, drift.ManifestFound, m.Status, "%s: %s", o.Workload, m.Detail) {
			ok[o.Workload] = false
			continue
		}
		if o.Edit != "" {
			assert.Equal(t, o.Edit, m.Edit, "%s", o.Workload)
		}
		if o.File != "" && !assert.True(t, editsFile(res, w, o.File), "%s: no edit of %s", o.Workload, o.File) {
			ok[o.Workload] = false
		}
		if a := again[o.Workload]; !assert.Equal(t, drift.EditAlreadyBumped, a.Edit, "%s: planned again: %s %s %s", o.Workload, a.Status, a.Edit, a.Detail) {
			ok[o.Workload] = false
		}
		assert.True(t, ok[o.Workload], "%s was not restarted correctly", o.Workload)
	}
	out := tally{drifted: len(e.Workloads)}
	for _, o := range e.Workloads {
		if o.Restart && ok[o.Workload] {
			out.restarted++
		}
	}
	return out
}

func label(w drift.Workload) string { return w.Kind + " " + w.Namespace + "/" + w.Name }

func slicesSorted(m map[string]drift.Workload) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkout is one checkout of an entry: its directory and branch.
type checkout struct {
	root, branch string
}

func checkoutOf(e corpus.Entry, i int) checkout {
	if len(e.Checkouts) == 0 {
		return checkout{root: filepath.Join(e.Dir, "repo")}
	}
	c := e.Checkouts[i]
	return checkout{root: filepath.Join(e.Dir, c.Dir), branch: c.Branch}
}

func planOptions(e corpus.Entry) plan.Options {
	opts := plan.Options{Drift: drift.Options{Cluster: e.Name}, Charts: map[string]chart.Pulled{}}
	for key, dir := range e.Charts {
		opts.Charts[key] = chart.Pulled{Archive: filepath.Join(e.Dir, filepath.FromSlash(dir))}
	}
	if len(e.Checkouts) == 0 {
		opts.RepoRoot, opts.RepoURLs = filepath.Join(e.Dir, "repo"), []string{e.Repository}
		return opts
	}
	for _, c := range e.Checkouts {
		opts.Repositories = append(opts.Repositories, plan.Repository{
			Name: route.RepoOf(e.Repository), Branch: c.Branch, URLs: []string{e.Repository}, Root: filepath.Join(e.Dir, c.Dir),
		})
	}
	return opts
}

// rerun plans again on copies of the checkouts with every edit applied,
// and returns each workload's manifest; no edit may come of it.
func rerun(t *testing.T, e corpus.Entry, set *objects.Set, res *plan.Result) map[string]drift.Manifest {
	opts := planOptions(e)
	for i, r := range res.Repositories {
		root := copyTree(t, checkoutOf(e, i).root)
		for _, ns := range r.Edits.NamespaceNames() {
			gitopstest.GitApply(t, root, edit.UnifiedDiff(r.Edits.Namespaces[ns]))
		}
		if len(e.Checkouts) == 0 {
			opts.RepoRoot = root
		} else {
			opts.Repositories[i].Root = root
		}
	}
	again, err := plan.Build(set, opts)
	require.NoError(t, err)
	for _, r := range again.Repositories {
		assert.Empty(t, r.Edits.Namespaces, "planning again on the edited checkout edits nothing")
	}
	out := map[string]drift.Manifest{}
	for _, w := range again.Plan.Workloads {
		out[label(w)] = w.Manifest
	}
	return out
}

func editsFile(res *plan.Result, w drift.Workload, file string) bool {
	for _, r := range res.Repositories {
		for _, e := range r.Edits.Namespaces[w.Namespace] {
			if e.Path == file {
				return true
			}
		}
	}
	return false
}

// restartsOf are the restarts a namespace's edits may make: its drifted
// workloads, each with the target annotation of its plan; the restart
// annotation's value is kedge's to choose.
func restartsOf(workloads []drift.Workload, ns string) []editcheck.Restart {
	ann := restart.Annotations{}.WithDefaults()
	var out []editcheck.Restart
	for _, w := range workloads {
		if w.Namespace != ns {
			continue
		}
		out = append(out, editcheck.Restart{Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{ann.Target: restart.TargetValue(w.Desired), ann.Restart: ""}})
	}
	return out
}

func chartDirs(e corpus.Entry) map[string]string {
	out := map[string]string{}
	for key, dir := range e.Charts {
		out[key] = filepath.Join(e.Dir, filepath.FromSlash(dir))
	}
	return out
}

func helmRepositories(set *objects.Set) map[string]string {
	out := map[string]string{}
	for _, r := range set.HelmRepositories {
		out[r.Namespace+"/"+r.Name] = r.Spec.URL
	}
	return out
}

// copyTree copies a checkout, symbolic links as links, to a directory of
// the test.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	}))
	return dst
}
