package gitrepo_test

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

func TestRemoteBranches(t *testing.T) {
	rm := newRemote(t, "http")
	dir := t.TempDir()
	changes, err := cycle(t, rm, dir)
	require.NoError(t, err)
	rm.srv.CommitAsHuman(t, repoName, "feature/unrelated", map[string]string{"x": "y"}, "Unrelated")

	repo := rm.open(t, dir)
	got, err := repo.RemoteBranches(context.Background(), "kedge/")
	require.NoError(t, err)
	want := map[string]gitrepo.BranchInfo{}
	for _, c := range changes {
		want[c.Branch] = gitrepo.BranchInfo{Tip: c.Commit}
	}
	assert.Equal(t, want, got)

	all, err := repo.RemoteBranches(context.Background(), "")
	require.NoError(t, err)
	assert.Len(t, all, len(changes)+2, "main and feature/unrelated too")
}

func TestBranchHistory(t *testing.T) {
	bot := gitserver.Identity(kedge)
	human := gitrepo.Identity(gitserver.Human)
	forge := gitserver.Identity{Name: "GitHub", Email: "noreply@github.com"}
	tests := []struct {
		name string
		// edit changes the kedge-built branch kedge/shop on the server.
		edit         func(t *testing.T, rm remote)
		wantEditedBy []gitrepo.Identity
	}{
		{name: "kedge's own", edit: func(*testing.T, remote) {}},
		{
			name: "person committed on top",
			edit: func(t *testing.T, rm remote) {
				rm.srv.CommitAsHuman(t, repoName, "kedge/shop", map[string]string{"a": "1"}, "Tune")
			},
			wantEditedBy: []gitrepo.Identity{human},
		},
		{
			name: "rewritten by the forge with kedge as author",
			edit: func(t *testing.T, rm remote) {
				rm.srv.CommitAs(t, repoName, "kedge/shop", bot, forge, map[string]string{"a": "1"}, "Update branch")
			},
			wantEditedBy: []gitrepo.Identity{gitrepo.Identity(forge)},
		},
		{
			name: "person's commit with kedge as committer",
			edit: func(t *testing.T, rm remote) {
				rm.srv.CommitAs(t, repoName, "kedge/shop", gitserver.Human, bot, map[string]string{"a": "1"}, "Sneaky")
			},
			wantEditedBy: []gitrepo.Identity{human},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rm := newRemote(t, "http")
			dir := t.TempDir()
			changes, err := cycle(t, rm, dir)
			require.NoError(t, err)
			var own plumbing.Hash
			for _, c := range changes {
				if c.Branch == "kedge/shop" {
					own = c.Commit
				}
			}
			tc.edit(t, rm)

			replicas := []struct {
				name string
				dir  string
				// wantCommits: the replica that built kedge's commit has it
				// at hand and walks down to it; a fresh one has the tip only,
				// which is enough to decide.
				wantCommits int
			}{
				{name: "same replica", dir: dir, wantCommits: 1 + len(tc.wantEditedBy)},
				{name: "fresh replica", dir: t.TempDir(), wantCommits: 1},
			}
			for _, replica := range replicas {
				repo := rm.open(t, replica.dir)
				h, err := repo.BranchHistory(context.Background(), "kedge/shop")
				require.NoError(t, err, replica.name)
				assert.Equal(t, "kedge/shop", h.Branch)
				assert.Equal(t, rm.tip(t, "kedge/shop"), h.Tip, replica.name)
				assert.Equal(t, tc.wantEditedBy, h.EditedBy, replica.name)
				assert.Equal(t, len(tc.wantEditedBy) > 0, h.Edited(), replica.name)
				require.Len(t, h.Commits, replica.wantCommits, replica.name)
				assert.Equal(t, h.Tip, h.Commits[0].Hash, replica.name)
				if replica.wantCommits > 1 || len(tc.wantEditedBy) == 0 {
					last := h.Commits[len(h.Commits)-1]
					assert.Equal(t, own, last.Hash, "%s: kedge's own commit ends the walk", replica.name)
					assert.Equal(t, kedge, last.Author)
					assert.Equal(t, kedge, last.Committer)
				}
			}
		})
	}
}

func TestBranchHistoryOfPersonsBranch(t *testing.T) {
	rm := newRemote(t, "file")
	theirs := rm.srv.CommitAsHuman(t, repoName, "kedge/shop", map[string]string{"a": "1"}, "Mine")
	repo := rm.open(t, t.TempDir())

	h, err := repo.BranchHistory(context.Background(), "kedge/shop")
	require.NoError(t, err)
	assert.True(t, h.Edited())
	require.Len(t, h.Commits, 1, "the walk stops at the base tip")
	assert.Equal(t, plumbing.NewHash(theirs), h.Commits[0].Hash)
	assert.Equal(t, "Mine\n", h.Commits[0].Message)
	assert.Equal(t, []plumbing.Hash{repo.BaseTip()}, h.Commits[0].Parents)
}

func TestBranchHistoryMissingBranch(t *testing.T) {
	rm := newRemote(t, "http")
	repo := rm.open(t, t.TempDir())
	_, err := repo.BranchHistory(context.Background(), "kedge/none")
	require.ErrorIs(t, err, gitrepo.ErrBranchNotFound)
}
