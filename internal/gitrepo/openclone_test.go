package gitrepo

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenCloneOpensWhatPlainOpenOpens: a directory without .git is no
// repository, a clone opens with its HEAD, and a .git file pointing at
// another directory is followed as PlainOpen follows it.
func TestOpenCloneOpensWhatPlainOpenOpens(t *testing.T) {
	root := t.TempDir()

	_, err := openClone(filepath.Join(root, "missing"))
	assert.ErrorIs(t, err, git.ErrRepositoryNotExists)
	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	_, err = openClone(filepath.Join(root, "empty"))
	assert.ErrorIs(t, err, git.ErrRepositoryNotExists)

	clone := filepath.Join(root, "clone")
	made, err := git.PlainInit(clone, false)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(clone, "a.yaml"), []byte("a: 1\n"), 0o644))
	wt, err := made.Worktree()
	require.NoError(t, err)
	_, err = wt.Add("a.yaml")
	require.NoError(t, err)
	commit, err := wt.Commit("first", &git.CommitOptions{AllowEmptyCommits: true, Author: &object.Signature{Name: "A Person", Email: "person@example.com", When: time.Unix(1767225600, 0)}})
	require.NoError(t, err)

	opened, err := openClone(clone)
	require.NoError(t, err)
	head, err := opened.Head()
	require.NoError(t, err)
	assert.Equal(t, commit, head.Hash())
	status, err := mustWorktree(t, opened).Status()
	require.NoError(t, err)
	assert.True(t, status.IsClean(), "the worktree is the clone's directory")

	linked := filepath.Join(root, "linked")
	require.NoError(t, os.Mkdir(linked, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(linked, ".git"), []byte("gitdir: "+filepath.Join(clone, ".git")+"\n"), 0o644))
	viaFile, err := openClone(linked)
	require.NoError(t, err)
	head, err = viaFile.Head()
	require.NoError(t, err)
	assert.Equal(t, commit, head.Hash())
}

func mustWorktree(t *testing.T, r *git.Repository) *git.Worktree {
	t.Helper()
	wt, err := r.Worktree()
	require.NoError(t, err)
	return wt
}
