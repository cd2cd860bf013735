package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitrepo"
)

func TestPrepareBranchWritesExactlyTheFiles(t *testing.T) {
	rm := newRemote(t, "http")
	repo := rm.open(t, t.TempDir())
	base := rm.tip(t, "main")

	// Names chosen so git's tree order (directories sort as "name/")
	// differs from plain string order; the server checks every object.
	edits := files(
		"apps/shop/cart.yaml", "kind: Deployment # restarted\n",
		seedExecutable, "#!/bin/sh\nexit 1\n",
		"apps/shop.yaml", "a file next to a directory of the same stem\n",
		"apps/shop-extra/patch.yaml", "kind: Deployment\n",
		"clusters/prod/new/deep/file.yaml", "",
	)
	c, err := repo.PrepareBranch("kedge/shop", edits, "Restart shop")
	require.NoError(t, err)
	_, err = repo.Push(context.Background(), []gitrepo.Change{c}, nil)
	require.NoError(t, err)
	assert.Equal(t, c.Commit, rm.tip(t, "kedge/shop"))
	assert.Equal(t, base, c.Parent)

	for path, content := range edits {
		assert.Equal(t, string(content), rm.srv.ReadFile(t, repoName, "kedge/shop", path), path)
	}
	assert.Equal(t, "100755", rm.srv.FileMode(t, repoName, "kedge/shop", seedExecutable), "an existing file keeps its mode")
	assert.Equal(t, "100644", rm.srv.FileMode(t, repoName, "kedge/shop", "apps/shop.yaml"))
	assert.ElementsMatch(t, []string{
		"README.md", "apps/billing/api.yaml", "apps/shop-extra/patch.yaml", "apps/shop.yaml",
		"apps/shop/cart.yaml", "apps/shop/kustomization.yaml", "clusters/prod/new/deep/file.yaml", seedExecutable,
	}, rm.srv.Files(t, repoName, "kedge/shop"))
	assert.Equal(t, seed["apps/shop/kustomization.yaml"], rm.srv.ReadFile(t, repoName, "kedge/shop", "apps/shop/kustomization.yaml"))

	// Branches are built from objects: the checkout for reading stays on
	// the base.
	got, err := os.ReadFile(filepath.Join(repo.Worktree(), "apps/shop/cart.yaml"))
	require.NoError(t, err)
	assert.Equal(t, seed["apps/shop/cart.yaml"], string(got))
	assert.NoFileExists(t, filepath.Join(repo.Worktree(), "apps/shop.yaml"))
}

func TestPrepareBranchIsReproducible(t *testing.T) {
	rm := newRemote(t, "file")
	a := rm.open(t, t.TempDir())
	b := rm.open(t, t.TempDir())
	edit := files("apps/shop/cart.yaml", "x\n")

	first, err := a.PrepareBranch("kedge/shop", edit, "Restart shop")
	require.NoError(t, err)
	tests := []struct {
		name    string
		repo    *gitrepo.Repo
		files   map[string][]byte
		message string
		same    bool
	}{
		{name: "same clone, same input", repo: a, files: edit, message: "Restart shop", same: true},
		{name: "other clone, same input", repo: b, files: edit, message: "Restart shop", same: true},
		{name: "message without its newline", repo: b, files: edit, message: "Restart shop\n", same: true},
		{name: "other content", repo: b, files: files("apps/shop/cart.yaml", "y\n"), message: "Restart shop"},
		{name: "other message", repo: b, files: edit, message: "Restart the shop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.repo.PrepareBranch("kedge/shop", tc.files, tc.message)
			require.NoError(t, err)
			assert.Equal(t, tc.same, c.Commit == first.Commit)
			assert.True(t, c.Changed, "the remote branch does not exist")
		})
	}
}

func TestPrepareBranchRejects(t *testing.T) {
	rm := newRemote(t, "file")
	repo := rm.open(t, t.TempDir())

	tests := []struct {
		name    string
		branch  string
		files   map[string][]byte
		message string
		wantErr string
	}{
		{name: "base branch", branch: "main", files: files("a", "1"), wantErr: "is the base branch"},
		{name: "bad branch name", branch: "kedge/..", files: files("a", "1"), wantErr: "branch"},
		{name: "no files", branch: "kedge/x", files: map[string][]byte{}, wantErr: "no files"},
		{name: "empty message", branch: "kedge/x", files: files("a", "1"), message: " \n", wantErr: "empty commit message"},
		{name: "absolute path", branch: "kedge/x", files: files("/etc/passwd", "1"), wantErr: "not a clean"},
		{name: "parent escape", branch: "kedge/x", files: files("apps/../../x", "1"), wantErr: "not a clean"},
		{name: "dot segment", branch: "kedge/x", files: files("./a", "1"), wantErr: "not a clean"},
		{name: "trailing slash", branch: "kedge/x", files: files("apps/", "1"), wantErr: "not a clean"},
		{name: "git directory", branch: "kedge/x", files: files(".git/config", "1"), wantErr: "not allowed"},
		{name: "file over a directory", branch: "kedge/x", files: files("apps/shop", "1"), wantErr: `"apps/shop" is a directory`},
		{name: "directory under a file", branch: "kedge/x", files: files("README.md/x", "1"), wantErr: `"README.md" is a file`},
		{name: "file and directory at once", branch: "kedge/x", files: files("new", "1", "new/x", "2"), wantErr: "a parent is also written as a file"},
		{name: "nothing differs", branch: "kedge/x", files: files("README.md", seed["README.md"]), wantErr: "already has this content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			message := tc.message
			if message == "" {
				message = "Restart"
			}
			_, err := repo.PrepareBranch(tc.branch, tc.files, message)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	_, err := repo.PrepareBranch("kedge/x", files("README.md", seed["README.md"]), "Restart")
	assert.ErrorIs(t, err, gitrepo.ErrNoDifference)
}
