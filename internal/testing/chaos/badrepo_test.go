package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

// repoCase is testdata/bad/repo/<case>/case.yaml: files/ is laid over a
// copy of the demo GitOps repository, then the case's expectations are
// checked against what `kedge plan` would edit.
type repoCase struct {
	About    string      `json:"about"`
	Generate []generated `json:"generate"`
	// Remove deletes demo files before files/ is laid over.
	Remove []string `json:"remove"`
	// Problems must be reported by the index (kind optional).
	Problems []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"problems"`
	// SameAsDemo says the bad files cost nothing but themselves: the plan,
	// the edits and the refusals are the demo repository's, and the
	// problems are the demo's plus exactly those listed.
	SameAsDemo bool `json:"sameAsDemo"`
	// Untouched files are in no edit.
	Untouched []string `json:"untouched"`
	// Refused files are reported as files kedge will not edit, with a
	// reason containing the given words.
	Refused []struct {
		Path   string `json:"path"`
		Reason string `json:"reason"`
	} `json:"refused"`
	// WaiveLineRules says why the changed lines may hold more than the
	// restart annotations (the render check still applies).
	WaiveLineRules string `json:"waiveLineRules"`
	// Workloads' manifest status (and path or detail) in the plan.
	Workloads []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Path   string `json:"path"`
		Detail string `json:"detail"`
	} `json:"workloads"`
}

// repoOutcome is what planning the demo cluster against a repository gave,
// as the bounded child reports it.
type repoOutcome struct {
	Err      string
	Plan     drift.Plan
	Problems []index.Problem
	Edits    []restart.FileEdit
	Refused  []restart.Refusal
}

// repoConfig is the configuration the repository cases plan with.
func repoConfig() (*config.Config, error) {
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		return nil, err
	}
	cfg.Cluster, cfg.Repo.Owner, cfg.Repo.Name = Cluster, Owner, RepoName
	return cfg, nil
}

// planRepository is `kedge plan` of the demo cluster against repo (the
// child side of a repository case).
func planRepository(repo string) repoOutcome {
	set, err := snapshot.Read(DemoCluster)
	if err != nil {
		return repoOutcome{Err: err.Error()}
	}
	cfg, err := repoConfig()
	if err != nil {
		return repoOutcome{Err: err.Error()}
	}
	res, err := plan.Build(set, assemble.PlanOptions(cfg, repo))
	if err != nil {
		return repoOutcome{Err: err.Error()}
	}
	return repoOutcome{Plan: res.Plan, Problems: res.Index.Problems, Edits: res.Edits.All(), Refused: res.Edits.Refused}
}

// TestBadRepositoryInput plans the demo cluster against the demo repository
// spoiled by each case, each in a bounded child process (runBounded).
// Whatever the case, planning finishes within the bounds and does not fail
// as a whole; each bad file is reported or left alone; and every edit kedge
// does make changes nothing but the restart annotations (rendered with
// kustomize before and after) and keeps the file's byte order mark and line
// endings.
func TestBadRepositoryInput(t *testing.T) {
	set, err := snapshot.Read(DemoCluster)
	require.NoError(t, err)
	cfg, err := repoConfig()
	require.NoError(t, err)
	clean := filepath.Join(t.TempDir(), "gitops")
	treecopy.Copy(t, DemoRepo, clean)
	var demo repoOutcome
	runBounded(t, "repo", clean, &demo)
	require.Empty(t, demo.Err)

	for _, name := range caseDirs(t, "repo") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(corpus, "repo", name)
			var c repoCase
			readCase(t, filepath.Join(dir, "case.yaml"), &c)
			require.NotEmpty(t, c.About, "say what the case is")

			repo := filepath.Join(t.TempDir(), "gitops")
			treecopy.Copy(t, DemoRepo, repo)
			for _, p := range c.Remove {
				require.NoError(t, os.Remove(filepath.Join(repo, filepath.FromSlash(p))))
			}
			if _, err := os.Stat(filepath.Join(dir, "files")); err == nil {
				treecopy.Copy(t, filepath.Join(dir, "files"), repo)
			}
			generate(t, repo, c.Generate)

			var res repoOutcome
			runBounded(t, "repo", repo, &res)
			require.Empty(t, res.Err, "one bad file must not stop the plan")

			for _, want := range c.Problems {
				assert.True(t, hasProblem(res.Problems, want.Path, want.Kind),
					"problem %s %s not reported; got %v", want.Kind, want.Path, res.Problems)
			}
			if c.SameAsDemo {
				assertSameAsDemo(t, demo, res, c)
			}
			edited := map[string]restart.FileEdit{}
			for _, e := range res.Edits {
				edited[e.Path] = e
			}
			for _, p := range c.Untouched {
				assert.NotContains(t, edited, p, "kedge must not rewrite %s", p)
			}
			for _, want := range c.Refused {
				found := false
				for _, r := range res.Refused {
					if r.Path == want.Path && strings.Contains(r.Reason, want.Reason) {
						found = true
					}
				}
				assert.True(t, found, "refusal of %s (%q) not reported; got %+v", want.Path, want.Reason, res.Refused)
			}
			for _, want := range c.Workloads {
				w, ok := findWorkload(res.Plan, want.ID)
				require.True(t, ok, "%s not in the plan", want.ID)
				assert.Equal(t, want.Status, w.Manifest.Status, "%s: %s", want.ID, w.Manifest.Detail)
				if want.Path != "" {
					assert.Equal(t, want.Path, w.Manifest.Path, want.ID)
				}
				if want.Detail != "" {
					assert.Contains(t, w.Manifest.Detail, want.Detail, want.ID)
				}
			}

			require.NotEmpty(t, res.Edits, "the rest of the repository is still served")
			for _, e := range res.Edits {
				assertBytesKept(t, e)
			}
			if c.WaiveLineRules == "" {
				assert.Empty(t, editcheck.PatchLineViolations(edit.UnifiedDiff(res.Edits), editcheck.Rules{
					AnnotationKeys: []string{cfg.Restart.Annotation, cfg.Restart.TargetAnnotation},
					PatchFiles:     []string{"kedge-restart-patch.yaml", "kedge-restart-patch.yml"},
					// The demo's HelmRelease gets kedge's post-renderer entry.
					PostRendererMarker: helmedit.RestartMarker, ReleasePatchPrefix: "kedge-helm-",
				}))
			}
			assertRendersSame(t, repo, set.Kustomizations, res, cfg)
		})
	}
}

// assertSameAsDemo holds a case to the demo's outcome: every workload is
// located and edited exactly as without the bad files, which only add
// their own problems.
func assertSameAsDemo(t *testing.T, demo, got repoOutcome, c repoCase) {
	t.Helper()
	assert.Equal(t, demo.Plan, got.Plan)
	assert.Equal(t, demo.Edits, got.Edits)
	assert.Equal(t, demo.Refused, got.Refused)
	var extra []index.Problem
	for _, p := range got.Problems {
		if !slices.Contains(demo.Problems, p) {
			extra = append(extra, p)
		}
	}
	require.Len(t, extra, len(c.Problems), "problems beyond the demo's: %v", extra)
	for _, want := range c.Problems {
		assert.True(t, hasProblem(extra, want.Path, want.Kind), "problem %s %s not among %v", want.Kind, want.Path, extra)
	}
}

func hasProblem(problems []index.Problem, path, kind string) bool {
	for _, p := range problems {
		if p.Path == path && (kind == "" || string(p.Kind) == kind) {
			return true
		}
	}
	return false
}

func findWorkload(plan drift.Plan, id string) (drift.Workload, bool) {
	for _, w := range plan.Workloads {
		if w.Kind+" "+w.Namespace+"/"+w.Name == id {
			return w, true
		}
	}
	return drift.Workload{}, false
}

// assertBytesKept holds an edit to the file's own conventions: the byte
// order mark stays, and no line ending appears that the file did not use.
func assertBytesKept(t *testing.T, e restart.FileEdit) {
	t.Helper()
	if e.Created {
		return
	}
	bom := []byte("\xef\xbb\xbf")
	assert.Equal(t, bytes.HasPrefix(e.Before, bom), bytes.HasPrefix(e.After, bom), "%s: byte order mark", e.Path)
	crlf := func(b []byte) int { return bytes.Count(b, []byte("\r\n")) }
	lf := func(b []byte) int { return bytes.Count(b, []byte("\n")) - crlf(b) }
	if crlf(e.Before) == 0 {
		assert.Zero(t, crlf(e.After), "%s: CRLF appeared in an LF file", e.Path)
	}
	if lf(e.Before) == 0 && crlf(e.Before) > 0 {
		assert.Zero(t, lf(e.After), "%s: LF appeared in a CRLF file", e.Path)
	}
}

// assertRendersSame writes the edits into a copy of the repository and
// renders both with kustomize: only the restart annotations of the planned
// workloads may differ.
func assertRendersSame(t *testing.T, repo string, kustomizations []objects.Kustomization, res repoOutcome, cfg *config.Config) {
	t.Helper()
	after := filepath.Join(t.TempDir(), "after")
	require.NoError(t, os.CopyFS(after, os.DirFS(repo)))
	var changed []string
	for _, e := range res.Edits {
		full := filepath.Join(after, filepath.FromSlash(e.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, e.After, 0o644))
		changed = append(changed, e.Path)
	}
	var restarts []editcheck.Restart
	for _, w := range res.Plan.Workloads {
		target := restart.TargetValue(w.Desired)
		restarts = append(restarts, editcheck.Restart{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{cfg.Restart.TargetAnnotation: target, cfg.Restart.Annotation: restart.RestartValue(w, target)},
		})
	}
	targets := map[string]string{}
	for _, k := range kustomizations {
		if k.Spec.TargetNamespace != "" {
			targets[strings.TrimPrefix(k.Spec.Path, "./")] = k.Spec.TargetNamespace
		}
	}
	check, err := editcheck.CompareRepos(editcheck.Check{
		Before: repo, After: after, Changed: changed, Restarts: restarts, TargetNamespaces: targets,
	})
	require.NoError(t, err)
	assert.Empty(t, check.Problems)
}
