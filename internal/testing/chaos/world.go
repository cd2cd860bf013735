// Package chaos proves that kedge's pull-request flow survives faults: GitHub
// outages and rate limits, connections cut mid-request, pushes that lose a
// race, people committing on kedge's branches, and the process dying at any
// step of a cycle. A World is a kedge deployment against the real git server
// and the GitHub emulation, with two repositories as the demo has (the
// platform one and a team's), reached through proxies that inject the faults;
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
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

// Names of the emulated deployment.
const (
	Owner = "example-org"
	// RepoName is repo: (the platform repository, which holds the
	// dashboard); TeamRepoName the team repository repos: admits.
	RepoName     = "gitops"
	TeamRepoName = "team-reviews"
	Cluster      = "prod-eu-1"
	BotLogin     = "kedge-bot"
	// Token is the static token of token-auth worlds.
	Token = "ghs_chaosStaticToken000000000000000000"
	// AppID and InstallationID are the App identity of App-auth worlds.
	AppID          = 4242
	InstallationID = 77
)

// Options shape a World.
type Options struct {
	// ClusterDir is a snapshot directory; RepoDir the initial tree of the
	// platform repository, TeamRepoDir of the team repository (default
	// DemoTeamRepo).
	ClusterDir, RepoDir, TeamRepoDir string
	// AppAuth authenticates as a GitHub App with a freshly generated key
	// instead of the static token.
	AppAuth bool
	// KeyDir is the directory the App's key file is written in (the
	// secret's mount); a new temporary directory when empty.
	KeyDir string
	// Log receives kedge's structured logs; nil discards them.
	Log *slog.Logger
	// AfterCycle, when set, sees each cycle's assembled service and
	// outcome (to feed metrics, to keep errors).
	AfterCycle func(svc *assemble.Service, res CycleResult)
}

// World is kedge against a real git server and the GitHub emulation, both
// behind fault-injecting proxies.
type World struct {
	T   testing.TB
	Git *gitserver.Server
	// Hub is GitHub with both repositories; GH is the platform
	// repository's part of it.
	Hub  *ghemu.Hub
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

// HumanCommit is a commit a person made on a branch of a repository
// ("owner/name").
type HumanCommit struct {
	Repo, Branch, SHA string
}

// Repos are the repositories of every World, repo: first.
var Repos = []string{Owner + "/" + RepoName, Owner + "/" + TeamRepoName}

// gitName is a repository's name on the git server, where it sits at the
// root as the clone URLs say.
func gitName(repo string) string { return path.Base(repo) }

// NewWorld builds a World; everything stops when the test ends.
func NewWorld(t testing.TB, opts Options) *World {
	t.Helper()
	w := &World{T: t, Wire: &Wire{}, log: opts.Log, afterCycle: opts.AfterCycle}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.Git = gitserver.New(t)
	teamDir := opts.TeamRepoDir
	if teamDir == "" {
		teamDir = DemoTeamRepo
	}
	for repo, dir := range map[string]string{Repos[0]: opts.RepoDir, Repos[1]: teamDir} {
		abs, err := filepath.Abs(dir)
		must(t, err)
		w.Git.CreateRepo(t, gitName(repo), abs)
	}

	cfg, err := config.Load("", nil, nil)
	must(t, err)
	hubOpts := ghemu.HubOptions{}
	if opts.AppAuth {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		must(t, err)
		w.KeyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
		keyDir := opts.KeyDir
		if keyDir == "" {
			keyDir = t.TempDir()
		}
		keyFile := filepath.Join(keyDir, "app.pem")
		must(t, os.WriteFile(keyFile, w.KeyPEM, 0o600))
		hubOpts.AppID, hubOpts.AppPublicKey = AppID, &key.PublicKey
		hubOpts.Installations = map[string]int64{Owner: InstallationID}
		cfg.GitHub.AppID, cfg.GitHub.InstallationID, cfg.GitHub.PrivateKeyFile = AppID, InstallationID, keyFile
	} else {
		hubOpts.Tokens = map[string]string{Token: BotLogin}
		cfg.GitHub.Token = Token
	}
	w.Hub = ghemu.NewHub(t, hubOpts)
	for _, repo := range Repos {
		owner, name, _ := strings.Cut(repo, "/")
		w.Hub.AddRepo(ghemu.Options{Owner: owner, Repo: name, Branches: ghemu.GitBranches(w.Git.RepoPath(gitName(repo)))})
	}
	w.GH = w.Hub.Repo(Repos[0])

	// GitHub's git side accepts whatever token its API accepts; the git
	// server knows one token, so the proxy vouches for the others. Both
	// repositories belong to one account: a token valid for one is valid
	// for the other.
	gitURL := w.Wire.Proxy(t, "git", w.Git.URL, w.Git.Token, func(token string) bool { return w.Hub.ValidTokenFor(Repos[0], token) })
	apiURL := w.Wire.Proxy(t, "github", w.Hub.URL, nil, nil)

	set, err := snapshot.Read(opts.ClusterDir)
	must(t, err)
	w.set = set

	cfg.Cluster = Cluster
	cfg.Repo.Owner, cfg.Repo.Name = Owner, RepoName
	cfg.Repo.URL = gitURL + "/" + RepoName + ".git"
	// The cluster applies the reviews namespace from the team repository,
	// by its github.com address; kedge clones it from the git server.
	cfg.Repos = []config.RepoRule{{Match: Owner + "/team-*", CloneURL: gitURL + "/{name}.git"}}
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

// CommitAsHuman commits files on branch of the platform repository as a
// person and remembers the commit as one that must survive.
func (w *World) CommitAsHuman(branch string, files map[string]string, message string) {
	w.RememberHuman(Repos[0], branch, w.Git.CommitAsHuman(w.T, RepoName, branch, files, message))
}

// RememberHuman adds a commit that must stay reachable from branch of
// repo ("owner/name").
func (w *World) RememberHuman(repo, branch, sha string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.human = append(w.human, HumanCommit{Repo: repo, Branch: branch, SHA: sha})
}

// HumanCommits are the commits people made.
func (w *World) HumanCommits() []HumanCommit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]HumanCommit(nil), w.human...)
}

// Branch is the name of kedge's branch for namespace on the default
// branch.
func Branch(namespace string) string {
	return reconcile.BranchFor(Cluster, namespace, DefaultBranch, true)
}

// CycleResult is what one cycle did.
type CycleResult struct {
	Err    error
	Report *reconcile.Report
	Pushes int
	// PushesTo counts the pushes by repository ("owner/name").
	PushesTo map[string]int
	Mutating []ghemu.Call
	// Calls are every GitHub request the cycle made, in every repository
	// and to the App endpoints.
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

// cycle runs one cycle; with a kill rule, its process dies at the first
// request the rule cuts: the context is cancelled before the connection
// drops, and every later request is refused.
func (w *World) cycle(kill Rule) CycleResult {
	w.T.Helper()
	mark := w.mark()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if kill != nil {
		w.Wire.SetRule(kill)
		w.Wire.KillOnCut(func(Step) { cancel() })
	}
	svc, err := assemble.New(ctx, w.Cfg, w.Source, assemble.Options{Log: w.log})
	if err != nil {
		w.T.Fatalf("assemble kedge: %v", err)
	}
	report, err := svc.Reconciler.RunOnce(ctx)
	res := w.record(mark, err)
	res.Report = report
	if res.Killed != nil && res.Err == nil {
		res.Err = errors.New("killed")
	}
	if w.afterCycle != nil {
		w.afterCycle(svc, res)
	}
	return res
}

// cycleMark is where the records of the git server and GitHub stood when
// a cycle began.
type cycleMark struct {
	pushes map[string]int
	at     time.Time
}

func (w *World) mark() cycleMark {
	m := cycleMark{pushes: map[string]int{}, at: time.Now()}
	for _, repo := range Repos {
		m.pushes[repo] = w.Git.PushesTo(gitName(repo))
	}
	return m
}

// record is what the wire, the git server and GitHub saw of a cycle that
// began at the mark and ended with err; it clears the wire.
func (w *World) record(m cycleMark, err error) CycleResult {
	res := CycleResult{Err: err, Trace: w.Wire.Take(), PushesTo: map[string]int{}}
	for repo, before := range m.pushes {
		if n := w.Git.PushesTo(gitName(repo)) - before; n > 0 {
			res.PushesTo[repo] = n
			res.Pushes += n
		}
	}
	for _, c := range w.Calls() {
		if c.At.Before(m.at) {
			continue
		}
		res.Calls = append(res.Calls, c)
		if c.Mutating() {
			res.Mutating = append(res.Mutating, c)
		}
	}
	return res
}

// Calls are every GitHub request so far, in every repository and to the
// App endpoints, in the order they arrived.
func (w *World) Calls() []ghemu.Call {
	out := w.Hub.AllCalls()
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// PendingFaults counts the queued GitHub faults that never struck.
func (w *World) PendingFaults() int {
	n := w.Hub.PendingFaults()
	for _, repo := range Repos {
		n += w.Hub.Repo(repo).PendingFaults()
	}
	return n
}

// PlannedPR is the pull request the plan asks for in one repository: the
// namespace, the base branch the cluster applies it from, and the files
// its branch must hold (path → content).
type PlannedPR struct {
	Namespace, Base string
	// DefaultBase is set when Base is the repository's default branch.
	DefaultBase bool
	Files       map[string]string
}

// Branch is the name kedge gives the PR's branch when it opens it.
func (p PlannedPR) Branch() string {
	return reconcile.BranchFor(Cluster, p.Namespace, p.Base, p.DefaultBase)
}

// DefaultBranch is the default branch of every repository of a World, as
// the GitHub emulation reports it.
const DefaultBranch = "main"

// PlannedEdits is what `kedge plan` computes against the base branches as
// they are now, with a checkout of each repository branch the cluster
// applies from: repository ("owner/name") → the PRs it should have, one
// per base branch and namespace.
func (w *World) PlannedEdits() map[string][]PlannedPR {
	w.T.Helper()
	set, _ := w.Source(context.Background())
	clusterJSON, err := json.Marshal(set)
	must(w.T, err)
	sum := sha256.Sum256(clusterJSON)
	// Most scenarios end on the same bases and cluster: plan each once.
	key := hex.EncodeToString(sum[:])
	for _, repo := range Repos {
		for ref, tip := range w.Git.Refs(w.T, gitName(repo)) {
			if !strings.HasPrefix(ref, "refs/heads/kedge/") {
				key += "/" + ref + "=" + tip
			}
		}
	}
	if cached, ok := plannedCache.Load(key); ok {
		return cached.(map[string][]PlannedPR)
	}
	opts := assemble.PlanOptions(w.Cfg, "")
	targets, _ := route.Targets(set, assemble.RouteRules(w.Cfg))
	defaults := map[string]string{}
	for _, repo := range Repos {
		defaults[strings.ToLower(repo)] = DefaultBranch
	}
	targets = route.Resolve(targets, defaults)
	for i, t := range targets {
		dir := filepath.Join(w.T.TempDir(), fmt.Sprint("base-", i))
		w.checkout(t, dir)
		opts.Repositories = append(opts.Repositories, plan.RepositoryFor(t, dir, nil))
	}
	res, err := plan.Build(set, opts)
	must(w.T, err)
	out := map[string][]PlannedPR{}
	for _, r := range res.Repositories {
		for ns, edits := range r.Edits.Namespaces {
			if len(edits) == 0 {
				continue
			}
			p := PlannedPR{Namespace: ns, Base: r.Branch, DefaultBase: r.Branch == DefaultBranch, Files: map[string]string{}}
			for _, e := range edits {
				p.Files[e.Path] = string(e.After)
			}
			out[r.Name] = append(out[r.Name], p)
		}
	}
	plannedCache.Store(key, out)
	return out
}

// checkout writes the tree of a repository branch the cluster applies from
// into dir.
func (w *World) checkout(t route.Target, dir string) {
	rev := t.Branch
	if rev == "" {
		rev = "HEAD"
	}
	repo := gitName(t.Repo)
	for _, file := range w.Git.Files(w.T, repo, rev) {
		full := filepath.Join(dir, filepath.FromSlash(file))
		must(w.T, os.MkdirAll(filepath.Dir(full), 0o755))
		must(w.T, os.WriteFile(full, []byte(w.Git.ReadFile(w.T, repo, rev, file)), 0o644))
	}
}

// plannedCache holds PlannedEdits by cluster content and base commits: a
// commit names its tree, and every world starts from the same commits.
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
