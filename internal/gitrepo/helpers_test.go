package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

const repoName = "acme/gitops"

var kedge = gitrepo.Identity{Name: "kedge", Email: "kedge@example.com"}

var seed = map[string]string{
	"README.md":                    "# gitops\n",
	"apps/shop/cart.yaml":          "kind: Deployment\nmetadata:\n  name: cart\n",
	"apps/shop/kustomization.yaml": "resources:\n- cart.yaml\n",
	"apps/billing/api.yaml":        "kind: Deployment\nmetadata:\n  name: api\n",
}

// seedExecutable is written with the executable bit, to check modes survive.
const seedExecutable = "scripts/check.sh"

// tokenSource hands out the server's current token and counts the calls, so
// tests see a token fetched right before each network operation.
type tokenSource struct {
	srv   *gitserver.Server
	calls atomic.Int32
	// wrong, when set, is handed out instead of the server's token.
	wrong string
	err   error
}

func (a *tokenSource) Token(context.Context) (string, error) {
	a.calls.Add(1)
	if a.err != nil {
		return "", a.err
	}
	if a.wrong != "" {
		return a.wrong, nil
	}
	return a.srv.Token(), nil
}

// remote is a repository on the test server reached over one transport.
type remote struct {
	srv  *gitserver.Server
	url  string
	auth *tokenSource
}

var transports = []string{"http", "file"}

func newRemote(t *testing.T, transport string) remote {
	t.Helper()
	srv := gitserver.New(t)
	dir := t.TempDir()
	for path, content := range seed {
		writeFile(t, dir, path, content, 0o644)
	}
	writeFile(t, dir, seedExecutable, "#!/bin/sh\nexit 0\n", 0o755)
	httpURL := srv.CreateRepo(t, repoName, dir)
	rm := remote{srv: srv, url: httpURL, auth: &tokenSource{srv: srv}}
	if transport == "file" {
		rm.url = "file://" + srv.RepoPath(repoName)
	}
	return rm
}

func (rm remote) options(dir string) gitrepo.Options {
	return gitrepo.Options{
		URL:         rm.url,
		Dir:         dir,
		BaseBranch:  "main",
		Auth:        rm.auth,
		AuthorName:  kedge.Name,
		AuthorEmail: kedge.Email,
	}
}

func (rm remote) open(t *testing.T, dir string) *gitrepo.Repo {
	t.Helper()
	repo, err := gitrepo.Open(context.Background(), rm.options(dir))
	require.NoError(t, err)
	return repo
}

func (rm remote) tip(t *testing.T, branch string) plumbing.Hash {
	t.Helper()
	tip := rm.srv.BranchTip(t, repoName, branch)
	if tip == "" {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(tip)
}

func writeFile(t *testing.T, root, path, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(path))
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), mode))
}

func files(kv ...string) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = []byte(kv[i+1])
	}
	return m
}

// leasesOf turns a RemoteBranches answer into Push leases.
func leasesOf(branches map[string]gitrepo.BranchInfo) map[string]plumbing.Hash {
	leases := map[string]plumbing.Hash{}
	for name, b := range branches {
		leases[name] = b.Tip
	}
	return leases
}

func receivePacks(srv *gitserver.Server) int { return srv.PushesTo(repoName) }
