package reconcile_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	manyRepos          = 20
	namespacesPerRepo  = 50
	manyReposAppID     = 5151
	manyReposPushToken = "ghs_floorToken0000000000000000000000000"
)

// manyReposAccounts are the two accounts the App is installed on; the
// repositories alternate between them.
var manyReposAccounts = []struct {
	owner        string
	installation int64
}{{"acme", 21}, {"globex", 22}}

// manyReposWorld is a cluster applying 1000 namespaces from 20
// repositories (one Flux GitRepository and Kustomization each), every
// namespace drifted, against one git server and a GitHub Hub.
type manyReposWorld struct {
	git   *gitserver.Server
	hub   *ghemu.Hub
	svc   *assemble.Service
	set   *objects.Set
	repos []string
	files map[string]map[string]string
}

func newManyReposWorld(b *testing.B) *manyReposWorld {
	b.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	keyFile := filepath.Join(b.TempDir(), "app.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		b.Fatal(err)
	}
	installs := map[string]int64{}
	for _, a := range manyReposAccounts {
		installs[a.owner] = a.installation
	}
	w := &manyReposWorld{git: gitserver.New(b), files: map[string]map[string]string{}}
	// The static token is the floor's: it pushes to the floor's copies,
	// which no installation covers.
	w.hub = ghemu.NewHub(b, ghemu.HubOptions{AppID: manyReposAppID, AppPublicKey: &key.PublicKey, Installations: installs,
		Tokens: map[string]string{manyReposPushToken: "floor"}})
	w.git.SetRepoTokenCheck(w.hub.ValidTokenFor)
	w.set = &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", oldProxy), meshtest.IstiodRevision("1-25-0", newProxy)).AddTo(w.set)
	for i := range manyRepos {
		owner := manyReposAccounts[i%len(manyReposAccounts)].owner
		repo := fmt.Sprintf("%s/team-%02d", owner, i)
		w.repos = append(w.repos, repo)
		w.files[repo] = w.addRepository(repo, i)
		w.git.CreateRepoFiles(b, repo, w.files[repo])
		w.hub.AddRepo(ghemu.Options{Owner: owner, Repo: fmt.Sprintf("team-%02d", i), Branches: ghemu.GitBranches(w.git.RepoPath(repo))})
	}

	cfg, err := config.Load("", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Cluster = "prod"
	cfg.Repo.Owner, cfg.Repo.Name, _ = strings.Cut(w.repos[0], "/")
	cfg.Repo.URL = w.git.RepoURL(w.repos[0])
	for _, a := range manyReposAccounts {
		cfg.Repos = append(cfg.Repos, config.RepoRule{Match: a.owner + "/*", CloneURL: w.git.URL + "/{owner}/{name}.git"})
	}
	cfg.GitHub.APIURL = w.hub.URL + "/api/v3/"
	cfg.GitHub.AppID, cfg.GitHub.PrivateKeyFile = manyReposAppID, keyFile
	cfg.Git.CacheDir = b.TempDir()
	// The emulated GitHub has no secondary rate limit to respect; with the
	// default spacing 1000 new PRs take hours of waiting, not work.
	cfg.Limits.MutationGap = 0
	cfg.Limits.MaxOpenPRs = 0
	cfg.Limits.MaxNewPRsPerCycle = 0
	if err := cfg.Validate(config.ModeRun); err != nil {
		b.Fatal(err)
	}
	source := func(context.Context) (*objects.Set, error) {
		copied := *w.set
		return &copied, nil
	}
	w.svc, err = assemble.New(context.Background(), cfg, source, assemble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// addRepository adds the cluster side of repository number i (its
// GitRepository, Kustomization and 50 drifted namespaces) and returns the
// repository's files: apps/kustomization.yaml over one Deployment per
// namespace.
func (w *manyReposWorld) addRepository(repo string, i int) map[string]string {
	source := strings.ReplaceAll(repo, "/", "-")
	w.set.GitRepositories = append(w.set.GitRepositories, objects.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: source},
		Spec:       objects.GitRepositorySpec{URL: w.git.RepoURL(repo), Ref: &objects.GitRepositoryRef{Branch: "main"}},
	})
	w.set.Kustomizations = append(w.set.Kustomizations, objects.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: source},
		Spec:       objects.KustomizationSpec{Path: "./apps", SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: source}},
	})
	files := map[string]string{}
	resources := ""
	for n := range namespacesPerRepo {
		ns := fmt.Sprintf("t%02d-n%02d", i, n)
		files["apps/"+ns+"/web.yaml"] = deployment(ns, "web", "1.0.0")
		resources += "  - " + ns + "/web.yaml\n"
		w.addDriftedNamespace(ns, source)
	}
	files["apps/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + resources
	return files
}

// addDriftedNamespace adds a namespace moved to revision 1-25-0 whose
// Deployment "web", applied by Kustomization kustomization, runs 1-24-0's
// sidecar.
func (w *manyReposWorld) addDriftedNamespace(ns, kustomization string) {
	ctrl := true
	w.set.Namespaces = append(w.set.Namespaces, meshtest.Namespace(ns, map[string]string{"istio.io/rev": "1-25-0"}))
	meta := metav1.ObjectMeta{Name: "web", Namespace: ns, UID: types.UID("deploy-" + ns), Labels: map[string]string{}}
	meshtest.FluxLabels(meta.Labels, "flux-system", kustomization)
	w.set.Deployments = append(w.set.Deployments, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta})
	rs := objects.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, UID: types.UID("rs-" + ns),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: meta.UID, Controller: &ctrl}}}}
	w.set.ReplicaSets = append(w.set.ReplicaSets, &rs)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &ctrl}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "ghcr.io/example/web:1.0.0"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	meshtest.InjectPod(&pod, "1-24-0", oldProxy)
	w.set.Pods = append(w.set.Pods, objects.Pods(pod)...)
}

// cycleCalls is what one cycle asked of GitHub and git, per repository.
type cycleCalls struct {
	pushes, reads, mutating, notModified map[string]int
	// app counts the calls no repository answered: installation tokens.
	app int
}

func (w *manyReposWorld) snapshotCalls() cycleCalls {
	c := cycleCalls{pushes: map[string]int{}, reads: map[string]int{}, mutating: map[string]int{}, notModified: map[string]int{}}
	for _, repo := range w.repos {
		c.pushes[repo] = w.git.PushesTo(repo)
		c.reads[repo], c.mutating[repo], c.notModified[repo] = 0, 0, 0
		for _, call := range w.hub.CallsTo(repo) {
			switch {
			case call.Mutating():
				c.mutating[repo]++
			case call.Status == http.StatusNotModified:
				c.notModified[repo]++
				c.reads[repo]++
			default:
				c.reads[repo]++
			}
		}
	}
	for _, call := range w.hub.Calls() {
		if repoOfCall(call.Path) == "" {
			c.app++
		}
	}
	return c
}

func repoOfCall(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 3 || parts[0] != "repos" {
		return ""
	}
	return parts[1] + "/" + parts[2]
}

// since is what happened between before and c.
func (c cycleCalls) since(before cycleCalls) cycleCalls {
	diff := func(now, then map[string]int) map[string]int {
		out := map[string]int{}
		for repo, n := range now {
			out[repo] = n - then[repo]
		}
		return out
	}
	return cycleCalls{
		pushes: diff(c.pushes, before.pushes), reads: diff(c.reads, before.reads),
		mutating: diff(c.mutating, before.mutating), notModified: diff(c.notModified, before.notModified),
		app: c.app - before.app,
	}
}

// spread is the least, the mean and the most of a per-repository count.
func spread(perRepo map[string]int) (least, mean, most float64) {
	first := true
	total := 0
	for _, n := range perRepo {
		total += n
		if first || float64(n) < least {
			least = float64(n)
		}
		if first || float64(n) > most {
			most = float64(n)
		}
		first = false
	}
	return least, float64(total) / float64(len(perRepo)), most
}

func (w *manyReposWorld) cycle(b *testing.B) time.Duration {
	b.Helper()
	began := time.Now()
	if _, err := w.svc.Reconciler.RunOnce(context.Background()); err != nil {
		b.Fatal(err)
	}
	return time.Since(began)
}

// floorPush pushes the branches kedge made in each repository to a fresh
// copy of it on the same git server, with the git command line, one push
// per repository: the transfer any tool opening these PRs must make. The
// branches are copied out of the server untimed.
func (w *manyReposWorld) floorPush(b *testing.B) time.Duration {
	b.Helper()
	auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(gitserver.TokenUser+":"+manyReposPushToken))
	locals := make([]string, len(w.repos))
	for i, repo := range w.repos {
		w.git.CreateRepoFiles(b, "floor/"+strings.ReplaceAll(repo, "/", "-"), w.files[repo])
		locals[i] = filepath.Join(b.TempDir(), "local.git")
		runGit(b, "clone", "clone", "--quiet", "--bare", "--no-local", w.git.RepoPath(repo), locals[i])
	}
	began := time.Now()
	for i, repo := range w.repos {
		runGit(b, "push", "-c", "http.extraHeader="+auth, "--git-dir="+locals[i], "push", "--quiet",
			w.git.RepoURL("floor/"+strings.ReplaceAll(repo, "/", "-")), "refs/heads/kedge/*:refs/heads/kedge/*")
	}
	return time.Since(began)
}

// runGit runs git; what names the step in a failure, as the arguments
// carry the token.
func runGit(b *testing.B, what string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %s: %v\n%s", what, err, out)
	}
}

// BenchmarkCycle20Repositories measures kedge over 20 repositories of two
// accounts, 50 drifted namespaces each: the first cycle clones each
// repository, pushes its 50 branches in one push and opens 1000 PRs; the
// second, with nothing changed, pushes nothing and changes nothing. The
// floor is the git command line pushing the same branches to the same
// server, one push per repository.
func BenchmarkCycle20Repositories(b *testing.B) {
	var first, second cycleCalls
	var firstTime, secondTime, floorTime time.Duration
	opened := 0
	for b.Loop() {
		b.StopTimer()
		w := newManyReposWorld(b)
		start := w.snapshotCalls()
		b.StartTimer()
		firstTime = w.cycle(b)
		b.StopTimer()
		afterFirst := w.snapshotCalls()
		first = afterFirst.since(start)
		opened = 0
		for _, repo := range w.repos {
			opened += len(w.hub.Repo(repo).PRs())
			for _, c := range w.hub.Repo(repo).OutOfSurfaceCalls() {
				b.Errorf("call outside the REST surface: %s %s", c.Method, c.Path)
			}
		}
		secondTime = w.cycle(b)
		second = w.snapshotCalls().since(afterFirst)
		floorTime = w.floorPush(b)
		b.StartTimer()
	}
	if opened != manyRepos*namespacesPerRepo {
		b.Fatalf("opened %d PRs, want %d", opened, manyRepos*namespacesPerRepo)
	}
	report := func(prefix string, c cycleCalls, took time.Duration) {
		least, _, most := spread(c.pushes)
		b.ReportMetric(least, prefix+"-pushes/repo-min")
		b.ReportMetric(most, prefix+"-pushes/repo-max")
		_, mean, most := spread(c.reads)
		b.ReportMetric(mean, prefix+"-reads/repo")
		b.ReportMetric(most, prefix+"-reads/repo-max")
		_, mean, _ = spread(c.notModified)
		b.ReportMetric(mean, prefix+"-reads-304/repo")
		_, mean, most = spread(c.mutating)
		b.ReportMetric(mean, prefix+"-mutating/repo")
		b.ReportMetric(most, prefix+"-mutating/repo-max")
		b.ReportMetric(float64(c.app), prefix+"-app-calls")
		b.ReportMetric(took.Seconds(), prefix+"-s")
	}
	b.ReportMetric(float64(opened), "new-PRs")
	report("first", first, firstTime)
	report("second", second, secondTime)
	b.ReportMetric(floorTime.Seconds(), "floor-push-s")
}
