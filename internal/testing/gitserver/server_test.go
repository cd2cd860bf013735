package gitserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var seedFiles = map[string]string{
	"README.md":                    "# gitops\n",
	"apps/shop/cart.yaml":          "kind: Deployment\nmetadata:\n  name: cart\n",
	"apps/shop/kustomization.yaml": "resources:\n- cart.yaml\n",
}

// gitCLI runs the git command line as an independent client, sending the
// token in a header so it never lands in a URL or a config file.
func gitCLI(t *testing.T, token, dir string, args ...string) (string, error) {
	t.Helper()
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(TokenUser+":"+token))
	full := append([]string{"-c", "http.extraHeader=" + header}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func TestAuthentication(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)

	tests := []struct {
		name       string
		setAuth    func(*http.Request)
		wantStatus int
	}{
		{name: "no credentials", setAuth: func(*http.Request) {}, wantStatus: http.StatusUnauthorized},
		{name: "wrong user", setAuth: func(r *http.Request) { r.SetBasicAuth("git", s.Token()) }, wantStatus: http.StatusUnauthorized},
		{name: "wrong token", setAuth: func(r *http.Request) { r.SetBasicAuth(TokenUser, RandomToken()) }, wantStatus: http.StatusUnauthorized},
		{name: "token", setAuth: func(r *http.Request) { r.SetBasicAuth(TokenUser, s.Token()) }, wantStatus: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
			require.NoError(t, err)
			tc.setAuth(req)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			assert.Equal(t, tc.wantStatus, res.StatusCode)
			if tc.wantStatus == http.StatusUnauthorized {
				assert.Equal(t, `Basic realm="gitserver"`, res.Header.Get("WWW-Authenticate"))
			} else {
				assert.Equal(t, "application/x-git-upload-pack-advertisement", res.Header.Get("Content-Type"))
			}
		})
	}
}

func TestTokenRotation(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	old := s.Token()

	_, err := gitCLI(t, old, t.TempDir(), "ls-remote", url)
	require.NoError(t, err)

	fresh := RandomToken()
	s.SetToken(fresh)
	out, err := gitCLI(t, old, t.TempDir(), "ls-remote", url)
	require.Error(t, err, out)
	_, err = gitCLI(t, fresh, t.TempDir(), "ls-remote", url)
	require.NoError(t, err)
}

func TestCreateRepo(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	assert.Equal(t, s.URL+"/acme/gitops.git", url)
	assert.Equal(t, []string{"acme/gitops"}, s.Repos(t))

	assert.Equal(t, []string{"README.md", "apps/shop/cart.yaml", "apps/shop/kustomization.yaml"}, s.Files(t, "acme/gitops", "main"))
	for path, content := range seedFiles {
		assert.Equal(t, content, s.ReadFile(t, "acme/gitops", "main", path), path)
	}
	log := s.Log(t, "acme/gitops", "main")
	require.Len(t, log, 1)
	assert.Equal(t, PlatformTeam, log[0].Author)
	assert.Equal(t, PlatformTeam, log[0].Committer)
	assert.Empty(t, log[0].Parents)
	assert.Equal(t, map[string]string{"refs/heads/main": log[0].Hash}, s.Refs(t, "acme/gitops"))

	// The same tree gives the same commit on another server: tests may rely
	// on stable base commits.
	other := New(t)
	other.CreateRepoFiles(t, "acme/gitops", seedFiles)
	assert.Equal(t, log[0].Hash, other.BranchTip(t, "acme/gitops", "main"))
}

func TestCommitAs(t *testing.T) {
	s := New(t)
	s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	main := s.BranchTip(t, "acme/gitops", "main")

	first := s.CommitAsHuman(t, "acme/gitops", "feature", map[string]string{"apps/shop/cart.yaml": "edited\n"}, "Edit cart")
	bot := Identity{Name: "kedge", Email: "kedge@example.com"}
	second := s.CommitAs(t, "acme/gitops", "feature", bot, Human, map[string]string{"new/file.txt": "x"}, "Rebased by hand")

	assert.Equal(t, main, s.BranchTip(t, "acme/gitops", "main"), "main must not move")
	assert.Equal(t, second, s.BranchTip(t, "acme/gitops", "feature"))
	assert.Equal(t, "edited\n", s.ReadFile(t, "acme/gitops", "feature", "apps/shop/cart.yaml"))
	assert.Equal(t, "x", s.ReadFile(t, "acme/gitops", "feature", "new/file.txt"))
	assert.Equal(t, seedFiles["README.md"], s.ReadFile(t, "acme/gitops", "feature", "README.md"))

	log := s.Log(t, "acme/gitops", "feature")
	require.Len(t, log, 3)
	assert.Equal(t, Commit{Hash: second, Parents: []string{first}, Author: bot, Committer: Human, Message: "Rebased by hand"}, log[0])
	assert.Equal(t, Commit{Hash: first, Parents: []string{main}, Author: Human, Committer: Human, Message: "Edit cart"}, log[1])
	assert.Zero(t, s.Pushes(), "commits made on the server are not pushes")

	_, ok := s.Branch("acme/gitops", "absent")
	assert.False(t, ok)
	assert.Empty(t, s.BranchTip(t, "acme/gitops", "absent"))
}

func TestCloneAndPushWithGitCLI(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	work := filepath.Join(t.TempDir(), "clone")

	out, err := gitCLI(t, s.Token(), "", "clone", "--quiet", url, work)
	require.NoError(t, err, out)
	got, err := os.ReadFile(filepath.Join(work, "apps/shop/cart.yaml"))
	require.NoError(t, err)
	assert.Equal(t, seedFiles["apps/shop/cart.yaml"], string(got))
	assert.Zero(t, s.Pushes())

	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("changed\n"), 0o644))
	for _, args := range [][]string{{"checkout", "--quiet", "-b", "topic"}, {"commit", "--quiet", "-am", "change"}} {
		out, err := gitCLI(t, s.Token(), work, args...)
		require.NoError(t, err, out)
	}
	out, err = gitCLI(t, s.Token(), work, "push", "--quiet", "origin", "topic", "HEAD:refs/heads/other")
	require.NoError(t, err, out)

	head, err := gitCLI(t, s.Token(), work, "rev-parse", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, 1, s.Pushes(), "one push with two refspecs is one push")
	assert.Equal(t, 1, s.PushesTo("acme/gitops"))
	assert.Equal(t, head, s.BranchTip(t, "acme/gitops", "topic"))
	assert.Equal(t, head, s.BranchTip(t, "acme/gitops", "other"))
	assert.Len(t, s.Refs(t, "acme/gitops"), 3)

	var receivePacks []Request
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && r.Service == "git-receive-pack" {
			receivePacks = append(receivePacks, r)
		}
	}
	assert.Equal(t, []Request{{Method: http.MethodPost, Path: "/acme/gitops.git/git-receive-pack", Service: "git-receive-pack", Status: 200, Authenticated: true}}, receivePacks)
}

func TestFailNextPush(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	work := filepath.Join(t.TempDir(), "clone")
	out, err := gitCLI(t, s.Token(), "", "clone", "--quiet", url, work)
	require.NoError(t, err, out)
	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("changed\n"), 0o644))
	out, err = gitCLI(t, s.Token(), work, "commit", "--quiet", "-am", "change")
	require.NoError(t, err, out)
	before := s.BranchTip(t, "acme/gitops", "main")

	s.FailNextPush(http.StatusServiceUnavailable)
	out, err = gitCLI(t, s.Token(), work, "push", "--quiet", "origin", "main")
	require.Error(t, err)
	assert.Contains(t, out, "503")
	assert.Equal(t, before, s.BranchTip(t, "acme/gitops", "main"), "a failed push changes nothing")
	assert.Equal(t, 1, s.Pushes(), "a failed push was still received")

	out, err = gitCLI(t, s.Token(), work, "push", "--quiet", "origin", "main")
	require.NoError(t, err, out, "only the next push fails")
	assert.NotEqual(t, before, s.BranchTip(t, "acme/gitops", "main"))
	assert.Equal(t, 2, s.Pushes())
}

func TestDelay(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	const delay = 300 * time.Millisecond
	s.SetDelay(delay)

	tests := []struct {
		name    string
		timeout time.Duration
		wantErr bool
	}{
		{name: "patient client", timeout: 10 * time.Second},
		{name: "impatient client", timeout: delay / 3, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
			require.NoError(t, err)
			req.SetBasicAuth(TokenUser, s.Token())
			start := time.Now()
			res, err := http.DefaultClient.Do(req)
			if tc.wantErr {
				require.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
			require.NoError(t, err)
			res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.GreaterOrEqual(t, time.Since(start), delay)
		})
	}

	// A delay far longer than any slow machine takes to run git, so the
	// bound below tells a delay left on from a loaded machine.
	s.SetDelay(10 * time.Minute)
	s.SetDelay(0)
	start := time.Now()
	out, err := gitCLI(t, s.Token(), t.TempDir(), "ls-remote", url)
	require.NoError(t, err, out)
	assert.Less(t, time.Since(start), 5*time.Minute, "SetDelay(0) turns the delay off")
}

func TestRaceNextPush(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	old := s.CommitAsHuman(t, "acme/gitops", "topic", map[string]string{"a": "1"}, "Start topic")
	work := filepath.Join(t.TempDir(), "clone")
	out, err := gitCLI(t, s.Token(), "", "clone", "--quiet", url, work)
	require.NoError(t, err, out)
	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("mine\n"), 0o644))
	out, err = gitCLI(t, s.Token(), work, "commit", "--quiet", "-am", "mine")
	require.NoError(t, err, out)

	theirs := s.RaceNextPush(t, "acme/gitops", "topic", map[string]string{"b": "2"}, "Raced")
	assert.Equal(t, old, s.BranchTip(t, "acme/gitops", "topic"), "the branch moves only during the push")
	assert.Equal(t, []string{theirs, old}, []string{s.Log(t, "acme/gitops", theirs)[0].Hash, s.Log(t, "acme/gitops", theirs)[0].Parents[0]})

	// The client's lease matches the advertisement, so only the server can
	// notice the branch moved.
	out, err = gitCLI(t, s.Token(), work, "push", "--force-with-lease=topic:"+old, "origin", "HEAD:topic")
	require.Error(t, err, out)
	assert.Equal(t, theirs, s.BranchTip(t, "acme/gitops", "topic"))
	assert.Contains(t, out, "cannot lock ref 'refs/heads/topic'")

	out, err = gitCLI(t, s.Token(), work, "push", "--force-with-lease=topic:"+theirs, "origin", "HEAD:topic")
	require.NoError(t, err, out, "the race happens once")
	assert.NotEqual(t, theirs, s.BranchTip(t, "acme/gitops", "topic"))
}

func TestPushedObjectsAreChecked(t *testing.T) {
	s := New(t)
	url := s.CreateRepoFiles(t, "acme/gitops", seedFiles)
	assert.Equal(t, "100644", s.FileMode(t, "acme/gitops", "main", "README.md"))
	assert.Equal(t, "040000", s.FileMode(t, "acme/gitops", "main", "apps"))

	work := filepath.Join(t.TempDir(), "clone")
	out, err := gitCLI(t, s.Token(), "", "clone", "--quiet", url, work)
	require.NoError(t, err, out)
	blob, err := gitCLI(t, s.Token(), work, "rev-parse", "HEAD:README.md")
	require.NoError(t, err)

	// A tree whose entries are out of git's order, as a buggy client could
	// write it: GitHub refuses it, and so must this server.
	raw, err := hex.DecodeString(blob)
	require.NoError(t, err)
	var tree bytes.Buffer
	for _, name := range []string{"b.txt", "a.txt"} {
		tree.WriteString("100644 " + name + "\x00")
		tree.Write(raw)
	}
	treePath := filepath.Join(t.TempDir(), "tree")
	require.NoError(t, os.WriteFile(treePath, tree.Bytes(), 0o644))
	treeID, err := gitCLI(t, s.Token(), work, "hash-object", "-t", "tree", "--literally", "-w", treePath)
	require.NoError(t, err, treeID)
	commit, err := gitCLI(t, s.Token(), work, "commit-tree", treeID, "-p", "HEAD", "-m", "bad tree")
	require.NoError(t, err, commit)

	out, err = gitCLI(t, s.Token(), work, "push", "origin", commit+":refs/heads/bad")
	require.Error(t, err, out)
	assert.Contains(t, out, "treeNotSorted")
	assert.Empty(t, s.BranchTip(t, "acme/gitops", "bad"))
}
