package plan_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const repoFixtures = "../../testdata/repos"

// teamsCluster applies from the platform-and-teams fixture's three
// repositories, from a pinned one and from an outside one.
func teamsCluster(t *testing.T) *objects.Set {
	t.Helper()
	set := argoCluster(t, []argoWorkload{
		{"shop", "Deployment", "web", "shop", false},
		{"shop", "Deployment", "cart", "shop", false},
		{"addons", "Deployment", "agent", "vendor", false},
	})
	for _, w := range []struct{ namespace, name, kustomization string }{
		{"ingress", "gateway", "infra"}, {"payments", "api", "payments"}, {"legacy", "old", "legacy"},
	} {
		addArgoWorkload(set, argoWorkload{namespace: w.namespace, kind: "Deployment", name: w.name})
		d := set.Deployments[len(set.Deployments)-1]
		d.Annotations = nil
		d.Labels = map[string]string{}
		meshtest.FluxLabels(d.Labels, "flux-system", w.kustomization)
		set.Namespaces = append(set.Namespaces, meshtest.Namespace(w.namespace, map[string]string{"istio.io/rev": "1-25-0"}))
	}
	gitRepo := func(name, url string, ref *objects.GitRepositoryRef) objects.GitRepository {
		return objects.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}, Spec: objects.GitRepositorySpec{URL: url, Ref: ref}}
	}
	kustomization := func(name, path, source string) objects.Kustomization {
		return objects.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec: objects.KustomizationSpec{Path: path, SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: source}}}
	}
	set.GitRepositories = []objects.GitRepository{
		gitRepo("platform", "ssh://git@github.com/acme/platform.git", &objects.GitRepositoryRef{Branch: "main"}),
		gitRepo("payments", "https://github.com/Acme/Team-Payments", &objects.GitRepositoryRef{Branch: "release"}),
		gitRepo("legacy", "https://github.com/acme/legacy", &objects.GitRepositoryRef{Tag: "v1.2"}),
	}
	set.Kustomizations = []objects.Kustomization{
		kustomization("infra", "./infra", "platform"),
		kustomization("payments", "./deploy", "payments"),
		kustomization("legacy", "./", "legacy"),
	}
	app := func(name string, sources ...objects.ApplicationSource) objects.Application {
		return objects.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name},
			Spec: objects.ApplicationSpec{Sources: sources, Destination: objects.ApplicationDestination{Namespace: name}}}
	}
	set.Applications = []objects.Application{
		app("shop",
			objects.ApplicationSource{RepoURL: "git@github.com:acme/team-shop.git", Path: "apps/shop", TargetRevision: "HEAD"},
			objects.ApplicationSource{RepoURL: "https://github.com/acme/platform.git", Path: "shared/shop", TargetRevision: "main"},
		),
		app("vendor", objects.ApplicationSource{RepoURL: "https://github.com/vendor/addons", Path: "agent"}),
	}
	return set
}

// teamsRepositories are the checkouts route.Targets asks for under rules.
func teamsRepositories(t *testing.T, set *objects.Set, rules []route.Rule) []plan.Repository {
	t.Helper()
	targets, _ := route.Targets(set, rules)
	var out []plan.Repository
	for _, tg := range targets {
		root := filepath.Join(repoFixtures, "platform-and-teams", strings.ReplaceAll(tg.Repo, "/", "_"))
		out = append(out, plan.RepositoryFor(tg, root, nil))
	}
	return out
}

// placed is where a workload was planned.
type placed struct{ status, repository, path, detail string }

// placements is where the plan put each workload, by "namespace/name".
func placements(res *plan.Result) map[string]placed {
	got := map[string]placed{}
	for _, w := range res.Plan.Workloads {
		got[w.Namespace+"/"+w.Name] = placed{w.Manifest.Status, w.Manifest.Repository, w.Manifest.Path, w.Manifest.Detail}
	}
	return got
}

func TestSeveralRepositories(t *testing.T) {
	set := teamsCluster(t)
	repos := teamsRepositories(t, set, []route.Rule{{Match: "acme/*"}})
	require.Equal(t, []string{"acme/platform@main", "acme/team-payments@release", "acme/team-shop"}, labels(repos))

	res, err := plan.Build(set, plan.Options{Repositories: repos})
	require.NoError(t, err)

	got := placements(res)
	assert.Equal(t, map[string]placed{
		"ingress/gateway": {"found", "acme/platform@main", "infra/ingress/gateway.yaml", ""},
		"payments/api":    {"found", "acme/team-payments@release", "deploy/api.yaml", ""},
		"shop/web":        {"found", "acme/team-shop", "apps/shop/web.yaml", ""},
		"shop/cart":       {"found", "acme/platform@main", "shared/shop/cart.yaml", ""},
		"legacy/old": {"no-repo", "acme/legacy", "",
			"Flux Kustomization flux-system/legacy applies it from github.com/acme/legacy and follows tag v1.2, which a pull request cannot move"},
		"addons/agent": {"no-repo", "vendor/addons", "",
			"Argo CD Application argocd/vendor applies it from github.com/vendor/addons, which repos: does not list"},
	}, got)

	// Each checkout gets exactly its own workloads' files, never a copy
	// of another's.
	require.Len(t, res.Repositories, 3)
	assert.Equal(t, map[string][]string{"ingress": {"infra/ingress/gateway.yaml"}, "shop": {"shared/shop/cart.yaml"}}, editedPaths(res.Repositories[0]))
	assert.Equal(t, map[string][]string{"payments": {"deploy/api.yaml"}}, editedPaths(res.Repositories[1]))
	assert.Equal(t, map[string][]string{"shop": {"apps/shop/web.yaml"}}, editedPaths(res.Repositories[2]))
	for i, r := range res.Repositories {
		assert.Equal(t, repos[i].Name, r.Name)
		assert.Equal(t, repos[i].Branch, r.Branch)
		assert.NotNil(t, r.Index)
	}

	assert.Equal(t, []string{"acme/platform@main", "acme/team-shop"}, res.Namespaces["shop"].Repositories)
	assert.Equal(t, []string{"acme/team-payments@release"}, res.Namespaces["payments"].Repositories)
	assert.Empty(t, res.Namespaces["addons"].Repositories)
	assert.Equal(t, "https://github.com/vendor/addons", res.Namespaces["addons"].OtherRepo)
	assert.Equal(t, "", res.Namespaces["legacy"].OtherRepo, "a pinned source is no other repository")
	assert.Len(t, res.Edits.All(), 4, "the union holds every repository's edits")
}

// TestACheckoutNeverEditsAnothersWorkload plans each checkout alone among
// the cluster's repositories: its edits are a subset of what it gets in
// the full plan, and it never gets a file of a workload another checkout
// answers.
func TestACheckoutNeverEditsAnothersWorkload(t *testing.T) {
	set := teamsCluster(t)
	all := teamsRepositories(t, set, []route.Rule{{Match: "acme/*"}})
	full, err := plan.Build(set, plan.Options{Repositories: all})
	require.NoError(t, err)
	for i, r := range all {
		t.Run(r.Label(), func(t *testing.T) {
			alone, err := plan.Build(set, plan.Options{Repositories: []plan.Repository{r}})
			require.NoError(t, err)
			assert.Equal(t, editedPaths(full.Repositories[i]), editedPaths(alone.Repositories[0]))
			for _, w := range alone.Plan.Workloads {
				if w.Manifest.Status == drift.ManifestFound {
					assert.Equal(t, r.Label(), w.Manifest.Repository, "%s/%s", w.Namespace, w.Name)
				}
			}
		})
	}
}

func TestRepositoriesFromTheCommandLine(t *testing.T) {
	set := teamsCluster(t)
	root := func(name string) string { return filepath.Join(repoFixtures, "platform-and-teams", name) }
	res, err := plan.Build(set, plan.Options{
		RepositoriesFrom: "--repo",
		Repositories: []plan.Repository{
			// Named without a branch: the checkout answers every branch.
			{Name: "acme/team-payments", Root: root("acme_team-payments"), AllBranches: true},
			// Named with another branch than the cluster follows.
			{Name: "acme/platform", Branch: "develop", Root: root("acme_platform")},
		},
	})
	require.NoError(t, err)
	got := placements(res)
	assert.Equal(t, placed{"found", "acme/team-payments", "deploy/api.yaml", ""}, got["payments/api"])
	assert.Equal(t, placed{"no-repo", "acme/platform", "",
		"Flux Kustomization flux-system/infra applies it from branch main of github.com/acme/platform, which is not checked out"}, got["ingress/gateway"])
	assert.Equal(t, placed{"no-repo", "acme/team-shop", "",
		"Argo CD Application argocd/shop applies it from github.com/acme/team-shop, which --repo does not list"}, got["shop/web"])
}

// TestAnApplicationSourceOutsideTheList: of an Application reading two
// repositories, only one listed, the workload the listed checkout holds is
// planned there, and the other is no-repo, not "not-found".
func TestAnApplicationSourceOutsideTheList(t *testing.T) {
	set := teamsCluster(t)
	repos := teamsRepositories(t, set, []route.Rule{{Match: "acme/platform"}})
	require.Equal(t, []string{"acme/platform@main"}, labels(repos))
	res, err := plan.Build(set, plan.Options{Repositories: repos})
	require.NoError(t, err)
	got := placements(res)
	assert.Equal(t, placed{"found", "acme/platform@main", "shared/shop/cart.yaml", ""}, got["shop/cart"])
	assert.Equal(t, placed{"no-repo", "acme/team-shop", "",
		"Argo CD Application argocd/shop applies it from github.com/acme/team-shop, which repos: does not list"}, got["shop/web"])
}

// TestOneRepositoryIsTheSinglePlan: one checkout given as Repositories
// plans what the single-checkout options plan.
func TestOneRepositoryIsTheSinglePlan(t *testing.T) {
	set := teamsCluster(t)
	root := filepath.Join(repoFixtures, "platform-and-teams", "acme_platform")
	urls := []string{"https://github.com/acme/platform"}
	single, err := plan.Build(set, plan.Options{RepoRoot: root, RepoURLs: urls})
	require.NoError(t, err)
	several, err := plan.Build(set, plan.Options{Repositories: []plan.Repository{{Name: "acme/platform", Root: root, URLs: urls, AllBranches: true}}})
	require.NoError(t, err)
	assert.Equal(t, single.Edits.All(), several.Edits.All())
	for i, w := range single.Plan.Workloads {
		if w.Manifest.Status == drift.ManifestFound {
			assert.Equal(t, w.Manifest.Path, several.Plan.Workloads[i].Manifest.Path)
		}
	}
	require.Len(t, single.Repositories, 1)
	assert.Equal(t, single.Edits, single.Repositories[0].Edits)
}

func labels(repos []plan.Repository) []string {
	out := make([]string, len(repos))
	for i, r := range repos {
		out[i] = r.Label()
	}
	return out
}

func editedPaths(r plan.RepositoryEdits) map[string][]string {
	out := map[string][]string{}
	for ns, files := range r.Edits.Namespaces {
		for _, f := range files {
			out[ns] = append(out[ns], f.Path)
		}
	}
	return out
}

var updateSnapshot = flag.Bool("update", false, "rewrite the snapshots and goldens built by the tests: testdata/repos/platform-and-teams/cluster, testdata/runtime")

// TestTeamsSnapshotIsCurrent keeps the snapshot `kedge plan` reads in the
// CLI test the same cluster as teamsCluster; -update rewrites it.
func TestTeamsSnapshotIsCurrent(t *testing.T) {
	dir := filepath.Join(repoFixtures, "platform-and-teams", "cluster")
	if *updateSnapshot {
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, snapshot.Write(teamsCluster(t), dir))
	}
	fresh := t.TempDir()
	require.NoError(t, snapshot.Write(teamsCluster(t), fresh))
	entries, err := os.ReadDir(fresh)
	require.NoError(t, err)
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(fresh, e.Name()))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err, "run go test ./internal/plan -run TestTeamsSnapshotIsCurrent -update")
		assert.Equal(t, string(want), string(got), e.Name())
	}
}

// TestMigrationsAreRoutedLikeWorkloads: a namespace's label is looked for
// only in the checkout the cluster applies its Namespace from; one applied
// from a pinned source is blocked, naming why.
func TestMigrationsAreRoutedLikeWorkloads(t *testing.T) {
	set := teamsCluster(t)
	for i := range set.Namespaces {
		ns := &set.Namespaces[i]
		switch ns.Name {
		case "legacy", "payments":
			meshtest.FluxLabels(ns.Labels, "flux-system", ns.Name)
			ns.Labels["move"] = "yes"
		}
	}
	repos := teamsRepositories(t, set, []route.Rule{{Match: "acme/*"}})
	res, err := plan.Build(set, plan.Options{
		Repositories: repos,
		Migrations:   []migrate.Policy{{Key: "migrations[0]", From: "1-25-0", To: "1-24-0", NamespaceSelector: map[string]string{"move": "yes"}}},
	})
	require.NoError(t, err)
	got := map[string]drift.Migration{}
	for _, m := range res.Plan.Migrations {
		got[m.Namespace] = m
	}
	require.Len(t, got, 2)
	assert.Equal(t, drift.ManifestNoRepo, got["legacy"].Manifest.Status)
	assert.Equal(t, drift.BlockManifest, got["legacy"].Blocked)
	assert.Contains(t, got["legacy"].Detail, "follows tag v1.2, which a pull request cannot move")
	// Looked for in team-payments' checkout, which holds no Namespace.
	assert.Equal(t, drift.ManifestNotFound, got["payments"].Manifest.Status)
	assert.Equal(t, "no Namespace payments in the repository", got["payments"].Manifest.Detail)
}

// TestUnavailableRepositoryIsNamedAsSuch: a listed repository that could
// not be checked out is not "not listed": its workloads say it could not
// be opened and why, with some repositories open and with none.
func TestUnavailableRepositoryIsNamedAsSuch(t *testing.T) {
	set := teamsCluster(t)
	repos := teamsRepositories(t, set, []route.Rule{{Match: "acme/*"}})
	require.Equal(t, "acme/team-payments@release", repos[1].Label())
	down := plan.UnavailableRepository{Repository: repos[1], Reason: "open: clone: authentication required"}
	down.Root = ""
	want := placed{"no-repo", "acme/team-payments", "",
		"Flux Kustomization flux-system/payments applies it from github.com/acme/team-payments, which could not be checked out this cycle: open: clone: authentication required"}

	tests := []struct {
		name  string
		repos []plan.Repository
	}{
		{name: "the others open", repos: []plan.Repository{repos[0], repos[2]}},
		{name: "none open"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := plan.Build(set, plan.Options{Repositories: tc.repos, Unavailable: []plan.UnavailableRepository{down}})
			require.NoError(t, err)
			got := placements(res)
			assert.Equal(t, want, got["payments/api"])
			assert.Empty(t, res.Namespaces["payments"].OtherRepo, "a listed repository is not another repository")
			assert.NotContains(t, got["addons/agent"].detail, "could not be checked out", "other repositories keep their own reason")
		})
	}
}

// TestDefaultBranchCheckoutAnswersHEAD: once the default branch is named,
// its checkout holds what an Application following HEAD applies.
func TestDefaultBranchCheckoutAnswersHEAD(t *testing.T) {
	set := teamsCluster(t)
	targets, _ := route.Targets(set, []route.Rule{{Match: "acme/team-shop"}})
	targets = route.Resolve(targets, map[string]string{"acme/team-shop": "main"})
	require.Len(t, targets, 1)
	root := filepath.Join(repoFixtures, "platform-and-teams", "acme_team-shop")
	repo := plan.RepositoryFor(targets[0], root, nil)
	require.Equal(t, "acme/team-shop@main", repo.Label())

	res, err := plan.Build(set, plan.Options{Repositories: []plan.Repository{repo}})
	require.NoError(t, err)
	assert.Equal(t, placed{"found", "acme/team-shop@main", "apps/shop/web.yaml", ""}, placements(res)["shop/web"])

	repo.Default = false
	res, err = plan.Build(set, plan.Options{Repositories: []plan.Repository{repo}})
	require.NoError(t, err)
	assert.Equal(t, "no-repo", placements(res)["shop/web"].status, "a checkout of main alone does not answer HEAD")
}
