package dashboard

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/prstate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/dashboard")

const goldenDir = "../../testdata/dashboard"

// renderAll renders every template for a fixture, by golden file name.
func renderAll(t *testing.T, r *Renderer, f fixture) map[string]string {
	t.Helper()
	out := map[string]string{}
	var err error
	out["pr-title.md"], err = r.PRTitle(f.pr)
	require.NoError(t, err)
	out["pr-body.md"], err = r.PRBody(f.pr)
	require.NoError(t, err)
	out["commit-message.md"], err = r.CommitMessage(f.pr)
	require.NoError(t, err)
	out["dashboard-issue.md"], err = r.DashboardIssue(f.dashboard)
	require.NoError(t, err)
	for kind, data := range f.comments {
		out["comment-"+kind+".md"], err = r.Comment(kind, data)
		require.NoError(t, err)
	}
	out["plan.md"], err = r.Plan(f.plan)
	require.NoError(t, err)
	return out
}

// plainOutputs are shown by GitHub as text, not rendered Markdown.
var plainOutputs = map[string]bool{"pr-title.md": true, "commit-message.md": true}

func TestGolden(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fixture()
			outputs := renderAll(t, r, f)
			require.Len(t, outputs, len(mainFiles), "one output per template")
			dir := filepath.Join(goldenDir, tc.name)
			if *update {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				for name, out := range outputs {
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644))
				}
			}
			for name, out := range outputs {
				want, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err, "golden file missing: run go test ./internal/dashboard -run TestGolden -update")
				assert.Equal(t, string(want), out, "%s/%s differs from its golden file", tc.name, name)
			}
		})
	}
}

func TestOutputsAreSafeMarkdown(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fixture()
			policy := policyOf(f)
			for name, out := range renderAll(t, r, f) {
				assert.LessOrEqual(t, len(out), MaxBodyLen, name)
				if plainOutputs[name] {
					assert.NotRegexp(t, `@[\p{L}\p{N}]`, out, "%s: a mention GitHub would notify", name)
					continue
				}
				assert.Empty(t, markdownProblems(out, policy), name)
				assert.Empty(t, visibleTextProblems(ownPRRefs.ReplaceAllString(out, "")), name)
				assert.Empty(t, mermaidProblems(out), name)
			}
		})
	}
}

// ownPRRefs are the bare "#N" kedge writes for its own PRs when their
// address is unusable: GitHub links them in the same repository, which is
// what is meant.
var ownPRRefs = regexp.MustCompile(`\| #[0-9]+ \|`)

func TestOutputIsDeterministic(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	first := renderAll(t, r, typical())
	for i := 0; i < 5; i++ {
		f := typical()
		// Input order must not matter.
		f.pr.Workloads = reversed(f.pr.Workloads)
		f.dashboard.Namespaces = reversed(f.dashboard.Namespaces)
		f.dashboard.Skipped = reversed(f.dashboard.Skipped)
		f.plan.Plan.Workloads = reversed(f.plan.Plan.Workloads)
		f.dashboard.Mesh.Revisions = reversed(f.dashboard.Mesh.Revisions)
		assert.Equal(t, first, renderAll(t, r, f))
	}
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func TestPRBodyTruncatesAtRowsAndKeepsState(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	f := hundreds()
	body, err := r.PRBody(f.pr)
	require.NoError(t, err)

	assert.LessOrEqual(t, len(body), BodyBudget)
	assert.Greater(t, len(body), BodyBudget-2000, "the budget is used, not wasted")
	state, ok := prstate.ParseState(body)
	require.True(t, ok, "state block intact")
	assert.Equal(t, f.pr.State, *state)
	assert.True(t, strings.HasSuffix(body, f.pr.State.Block()+"\n"), "state block last")

	rows := 0
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "| [Deployment service-") {
			rows++
			assert.True(t, strings.HasSuffix(line, " |"), "row cut in the middle: %q", line)
		}
	}
	omitted := len(f.pr.Workloads) - rows
	assert.Positive(t, omitted)
	assert.Contains(t, body, "**"+plural(omitted, "more workload")+"** are restarted by this PR but not listed")
	assert.Contains(t, body, "[cluster dashboard]("+dashURL+")")

	msg, err := r.CommitMessage(f.pr)
	require.NoError(t, err)
	assert.Equal(t, len(f.pr.Workloads), strings.Count(msg, "\n- Deployment service-"), "the commit message lists every workload")
}

func TestDashboardTruncates(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	out, err := r.DashboardIssue(hundreds().dashboard)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), BodyBudget)
	assert.Contains(t, out, "more, left out to fit GitHub's size limit")
	assert.Contains(t, out, "## Mesh", "sections after long lists survive")
}

func TestPRBodyTooManyWorkloadsForState(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	f := hundreds()
	for len(f.pr.Workloads) < 800 {
		f.pr.Workloads = append(f.pr.Workloads, f.pr.Workloads...)
	}
	f.pr.State = prstate.NewState(f.pr.Cluster, f.pr.Namespace, f.pr.Workloads)
	_, err = r.PRBody(f.pr)
	assert.ErrorIs(t, err, ErrStateTooLarge)
}

func TestPRTitleIsOneBoundedLine(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	f := oneWorkload()
	f.pr.Namespace = strings.Repeat("very-long-namespace\n", 30)
	title, err := r.PRTitle(f.pr)
	require.NoError(t, err)
	assert.NotContains(t, title, "\n")
	assert.Equal(t, 256, utf8.RuneCountInString(title))
	assert.True(t, strings.HasSuffix(title, "…"))
}
