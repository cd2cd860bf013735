package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// branchWorld is one repository, acme/platform (default branch main, with
// a staging branch), applied by Flux Kustomizations and Argo CD
// Applications that name its branches in every way the cluster can.
type branchWorld struct {
	git *gitserver.Server
	hub *ghemu.Hub
	cfg *config.Config
	set *objects.Set
}

// appliedFrom is one drifted Deployment and how the cluster applies it: by a
// Flux Kustomization of a GitRepository following ref, or by an Argo CD
// Application following revision.
type appliedFrom struct {
	namespace, name, path string
	flux                  bool
	// ref is the GitRepository's branch ("" for no ref at all); revision
	// the Application's targetRevision.
	ref, revision string
}

const (
	platform   = "acme/platform"
	worldToken = "ghs_branchWorldToken0000000000000000000"
)

func newBranchWorld(t *testing.T, workloads ...appliedFrom) *branchWorld {
	t.Helper()
	return newBranchWorldOn(t, "main", workloads...)
}

// newBranchWorldOn is newBranchWorld with defaultBranch as GitHub names the
// repository's default branch; a master branch exists beside main.
func newBranchWorldOn(t *testing.T, defaultBranch string, workloads ...appliedFrom) *branchWorld {
	t.Helper()
	w := &branchWorld{git: gitserver.New(t)}
	files := map[string]string{"README.md": "platform\n"}
	for _, a := range workloads {
		files[a.path+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + a.name + ".yaml\n"
		files[a.path+"/"+a.name+".yaml"] = deployment(a.namespace, a.name, "1.0.0")
	}
	w.git.CreateRepoFiles(t, platform, files)
	// staging is main and one commit of its own, so that a commit built on
	// one is never based on the other.
	w.git.CommitAs(t, platform, "staging", gitserver.PlatformTeam, gitserver.PlatformTeam, map[string]string{"STAGING.md": "staging\n"}, "staging")
	w.git.CommitAs(t, platform, "master", gitserver.PlatformTeam, gitserver.PlatformTeam, map[string]string{"MASTER.md": "master\n"}, "master")
	w.git.SetTokenCheck(func(token string) bool { return token == worldToken })
	w.hub = ghemu.NewHub(t, ghemu.HubOptions{Tokens: map[string]string{worldToken: "kedge-bot"}})
	w.hub.AddRepo(ghemu.Options{Owner: "acme", Repo: "platform", DefaultBranch: defaultBranch, Branches: ghemu.GitBranches(w.git.RepoPath(platform))})
	w.set = branchCluster(w.git.RepoURL(platform), workloads)

	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod"
	cfg.Repo.Owner, cfg.Repo.Name = "acme", "platform"
	cfg.Repo.URL = w.git.RepoURL(platform)
	// An allowlist: each namespace's PR goes to the branch the cluster
	// applies it from.
	cfg.Repos = []config.RepoRule{{Match: "acme/team-*", CloneURL: w.git.URL + "/{owner}/{name}.git"}}
	cfg.GitHub.APIURL = w.hub.URL + "/api/v3/"
	cfg.GitHub.Token = worldToken
	cfg.Git.CacheDir = t.TempDir()
	cfg.Limits.MutationGap = 0
	require.NoError(t, cfg.Validate(config.ModeRun))
	w.cfg = cfg
	return w
}

// branchCluster moved every namespace to revision 1-25-0 while its
// Deployments run 1-24-0's sidecar.
func branchCluster(url string, workloads []appliedFrom) *objects.Set {
	set := &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", oldProxy), meshtest.IstiodRevision("1-25-0", newProxy)).AddTo(set)
	ctrl := true
	namespaces := map[string]bool{}
	for _, a := range workloads {
		if !namespaces[a.namespace] {
			namespaces[a.namespace] = true
			set.Namespaces = append(set.Namespaces, meshtest.Namespace(a.namespace, map[string]string{"istio.io/rev": "1-25-0"}))
		}
		meta := metav1.ObjectMeta{Name: a.name, Namespace: a.namespace, UID: types.UID("deploy-" + a.name), Labels: map[string]string{}}
		if a.flux {
			var ref *objects.GitRepositoryRef
			if a.ref != "" {
				ref = &objects.GitRepositoryRef{Branch: a.ref}
			}
			set.GitRepositories = append(set.GitRepositories, objects.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: a.name},
				Spec:       objects.GitRepositorySpec{URL: url, Ref: ref},
			})
			set.Kustomizations = append(set.Kustomizations, objects.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: a.name},
				Spec:       objects.KustomizationSpec{Path: "./" + a.path, SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: a.name}},
			})
			meshtest.FluxLabels(meta.Labels, "flux-system", a.name)
		} else {
			set.Applications = append(set.Applications, objects.Application{
				ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: a.name},
				Spec: objects.ApplicationSpec{
					Source:      &objects.ApplicationSource{RepoURL: url, Path: a.path, TargetRevision: a.revision},
					Destination: objects.ApplicationDestination{Namespace: a.namespace},
				},
			})
			meta.Labels["app.kubernetes.io/instance"] = a.name
		}
		set.Deployments = append(set.Deployments, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta})
		rs := objects.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: a.name + "-1", Namespace: a.namespace, UID: types.UID("rs-" + a.name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: a.name, UID: meta.UID, Controller: &ctrl}}}}
		set.ReplicaSets = append(set.ReplicaSets, &rs)
		pod := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: a.name + "-1-a", Namespace: a.namespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &ctrl}}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: a.name, Image: "ghcr.io/example/" + a.name + ":1.0.0"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		meshtest.InjectPod(&pod, "1-24-0", oldProxy)
		set.Pods = append(set.Pods, objects.Pods(pod)...)
	}
	return set
}

func (w *branchWorld) source(context.Context) (*objects.Set, error) {
	copied := *w.set
	return &copied, nil
}

// cycle is what one cycle did: its pushes and mutating GitHub calls.
type cycle struct {
	pushes, mutating int
	report           *reconcile.Report
}

func (w *branchWorld) cycle(t *testing.T, svc *assemble.Service) cycle {
	t.Helper()
	pushes, mutating := w.git.Pushes(), len(w.mutating())
	report, err := svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)
	return cycle{pushes: w.git.Pushes() - pushes, mutating: len(w.mutating()) - mutating, report: report}
}

func (w *branchWorld) mutating() []ghemu.Call {
	var out []ghemu.Call
	for _, c := range w.hub.AllCalls() {
		if c.Mutating() {
			out = append(out, c)
		}
	}
	return out
}

// closedByKedge are the PRs kedge closed: a PATCH setting state closed.
func (w *branchWorld) closedByKedge() []string {
	var out []string
	for _, c := range w.mutating() {
		if c.Method == "PATCH" && strings.Contains(c.Path, "/pulls/") && strings.Contains(string(c.Body), `"closed"`) {
			out = append(out, c.Path)
		}
	}
	return out
}

// basedOn asserts that pr's branch is one commit, kedge's, right on the
// tip of the PR's base: it carries nothing of another branch.
func (w *branchWorld) basedOn(t *testing.T, pr *github.PullRequest) {
	t.Helper()
	head, base := pr.GetHead().GetRef(), pr.GetBase().GetRef()
	log := w.git.Log(t, platform, head)
	require.NotEmpty(t, log, head)
	require.Len(t, log[0].Parents, 1, head)
	assert.Equal(t, w.git.BranchTip(t, platform, base), log[0].Parents[0], "%s is built on the tip of %s", head, base)
	for _, other := range []string{"main", "staging", "master"} {
		if other != base {
			assert.False(t, w.git.IsAncestor(platform, w.git.BranchTip(t, platform, other), w.git.BranchTip(t, platform, head)) &&
				!w.git.IsAncestor(platform, w.git.BranchTip(t, platform, other), w.git.BranchTip(t, platform, base)),
				"%s carries nothing of %s", head, other)
		}
	}
}

// An Application on HEAD and a Kustomization on main of one repository are
// one target: one push, one PR per namespace, and the cycles after change
// nothing and close nothing.
func TestHEADAndTheDefaultBranchAreOneTarget(t *testing.T) {
	w := newBranchWorld(t,
		appliedFrom{namespace: "shop", name: "web", path: "apps/shop", revision: "HEAD"},
		appliedFrom{namespace: "cart", name: "api", path: "apps/cart", flux: true, ref: "main"},
		appliedFrom{namespace: "search", name: "index", path: "apps/search", revision: ""},
	)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)

	first := w.cycle(t, svc)
	assert.Equal(t, 1, first.pushes, "one push for the one repository branch")
	require.Len(t, first.report.Repositories, 1)
	assert.Equal(t, "main", first.report.Repositories[0].Branch)
	prs := w.hub.Repo(platform).PRs()
	require.Len(t, prs, 3, "one PR per namespace")
	heads := map[string]string{}
	for _, pr := range prs {
		heads[pr.GetHead().GetRef()] = pr.GetBase().GetRef()
		w.basedOn(t, pr)
		s, ok := prstate.ParseState(pr.GetBody())
		require.True(t, ok)
		assert.Equal(t, platform, s.Repo)
		assert.Equal(t, "main", s.Base)
	}
	assert.Equal(t, map[string]string{"kedge/prod/shop": "main", "kedge/prod/cart": "main", "kedge/prod/search": "main"}, heads)

	for i, name := range []string{"second", "third"} {
		c := w.cycle(t, svc)
		assert.Zero(t, c.pushes, "%s cycle pushes nothing", name)
		assert.Zero(t, c.mutating, "%s cycle makes no mutating call", name)
		assert.Len(t, w.hub.Repo(platform).PRs(), 3, "%s cycle (%d)", name, i)
	}
	assert.Empty(t, w.closedByKedge(), "no PR closed")
	for _, o := range first.report.Outcomes {
		assert.Equal(t, reconcile.ActOpen, o.Action, o.Namespace)
	}
}

// Two branches of one repository for one namespace: two PRs with their
// own branches, each against its own base with only that base's history,
// and nothing else closed.
func TestTwoBranchesOfOneRepositoryForOneNamespace(t *testing.T) {
	w := newBranchWorld(t,
		appliedFrom{namespace: "billing", name: "api", path: "apps/billing", flux: true, ref: "main"},
		appliedFrom{namespace: "billing", name: "canary", path: "apps/billing-canary", revision: "staging"},
		appliedFrom{namespace: "shop", name: "web", path: "apps/shop", revision: "HEAD"},
	)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)

	first := w.cycle(t, svc)
	assert.Equal(t, 2, first.pushes, "one push per repository branch")
	prs := w.hub.Repo(platform).PRs()
	require.Len(t, prs, 3)
	byHead := map[string]*github.PullRequest{}
	for _, pr := range prs {
		byHead[pr.GetHead().GetRef()] = pr
		w.basedOn(t, pr)
	}
	main, staging := byHead["kedge/prod/billing"], byHead["kedge/prod/billing@staging"]
	require.NotNil(t, main)
	require.NotNil(t, staging)
	assert.Equal(t, "main", main.GetBase().GetRef())
	assert.Equal(t, "staging", staging.GetBase().GetRef())
	assert.Contains(t, w.git.ReadFile(t, platform, main.GetHead().GetRef(), "apps/billing/api.yaml"), "kedge.io/restartedAt")
	assert.NotContains(t, w.git.ReadFile(t, platform, main.GetHead().GetRef(), "apps/billing-canary/canary.yaml"), "kedge.io/restartedAt")
	assert.Contains(t, w.git.ReadFile(t, platform, staging.GetHead().GetRef(), "apps/billing-canary/canary.yaml"), "kedge.io/restartedAt")
	assert.NotContains(t, w.git.ReadFile(t, platform, staging.GetHead().GetRef(), "apps/billing/api.yaml"), "kedge.io/restartedAt")
	assert.Equal(t, "main", byHead["kedge/prod/shop"].GetBase().GetRef())
	assert.ElementsMatch(t, []string{
		fmt.Sprintf("| billing | 1 | 1 of 1 | 1-25-0 | [#%d]", main.GetNumber()),
		fmt.Sprintf("| billing | 1 | 1 of 1 | 1-25-0 | [#%d]", staging.GetNumber()),
	}, w.dashboardRows(t, "billing"), "each branch's row shows its own workload")

	c := w.cycle(t, svc)
	assert.Zero(t, c.pushes)
	assert.Zero(t, c.mutating)
	assert.Empty(t, w.closedByKedge(), "nothing closed")
	for _, pr := range w.hub.Repo(platform).PRs() {
		assert.Equal(t, "open", pr.GetState(), "#%d", pr.GetNumber())
		w.basedOn(t, pr)
	}
}

// A PR an earlier kedge opened for staging's target under the name the
// default branch's target now has is carried on, never opened twice, and
// the default branch's target takes the longer name rather than move it.
func TestPROpenedUnderAnEarlierNameIsCarriedOn(t *testing.T) {
	w := newBranchWorld(t,
		appliedFrom{namespace: "billing", name: "api", path: "apps/billing", flux: true, ref: "main"},
		appliedFrom{namespace: "billing", name: "canary", path: "apps/billing-canary", revision: "staging"},
	)
	// What kedge used to do: kedge/prod/billing on staging, its PR against
	// staging, its state recording neither repository nor base.
	kedge := gitserver.Identity{Name: w.cfg.Git.AuthorName, Email: w.cfg.Git.AuthorEmail}
	w.git.CommitAs(t, platform, "kedge/prod/billing", kedge, kedge, map[string]string{"apps/billing-canary/NOTE": "old\n"}, "Restart canary")
	gh, err := forge.New(context.Background(), forge.Config{APIURL: w.cfg.GitHub.APIURL, Owner: "acme", Repo: "platform", Token: worldToken, HTTPClient: w.hub.Client(), MinMutationGap: -1})
	require.NoError(t, err)
	old := prstate.NewState("prod", "billing", []drift.Workload{{Namespace: "billing", Kind: "Deployment", Name: "canary", Desired: drift.Desired{Revision: "1-25-0", Image: newProxy}}})
	legacy, err := gh.CreatePR(context.Background(), forge.NewPR{Title: "Restart billing", Head: "kedge/prod/billing", Base: "staging", Body: "old\n" + old.Block()})
	require.NoError(t, err)

	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)
	first := w.cycle(t, svc)
	prs := w.hub.Repo(platform).PRs()
	require.Len(t, prs, 2, "the earlier PR is carried on, and the default branch's gets one of its own")
	byHead := map[string]*github.PullRequest{}
	for _, pr := range prs {
		byHead[pr.GetHead().GetRef()] = pr
		assert.Equal(t, "open", pr.GetState())
	}
	carried := byHead["kedge/prod/billing"]
	require.NotNil(t, carried)
	assert.Equal(t, legacy.Number, carried.GetNumber())
	assert.Equal(t, "staging", carried.GetBase().GetRef())
	s, ok := prstate.ParseState(carried.GetBody())
	require.True(t, ok)
	assert.Equal(t, "staging", s.Base, "its state now records its base")
	w.basedOn(t, carried)
	own := byHead["kedge/prod/billing@main"]
	require.NotNil(t, own, "the default branch's target leaves the earlier PR's branch alone")
	assert.Equal(t, "main", own.GetBase().GetRef())
	w.basedOn(t, own)
	assert.Empty(t, w.closedByKedge())
	assert.Equal(t, 2, first.pushes)

	c := w.cycle(t, svc)
	assert.Zero(t, c.pushes)
	assert.Zero(t, c.mutating)
}

// A Flux GitRepository without a ref follows the branch named master:
// where master is the default branch, it and an Application on HEAD are
// one target; where it is not, master is a base of its own, with its own
// PR branch name.
func TestFluxWithoutARefFollowsMaster(t *testing.T) {
	workloads := []appliedFrom{
		{namespace: "shop", name: "web", path: "apps/shop", revision: "HEAD"},
		{namespace: "cart", name: "api", path: "apps/cart", flux: true},
	}
	t.Run("master is the default branch", func(t *testing.T) {
		w := newBranchWorldOn(t, "master", workloads...)
		svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
		require.NoError(t, err)
		first := w.cycle(t, svc)
		assert.Equal(t, 1, first.pushes)
		heads := map[string]string{}
		for _, pr := range w.hub.Repo(platform).PRs() {
			heads[pr.GetHead().GetRef()] = pr.GetBase().GetRef()
			w.basedOn(t, pr)
		}
		assert.Equal(t, map[string]string{"kedge/prod/shop": "master", "kedge/prod/cart": "master"}, heads)
		c := w.cycle(t, svc)
		assert.Zero(t, c.pushes)
		assert.Zero(t, c.mutating)
	})
	t.Run("main is the default branch", func(t *testing.T) {
		w := newBranchWorld(t, workloads...)
		svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
		require.NoError(t, err)
		first := w.cycle(t, svc)
		assert.Equal(t, 2, first.pushes, "main and master are two repository branches")
		heads := map[string]string{}
		for _, pr := range w.hub.Repo(platform).PRs() {
			heads[pr.GetHead().GetRef()] = pr.GetBase().GetRef()
			w.basedOn(t, pr)
		}
		assert.Equal(t, map[string]string{"kedge/prod/shop": "main", "kedge/prod/cart@master": "master"}, heads)
		c := w.cycle(t, svc)
		assert.Zero(t, c.pushes)
		assert.Zero(t, c.mutating)
		assert.Empty(t, w.closedByKedge())
	})
}

// A workload whose Application moves from main to staging: its PR against
// main is closed by main's own target, with a comment that names where the
// workload is applied from now, and staging's target opens one of its own
// against staging. Moved back, main's target opens a PR again: the one it
// closed was not a person's answer.
func TestWorkloadMovedToAnotherBranch(t *testing.T) {
	w := newBranchWorld(t,
		appliedFrom{namespace: "billing", name: "canary", path: "apps/billing-canary", revision: "main"},
		appliedFrom{namespace: "shop", name: "web", path: "apps/shop", revision: "HEAD"},
	)
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{})
	require.NoError(t, err)
	w.cycle(t, svc)
	onMain := w.openPR(t, "kedge/prod/billing")
	assert.Equal(t, "main", onMain.GetBase().GetRef())

	w.follow("canary", "staging")
	w.cycle(t, svc)
	closed, ok := w.hub.Repo(platform).PR(onMain.GetNumber())
	require.True(t, ok)
	assert.Equal(t, "closed", closed.GetState())
	var said []string
	for _, c := range w.hub.Repo(platform).Comments(onMain.GetNumber()) {
		said = append(said, c.GetBody())
	}
	require.Len(t, said, 1)
	assert.Contains(t, said[0], "applied from acme/platform@&#8203;staging now, where kedge proposes its restart")
	assert.NotContains(t, said[0], "the base branch already carries its restart")
	onStaging := w.openPR(t, "kedge/prod/billing@staging")
	assert.Equal(t, "staging", onStaging.GetBase().GetRef())
	w.basedOn(t, onStaging)
	assert.Equal(t, "open", w.openPR(t, "kedge/prod/shop").GetState(), "the other namespace's PR is left alone")

	assert.Equal(t, []string{fmt.Sprintf("| billing | 1 | 1 of 1 | 1-25-0 | [#%d]", onStaging.GetNumber())}, w.dashboardRows(t, "billing"),
		"the dashboard has one row for billing, staging's")

	quiet := w.cycle(t, svc)
	assert.Zero(t, quiet.pushes)
	assert.Zero(t, quiet.mutating)

	// Back to main: kedge closed main's PR itself, so it is not a person's
	// refusal; main's target opens a new PR rather than ignore the drift.
	w.follow("canary", "main")
	back := w.cycle(t, svc)
	for _, o := range back.report.Outcomes {
		assert.NotEqual(t, reconcile.ActClosedIgnored, o.Action, "%s on %s", o.Namespace, o.Repo)
	}
	reopened := w.openPR(t, "kedge/prod/billing")
	assert.NotEqual(t, onMain.GetNumber(), reopened.GetNumber())
	assert.Equal(t, "main", reopened.GetBase().GetRef())
	w.basedOn(t, reopened)
}

// dashboardRows are the dashboard's rows of namespace, each up to its PR
// link.
func (w *branchWorld) dashboardRows(t *testing.T, namespace string) []string {
	t.Helper()
	issues := w.hub.Repo(platform).Issues()
	require.Len(t, issues, 1)
	var out []string
	for _, line := range strings.Split(issues[0].GetBody(), "\n") {
		if strings.HasPrefix(line, "| "+namespace+" |") {
			if i := strings.Index(line, "]("); i >= 0 {
				line = line[:i+1]
			}
			out = append(out, line)
		}
	}
	return out
}

// follow points the Application of the Deployment name at revision.
func (w *branchWorld) follow(name, revision string) {
	apps := slices.Clone(w.set.Applications)
	for i := range apps {
		if apps[i].Name == name {
			source := *apps[i].Spec.Source
			source.TargetRevision = revision
			apps[i].Spec.Source = &source
		}
	}
	w.set.Applications = apps
}

// openPR is the one open PR from head.
func (w *branchWorld) openPR(t *testing.T, head string) *github.PullRequest {
	t.Helper()
	var open []*github.PullRequest
	for _, pr := range w.hub.Repo(platform).PRs() {
		if pr.GetHead().GetRef() == head && pr.GetState() == "open" {
			open = append(open, pr)
		}
	}
	require.Len(t, open, 1, "open PRs from %s", head)
	return open[0]
}
