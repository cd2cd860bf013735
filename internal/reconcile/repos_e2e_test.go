package reconcile_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	oldProxy = "docker.io/istio/proxyv2:1.24.0"
	newProxy = "docker.io/istio/proxyv2:1.25.0"
)

// source is one repository branch the cluster applies a namespace from.
type source struct {
	repo, branch, path string
	// namespace holds one Deployment, named after the repository's team.
	namespace, workload string
}

// reposWorld is kedge over two organisations: acme/platform (repo:, the
// dashboard), acme/team-a following main, globex/team-b following
// release, and initech/apps, where the App is installed too but which no
// rule admits.
type reposWorld struct {
	git *gitserver.Server
	hub *ghemu.Hub
	cfg *config.Config
	set *objects.Set
}

var reposSources = []source{
	{repo: "acme/platform", branch: "main", path: "infra", namespace: "ingress", workload: "gateway"},
	{repo: "acme/team-a", branch: "main", path: "apps", namespace: "shop", workload: "web"},
	{repo: "globex/team-b", branch: "release", path: "deploy", namespace: "billing", workload: "invoices"},
	{repo: "initech/apps", branch: "main", path: "k8s", namespace: "legacy", workload: "old"},
}

var installations = map[string]int64{"acme": 7, "globex": 9, "initech": 11}

func newReposWorld(t *testing.T) *reposWorld {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))

	w := &reposWorld{git: gitserver.New(t)}
	w.hub = ghemu.NewHub(t, ghemu.HubOptions{AppID: 4242, AppPublicKey: &key.PublicKey, Installations: installations})
	w.git.SetRepoTokenCheck(w.hub.ValidTokenFor)
	for _, s := range reposSources {
		files := map[string]string{
			s.path + "/kustomization.yaml":      "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + s.workload + ".yaml\n",
			s.path + "/" + s.workload + ".yaml": deployment(s.namespace, s.workload, "1.0.0"),
		}
		if s.branch == "main" {
			w.git.CreateRepoFiles(t, s.repo, files)
		} else {
			// The followed branch differs from main: the PR must be built
			// on it and target it.
			w.git.CreateRepoFiles(t, s.repo, map[string]string{"README.md": "main\n"})
			w.git.CommitAs(t, s.repo, s.branch, gitserver.PlatformTeam, gitserver.PlatformTeam, files, "release "+s.workload)
		}
		owner, name, _ := strings.Cut(s.repo, "/")
		w.hub.AddRepo(ghemu.Options{Owner: owner, Repo: name, Branches: ghemu.GitBranches(w.git.RepoPath(s.repo))})
	}
	w.set = reposCluster(w.git)

	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod"
	cfg.Repo.Owner, cfg.Repo.Name = "acme", "platform"
	cfg.Repo.URL = w.git.RepoURL("acme/platform")
	cfg.Repos = []config.RepoRule{
		{Match: "acme/team-*", CloneURL: w.git.URL + "/{owner}/{name}.git"},
		{Match: "globex/*", CloneURL: w.git.URL + "/{owner}/{name}.git"},
	}
	cfg.GitHub.APIURL = w.hub.URL + "/api/v3/"
	cfg.GitHub.AppID, cfg.GitHub.PrivateKeyFile = 4242, keyFile
	cfg.Git.CacheDir = t.TempDir()
	cfg.Limits.MutationGap = 0
	require.NoError(t, cfg.Validate(config.ModeRun))
	w.cfg = cfg
	return w
}

func deployment(namespace, name, version string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  selector:
    matchLabels:
      app: %[2]s
  template:
    metadata:
      labels:
        app: %[2]s
    spec:
      containers:
        - name: %[2]s
          image: ghcr.io/example/%[2]s:%[3]s
`, namespace, name, version)
}

// reposCluster moved every namespace to revision 1-25-0 while its
// Deployment runs 1-24-0's sidecar; Flux applies each namespace from its
// repository branch.
func reposCluster(git *gitserver.Server) *objects.Set {
	set := &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", oldProxy), meshtest.IstiodRevision("1-25-0", newProxy)).AddTo(set)
	ctrl := true
	for _, s := range reposSources {
		set.Namespaces = append(set.Namespaces, meshtest.Namespace(s.namespace, map[string]string{"istio.io/rev": "1-25-0"}))
		source := strings.ReplaceAll(s.repo, "/", "-")
		set.GitRepositories = append(set.GitRepositories, objects.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: source},
			Spec:       objects.GitRepositorySpec{URL: git.RepoURL(s.repo), Ref: &objects.GitRepositoryRef{Branch: s.branch}},
		})
		set.Kustomizations = append(set.Kustomizations, objects.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: s.namespace},
			Spec:       objects.KustomizationSpec{Path: "./" + s.path, SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: source}},
		})
		meta := metav1.ObjectMeta{Name: s.workload, Namespace: s.namespace, UID: types.UID("deploy-" + s.workload), Labels: map[string]string{}}
		meshtest.FluxLabels(meta.Labels, "flux-system", s.namespace)
		set.Deployments = append(set.Deployments, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta})
		rs := objects.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: s.workload + "-1", Namespace: s.namespace, UID: types.UID("rs-" + s.workload),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: s.workload, UID: meta.UID, Controller: &ctrl}}}}
		set.ReplicaSets = append(set.ReplicaSets, &rs)
		pod := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: s.workload + "-1-a", Namespace: s.namespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &ctrl}}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: s.workload, Image: "ghcr.io/example/" + s.workload + ":1.0.0"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		meshtest.InjectPod(&pod, "1-24-0", oldProxy)
		set.Pods = append(set.Pods, objects.Pods(pod)...)
	}
	return set
}

func (w *reposWorld) source(context.Context) (*objects.Set, error) {
	copied := *w.set
	return &copied, nil
}

// mutatingCalls counts, per repository, the calls that changed something.
func (w *reposWorld) mutatingCalls() map[string]int {
	out := map[string]int{}
	for _, s := range reposSources {
		for _, c := range w.hub.CallsTo(s.repo) {
			if c.Mutating() {
				out[s.repo]++
			}
		}
	}
	return out
}

func (w *reposWorld) pushes() map[string]int {
	out := map[string]int{}
	for _, s := range reposSources {
		if n := w.git.PushesTo(s.repo); n > 0 {
			out[s.repo] = n
		}
	}
	return out
}

func TestCycleOverSeveralRepositories(t *testing.T) {
	w := newReposWorld(t)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)

	report, err := svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)

	// Each namespace's PR is in the repository the cluster applies it
	// from, against the branch it follows, after one push per repository.
	assert.Equal(t, map[string]int{"acme/platform": 1, "acme/team-a": 1, "globex/team-b": 1}, w.pushes())
	assert.Equal(t, 3, report.Pushes)
	prURLs := map[string]string{}
	for _, s := range reposSources[:3] {
		prs := w.hub.Repo(s.repo).PRs()
		require.Len(t, prs, 1, s.repo)
		pr := prs[0]
		// Each repository's default branch is main: a PR against another
		// base takes the longer name.
		assert.Equal(t, reconcile.BranchFor("prod", s.namespace, s.branch, s.branch == "main"), pr.GetHead().GetRef(), s.repo)
		assert.Equal(t, s.branch, pr.GetBase().GetRef(), "%s: the PR targets the branch the cluster follows", s.repo)
		state, ok := prstate.ParseState(pr.GetBody())
		require.True(t, ok)
		assert.Equal(t, s.namespace, state.Namespace)
		changed := w.git.ReadFile(t, s.repo, pr.GetHead().GetRef(), s.path+"/"+s.workload+".yaml")
		assert.Contains(t, changed, "ghcr.io/example/"+s.workload+":1.0.0", "built on %s", s.branch)
		assert.NotEqual(t, deployment(s.namespace, s.workload, "1.0.0"), changed, "the restart annotation is written")
		prURLs[s.namespace] = pr.GetHTMLURL()
	}

	// The outside repository is reported by name and never called.
	outside := reposSources[3]
	assert.Empty(t, w.hub.CallsTo(outside.repo), "no call to a repository no rule admits")
	for _, r := range w.git.Requests() {
		assert.NotContains(t, r.Path, outside.repo, "no git request to it either")
	}
	assert.Empty(t, w.hub.Repo(outside.repo).PRs())

	// The dashboard lives in repo: and links every PR; every PR links it.
	issues := w.hub.Repo("acme/platform").Issues()
	require.Len(t, issues, 1)
	body := issues[0].GetBody()
	for ns, url := range prURLs {
		assert.Contains(t, body, url, "dashboard links the PR of %s", ns)
	}
	assert.Contains(t, body, outside.repo, "the outside repository is named")
	assert.Contains(t, body, "**Repository outside the allowlist:**")
	assert.Contains(t, body, "add the repository to `repos:`")
	assert.Contains(t, report.Mismatch.Sentence(), outside.repo)
	for _, s := range reposSources[:3] {
		pr := w.hub.Repo(s.repo).PRs()[0]
		assert.Contains(t, pr.GetBody(), issues[0].GetHTMLURL(), "%s links the dashboard", s.repo)
	}
	for _, s := range reposSources[1:] {
		assert.Empty(t, w.hub.Repo(s.repo).Issues(), "no dashboard in %s", s.repo)
	}

	// One installation lookup per organisation, one token per
	// installation; none for the outside repository's.
	lookups := 0
	for _, c := range w.hub.Calls() {
		require.Equal(t, http.MethodGet == c.Method || strings.HasSuffix(c.Path, "/access_tokens"), true, c.Path)
		if strings.HasSuffix(c.Path, "/installation") {
			lookups++
		}
	}
	assert.Equal(t, 2, lookups)
	assert.Equal(t, map[int64]int{7: 1, 9: 1}, w.hub.MintedTokens())

	// An unchanged second cycle fetches, updates each index, and changes
	// nothing anywhere.
	before := w.mutatingCalls()
	report, err = svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)
	assert.Zero(t, report.Pushes)
	assert.Equal(t, map[string]int{"acme/platform": 1, "acme/team-a": 1, "globex/team-b": 1}, w.pushes())
	assert.Equal(t, before, w.mutatingCalls(), "no mutating call in any repository")
	require.Len(t, report.Repositories, 3)
	for _, r := range report.Repositories {
		assert.True(t, r.Index.Incremental, "%s: fetched and indexed incrementally", r.Name)
		assert.NoError(t, r.Err)
	}
	assert.Empty(t, w.hub.CallsTo(outside.repo))
	for _, outcome := range report.Outcomes {
		if outcome.Namespace != outside.namespace {
			assert.Equal(t, prURLs[outcome.Namespace], outcome.PRURL, outcome.Namespace)
		}
	}
	_ = reconcile.BranchPrefix
}

// A push that fails in one repository holds back that repository's PR
// only; the next cycle opens it and duplicates nothing elsewhere.
func TestPushFailureInOneRepositoryLeavesTheOthers(t *testing.T) {
	w := newReposWorld(t)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)
	w.git.FailNextPushTo("globex/team-b", http.StatusServiceUnavailable)

	report, err := svc.Reconciler.RunOnce(context.Background())
	require.Error(t, err)
	var pushErr *reconcile.PushError
	assert.ErrorAs(t, err, &pushErr)
	assert.Contains(t, err.Error(), "globex/team-b")
	require.NotNil(t, report, "the other repositories' work is reported")
	assert.Len(t, w.hub.Repo("acme/platform").PRs(), 1)
	assert.Len(t, w.hub.Repo("acme/team-a").PRs(), 1)
	assert.Empty(t, w.hub.Repo("globex/team-b").PRs())
	assert.Equal(t, prstate.PRNotYetOpened, only(t, report, "billing").State)
	assert.Contains(t, only(t, report, "billing").Detail, "globex/team-b")

	report, err = svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, report.Pushes, "only the held-back repository is pushed")
	assert.Equal(t, map[string]int{"acme/platform": 1, "acme/team-a": 1, "globex/team-b": 2}, w.pushes())
	for _, repo := range []string{"acme/platform", "acme/team-a", "globex/team-b"} {
		assert.Len(t, w.hub.Repo(repo).PRs(), 1, repo)
	}
	assert.Equal(t, "release", w.hub.Repo("globex/team-b").PRs()[0].GetBase().GetRef())
}

// limits.maxNewPRsPerCycle counts PRs across repositories, not per
// repository.
func TestLimitsCountAcrossRepositories(t *testing.T) {
	w := newReposWorld(t)
	w.cfg.Limits.MaxNewPRsPerCycle = 2
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)

	report, err := svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)
	opened := 0
	for _, s := range reposSources {
		opened += len(w.hub.Repo(s.repo).PRs())
	}
	assert.Equal(t, 2, opened)
	assert.Equal(t, 2, report.Pushes, "a held-back namespace's repository is not pushed")

	_, err = svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)
	for _, s := range reposSources[:3] {
		assert.Len(t, w.hub.Repo(s.repo).PRs(), 1, "%s, after the next cycle", s.repo)
	}
}

// A listed repository that cannot be cloned is reported as such: its
// workloads are no-repo with the reason, not "not listed", and the other
// repositories get their PRs.
func TestUnopenableRepositoryIsReportedAsSuch(t *testing.T) {
	w := newReposWorld(t)
	w.cfg.Repos[1].CloneURL = w.git.URL + "/missing/{name}.git"
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)

	report, err := svc.Reconciler.RunOnce(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "globex/team-b")
	require.NotNil(t, report, "the other repositories' work is reported")
	var billing []string
	for _, wl := range report.Plan.Workloads {
		if wl.Namespace == "billing" {
			assert.Equal(t, "no-repo", wl.Manifest.Status)
			billing = append(billing, wl.Manifest.Detail)
		}
	}
	require.Len(t, billing, 1)
	assert.Contains(t, billing[0], "which could not be checked out this cycle: open: ")
	assert.NotContains(t, billing[0], "does not list")
	assert.Empty(t, w.hub.Repo("globex/team-b").PRs())
	assert.Len(t, w.hub.Repo("acme/team-a").PRs(), 1)
	assert.Len(t, w.hub.Repo("acme/platform").PRs(), 1)
}

// A listed repository the App is not installed on holds back its
// namespace with GitHub's answer, and the other repositories get their
// PRs. The cycles after it neither ask GitHub again (until the answer's
// recheck) nor write anything: the error reads the same.
func TestRepositoryWithoutTheAppIsNotAskedAboutEveryCycle(t *testing.T) {
	w := newReposWorld(t)
	w.hub.Install("globex", 0)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)
	lookups := func() int {
		n := 0
		for _, c := range w.hub.Calls() {
			if c.Path == "/orgs/globex/installation" {
				n++
			}
		}
		return n
	}

	_, first := svc.Reconciler.RunOnce(context.Background())
	require.Error(t, first)
	assert.Contains(t, first.Error(), "the GitHub App is not installed on the account globex")
	assert.Len(t, w.hub.Repo("acme/team-a").PRs(), 1)
	assert.Empty(t, w.hub.Repo("globex/team-b").PRs())
	_, err = svc.Reconciler.RunOnce(context.Background())
	require.Error(t, err)

	mutating := func() int {
		n := 0
		for _, c := range w.hub.AllCalls() {
			if c.Mutating() {
				n++
			}
		}
		return n
	}
	before := mutating()
	_, err = svc.Reconciler.RunOnce(context.Background())
	require.Error(t, err)
	assert.Equal(t, first.Error(), err.Error())
	assert.Equal(t, 1, lookups(), "one lookup in three cycles")
	assert.Equal(t, before, mutating(), "an unchanged cycle writes nothing")
	assert.Empty(t, w.hub.CallsTo("globex/team-b"), "the repository itself is never called")
}
