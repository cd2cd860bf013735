package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Identity is a commit author or committer.
type Identity struct {
	Name  string
	Email string
}

// PlatformTeam authors the initial commit of every repository CreateRepo
// makes: the people who own the GitOps repository.
var PlatformTeam = Identity{Name: "Platform Team", Email: "platform-team@example.com"}

// Human is the default person who commits by hand in tests.
var Human = Identity{Name: "Jane Developer", Email: "jane.developer@example.com"}

// initialCommitDate fixes the initial commit's dates so a repository made from
// the same tree has the same commit id in every run.
const initialCommitDate = "2024-01-02T03:04:05Z"

// Commit is one entry of a branch's history.
type Commit struct {
	Hash      string
	Parents   []string
	Author    Identity
	Committer Identity
	Message   string
}

// CreateRepo makes a bare repository named repo (e.g. "acme/gitops") whose
// branch main holds one commit by PlatformTeam with every file under dir, and
// returns its clone URL.
func (s *Server) CreateRepo(t testing.TB, repo, dir string) string {
	t.Helper()
	url, err := s.Import(repo, dir)
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return url
}

// Import is CreateRepo outside a test: it returns what went wrong instead
// of failing one.
func (s *Server) Import(repo, dir string) (string, error) {
	bare := s.RepoPath(repo)
	if _, err := os.Stat(bare); err == nil {
		return "", fmt.Errorf("repository %s exists", repo)
	}
	if _, err := s.git(nil, "", "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return "", err
	}
	// GitHub checks every pushed object; so does this server, so a malformed
	// tree or commit fails the push instead of surfacing much later.
	if _, err := s.git(nil, "", "--git-dir="+bare, "config", "receive.fsckObjects", "true"); err != nil {
		return "", err
	}
	scratch, err := os.MkdirTemp("", "gitserver-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	env := append(identityEnv(PlatformTeam, PlatformTeam),
		"GIT_INDEX_FILE="+filepath.Join(scratch, "index"),
		"GIT_AUTHOR_DATE="+initialCommitDate,
		"GIT_COMMITTER_DATE="+initialCommitDate,
	)
	if _, err := s.git(env, "", "-C", dir, "--git-dir="+bare, "--work-tree="+dir, "add", "--all"); err != nil {
		return "", err
	}
	tree, err := s.git(env, "", "--git-dir="+bare, "write-tree")
	if err != nil {
		return "", err
	}
	commit, err := s.git(env, "", "--git-dir="+bare, "commit-tree", tree, "-m", "Initial commit")
	if err != nil {
		return "", err
	}
	if _, err := s.git(nil, "", "--git-dir="+bare, "update-ref", "refs/heads/main", commit, ""); err != nil {
		return "", err
	}
	return s.RepoURL(repo), nil
}

// CreateRepoFiles is CreateRepo for a tree given as path → content.
func (s *Server) CreateRepoFiles(t testing.TB, repo string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("gitserver: %v", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatalf("gitserver: %v", err)
		}
	}
	return s.CreateRepo(t, repo, dir)
}

// CommitAsHuman commits files (path → full content) on top of branch as
// Human and returns the new commit id. A branch that does not exist yet
// starts from main.
func (s *Server) CommitAsHuman(t testing.TB, repo, branch string, files map[string]string, message string) string {
	t.Helper()
	return s.CommitAs(t, repo, branch, Human, Human, files, message)
}

// CommitAs commits files on top of branch with the given author and
// committer, directly in the bare repository, as if someone had pushed it
// from elsewhere. It does not count as a push.
func (s *Server) CommitAs(t testing.TB, repo, branch string, author, committer Identity, files map[string]string, message string) string {
	t.Helper()
	old, _ := s.Branch(repo, branch)
	commit := s.writeCommit(t, repo, branch, author, committer, files, message)
	s.mustGit(t, nil, "", "--git-dir="+s.RepoPath(repo), "update-ref", "refs/heads/"+branch, commit, old)
	return commit
}

// CreateBranch makes branch point where from does; it does not count as a
// push.
func (s *Server) CreateBranch(t testing.TB, repo, branch, from string) {
	t.Helper()
	tip := s.BranchTip(t, repo, from)
	s.mustGit(t, nil, "", "--git-dir="+s.RepoPath(repo), "update-ref", "refs/heads/"+branch, tip, "")
}

// DeleteBranch deletes branch, as a person pushing its deletion would; it
// does not count as a push.
func (s *Server) DeleteBranch(t testing.TB, repo, branch string) {
	t.Helper()
	s.mustGit(t, nil, "", "--git-dir="+s.RepoPath(repo), "update-ref", "-d", "refs/heads/"+branch)
}

// RenameBranch renames branch old to renamed, keeping its commit, as
// GitHub's branch rename does; it does not count as a push.
func (s *Server) RenameBranch(t testing.TB, repo, old, renamed string) {
	t.Helper()
	git := "--git-dir=" + s.RepoPath(repo)
	s.mustGit(t, nil, "", git, "branch", "-m", old, renamed)
}

// RaceNextPush makes the next push to repo lose a race against a person: once
// the pusher has read the refs and sent its pack, but before the server
// updates any ref, branch moves to a new commit by Human with files. It
// returns that commit's id. The server then refuses the pusher's update of
// branch if the pusher expected branch's old value, as git does.
func (s *Server) RaceNextPush(t testing.TB, repo, branch string, files map[string]string, message string) string {
	t.Helper()
	commit := s.writeCommit(t, repo, branch, Human, Human, files, message)
	// git refuses ref updates from inside the push's object quarantine;
	// leaving it is what a concurrent push by someone else amounts to.
	s.InstallHook(t, repo, "pre-receive", "#!/bin/sh\nrm -f \"$0\"\nunset GIT_QUARANTINE_PATH\nexec git update-ref refs/heads/"+branch+" "+commit+"\n")
	return commit
}

// InstallHook makes script repo's server-side hook of that name
// (pre-receive refuses a whole push, update one branch of it). A hook that
// should act once deletes itself ("rm -f \"$0\"").
func (s *Server) InstallHook(t testing.TB, repo, name, script string) {
	t.Helper()
	hook := s.HookPath(repo, name)
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatalf("gitserver: %v", err)
	}
}

// HookPath is where repo's hook of that name lives.
func (s *Server) HookPath(repo, name string) string {
	return filepath.Join(s.RepoPath(repo), "hooks", name)
}

// writeCommit stores a commit of files on top of branch (or main when branch
// does not exist) without moving any ref.
func (s *Server) writeCommit(t testing.TB, repo, branch string, author, committer Identity, files map[string]string, message string) string {
	t.Helper()
	git := "--git-dir=" + s.RepoPath(repo)
	parent, ok := s.Branch(repo, branch)
	if !ok {
		parent, ok = s.Branch(repo, "main")
		if !ok {
			t.Fatalf("gitserver: %s has no branch %s nor main", repo, branch)
		}
	}
	index := filepath.Join(t.TempDir(), "index")
	env := append(identityEnv(author, committer), "GIT_INDEX_FILE="+index)
	s.mustGit(t, env, "", git, "read-tree", parent)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		blob := s.mustGit(t, env, files[p], git, "hash-object", "-w", "--stdin")
		s.mustGit(t, env, "", git, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	}
	tree := s.mustGit(t, env, "", git, "write-tree")
	return s.mustGit(t, env, "", git, "commit-tree", tree, "-p", parent, "-m", message)
}

// Branch returns the commit branch points at in repo, and whether it exists.
// Its shape fits lookups that cannot fail a test (e.g. a GitHub emulator).
func (s *Server) Branch(repo, branch string) (string, bool) {
	out, err := s.git(nil, "", "--git-dir="+s.RepoPath(repo), "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return "", false
	}
	return out, true
}

// IsAncestor reports whether commit is reachable from tip in repo.
func (s *Server) IsAncestor(repo, commit, tip string) bool {
	_, err := s.git(nil, "", "--git-dir="+s.RepoPath(repo), "merge-base", "--is-ancestor", commit, tip)
	return err == nil
}

// BranchTip returns the commit branch points at, or "" when it does not exist.
func (s *Server) BranchTip(t testing.TB, repo, branch string) string {
	t.Helper()
	tip, _ := s.Branch(repo, branch)
	return tip
}

// ReadFile returns path's content at rev (a branch name or commit id).
func (s *Server) ReadFile(t testing.TB, repo, rev, path string) string {
	t.Helper()
	return s.mustGitRaw(t, nil, "", "--git-dir="+s.RepoPath(repo), "cat-file", "blob", rev+":"+path)
}

// FileMode returns path's mode at rev as git prints it (e.g. "100755").
func (s *Server) FileMode(t testing.TB, repo, rev, path string) string {
	t.Helper()
	out := s.mustGit(t, nil, "", "--git-dir="+s.RepoPath(repo), "ls-tree", rev, "--", path)
	mode, _, _ := strings.Cut(out, " ")
	return mode
}

// Files returns every file path at rev, sorted.
func (s *Server) Files(t testing.TB, repo, rev string) []string {
	t.Helper()
	out := s.mustGit(t, nil, "", "--git-dir="+s.RepoPath(repo), "ls-tree", "-r", "--name-only", rev)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// Log returns rev's history, newest first, following every parent.
func (s *Server) Log(t testing.TB, repo, rev string) []Commit {
	t.Helper()
	const sep = "\x1e"
	out := s.mustGitRaw(t, nil, "", "--git-dir="+s.RepoPath(repo), "log",
		"--format=%H%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x00%B"+sep, rev)
	var commits []Commit
	for _, rec := range strings.Split(out, sep) {
		rec = strings.TrimPrefix(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x00", 7)
		if len(f) != 7 {
			t.Fatalf("gitserver: unexpected log record %q", rec)
		}
		commits = append(commits, Commit{
			Hash:      f[0],
			Parents:   strings.Fields(f[1]),
			Author:    Identity{Name: f[2], Email: f[3]},
			Committer: Identity{Name: f[4], Email: f[5]},
			Message:   strings.TrimRight(f[6], "\n"),
		})
	}
	return commits
}

// Refs returns every ref of repo (full name → commit id).
func (s *Server) Refs(t testing.TB, repo string) map[string]string {
	t.Helper()
	out := s.mustGit(t, nil, "", "--git-dir="+s.RepoPath(repo), "for-each-ref", "--format=%(refname) %(objectname)")
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, hash, ok := strings.Cut(line, " "); ok {
			refs[name] = hash
		}
	}
	return refs
}

// Repos lists the repositories under the server root (e.g. "acme/gitops").
func (s *Server) Repos(t testing.TB) []string {
	t.Helper()
	var repos []string
	err := filepath.WalkDir(s.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasSuffix(d.Name(), ".git") {
			rel, _ := filepath.Rel(s.root, path)
			repos = append(repos, strings.TrimSuffix(filepath.ToSlash(rel), ".git"))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return repos
}

func identityEnv(author, committer Identity) []string {
	return []string{
		"GIT_AUTHOR_NAME=" + author.Name,
		"GIT_AUTHOR_EMAIL=" + author.Email,
		"GIT_COMMITTER_NAME=" + committer.Name,
		"GIT_COMMITTER_EMAIL=" + committer.Email,
	}
}

func (s *Server) mustGit(t testing.TB, env []string, stdin string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(s.mustGitRaw(t, env, stdin, args...))
}

func (s *Server) mustGitRaw(t testing.TB, env []string, stdin string, args ...string) string {
	t.Helper()
	out, err := s.gitRaw(env, stdin, args...)
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return out
}

func (s *Server) git(env []string, stdin string, args ...string) (string, error) {
	out, err := s.gitRaw(env, stdin, args...)
	return strings.TrimSpace(out), err
}

// gitRaw runs git isolated from the machine's and user's configuration.
func (s *Server) gitRaw(env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return stdout.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}
