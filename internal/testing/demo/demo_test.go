package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/demo/make-demo.golden from `make demo`")

const (
	repoRoot   = "../../.."
	demoGolden = repoRoot + "/testdata/demo/make-demo.golden"
)

// What changes from one `make demo` to the next and is not the demo's:
// the emulated GitHub's port, the temporary directory the binary is built
// in, the version git describe gives the build, and the ages of pods the
// offline dashboard counts from the clock (a table cell "632d 19h").
var (
	loopbackPort = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	buildVersion = regexp.MustCompile(`main\.version=[^' ]*`)
	ageCell      = regexp.MustCompile(`\| (\d+d \d+h|\d+d|\d+h \d+m|\d+h|\d+m) \|`)
)

// TestMakeDemoOutput holds everything `make demo` prints, every act, so a
// change in any of them shows here first.
func TestMakeDemoOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kedge and runs the whole demo")
	}
	bin := t.TempDir()
	cmd := exec.Command("make", "demo", "BIN="+filepath.Join(bin, "kedge"))
	cmd.Dir = repoRoot
	// Run as a person runs it, not as a sub-make of `make test`, whose
	// flags would add "Entering directory" lines.
	cmd.Env = withoutMakeVars(os.Environ())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "make demo: %s", stderr.String())
	assert.Empty(t, stderr.String(), "make demo writes nothing to stderr")

	got := loopbackPort.ReplaceAllString(stdout.String(), "127.0.0.1:PORT")
	got = buildVersion.ReplaceAllString(got, "main.version=VERSION")
	got = strings.ReplaceAll(got, bin, "$TMP")
	// Adjacent cells share their bar: replace until none is left.
	for ageCell.MatchString(got) {
		got = ageCell.ReplaceAllString(got, "| AGE |")
	}
	if *update {
		require.NoError(t, os.WriteFile(demoGolden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(demoGolden)
	require.NoError(t, err, "go test ./internal/testing/demo -run TestMakeDemoOutput -update writes it")
	assert.Equal(t, string(want), got, "make demo's output changed; if on purpose, rerun with -update and review the diff")
	assertNoWholeFileRewrites(t, got)
}

// assertNoWholeFileRewrites fails on a diff that adds a whole file that is
// not new, which is what a diff rendered from edits without their
// original content looks like.
func assertNoWholeFileRewrites(t *testing.T, out string) {
	t.Helper()
	newFile := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "diff --git "):
			newFile = false
		case line == "--- /dev/null":
			newFile = true
		case strings.HasPrefix(line, "@@ -0,0 ") && !newFile:
			t.Errorf("a hunk adds a whole file that exists on the base branch: %s", line)
		}
	}
}

func withoutMakeVars(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// TestDemoDiffsAreTheBranchesDiffs checks each pull request's diff the demo
// prints against Git's own diff of the pushed branch against its base, in
// the bare repositories the demo pushed to.
func TestDemoDiffsAreTheBranchesDiffs(t *testing.T) {
	for _, ambient := range []string{"", "search"} {
		t.Run("ambient="+ambient, func(t *testing.T) {
			work := t.TempDir()
			var out bytes.Buffer
			trees := map[string]string{platformRepo: repoRoot + "/testdata/demo/gitops", teamRepo: repoRoot + "/testdata/demo/team-reviews"}
			require.NoError(t, run(&out, work, repoRoot+"/testdata/demo/cluster", trees, false, ambient))

			prs := printedPRs(out.String())
			require.NotEmpty(t, prs)
			for _, pr := range prs {
				gitDir := filepath.Join(work, pr.repo[strings.Index(pr.repo, "/")+1:]+".git")
				cmd := exec.Command("git", "--git-dir", gitDir, "diff", pr.base+".."+pr.branch)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
				want, err := cmd.Output()
				require.NoError(t, err, "git diff %s..%s in %s", pr.base, pr.branch, gitDir)
				require.NotEmpty(t, want)
				assert.Equal(t, string(want), pr.diff, "%s %s", pr.repo, pr.branch)
			}
		})
	}
}

type printedPR struct {
	repo, branch, base, diff string
}

// printedPRs reads the pull requests back from the demo's output: the
// repository header above each, its branches, and the indented diff lines
// between the branch line and the description.
func printedPRs(out string) []printedPR {
	var prs []printedPR
	repo, inDiff := "", false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "═══ "):
			repo, inDiff = strings.TrimPrefix(line, "═══ "), false
		case strings.HasPrefix(line, "━━━ "):
			inDiff = false
		case strings.HasPrefix(line, "    branch "):
			fields := strings.Fields(line)
			prs = append(prs, printedPR{repo: repo, branch: fields[1], base: fields[3]})
			inDiff = true
		case strings.HasPrefix(line, "    ── description ──") || !strings.HasPrefix(line, "    "):
			inDiff = false
		case inDiff:
			prs[len(prs)-1].diff += strings.TrimPrefix(line, "    ") + "\n"
		}
	}
	return prs
}
