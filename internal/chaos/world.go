// Package chaos proves that kedge's pull-request flow survives faults: GitHub
// outages and rate limits, connections cut mid-request, pushes that lose a
// race, people committing on kedge's branches, and the process dying at any
// step of a cycle. A World is a kedge deployment against the real git server
// and the GitHub emulation, reached through proxies that inject the faults;
// a Scenario breaks one cycle and the runner then counts how many cycles it
// takes to converge and checks that nothing was duplicated or lost.
package chaos

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

// Names of the emulated deployment.
const (
	Owner    = "example-org"
	RepoName = "gitops"
	Cluster  = "prod-eu-1"
	BotLogin = "kedge-bot"
	// Token is the static token of token-auth worlds.
	Token = "ghs_chaosStaticToken000000000000000000"
	// AppID and InstallationID are the App identity of App-auth worlds.
	AppID          = 4242
	InstallationID = 77
)

// Options shape a World.
type Options struct {
	// ClusterDir is a snapshot directory; RepoDir the initial tree of the
	// GitOps repository.
	ClusterDir, RepoDir string
	// AppAuth authenticates as a GitHub App with a freshly generated key
	// instead of the static token.
	AppAuth bool
	// Log receives kedge's structured logs; nil discards them.
	Log *slog.Logger
	// AfterCycle, when set, sees each cycle's assembled service and
	// outcome (to feed metrics, to keep errors).
	AfterCycle func(svc *assemble.Service, res CycleResult)
}

// World is kedge against a real git server and the GitHub emulation, both
// behind fault-injecting proxies.
type World struct {
	T    testing.TB
	Git  *gitserver.Server
	GH   *ghemu.Server
	Wire *Wire
	Cfg  *config.Config
	// KeyPEM is the App's private key (App-auth worlds).
	KeyPEM []byte

	log        *slog.Logger
	afterCycle func(*assemble.Service, CycleResult)

	mu  sync.Mutex
	set *objects.Set
	// human are the commits people made, which must never be lost.
	human []HumanCommit
}

// HumanCommit is a commit a person made on a branch.
type HumanCommit struct {
	Branch, SHA string
}

// NewWorld builds a World; everything stops when the test ends.
func NewWorld(t testing.TB, opts Options) *World {
	t.Helper()
	w := &World{T: t, Wire: &Wire{}, log: opts.Log, afterCycle: opts.AfterCycle}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.Git = gitserver.New(t)
	repoDir, err := filepath.Abs(opts.RepoDir)
	must(t, err)
	w.Git.CreateRepo(t, RepoName, repoDir)

	ghOpts := ghemu.Options{
		Owner: Owner, Repo: RepoName,
		Branches: ghemu.GitBranches(w.Git.RepoPath(RepoName)),
	}
	cfg, err := config.Load("", nil, nil)
	must(t, err)
	if opts.AppAuth {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		must(t, err)
		w.KeyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
		keyFile := filepath.Join(t.TempDir(), "app.pem")
		must(t, os.WriteFile(keyFile, w.KeyPEM, 0o600))
		ghOpts.AppID, ghOpts.AppPublicKey, ghOpts.InstallationID = AppID, &key.PublicKey, InstallationID
		cfg.GitHub.AppID, cfg.GitHub.InstallationID, cfg.GitHub.PrivateKeyFile = AppID, InstallationID, keyFile
	} else {
		ghOpts.Tokens = map[string]string{Token: BotLogin}
		cfg.GitHub.Token = Token
	}
	w.GH = ghemu.New(t, ghOpts)

	// GitHub's git side accepts whatever token its API accepts; the git
	// server knows one token, so the proxy vouches for the others.
	gitURL := w.Wire.Proxy(t, "git", w.Git.URL, w.Git.Token, w.GH.ValidToken)
	apiURL := w.Wire.Proxy(t, "github", w.GH.URL, nil, nil)

	set, err := cluster.ReadSnapshot(opts.ClusterDir)
	must(t, err)
	w.set = set

	cfg.Cluster = Cluster
	cfg.Repo.Owner, cfg.Repo.Name = Owner, RepoName
	cfg.Repo.URL = gitURL + "/" + RepoName + ".git"
	cfg.GitHub.APIURL = apiURL + "/"
	cfg.Git.CacheDir = t.TempDir()
	cfg.Limits.MutationGap = 0
	// Waits up to this long are honoured within a cycle; longer ones are
	// left to the next cycle.
	cfg.Limits.MaxRetryAfter = 2 * time.Second
	cfg.Reviewers.ByNamespace = map[string][]string{"*": {"alice", Owner + "/platform"}}
	must(t, cfg.Validate(config.ModeRun))
	w.Cfg = cfg
	return w
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Source is the cluster as the next cycle reads it.
func (w *World) Source(context.Context) (*objects.Set, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	copied := *w.set
	return &copied, nil
}

// ChangeCluster edits the cluster the next cycles read.
func (w *World) ChangeCluster(fn func(*objects.Set)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	copied := *w.set
	fn(&copied)
	w.set = &copied
}

// CommitAsHuman commits files on branch as a person and remembers the
// commit as one that must survive.
func (w *World) CommitAsHuman(branch string, files map[string]string, message string) string {
	sha := w.Git.CommitAsHuman(w.T, RepoName, branch, files, message)
	w.RememberHuman(branch, sha)
	return sha
}

// RememberHuman adds a commit that must stay reachable from branch.
func (w *World) RememberHuman(branch, sha string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.human = append(w.human, HumanCommit{Branch: branch, SHA: sha})
}

// HumanCommits are the commits people made.
func (w *World) HumanCommits() []HumanCommit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]HumanCommit(nil), w.human...)
}

// Branch is the name of kedge's branch for namespace.
func Branch(namespace string) string { return reconcile.BranchPrefix(Cluster) + namespace }

// CycleResult is what one cycle did.
type CycleResult struct {
	Err      error
	Report   *reconcile.Report
	Pushes   int
	Mutating []ghemu.Call
	// Calls are every GitHub request the cycle made.
	Calls []ghemu.Call
	// Trace is what the wire saw; its Killed is set when the cycle's
	// process was killed, at that step.
	Trace
}

// Quiet is true for a cycle that succeeded without changing anything.
func (r CycleResult) Quiet() bool {
	return r.Err == nil && r.Killed == nil && r.Pushes == 0 && len(r.Mutating) == 0
}

// Cycle runs one cycle as a fresh process would: nothing is kept in memory
// from the previous cycle, only the cache directory on disk.
func (w *World) Cycle() CycleResult {
	return w.cycle(nil)
}

// KillCycle runs one cycle whose process dies at the first request rule
// cuts: the context is cancelled before the connection drops, and every
// later request is refused.
func (w *World) KillCycle(rule Rule) CycleResult {
	return w.cycle(rule)
}

func (w *World) cycle(kill Rule) CycleResult {
	w.T.Helper()
	pushes := w.Git.Pushes()
	calls := len(w.GH.Calls())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if kill != nil {
		w.Wire.SetRule(kill)
		w.Wire.KillOnCut(func(Step) { cancel() })
	}
	var res CycleResult
	svc, err := assemble.New(ctx, w.Cfg, w.Source, assemble.Options{Log: w.log})
	if err != nil {
		w.T.Fatalf("assemble kedge: %v", err)
	}
	res.Report, res.Err = svc.Reconciler.RunOnce(ctx)
	w.record(&res, pushes, calls)
	if res.Killed != nil && res.Err == nil {
		res.Err = errors.New("killed")
	}
	if w.afterCycle != nil {
		w.afterCycle(svc, res)
	}
	return res
}

// record fills in what the wire, the git server and GitHub saw of a cycle
// that began at pushes pushes and calls GitHub calls, and clears the wire.
func (w *World) record(res *CycleResult, pushes, calls int) {
	res.Trace = w.Wire.Take()
	res.Pushes = w.Git.Pushes() - pushes
	res.Calls = w.GH.Calls()[calls:]
	for _, c := range res.Calls {
		if c.Mutating() {
			res.Mutating = append(res.Mutating, c)
		}
	}
}

// PlannedEdits is what `kedge plan` computes against the base branch as it
// is now: namespace → path → content.
func (w *World) PlannedEdits() map[string]map[string]string {
	w.T.Helper()
	set, _ := w.Source(context.Background())
	clusterJSON, err := json.Marshal(set)
	must(w.T, err)
	sum := sha256.Sum256(clusterJSON)
	// Most scenarios end on the same base and cluster: plan each pair once.
	key := w.Git.BranchTip(w.T, RepoName, "main") + "/" + hex.EncodeToString(sum[:])
	if cached, ok := plannedCache.Load(key); ok {
		return cached.(map[string]map[string]string)
	}
	dir := filepath.Join(w.T.TempDir(), "base")
	for _, path := range w.Git.Files(w.T, RepoName, "main") {
		full := filepath.Join(dir, filepath.FromSlash(path))
		must(w.T, os.MkdirAll(filepath.Dir(full), 0o755))
		must(w.T, os.WriteFile(full, []byte(w.Git.ReadFile(w.T, RepoName, "main", path)), 0o644))
	}
	res, err := plan.Build(set, assemble.PlanOptions(w.Cfg, dir))
	must(w.T, err)
	out := map[string]map[string]string{}
	for ns, edits := range res.Edits.Namespaces {
		if len(edits) == 0 {
			continue
		}
		out[ns] = map[string]string{}
		for _, e := range edits {
			out[ns][e.Path] = string(e.After)
		}
	}
	plannedCache.Store(key, out)
	return out
}

// plannedCache holds PlannedEdits by base commit and cluster content: a
// commit names its tree, and every world starts from the same commit.
var plannedCache sync.Map

// Secrets are the credentials kedge holds in this world: the static token
// or the App key (PEM and its base64 body), and every installation token
// minted so far, as seen on the wire.
func (w *World) Secrets() []string {
	var out []string
	if w.Cfg.GitHub.Token != "" {
		out = append(out, w.Cfg.GitHub.Token)
	}
	if len(w.KeyPEM) > 0 {
		out = append(out, string(w.KeyPEM))
		block, _ := pem.Decode(w.KeyPEM)
		b64 := base64.StdEncoding.EncodeToString(block.Bytes)
		// Any 64-character line of the key is as bad as the whole key.
		for i := 0; i+64 <= len(b64); i += 64 {
			out = append(out, b64[i:i+64])
		}
	}
	out = append(out, w.Wire.Credentials()...)
	return out
}

// credentialOf is a request's credential, for the proxies' bookkeeping.
func credentialOf(r *http.Request) string {
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	auth := r.Header.Get("Authorization")
	if _, cred, ok := strings.Cut(auth, " "); ok {
		return strings.TrimSpace(cred)
	}
	return ""
}
