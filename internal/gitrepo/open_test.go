package gitrepo_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

func TestOpenClonesThenFetches(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			rm := newRemote(t, transport)
			dir := filepath.Join(t.TempDir(), "cache", "gitops")

			repo := rm.open(t, dir)
			assert.Equal(t, rm.tip(t, "main"), repo.BaseTip())
			assert.Equal(t, "main", repo.BaseBranch())
			assert.Equal(t, dir, repo.Worktree())
			for path, content := range seed {
				got, err := os.ReadFile(filepath.Join(repo.Worktree(), path))
				require.NoError(t, err)
				assert.Equal(t, content, string(got), path)
			}
			shallow, err := os.ReadFile(filepath.Join(dir, ".git", "shallow"))
			require.NoError(t, err, "the clone is shallow")
			assert.Equal(t, rm.tip(t, "main").String()+"\n", string(shallow))
			assert.NoDirExists(t, dir+".partial")

			// A second cycle must fetch into the same clone: a file of our
			// own inside .git survives, and the new base commit arrives.
			marker := filepath.Join(dir, ".git", "cycle-marker")
			require.NoError(t, os.WriteFile(marker, nil, 0o644))
			rm.srv.CommitAsHuman(t, repoName, "main", map[string]string{"apps/shop/cart.yaml": "moved\n"}, "Move main")

			again := rm.open(t, dir)
			assert.FileExists(t, marker)
			assert.Equal(t, rm.tip(t, "main"), again.BaseTip())
			got, err := os.ReadFile(filepath.Join(dir, "apps/shop/cart.yaml"))
			require.NoError(t, err)
			assert.Equal(t, "moved\n", string(got), "the worktree follows the base tip")

			unchanged := rm.open(t, dir)
			assert.Equal(t, again.BaseTip(), unchanged.BaseTip(), "a fetch with nothing new is fine")
		})
	}
}

func TestOpenCloneAndFetchRequests(t *testing.T) {
	rm := newRemote(t, "http")
	dir := t.TempDir()

	rm.open(t, dir)
	rm.open(t, dir)

	var uploadPacks int
	for _, r := range rm.srv.Requests() {
		assert.True(t, r.Authenticated, "every request carries the token: %+v", r)
		if r.Method == http.MethodPost && r.Service == "git-upload-pack" {
			uploadPacks++
		}
	}
	assert.Equal(t, 1, uploadPacks, "the clone downloads; the fetch finds nothing new and downloads nothing")
	assert.Equal(t, int32(2), rm.auth.calls.Load(), "one token per network operation")
	assert.Zero(t, receivePacks(rm.srv))
}

func TestOpenDefaultBranch(t *testing.T) {
	rm := newRemote(t, "http")
	opts := rm.options(t.TempDir())
	opts.BaseBranch = ""
	repo, err := gitrepo.Open(context.Background(), opts)
	require.NoError(t, err)
	assert.Equal(t, "main", repo.BaseBranch())
	assert.Equal(t, rm.tip(t, "main"), repo.BaseTip())
}

func TestOpenFollowsURLChange(t *testing.T) {
	rm := newRemote(t, "file")
	dir := t.TempDir()
	rm.open(t, dir)

	// The same repository, now over HTTP (as after moving to a mirror).
	rm.srv.CommitAsHuman(t, repoName, "main", map[string]string{"README.md": "new\n"}, "Change")
	rm.url = rm.srv.RepoURL(repoName)
	repo := rm.open(t, dir)
	assert.Equal(t, rm.tip(t, "main"), repo.BaseTip())
	config, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	require.NoError(t, err)
	assert.Contains(t, string(config), "url = "+rm.url+"\n")
}

func TestOpenRejects(t *testing.T) {
	rm := newRemote(t, "http")
	notRepo := t.TempDir()
	writeFile(t, notRepo, "precious.txt", "keep me", 0o644)

	tests := []struct {
		name    string
		edit    func(*gitrepo.Options)
		wantErr string
		secret  string
	}{
		{name: "no URL", edit: func(o *gitrepo.Options) { o.URL = "" }, wantErr: "URL must be set"},
		{name: "no directory", edit: func(o *gitrepo.Options) { o.Dir = "" }, wantErr: "Dir must be set"},
		{name: "no identity", edit: func(o *gitrepo.Options) { o.AuthorName, o.AuthorEmail = "", "" }, wantErr: "AuthorName, AuthorEmail must be set"},
		{
			name: "token in URL",
			edit: func(o *gitrepo.Options) {
				o.URL = strings.Replace(o.URL, "http://", "http://x-access-token:ghs_secret123@", 1)
			},
			wantErr: "carries a password",
			secret:  "ghs_secret123",
		},
		{name: "ssh URL", edit: func(o *gitrepo.Options) { o.URL = "ssh://git@example.com/acme/gitops.git" }, wantErr: `unsupported protocol "ssh"`},
		{name: "bad base branch", edit: func(o *gitrepo.Options) { o.BaseBranch = "a..b" }, wantErr: "base branch"},
		{name: "missing base branch", edit: func(o *gitrepo.Options) { o.BaseBranch = "release" }, wantErr: "clone"},
		{name: "directory with other data", edit: func(o *gitrepo.Options) { o.Dir = notRepo }, wantErr: "neither empty nor a Git repository"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := rm.options(filepath.Join(t.TempDir(), "clone"))
			tc.edit(&opts)
			_, err := gitrepo.Open(context.Background(), opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			if tc.secret != "" {
				assert.NotContains(t, err.Error(), tc.secret)
			}
		})
	}
	assert.FileExists(t, filepath.Join(notRepo, "precious.txt"))
}

func TestTokenNeverStoredOrShown(t *testing.T) {
	rm := newRemote(t, "http")
	dir := t.TempDir()
	repo := rm.open(t, dir)
	token := rm.srv.Token()

	change, err := repo.PrepareBranch("kedge/shop", files("apps/shop/cart.yaml", "x\n"), "Restart shop")
	require.NoError(t, err)
	_, err = repo.Push(context.Background(), []gitrepo.Change{change}, nil)
	require.NoError(t, err)

	// Every file kedge wrote under .git, not only config, is free of it.
	err = filepath.WalkDir(filepath.Join(dir, ".git"), func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		content, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(content), token, path)
		return nil
	})
	require.NoError(t, err)

	// Failures name the repository but never the token.
	wrong := gitserver.RandomToken()
	failures := []struct {
		name string
		run  func() error
	}{
		{name: "list with a wrong token", run: func() error {
			rm.auth.wrong = wrong
			defer func() { rm.auth.wrong = "" }()
			_, err := repo.RemoteBranches(context.Background(), "kedge/")
			return err
		}},
		{name: "fetch with a wrong token", run: func() error {
			rm.auth.wrong = wrong
			defer func() { rm.auth.wrong = "" }()
			_, err := repo.BranchHistory(context.Background(), "kedge/shop")
			return err
		}},
		{name: "clone with a wrong token", run: func() error {
			rm.auth.wrong = wrong
			defer func() { rm.auth.wrong = "" }()
			_, err := gitrepo.Open(context.Background(), rm.options(t.TempDir()))
			return err
		}},
		{name: "push answered 503", run: func() error {
			rm.srv.FailNextPush(http.StatusServiceUnavailable)
			again, err := repo.PrepareBranch("kedge/billing", files("apps/billing/api.yaml", "y\n"), "Restart billing")
			require.NoError(t, err)
			_, err = repo.Push(context.Background(), []gitrepo.Change{again}, nil)
			return err
		}},
		{name: "token source fails", run: func() error {
			rm.auth.err = errors.New("app key rejected")
			defer func() { rm.auth.err = nil }()
			_, err := repo.RemoteBranches(context.Background(), "kedge/")
			return err
		}},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			err := f.run()
			require.Error(t, err)
			assert.NotContains(t, err.Error(), token)
			assert.NotContains(t, err.Error(), wrong)
			t.Log(err)
		})
	}
}

func TestTokenFetchedBeforeEachOperation(t *testing.T) {
	rm := newRemote(t, "http")
	repo := rm.open(t, t.TempDir())
	ctx := context.Background()

	// Tokens expire; every operation must work with the token minted for it.
	steps := []struct {
		name string
		run  func() error
	}{
		{name: "list", run: func() error { _, err := repo.RemoteBranches(ctx, "kedge/"); return err }},
		{name: "push", run: func() error {
			c, err := repo.PrepareBranch("kedge/shop", files("apps/shop/cart.yaml", "x\n"), "Restart shop")
			if err != nil {
				return err
			}
			_, err = repo.Push(ctx, []gitrepo.Change{c}, nil)
			return err
		}},
		{name: "history", run: func() error { _, err := repo.BranchHistory(ctx, "kedge/shop"); return err }},
		{name: "delete", run: func() error { return repo.DeleteBranches(ctx, []string{"kedge/shop"}) }},
	}
	for _, step := range steps {
		rm.srv.SetToken(gitserver.RandomToken())
		before := rm.auth.calls.Load()
		require.NoError(t, step.run(), step.name)
		assert.Equal(t, before+1, rm.auth.calls.Load(), step.name)
	}
}

func TestSlowServerHonoursContext(t *testing.T) {
	rm := newRemote(t, "http")
	repo := rm.open(t, t.TempDir())
	rm.srv.SetDelay(2 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := repo.RemoteBranches(ctx, "kedge/")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second)
}

func TestProbe(t *testing.T) {
	rm := newRemote(t, "http")
	ctx := context.Background()
	opts := rm.options(t.TempDir())
	branch, err := gitrepo.Probe(ctx, opts)
	require.NoError(t, err)
	assert.Equal(t, "main", branch, "the remote's default branch")

	opts.BaseBranch = "release"
	_, err = gitrepo.Probe(ctx, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `has no branch "release"`)

	opts = rm.options(t.TempDir())
	opts.URL = strings.Replace(opts.URL, repoName, "no-such-repo", 1)
	_, err = gitrepo.Probe(ctx, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "list branches of")
	entries, err := os.ReadDir(opts.Dir)
	if err == nil {
		assert.Empty(t, entries, "a probe writes nothing")
	}
}
