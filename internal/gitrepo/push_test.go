package gitrepo_test

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

// namespaceEdits is one cycle's worth of changes: a branch per namespace.
var namespaceEdits = map[string]map[string][]byte{
	"kedge/shop":    files("apps/shop/cart.yaml", "kind: Deployment\nmetadata:\n  name: cart\n# restarted\n"),
	"kedge/billing": files("apps/billing/api.yaml", "kind: Deployment\nmetadata:\n  name: api\n# restarted\n"),
	"kedge/search":  files("apps/search/kustomization.yaml", "patches:\n- path: restart.yaml\n", "apps/search/restart.yaml", "kind: Deployment\n"),
}

func sortedBranches() []string {
	var names []string
	for name := range namespaceEdits {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// cycle runs what reconcile does each cycle: open, read kedge's branches,
// build every branch, push them together.
func cycle(t *testing.T, rm remote, dir string) ([]gitrepo.Change, error) {
	t.Helper()
	ctx := context.Background()
	repo := rm.open(t, dir)
	remoteBranches, err := repo.RemoteBranches(ctx, "kedge/")
	require.NoError(t, err)
	var changes []gitrepo.Change
	for _, name := range sortedBranches() {
		c, err := repo.PrepareBranch(name, namespaceEdits[name], "Restart workloads in "+name)
		require.NoError(t, err)
		changes = append(changes, c)
	}
	_, err = repo.Push(ctx, changes, leasesOf(remoteBranches))
	return changes, err
}

func TestOnePushForAllBranches(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			rm := newRemote(t, transport)
			base := rm.tip(t, "main")

			changes, err := cycle(t, rm, t.TempDir())
			require.NoError(t, err)
			if transport == "http" {
				assert.Equal(t, 1, receivePacks(rm.srv), "three branches, one push")
			}

			require.Len(t, changes, len(namespaceEdits))
			for _, c := range changes {
				assert.True(t, c.Changed, c.Branch)
				assert.Equal(t, base, c.Parent, c.Branch)
				assert.Equal(t, c.Commit, rm.tip(t, c.Branch), c.Branch)

				log := rm.srv.Log(t, repoName, c.Branch)
				require.Len(t, log, 2, c.Branch)
				assert.Equal(t, gitserver.Identity(kedge), log[0].Author)
				assert.Equal(t, gitserver.Identity(kedge), log[0].Committer)
				assert.Equal(t, []string{base.String()}, log[0].Parents)
				assert.Equal(t, "Restart workloads in "+c.Branch, log[0].Message)

				for path, content := range namespaceEdits[c.Branch] {
					assert.Equal(t, string(content), rm.srv.ReadFile(t, repoName, c.Branch, path))
				}
				for path, content := range seed {
					if _, edited := namespaceEdits[c.Branch][path]; !edited {
						assert.Equal(t, content, rm.srv.ReadFile(t, repoName, c.Branch, path), "untouched %s on %s", path, c.Branch)
					}
				}
			}
			assert.Equal(t, base, rm.tip(t, "main"), "the base branch is never pushed to")
		})
	}
}

func TestRerunPushesNothing(t *testing.T) {
	rm := newRemote(t, "http")
	dir := t.TempDir()
	first, err := cycle(t, rm, dir)
	require.NoError(t, err)
	requestsBefore := len(rm.srv.Requests())

	tests := []struct {
		name string
		dir  string
	}{
		{name: "same cache directory", dir: dir},
		{name: "fresh clone elsewhere", dir: filepath.Join(t.TempDir(), "replica")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			again, err := cycle(t, rm, tc.dir)
			require.NoError(t, err)
			for i, c := range again {
				assert.False(t, c.Changed, c.Branch)
				assert.Equal(t, first[i].Commit, c.Commit, "the same inputs give the same commit")
			}
		})
	}
	assert.Equal(t, 1, receivePacks(rm.srv), "reruns push nothing")
	for _, r := range rm.srv.Requests()[requestsBefore:] {
		assert.NotEqual(t, "git-receive-pack", r.Service, "reruns do not even connect for a push: %+v", r)
	}
}

func TestSameTreeOnSameParentIsReused(t *testing.T) {
	rm := newRemote(t, "http")
	dir := t.TempDir()
	first, err := cycle(t, rm, dir)
	require.NoError(t, err)

	repo := rm.open(t, dir)
	_, err = repo.RemoteBranches(context.Background(), "kedge/")
	require.NoError(t, err)
	c, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "A reworded message")
	require.NoError(t, err)
	assert.False(t, c.Changed)
	assert.Equal(t, first[sort.SearchStrings(sortedBranches(), "kedge/shop")].Commit, c.Commit)
}

func TestBaseMovedRebuildsBranches(t *testing.T) {
	rm := newRemote(t, "http")
	dir := t.TempDir()
	first, err := cycle(t, rm, dir)
	require.NoError(t, err)

	rm.srv.CommitAsHuman(t, repoName, "main", map[string]string{"README.md": "# gitops, revised\n"}, "Docs")
	newBase := rm.tip(t, "main")

	repo := rm.open(t, dir)
	for _, name := range sortedBranches() {
		h, err := repo.BranchHistory(context.Background(), name)
		require.NoError(t, err)
		assert.False(t, h.Edited(), name)
	}
	rebuilt, err := cycle(t, rm, dir)
	require.NoError(t, err)
	assert.Equal(t, 2, receivePacks(rm.srv))
	for i, c := range rebuilt {
		assert.True(t, c.Changed, c.Branch)
		assert.NotEqual(t, first[i].Commit, c.Commit)
		assert.Equal(t, newBase, c.Parent)
		assert.Equal(t, c.Commit, rm.tip(t, c.Branch))
		assert.Equal(t, "# gitops, revised\n", rm.srv.ReadFile(t, repoName, c.Branch, "README.md"), "the rebuilt branch carries the new base")
	}
}

func TestLeaseFailuresLeaveOthersWorkAlone(t *testing.T) {
	human := map[string]string{"apps/shop/cart.yaml": "kind: Deployment # tuned by hand\n"}
	tests := []struct {
		name string
		// interfere runs after kedge read the remote and before it pushes;
		// it returns the branch it took over and the commit it left there.
		interfere func(t *testing.T, rm remote) (string, string)
	}{
		{
			name: "person committed on a kedge branch",
			interfere: func(t *testing.T, rm remote) (string, string) {
				return "kedge/shop", rm.srv.CommitAsHuman(t, repoName, "kedge/shop", human, "Tune cart")
			},
		},
		{
			name: "person created the branch kedge is about to create",
			interfere: func(t *testing.T, rm remote) (string, string) {
				return "kedge/search", rm.srv.CommitAsHuman(t, repoName, "kedge/search", human, "Mine")
			},
		},
		{
			name: "person pushed while kedge's push was in flight",
			interfere: func(t *testing.T, rm remote) (string, string) {
				return "kedge/billing", rm.srv.RaceNextPush(t, repoName, "kedge/billing", human, "Raced")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rm := newRemote(t, "http")
			dir := t.TempDir()
			// kedge/search does not exist yet after this: it is built below.
			_, err := cycle(t, rm, dir)
			require.NoError(t, err)
			rm.srv.CommitAsHuman(t, repoName, "main", map[string]string{"README.md": "moved\n"}, "Move base")
			rm.srv.SetToken(gitserver.RandomToken())
			deleteBranch(t, rm, "kedge/search")

			ctx := context.Background()
			repo := rm.open(t, dir)
			remoteBranches, err := repo.RemoteBranches(ctx, "kedge/")
			require.NoError(t, err)
			var changes []gitrepo.Change
			for _, name := range sortedBranches() {
				c, err := repo.PrepareBranch(name, namespaceEdits[name], "Restart workloads in "+name)
				require.NoError(t, err)
				require.True(t, c.Changed)
				changes = append(changes, c)
			}
			pushesBefore := receivePacks(rm.srv)
			taken, theirs := tc.interfere(t, rm)

			_, err = repo.Push(ctx, changes, leasesOf(remoteBranches))

			var lease *gitrepo.LeaseError
			require.ErrorAs(t, err, &lease)
			assert.ErrorIs(t, err, gitrepo.ErrLeaseBroken)
			require.Len(t, lease.Conflicts, 1)
			assert.Equal(t, gitrepo.LeaseConflict{
				Branch:   taken,
				Expected: remoteBranches[taken].Tip,
				Actual:   plumbing.NewHash(theirs),
			}, lease.Conflicts[0])
			assert.Equal(t, theirs, rm.srv.BranchTip(t, repoName, taken), "the person's commit stays")
			for _, c := range changes {
				if c.Branch != taken {
					assert.Equal(t, c.Commit, rm.tip(t, c.Branch), "%s is pushed all the same", c.Branch)
				}
			}
			assert.Equal(t, pushesBefore+1, receivePacks(rm.srv))

			h, err := repo.BranchHistory(ctx, taken)
			require.NoError(t, err)
			assert.True(t, h.Edited())
			assert.Equal(t, []gitrepo.Identity{gitrepo.Identity(gitserver.Human)}, h.EditedBy)
		})
	}
}

func TestNoPushWhenEveryLeaseIsBroken(t *testing.T) {
	rm := newRemote(t, "http")
	ctx := context.Background()
	repo := rm.open(t, t.TempDir())
	c, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "Restart")
	require.NoError(t, err)
	theirs := rm.srv.CommitAsHuman(t, repoName, "kedge/shop", map[string]string{"x": "y"}, "Mine")

	_, err = repo.Push(ctx, []gitrepo.Change{c}, nil)
	require.ErrorIs(t, err, gitrepo.ErrLeaseBroken)
	assert.Contains(t, err.Error(), "kedge/shop (expected nothing, found "+theirs[:12]+")")
	assert.Zero(t, receivePacks(rm.srv), "nothing to send, so no push")
	assert.Equal(t, theirs, rm.srv.BranchTip(t, repoName, "kedge/shop"))
}

// TestPushReportsItsDuration: callers time pushes from the result, so a
// push that sent something has a duration and one that sent nothing has
// none.
func TestPushReportsItsDuration(t *testing.T) {
	rm := newRemote(t, "http")
	ctx := context.Background()
	repo := rm.open(t, t.TempDir())
	shop, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "Restart")
	require.NoError(t, err)
	billing, err := repo.PrepareBranch("kedge/billing", namespaceEdits["kedge/billing"], "Restart")
	require.NoError(t, err)
	rm.srv.CommitAsHuman(t, repoName, "kedge/billing", map[string]string{"x": "y"}, "Mine")

	tests := []struct {
		name       string
		change     gitrepo.Change
		wantSent   bool
		wantErr    error
		wantPushes int
	}{
		{name: "a push that sends", change: shop, wantSent: true, wantPushes: 1},
		{name: "the same branch again: already there", change: shop, wantPushes: 1},
		{name: "a broken lease: nothing sent", change: billing, wantErr: gitrepo.ErrLeaseBroken, wantPushes: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := repo.Push(ctx, []gitrepo.Change{tt.change}, nil)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.wantSent, res.Duration > 0)
			assert.Equal(t, tt.wantPushes, receivePacks(rm.srv))
		})
	}
}

func TestPushRefusedByServer(t *testing.T) {
	rm := newRemote(t, "http")
	repo := rm.open(t, t.TempDir())
	c, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "Restart")
	require.NoError(t, err)
	installHook(t, rm, "#!/bin/sh\necho 'branch protected' >&2\nexit 1\n")

	_, err = repo.Push(context.Background(), []gitrepo.Change{c}, nil)
	var rejected *gitrepo.RejectedError
	require.ErrorAs(t, err, &rejected)
	assert.False(t, errors.Is(err, gitrepo.ErrLeaseBroken))
	assert.Equal(t, map[string]string{"kedge/shop": "pre-receive hook declined"}, rejected.Reasons)
	assert.Contains(t, rm.srv.Stderr(), "branch protected")
	assert.Equal(t, plumbing.ZeroHash, rm.tip(t, "kedge/shop"))
}

func TestPushFailsOnServerError(t *testing.T) {
	rm := newRemote(t, "http")
	repo := rm.open(t, t.TempDir())
	c, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "Restart")
	require.NoError(t, err)

	rm.srv.FailNextPush(503)
	_, err = repo.Push(context.Background(), []gitrepo.Change{c}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "503")
	assert.Equal(t, plumbing.ZeroHash, rm.tip(t, "kedge/shop"))

	_, err = repo.Push(context.Background(), []gitrepo.Change{c}, nil)
	require.NoError(t, err, "a retry goes through")
	assert.Equal(t, c.Commit, rm.tip(t, "kedge/shop"))
	assert.Equal(t, 2, receivePacks(rm.srv))
}

func TestPushRejectsBadInput(t *testing.T) {
	rm := newRemote(t, "file")
	repo := rm.open(t, t.TempDir())
	c, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "Restart")
	require.NoError(t, err)
	base := c
	base.Branch = "main"

	tests := []struct {
		name    string
		changes []gitrepo.Change
		wantErr string
	}{
		{name: "base branch", changes: []gitrepo.Change{base}, wantErr: "base branch"},
		{name: "branch twice", changes: []gitrepo.Change{c, c}, wantErr: "appears twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := repo.Push(context.Background(), tc.changes, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	assert.Equal(t, map[string]string{"refs/heads/main": rm.tip(t, "main").String()}, rm.srv.Refs(t, repoName))
}

func TestDeleteBranches(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			rm := newRemote(t, transport)
			dir := t.TempDir()
			_, err := cycle(t, rm, dir)
			require.NoError(t, err)
			repo := rm.open(t, dir)

			require.NoError(t, repo.DeleteBranches(context.Background(), []string{"kedge/shop", "kedge/billing", "kedge/never-existed"}))
			refs := rm.srv.Refs(t, repoName)
			assert.NotContains(t, refs, "refs/heads/kedge/shop")
			assert.NotContains(t, refs, "refs/heads/kedge/billing")
			assert.Contains(t, refs, "refs/heads/kedge/search")
			if transport == "http" {
				assert.Equal(t, 2, receivePacks(rm.srv), "one push for the branches, one for the deletions")
			}

			require.NoError(t, repo.DeleteBranches(context.Background(), []string{"kedge/shop"}), "deleting again is a no-op")
			err = repo.DeleteBranches(context.Background(), []string{"main"})
			require.Error(t, err)
			assert.Contains(t, rm.srv.Refs(t, repoName), "refs/heads/main")
		})
	}
}

func deleteBranch(t *testing.T, rm remote, branch string) {
	t.Helper()
	repo, err := gitrepo.Open(context.Background(), remote{srv: rm.srv, url: "file://" + rm.srv.RepoPath(repoName)}.options(t.TempDir()))
	require.NoError(t, err)
	require.NoError(t, repo.DeleteBranches(context.Background(), []string{branch}))
}

func installHook(t *testing.T, rm remote, script string) {
	t.Helper()
	writeFile(t, filepath.Join(rm.srv.RepoPath(repoName), "hooks"), "pre-receive", script, 0o755)
}

// TestObservePushSeesEveryPushOnce: the observer hears of each push that
// tried the server, whatever it carried, and of nothing else; the count of
// observations equals the server's count of receive-pack sessions.
func TestObservePushSeesEveryPushOnce(t *testing.T) {
	rm := newRemote(t, "http")
	ctx := context.Background()
	var observed []error
	opts := rm.options(t.TempDir())
	opts.ObservePush = func(took time.Duration, err error) {
		assert.Positive(t, took)
		observed = append(observed, err)
	}
	repo, err := gitrepo.Open(ctx, opts)
	require.NoError(t, err)
	shop, err := repo.PrepareBranch("kedge/shop", namespaceEdits["kedge/shop"], "Restart")
	require.NoError(t, err)
	billing, err := repo.PrepareBranch("kedge/billing", namespaceEdits["kedge/billing"], "Restart")
	require.NoError(t, err)
	search, err := repo.PrepareBranch("kedge/search", namespaceEdits["kedge/search"], "Restart")
	require.NoError(t, err)

	steps := []struct {
		name         string
		do           func() error
		observations int
		failed       bool
	}{
		{name: "two branches in one push", do: func() error {
			_, err := repo.Push(ctx, []gitrepo.Change{shop, billing}, nil)
			return err
		}, observations: 1},
		{name: "the same branches again: nothing to send", do: func() error {
			_, err := repo.Push(ctx, []gitrepo.Change{shop, billing}, nil)
			return err
		}, observations: 0},
		{name: "a deletion", do: func() error { return repo.DeleteBranches(ctx, []string{"kedge/billing"}) }, observations: 1},
		{name: "a push the server fails", do: func() error {
			rm.srv.FailNextPush(503)
			_, err := repo.Push(ctx, []gitrepo.Change{search}, nil)
			require.Error(t, err)
			return nil
		}, observations: 1, failed: true},
		{name: "a push a hook refuses", do: func() error {
			installHook(t, rm, "#!/bin/sh\nexit 1\n")
			_, err := repo.Push(ctx, []gitrepo.Change{search}, nil)
			require.Error(t, err)
			return nil
		}, observations: 1, failed: true},
	}
	pushes := 0
	for _, step := range steps {
		before := len(observed)
		require.NoError(t, step.do(), step.name)
		assert.Len(t, observed[before:], step.observations, step.name)
		for _, err := range observed[before:] {
			assert.Equal(t, step.failed, err != nil, step.name)
		}
		pushes += step.observations
	}
	assert.Equal(t, receivePacks(rm.srv), len(observed), "one observation per receive-pack session the server saw")
	assert.Equal(t, pushes, len(observed))
}
