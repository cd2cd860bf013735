package reconcile_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

const (
	demoCluster = "../../testdata/demo/cluster"
	demoRepo    = "../../testdata/demo/gitops"
	token       = "ghs_e2eTestToken0000000000000000000000"
	repoName    = "gitops"
)

// world is a kedge deployment against a real git server and the GitHub
// emulation, with a cluster snapshot the test can change between cycles.
type world struct {
	t   *testing.T
	git *gitserver.Server
	gh  *ghemu.Server
	cfg *config.Config

	mu  sync.Mutex
	set *objects.Set
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t}
	w.git = gitserver.New(t)
	w.git.SetToken(token)
	abs, err := filepath.Abs(demoRepo)
	require.NoError(t, err)
	w.git.CreateRepo(t, repoName, abs)
	w.gh = ghemu.New(t, ghemu.Options{
		Owner: "example-org", Repo: repoName,
		Tokens:   map[string]string{token: "kedge-bot"},
		Branches: ghemu.GitBranches(w.git.RepoPath(repoName)),
	})
	set, err := snapshot.Read(demoCluster)
	require.NoError(t, err)
	w.set = set
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	cfg.Repo.Owner, cfg.Repo.Name = "example-org", repoName
	cfg.Repo.URL = w.git.RepoURL(repoName)
	cfg.GitHub.APIURL = w.gh.URL + "/"
	cfg.GitHub.Token = token
	cfg.Git.CacheDir = t.TempDir()
	cfg.Limits.MutationGap = 0
	cfg.Reviewers.ByNamespace = map[string][]string{"payments": {"alice", "example-org/payments-team"}}
	require.NoError(t, cfg.Validate(config.ModeRun))
	w.cfg = cfg
	return w
}

// newAppWorld is newWorld authenticated as a GitHub App: the emulation
// checks the RS256 JWT and mints installation tokens, which the git server
// then accepts.
func newAppWorld(t *testing.T) *world {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	require.NoError(t, os.WriteFile(keyFile, pemBytes, 0o600))

	w := newWorld(t)
	w.gh = ghemu.New(t, ghemu.Options{
		Owner: "example-org", Repo: repoName,
		AppID: 4242, AppPublicKey: &key.PublicKey, InstallationID: 99,
		Branches: ghemu.GitBranches(w.git.RepoPath(repoName)),
	})
	w.git.SetTokenCheck(w.gh.ValidToken)
	w.cfg.GitHub.APIURL = w.gh.URL + "/api/v3/"
	w.cfg.GitHub.Token = ""
	w.cfg.GitHub.AppID, w.cfg.GitHub.InstallationID, w.cfg.GitHub.PrivateKeyFile = 4242, 99, keyFile
	require.NoError(t, w.cfg.Validate(config.ModeRun))
	return w
}

func (w *world) source(context.Context) (*objects.Set, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	copied := *w.set
	return &copied, nil
}

func (w *world) cycle() *reconcile.Report {
	w.t.Helper()
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(w.t, err)
	report, err := svc.Reconciler.RunOnce(context.Background())
	require.NoError(w.t, err)
	return report
}

// plannedEdits is what `kedge plan --repo` computes for the demo, by
// namespace: path → new content.
func plannedEdits(t *testing.T, w *world) map[string]map[string]string {
	t.Helper()
	set, err := w.source(context.Background())
	require.NoError(t, err)
	res, err := plan.Build(set, assemble.PlanOptions(w.cfg, demoRepo))
	require.NoError(t, err)
	out := map[string]map[string]string{}
	for ns, edits := range res.Edits.Namespaces {
		out[ns] = map[string]string{}
		for _, e := range edits {
			out[ns][e.Path] = string(e.After)
		}
	}
	return out
}

func openPRs(gh *ghemu.Server) map[string]int {
	out := map[string]int{}
	for _, pr := range gh.PRs() {
		if pr.GetState() == "open" {
			out[pr.GetHead().GetRef()] = pr.GetNumber()
		}
	}
	return out
}

func TestFirstCycleOpensOnePRPerNamespaceMatchingThePlan(t *testing.T) {
	w := newWorld(t)
	want := plannedEdits(t, w)
	require.NotEmpty(t, want)

	report := w.cycle()
	assert.Equal(t, 1, w.git.Pushes(), "all branches go in one push")
	assert.Equal(t, 1, report.Pushes)
	assert.Positive(t, report.PushDuration, "the push was timed")

	prs := openPRs(w.gh)
	assert.Len(t, prs, len(want), "one PR per namespace with edits")
	for ns, files := range want {
		branch := "kedge/prod-eu-1/" + ns
		require.Contains(t, prs, branch)
		pr, _ := w.gh.PR(prs[branch])
		assert.Equal(t, "main", pr.GetBase().GetRef())
		state, ok := prstate.ParseState(pr.GetBody())
		require.True(t, ok, "PR body carries the state block")
		assert.Equal(t, ns, state.Namespace)
		// The branch differs from base in exactly the planned files, with
		// exactly the planned content.
		changed := changedFiles(t, w.git, branch)
		assert.ElementsMatch(t, keys(files), changed, "namespace %s", ns)
		for path, content := range files {
			assert.Equal(t, content, w.git.ReadFile(t, repoName, branch, path), "%s %s", ns, path)
		}
		labels := map[string]bool{}
		for _, l := range pr.Labels {
			labels[l.GetName()] = true
		}
		assert.True(t, labels["kedge"], "PR is labelled")
	}
	for _, c := range w.gh.OutOfSurfaceCalls() {
		t.Errorf("call outside the REST surface: %s %s", c.Method, c.Path)
	}
	if pr, ok := prs["kedge/prod-eu-1/payments"]; ok {
		p, _ := w.gh.PR(pr)
		var reviewers []string
		for _, u := range p.RequestedReviewers {
			reviewers = append(reviewers, u.GetLogin())
		}
		assert.Contains(t, reviewers, "alice")
	}
	assert.Len(t, dashboards(w.gh), 1, "one dashboard issue")
}

func TestGitHubAppAuthentication(t *testing.T) {
	w := newAppWorld(t)
	w.cycle()
	assert.Len(t, openPRs(w.gh), len(plannedEdits(t, w)))
	assert.Equal(t, 1, w.git.Pushes())
	minted := w.gh.MintedTokens()
	assert.Positive(t, minted)

	w.gh.ResetCalls()
	w.cycle()
	assert.Empty(t, callNames(w.gh.MutatingCalls()))
	for _, c := range w.gh.OutOfSurfaceCalls() {
		t.Errorf("call outside the REST surface: %s %s", c.Method, c.Path)
	}
}

func TestSecondCycleChangesNothing(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	pushes := w.git.Pushes()
	w.gh.ResetCalls()

	report := w.cycle()
	assert.Equal(t, pushes, w.git.Pushes(), "no push")
	assert.Zero(t, report.Pushes)
	assert.Zero(t, report.PushDuration)
	assert.Empty(t, callNames(w.gh.MutatingCalls()), "no mutating GitHub call")
	require.NotEmpty(t, report.Outcomes)
	for _, o := range report.Outcomes {
		assert.Equal(t, reconcile.ActUpToDate, o.Action, "%s: a cycle that sent nothing says so", o.Namespace)
	}
	t.Logf("second cycle: %d GitHub calls, all reads", len(w.gh.Calls()))
}

func TestDriftGoneClosesThePRWithAComment(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	prs := openPRs(w.gh)
	number, ok := prs["kedge/prod-eu-1/search"]
	require.True(t, ok)

	w.mu.Lock()
	w.set.Pods = withoutNamespace(w.set.Pods, "search")
	w.mu.Unlock()
	w.cycle()

	pr, _ := w.gh.PR(number)
	assert.Equal(t, "closed", pr.GetState())
	assert.False(t, pr.GetMerged())
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].GetBody(), "kedge:comment closed")
	assert.Len(t, openPRs(w.gh), len(prs)-1, "the other PRs stay open")

	w.gh.ResetCalls()
	w.cycle()
	assert.Empty(t, callNames(w.gh.MutatingCalls()), "closing is done once")
}

func TestPRClosedUnmergedStaysClosed(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	number := openPRs(w.gh)["kedge/prod-eu-1/orders"]
	require.NotZero(t, number)
	require.NoError(t, w.gh.ClosePR(number))

	before := len(w.gh.PRs())
	w.gh.ResetCalls()
	w.cycle()
	assert.Len(t, w.gh.PRs(), before, "no PR is opened again for the same target")
	pr, _ := w.gh.PR(number)
	assert.Equal(t, "closed", pr.GetState())
	assert.NotContains(t, openPRs(w.gh), "kedge/prod-eu-1/orders")
}

func TestHumanCommitOnAKedgeBranchIsNeverOverwritten(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	branch := "kedge/prod-eu-1/shop"
	number := openPRs(w.gh)[branch]
	require.NotZero(t, number)
	human := w.git.CommitAsHuman(t, repoName, branch, map[string]string{"NOTES.md": "keep me\n"}, "a note")

	// Move the base too, which would otherwise make kedge rebuild the branch.
	w.git.CommitAsHuman(t, repoName, "main", map[string]string{"README-ops.md": "ops\n"}, "unrelated change")
	for i := 0; i < 2; i++ {
		w.cycle()
		assert.Equal(t, human, w.git.BranchTip(t, repoName, branch), "the human commit stays the tip")
	}
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1, "said once")
	assert.Contains(t, comments[0].GetBody(), "kedge:comment edited")

	// Other namespaces' branches were rebuilt on the new base.
	other := "kedge/prod-eu-1/orders"
	assert.Equal(t, w.git.BranchTip(t, repoName, "main"), parentOf(t, w.git, other))
}

func TestMergedPRIsFollowedUntilRolledOut(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	number := openPRs(w.gh)["kedge/prod-eu-1/search"]
	require.NotZero(t, number)
	require.NoError(t, w.gh.MergePR(number, ghemu.GitFastForward(w.git.RepoPath(repoName))))

	// Merged, pods not restarted yet: nothing new is opened, no comment.
	w.gh.ResetCalls()
	w.cycle()
	assert.NotContains(t, openPRs(w.gh), "kedge/prod-eu-1/search")
	assert.Empty(t, w.gh.Comments(number))

	// The pods rolled: kedge says so once.
	w.mu.Lock()
	w.set.Pods = withoutNamespace(w.set.Pods, "search")
	w.mu.Unlock()
	w.cycle()
	w.cycle()
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].GetBody(), "kedge:comment rolled-out")
}

func TestClustersSharingARepositoryKeepApart(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	first := openPRs(w.gh)

	other := *w.cfg
	other.Cluster = "prod-us-1"
	other.Git.CacheDir = t.TempDir()
	svc, err := assemble.New(context.Background(), &other, w.source, assemble.Options{})
	require.NoError(t, err)
	_, err = svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)

	all := openPRs(w.gh)
	assert.Len(t, all, 2*len(first))
	for branch, number := range first {
		assert.Equal(t, number, all[branch], "the first cluster's PRs are untouched")
		assert.Contains(t, all, strings.Replace(branch, "prod-eu-1", "prod-us-1", 1))
	}
	assert.Len(t, dashboards(w.gh), 2, "one dashboard per cluster")
}

func callNames(calls []ghemu.Call) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.Method+" "+c.Path)
	}
	return out
}

func dashboards(gh *ghemu.Server) []int {
	var out []int
	for _, is := range gh.Issues() {
		for _, l := range is.Labels {
			if l.GetName() == reconcile.DashboardLabel {
				out = append(out, is.GetNumber())
			}
		}
	}
	return out
}

func changedFiles(t *testing.T, git *gitserver.Server, branch string) []string {
	t.Helper()
	base := map[string]string{}
	for _, f := range git.Files(t, repoName, "main") {
		base[f] = git.ReadFile(t, repoName, "main", f)
	}
	var out []string
	for _, f := range git.Files(t, repoName, branch) {
		if content, ok := base[f]; !ok || content != git.ReadFile(t, repoName, branch, f) {
			out = append(out, f)
		}
	}
	return out
}

func parentOf(t *testing.T, git *gitserver.Server, branch string) string {
	t.Helper()
	log := git.Log(t, repoName, branch)
	require.GreaterOrEqual(t, len(log), 2)
	return log[1].Hash
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func withoutNamespace(pods []*objects.Pod, ns string) []*objects.Pod {
	var out []*objects.Pod
	for _, p := range pods {
		if p.Namespace != ns {
			out = append(out, p)
		}
	}
	return out
}

func dashboardBody(t *testing.T, gh *ghemu.Server) (string, int) {
	t.Helper()
	numbers := dashboards(gh)
	require.Len(t, numbers, 1, "exactly one dashboard issue")
	is, _ := gh.Issue(numbers[0])
	return is.GetBody(), numbers[0]
}

// dashboardRow is the dashboard's table row of a namespace.
func dashboardRow(body, namespace string) string {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "| "+namespace+" |") {
			return line
		}
	}
	return ""
}

func TestDashboardFollowsPRStates(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	body, number := dashboardBody(t, w.gh)
	assert.Contains(t, dashboardRow(body, "orders"), "open, awaiting review")
	assert.Contains(t, body, "legacy-admin", "workloads kedge cannot fix are listed")
	assert.Contains(t, body, "debug-shell", "skipped pods are listed")

	// Unchanged: not rewritten, although the cycle time moved on.
	w.gh.ResetCalls()
	w.cycle()
	assert.Empty(t, callNames(w.gh.MutatingCalls()))

	prs := openPRs(w.gh)
	require.NoError(t, w.gh.ClosePR(prs["kedge/prod-eu-1/orders"]))
	require.NoError(t, w.gh.MergePR(prs["kedge/prod-eu-1/search"], ghemu.GitFastForward(w.git.RepoPath(repoName))))
	w.git.CommitAsHuman(t, repoName, "kedge/prod-eu-1/shop", map[string]string{"NOTES.md": "mine\n"}, "a note")
	w.git.CommitAsHuman(t, repoName, "main", map[string]string{"OPS.md": "ops\n"}, "move the base")
	w.cycle()

	body, again := dashboardBody(t, w.gh)
	assert.Equal(t, number, again, "the same issue is rewritten")
	assert.Contains(t, dashboardRow(body, "orders"), "closed unmerged")
	assert.Contains(t, dashboardRow(body, "search"), "merged, rolling out")
	assert.Contains(t, dashboardRow(body, "shop"), "edited by someone else")
	assert.Contains(t, dashboardRow(body, "payments"), "open, awaiting review")
}

// only is the outcome of a namespace that has a pull request in one
// repository.
func only(t *testing.T, report *reconcile.Report, ns string) reconcile.Outcome {
	t.Helper()
	outcomes := report.Of(ns)
	require.Len(t, outcomes, 1, "outcomes of %s", ns)
	return outcomes[0]
}
