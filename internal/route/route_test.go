package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

func TestNormalizeURLAndRepoOf(t *testing.T) {
	tests := []struct {
		url, normalized, repo string
	}{
		{"https://github.com/acme/fleet", "github.com/acme/fleet", "acme/fleet"},
		{"https://github.com/acme/fleet.git", "github.com/acme/fleet", "acme/fleet"},
		{"https://x-access-token@github.com/acme/fleet/", "github.com/acme/fleet", "acme/fleet"},
		{"ssh://git@github.com/acme/fleet.git", "github.com/acme/fleet", "acme/fleet"},
		{"ssh://git@github.com:22/acme/fleet.git", "github.com/acme/fleet", "acme/fleet"},
		{"git@github.com:acme/fleet.git", "github.com/acme/fleet", "acme/fleet"},
		{"HTTPS://GitHub.com/Acme/Fleet", "github.com/acme/fleet", "acme/fleet"},
		{"https://ghe.corp.example/platform/apps.git", "ghe.corp.example/platform/apps", "platform/apps"},
		{"git@ghe.corp.example:Team-A/Payments", "ghe.corp.example/team-a/payments", "team-a/payments"},
		{"https://gitlab.example/group/sub/repo.git", "gitlab.example/group/sub/repo", ""},
		{"https://github.com/acme", "github.com/acme", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.normalized, NormalizeURL(tt.url), tt.url)
		assert.Equal(t, tt.repo, RepoOf(tt.url), tt.url)
	}
	assert.NotEqual(t, NormalizeURL("https://github.com/acme/fleet"), NormalizeURL("https://github.com/acme/fleet-staging"))
}

func TestFluxRef(t *testing.T) {
	tests := []struct {
		name           string
		ref            *objects.GitRepositoryRef
		branch, pinned string
	}{
		{"no ref follows master", nil, "master", ""},
		{"empty ref follows master", &objects.GitRepositoryRef{}, "master", ""},
		{"branch", &objects.GitRepositoryRef{Branch: "staging"}, "staging", ""},
		{"tag beats branch", &objects.GitRepositoryRef{Branch: "main", Tag: "v1.2"}, "", "tag v1.2"},
		{"semver beats tag", &objects.GitRepositoryRef{Tag: "v1.2", SemVer: ">=1.0.0"}, "", "semver range >=1.0.0"},
		{"name beats semver", &objects.GitRepositoryRef{SemVer: ">=1.0.0", Name: "refs/tags/v1"}, "", "ref refs/tags/v1"},
		{"a branch by name", &objects.GitRepositoryRef{Name: "refs/heads/release"}, "release", ""},
		{"commit beats everything", &objects.GitRepositoryRef{Branch: "main", Name: "refs/heads/main", Commit: "abc123"}, "", "commit abc123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			branch, pinned := fluxRef(tt.ref)
			assert.Equal(t, tt.branch, branch)
			assert.Equal(t, tt.pinned, pinned)
		})
	}
}

func TestArgoRevision(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		rev, branch, pinned string
	}{
		{"", "", ""},
		{"HEAD", "", ""},
		{"main", "main", ""},
		{"release/2026-q1", "release/2026-q1", ""},
		{"release-1.2", "release-1.2", ""},
		{"refs/heads/prod", "prod", ""},
		{"refs/tags/v1", "", "ref refs/tags/v1"},
		{sha, "", "commit " + sha},
		{"1.2.*", "", "version 1.2.*"},
		{">=1.2.0 <1.3.0", "", "version >=1.2.0 <1.3.0"},
		{"v1.2.0", "", "version v1.2.0"},
		{"*", "", "version *"},
		{"~1.4", "", "version ~1.4"},
	}
	for _, tt := range tests {
		branch, pinned := argoRevision(tt.rev)
		assert.Equal(t, tt.branch, branch, tt.rev)
		assert.Equal(t, tt.pinned, pinned, tt.rev)
	}
}

// cluster is a cluster applying from a platform repository (Flux, on
// main and on a staging branch), a team repository (Argo CD, several
// sources) and an outside one.
func cluster() *objects.Set {
	gitRepo := func(ns, name, url string, ref *objects.GitRepositoryRef) objects.GitRepository {
		return objects.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: objects.GitRepositorySpec{URL: url, Ref: ref}}
	}
	ks := func(name, path, source string) objects.Kustomization {
		return objects.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec:       objects.KustomizationSpec{Path: path, SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: source}},
		}
	}
	app := func(name string, sources ...objects.ApplicationSource) objects.Application {
		return objects.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}, Spec: objects.ApplicationSpec{Sources: sources}}
	}
	return &objects.Set{
		GitRepositories: []objects.GitRepository{
			gitRepo("flux-system", "platform", "ssh://git@github.com/Acme/Platform.git", &objects.GitRepositoryRef{Branch: "main"}),
			gitRepo("flux-system", "platform-staging", "https://github.com/acme/platform", &objects.GitRepositoryRef{Branch: "staging"}),
			gitRepo("flux-system", "pinned", "https://github.com/acme/releases", &objects.GitRepositoryRef{Tag: "v1.2"}),
			gitRepo("flux-system", "vendor", "https://github.com/vendor/addons", nil),
		},
		Kustomizations: []objects.Kustomization{
			ks("infra", "./infra", "platform"),
			ks("infra-staging", "./staging", "platform-staging"),
			ks("releases", "./", "pinned"),
			ks("addons", "./addons", "vendor"),
			{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "oci"},
				Spec: objects.KustomizationSpec{Path: "./", SourceRef: objects.CrossObjectRef{Kind: "OCIRepository", Name: "x"}}},
		},
		Applications: []objects.Application{
			app("shop",
				objects.ApplicationSource{RepoURL: "https://charts.example", Chart: "redis", TargetRevision: "18.*"},
				objects.ApplicationSource{RepoURL: "git@github.com:acme/team-shop.git", Path: "deploy", TargetRevision: "HEAD"},
				objects.ApplicationSource{RepoURL: "https://github.com/acme/platform.git", Path: "shared/shop", TargetRevision: "main"},
				objects.ApplicationSource{RepoURL: "https://github.com/acme/team-shop", Ref: "values"},
			),
		},
	}
}

func TestOf(t *testing.T) {
	set := cluster()
	flux := func(name string) drift.Workload {
		return drift.Workload{Namespace: "apps", Kind: "Deployment", Name: "w", Labels: map[string]string{
			FluxKustomizeNameLabel: name, FluxKustomizeNamespaceLabel: "flux-system"}}
	}
	argo := drift.Workload{Namespace: "shop", Kind: "Deployment", Name: "cart",
		Annotations: map[string]string{ArgoTrackingIDAnnotation: "shop:apps/Deployment:shop/cart"}}
	tests := []struct {
		name string
		w    drift.Workload
		want []Source
	}{
		{"flux on main", flux("infra"), []Source{{URL: "ssh://git@github.com/Acme/Platform.git", Repo: "acme/platform", Branch: "main", Path: "infra", Via: "Flux Kustomization flux-system/infra"}}},
		{"flux on a branch", flux("infra-staging"), []Source{{URL: "https://github.com/acme/platform", Repo: "acme/platform", Branch: "staging", Path: "staging", Via: "Flux Kustomization flux-system/infra-staging"}}},
		{"flux on a tag", flux("releases"), []Source{{URL: "https://github.com/acme/releases", Repo: "acme/releases", Pinned: "tag v1.2", Path: ".", Via: "Flux Kustomization flux-system/releases"}}},
		{"flux without a ref", flux("addons"), []Source{{URL: "https://github.com/vendor/addons", Repo: "vendor/addons", Branch: "master", Path: "addons", Via: "Flux Kustomization flux-system/addons"}}},
		{"flux from an OCI artifact", flux("oci"), []Source{{Path: ".", Via: "Flux Kustomization flux-system/oci"}}},
		{"argo multi-source: the git sources with a path", argo, []Source{
			{URL: "git@github.com:acme/team-shop.git", Repo: "acme/team-shop", Path: "deploy", Via: "Argo CD Application argocd/shop"},
			{URL: "https://github.com/acme/platform.git", Repo: "acme/platform", Branch: "main", Path: "shared/shop", Via: "Argo CD Application argocd/shop"},
		}},
		{"helm release: not routed", drift.Workload{Labels: map[string]string{FluxHelmNameLabel: "x", FluxHelmNamespaceLabel: "y"}}, nil},
		{"untracked", drift.Workload{Name: "x"}, nil},
		{"unknown kustomization", flux("gone"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, SourcesOf(set, tt.w))
			got, ok := Of(set, tt.w)
			assert.Equal(t, len(tt.want) > 0, ok)
			if ok {
				assert.Equal(t, tt.want[0], got)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	set := cluster()
	platformURLs := []string{"https://github.com/acme/platform", "https://github.com/acme/platform.git", "ssh://git@github.com/Acme/Platform.git"}
	tests := []struct {
		name    string
		rules   []Rule
		targets []Target
		outside []Outside
	}{
		{
			name:  "one repository admitted",
			rules: []Rule{{Match: "acme/platform"}},
			targets: []Target{
				{Repo: "acme/platform", Branch: "main", URLs: []string{"https://github.com/acme/platform.git", "ssh://git@github.com/Acme/Platform.git"}, Rule: Rule{Match: "acme/platform"}},
				{Repo: "acme/platform", Branch: "staging", URLs: []string{"https://github.com/acme/platform"}, Rule: Rule{Match: "acme/platform"}},
			},
			outside: []Outside{
				{Repo: "acme/team-shop", URL: "git@github.com:acme/team-shop.git", Via: "Argo CD Application argocd/shop"},
				{Repo: "vendor/addons", URL: "https://github.com/vendor/addons", Via: "Flux Kustomization flux-system/addons"},
			},
		},
		{
			name:  "a pattern, case-insensitive, first rule wins",
			rules: []Rule{{Match: "ACME/*", Paths: []string{"clusters/prod"}}, {Match: "acme/team-shop", BaseBranch: "ignored"}},
			targets: []Target{
				{Repo: "acme/platform", Branch: "main", URLs: []string{"https://github.com/acme/platform.git", "ssh://git@github.com/Acme/Platform.git"}, Rule: Rule{Match: "ACME/*", Paths: []string{"clusters/prod"}}},
				{Repo: "acme/platform", Branch: "staging", URLs: []string{"https://github.com/acme/platform"}, Rule: Rule{Match: "ACME/*", Paths: []string{"clusters/prod"}}},
				{Repo: "acme/team-shop", URLs: []string{"git@github.com:acme/team-shop.git", "https://github.com/acme/team-shop"}, Rule: Rule{Match: "ACME/*", Paths: []string{"clusters/prod"}}},
			},
			outside: []Outside{{Repo: "vendor/addons", URL: "https://github.com/vendor/addons", Via: "Flux Kustomization flux-system/addons"}},
		},
		{
			name:  "a base branch gathers every branch the cluster follows",
			rules: []Rule{{Match: "acme/platform", BaseBranch: "trunk"}, {Match: "*/*"}},
			targets: []Target{
				{Repo: "acme/platform", Branch: "trunk", URLs: platformURLs, Rule: Rule{Match: "acme/platform", BaseBranch: "trunk"}},
				{Repo: "acme/team-shop", URLs: []string{"git@github.com:acme/team-shop.git", "https://github.com/acme/team-shop"}, Rule: Rule{Match: "*/*"}},
				{Repo: "vendor/addons", Branch: "master", URLs: []string{"https://github.com/vendor/addons"}, Rule: Rule{Match: "*/*"}},
			},
			outside: []Outside{},
		},
		{
			name:    "no rules",
			targets: []Target{},
			outside: []Outside{
				{Repo: "acme/platform", URL: "https://github.com/acme/platform.git", Via: "Argo CD Application argocd/shop"},
				{Repo: "acme/team-shop", URL: "git@github.com:acme/team-shop.git", Via: "Argo CD Application argocd/shop"},
				{Repo: "vendor/addons", URL: "https://github.com/vendor/addons", Via: "Flux Kustomization flux-system/addons"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets, outside := Targets(set, tt.rules)
			assert.Equal(t, tt.targets, targets)
			assert.Equal(t, tt.outside, outside)
		})
	}
}

func TestTargetsIsDeterministic(t *testing.T) {
	set := cluster()
	first, firstOut := Targets(set, []Rule{{Match: "*/*"}})
	reversed := *set
	reversed.Kustomizations = nil
	for i := len(set.Kustomizations) - 1; i >= 0; i-- {
		reversed.Kustomizations = append(reversed.Kustomizations, set.Kustomizations[i])
	}
	again, againOut := Targets(&reversed, []Rule{{Match: "*/*"}})
	assert.Equal(t, first, again)
	assert.Equal(t, firstOut, againOut)
}

func TestAdmit(t *testing.T) {
	rules := []Rule{{Match: "acme/team-*"}, {Match: "[bad"}, {Match: "Platform/Apps"}}
	tests := []struct {
		repo string
		want string
		ok   bool
	}{
		{"acme/team-shop", "acme/team-*", true},
		{"ACME/Team-Shop", "acme/team-*", true},
		{"platform/apps", "Platform/Apps", true},
		{"acme/platform", "", false},
		{"acme/team-shop/extra", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		r, ok := Admit(rules, tt.repo)
		assert.Equal(t, tt.ok, ok, tt.repo)
		assert.Equal(t, tt.want, r.Match, tt.repo)
	}
}

// TestResolve makes HEAD and the default branch by name one target, and
// leaves every other branch, and a repository whose default branch is not
// known, as they are.
func TestResolve(t *testing.T) {
	rule := Rule{Match: "*/*"}
	target := func(repo, branch string, urls ...string) Target {
		return Target{Repo: repo, Branch: branch, URLs: urls, Rule: rule}
	}
	tests := []struct {
		name     string
		targets  []Target
		defaults map[string]string
		want     []Target
	}{
		{
			name:     "HEAD and main are one target when main is the default branch",
			targets:  []Target{target("acme/platform", "", "https://github.com/acme/platform"), target("acme/platform", "main", "git@github.com:acme/platform.git")},
			defaults: map[string]string{"acme/platform": "main"},
			want:     []Target{{Repo: "acme/platform", Branch: "main", Default: true, URLs: []string{"git@github.com:acme/platform.git", "https://github.com/acme/platform"}, Rule: rule}},
		},
		{
			name:     "a Flux source without a ref follows master, the default branch only where master is",
			targets:  []Target{target("acme/platform", ""), target("acme/platform", "master")},
			defaults: map[string]string{"acme/platform": "main"},
			want:     []Target{{Repo: "acme/platform", Branch: "main", Default: true, Rule: rule}, {Repo: "acme/platform", Branch: "master", Rule: rule}},
		},
		{
			name:     "another branch stays its own target",
			targets:  []Target{target("Acme/Platform", "staging"), target("Acme/Platform", "main")},
			defaults: map[string]string{"acme/platform": "main"},
			want:     []Target{{Repo: "Acme/Platform", Branch: "main", Default: true, Rule: rule}, {Repo: "Acme/Platform", Branch: "staging", Rule: rule}},
		},
		{
			name:    "an unknown default branch leaves HEAD unnamed",
			targets: []Target{target("acme/platform", ""), target("acme/platform", "main")},
			want:    []Target{{Repo: "acme/platform", Rule: rule}, {Repo: "acme/platform", Branch: "main", Rule: rule}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Resolve(tt.targets, tt.defaults))
		})
	}
}
