package ghemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitRemote makes a bare repository with main and a kedge branch one commit
// ahead, pushed from a work tree as a client would.
func gitRemote(t *testing.T) (bare, mainSHA, branchSHA string) {
	t.Helper()
	dir := t.TempDir()
	bare = filepath.Join(dir, "remote.git")
	_, err := git.PlainInit(bare, true)
	require.NoError(t, err)

	work := filepath.Join(dir, "work")
	repo, err := git.PlainInit(work, false)
	require.NoError(t, err)
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{bare}})
	require.NoError(t, err)
	wt, err := repo.Worktree()
	require.NoError(t, err)
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	commit := func(file string) plumbing.Hash {
		require.NoError(t, os.WriteFile(filepath.Join(work, file), []byte(file), 0o644))
		_, err := wt.Add(file)
		require.NoError(t, err)
		h, err := wt.Commit(file, &git.CommitOptions{Author: sig})
		require.NoError(t, err)
		return h
	}
	mainHash := commit("a.yaml")
	require.NoError(t, repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", mainHash)))
	require.NoError(t, wt.Checkout(&git.CheckoutOptions{Branch: "refs/heads/kedge/shop", Create: true}))
	branchHash := commit("b.yaml")
	require.NoError(t, repo.Push(&git.PushOptions{RefSpecs: []config.RefSpec{
		"refs/heads/main:refs/heads/main", "refs/heads/kedge/shop:refs/heads/kedge/shop",
	}}))
	return bare, mainHash.String(), branchHash.String()
}

func TestGitBackedBranchesAndMerge(t *testing.T) {
	bare, mainSHA, branchSHA := gitRemote(t)
	s := newTestServer(t, func(o *Options) { o.Branches = GitBranches(bare) })
	c := ghClient(t, s, botToken)
	ctx := context.Background()

	_, resp, err := c.PullRequests.Create(ctx, testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("kedge/missing"), Base: github.String("main"),
	})
	require.Error(t, err)
	assert.Equal(t, 422, resp.StatusCode)

	pr, _, err := c.PullRequests.Create(ctx, testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("kedge/shop"), Base: github.String("main"),
	})
	require.NoError(t, err)
	assert.Equal(t, branchSHA, pr.GetHead().GetSHA())
	assert.Equal(t, mainSHA, pr.GetBase().GetSHA())

	require.NoError(t, s.MergePR(pr.GetNumber(), GitFastForward(bare)))
	merged, _, err := c.PullRequests.Get(ctx, testOwner, testRepo, pr.GetNumber())
	require.NoError(t, err)
	assert.True(t, merged.GetMerged())
	assert.Equal(t, "closed", merged.GetState())
	assert.Equal(t, branchSHA, merged.GetMergeCommitSHA())
	assert.Equal(t, branchSHA, merged.GetBase().GetSHA(), "main moved to the merged commit")

	sha, ok := GitBranches(bare)("main")
	require.True(t, ok)
	assert.Equal(t, branchSHA, sha)
	assert.Error(t, s.MergePR(pr.GetNumber(), nil), "a closed pull request cannot be merged")
	assert.Panics(t, func() { s.SetBranch("x", "y") })
}

func TestPullRequestDiffIsGitsDiffOfTheBranch(t *testing.T) {
	bare, mainSHA, branchSHA := gitRemote(t)
	s := newTestServer(t, func(o *Options) { o.Branches, o.Diffs = GitBranches(bare), GitDiff(bare) })
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	pr, _, err := c.PullRequests.Create(ctx, testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("kedge/shop"), Base: github.String("main"),
	})
	require.NoError(t, err)

	diff, resp, err := c.PullRequests.GetRaw(ctx, testOwner, testRepo, pr.GetNumber(), github.RawOptions{Type: github.Diff})
	require.NoError(t, err)
	assert.Equal(t, "application/vnd.github.diff; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "github.v3; param=diff", resp.Header.Get("X-GitHub-Media-Type"))
	gitDiff := exec.Command("git", "--git-dir", bare, "diff", mainSHA+".."+branchSHA)
	gitDiff.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	want, err := gitDiff.Output()
	require.NoError(t, err)
	assert.Equal(t, string(want), diff)
	assert.Contains(t, diff, "diff --git a/b.yaml b/b.yaml\nnew file mode 100644\n")
	assert.Contains(t, diff, "--- /dev/null\n+++ b/b.yaml\n@@ -0,0 +1 @@\n+b.yaml\n")

	// The JSON representation is still the default.
	got, _, err := c.PullRequests.Get(ctx, testOwner, testRepo, pr.GetNumber())
	require.NoError(t, err)
	assert.Equal(t, branchSHA, got.GetHead().GetSHA())
}

func TestPullRequestDiffWithoutGitSideIsOutsideTheSurface(t *testing.T) {
	bare, _, _ := gitRemote(t)
	s := newTestServer(t, func(o *Options) { o.Branches = GitBranches(bare) })
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	pr, _, err := c.PullRequests.Create(ctx, testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("kedge/shop"), Base: github.String("main"),
	})
	require.NoError(t, err)
	_, resp, err := c.PullRequests.GetRaw(ctx, testOwner, testRepo, pr.GetNumber(), github.RawOptions{Type: github.Diff})
	require.Error(t, err)
	assert.Equal(t, 404, resp.StatusCode)
	calls := s.Calls()
	assert.True(t, calls[len(calls)-1].OutOfSurface)
}
