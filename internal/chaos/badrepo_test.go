package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/manifest"
	"github.com/kedge-io/kedge/internal/manifest/editcheck"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
)

// repoCase is testdata/bad/repo/<case>/case.yaml: files/ is laid over a
// copy of the demo GitOps repository, then the case's expectations are
// checked against what `kedge plan` would edit.
type repoCase struct {
	About string `json:"about"`
	// KnownIssue names a defect not fixed yet: the case is skipped with
	// it unless KEDGE_BAD_KNOWN is set.
	KnownIssue string      `json:"knownIssue"`
	Generate   []generated `json:"generate"`
	// Remove deletes demo files before files/ is laid over.
	Remove []string `json:"remove"`
	// Problems must be reported by the index (kind optional).
	Problems []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"problems"`
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

// TestBadRepositoryInput plans the demo cluster against the demo repository
// spoiled by each case. Whatever the case, planning finishes quickly and
// does not fail as a whole; each bad file is reported or left alone; and
// every edit kedge does make changes nothing but the restart annotations
// (rendered with kustomize before and after) and keeps the file's byte
// order mark and line endings.
func TestBadRepositoryInput(t *testing.T) {
	set, err := cluster.ReadSnapshot(DemoCluster)
	require.NoError(t, err)
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster, cfg.Repo.Owner, cfg.Repo.Name = Cluster, Owner, RepoName

	for _, name := range caseDirs(t, "repo") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(corpus, "repo", name)
			var c repoCase
			readCase(t, filepath.Join(dir, "case.yaml"), &c)
			require.NotEmpty(t, c.About, "say what the case is")
			skipKnown(t, c.KnownIssue)

			repo := filepath.Join(t.TempDir(), "gitops")
			treecopy.Copy(t, DemoRepo, repo)
			for _, p := range c.Remove {
				require.NoError(t, os.Remove(filepath.Join(repo, filepath.FromSlash(p))))
			}
			if _, err := os.Stat(filepath.Join(dir, "files")); err == nil {
				treecopy.Copy(t, filepath.Join(dir, "files"), repo)
			}
			generate(t, repo, c.Generate)

			type built struct {
				res *plan.Result
				err error
			}
			b := within(t, time.Minute, func() built {
				res, err := plan.Build(set, assemble.PlanOptions(cfg, repo))
				return built{res, err}
			})
			require.NoError(t, b.err, "one bad file must not stop the plan")
			res := b.res

			for _, want := range c.Problems {
				assert.True(t, hasProblem(res.Index.Problems, want.Path, want.Kind),
					"problem %s %s not reported; got %v", want.Kind, want.Path, res.Index.Problems)
			}
			edits := res.Edits.All()
			edited := map[string]manifest.FileEdit{}
			for _, e := range edits {
				edited[e.Path] = e
			}
			for _, p := range c.Untouched {
				assert.NotContains(t, edited, p, "kedge must not rewrite %s", p)
			}
			for _, want := range c.Refused {
				found := false
				for _, r := range res.Edits.Refused {
					if r.Path == want.Path && strings.Contains(r.Reason, want.Reason) {
						found = true
					}
				}
				assert.True(t, found, "refusal of %s (%q) not reported; got %+v", want.Path, want.Reason, res.Edits.Refused)
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

			require.NotEmpty(t, edits, "the rest of the repository is still served")
			for _, e := range edits {
				assertBytesKept(t, e)
			}
			if c.WaiveLineRules == "" {
				assert.Empty(t, editcheck.PatchLineViolations(manifest.UnifiedDiff(edits), editcheck.Rules{
					AnnotationKeys: []string{cfg.Restart.Annotation, cfg.Restart.TargetAnnotation},
					PatchFile:      "kedge-restart-patch.yaml",
				}))
			}
			assertRendersSame(t, repo, set.Kustomizations, res, cfg)
		})
	}
}

func hasProblem(problems []manifest.Problem, path, kind string) bool {
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
func assertBytesKept(t *testing.T, e manifest.FileEdit) {
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
func assertRendersSame(t *testing.T, repo string, kustomizations []objects.Kustomization, res *plan.Result, cfg *config.Config) {
	t.Helper()
	after := filepath.Join(t.TempDir(), "after")
	require.NoError(t, os.CopyFS(after, os.DirFS(repo)))
	var changed []string
	for _, e := range res.Edits.All() {
		full := filepath.Join(after, filepath.FromSlash(e.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, e.After, 0o644))
		changed = append(changed, e.Path)
	}
	var restarts []editcheck.Restart
	for _, w := range res.Plan.Workloads {
		target := manifest.TargetValue(w.Desired)
		restarts = append(restarts, editcheck.Restart{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{cfg.Restart.TargetAnnotation: target, cfg.Restart.Annotation: manifest.RestartValue(w, target)},
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
