package assemble

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/route"
)

func TestRepositoryAddresses(t *testing.T) {
	tests := []struct {
		name      string
		repo      config.RepoConfig
		apiURL    string
		wantWeb   string
		wantClone string
		wantURLs  []string
	}{
		{
			name:      "github.com",
			repo:      config.RepoConfig{Owner: "acme", Name: "gitops"},
			apiURL:    "https://api.github.com/",
			wantWeb:   "https://github.com/acme/gitops",
			wantClone: "https://github.com/acme/gitops.git",
			wantURLs:  []string{"https://github.com/acme/gitops", "https://github.com/acme/gitops"},
		},
		{
			// A GitHub Enterprise Server's repositories live on the API's
			// host; a public mirror's github.com address names it too.
			name:      "GitHub Enterprise Server",
			repo:      config.RepoConfig{Owner: "acme", Name: "gitops"},
			apiURL:    "https://git.example.com/api/v3/",
			wantWeb:   "https://git.example.com/acme/gitops",
			wantClone: "https://git.example.com/acme/gitops.git",
			wantURLs:  []string{"https://git.example.com/acme/gitops", "https://github.com/acme/gitops"},
		},
		{
			name:      "clone URL override",
			repo:      config.RepoConfig{Owner: "acme", Name: "gitops", URL: "file:///srv/git/gitops.git"},
			apiURL:    "https://api.github.com/",
			wantWeb:   "https://github.com/acme/gitops",
			wantClone: "file:///srv/git/gitops.git",
			wantURLs:  []string{"https://github.com/acme/gitops", "https://github.com/acme/gitops", "file:///srv/git/gitops.git"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Repo: tt.repo, GitHub: config.GitHubConfig{APIURL: tt.apiURL}}
			assert.Equal(t, tt.wantWeb, WebURL(cfg))
			assert.Equal(t, tt.wantClone, CloneURL(cfg))
			assert.Equal(t, tt.wantURLs, RepoURLs(cfg))
		})
	}
}

func TestPlanOptionsCarryTheConfiguration(t *testing.T) {
	cfg := &config.Config{
		Cluster:    "prod-eu-1",
		Repo:       config.RepoConfig{Owner: "acme", Name: "gitops", Paths: []string{"clusters/prod"}},
		GitHub:     config.GitHubConfig{APIURL: "https://api.github.com/"},
		Namespaces: config.NamespacesConfig{Include: []string{"team-*"}, Exclude: []string{"team-legacy"}},
		Workloads:  config.WorkloadsConfig{Kinds: []string{"Deployment"}, OptOutAnnotation: "example.com/ignore"},
		Restart:    config.RestartConfig{Annotation: "example.com/restart", TargetAnnotation: "example.com/target"},
		Migrations: []config.Migration{{From: "1-24-0", To: "stable", OptOutLabel: "example.com/stay"}},
	}
	opts := PlanOptions(cfg, "/checkout")
	assert.Equal(t, "/checkout", opts.RepoRoot)
	assert.Equal(t, "prod-eu-1", opts.Drift.Cluster)
	assert.Equal(t, []string{"team-*"}, opts.Drift.IncludeNamespaces)
	assert.Equal(t, []string{"team-legacy"}, opts.Drift.ExcludeNamespaces)
	assert.Equal(t, []string{"Deployment"}, opts.Drift.Kinds)
	assert.Equal(t, "example.com/ignore", opts.Drift.OptOutAnnotation)
	assert.Equal(t, []string{"clusters/prod"}, opts.Paths)
	assert.Equal(t, "example.com/restart", opts.Annotations.Restart)
	assert.Equal(t, "example.com/target", opts.Annotations.Target)
	assert.Equal(t, RepoURLs(cfg), opts.RepoURLs)
	// The policy keeps its key, so that a target the mesh does not know is
	// reported as the configuration key to fix.
	assert.Equal(t, []migrate.Policy{{Key: "migrations[0]", From: "1-24-0", To: "stable", OptOutLabel: "example.com/stay"}}, opts.Migrations)
}

func TestCacheDirIsPerClusterAndRepository(t *testing.T) {
	cfg := &config.Config{Cluster: "prod-eu-1", Repo: config.RepoConfig{Owner: "acme", Name: "gitops"}}
	cfg.Git.CacheDir = "/var/cache/kedge"
	dir, err := CacheDir(cfg)
	assert.NoError(t, err)
	assert.Equal(t, filepath.Join("/var/cache/kedge", "prod-eu-1"), dir)

	cfg.Git.CacheDir = ""
	dir, err = CacheDir(cfg)
	assert.NoError(t, err)
	assert.True(t, strings.HasSuffix(dir, filepath.Join("kedge", "prod-eu-1", "acme_gitops")), dir)
}

func TestRulesAdmitRepoAndTheAllowlist(t *testing.T) {
	cfg := &config.Config{Repo: config.RepoConfig{Owner: "acme", Name: "platform", BaseBranch: "main", Paths: []string{"clusters/prod"}}}
	assert.Nil(t, Rules(cfg), "without repos: kedge writes to repo: alone, as it always has")

	cfg.Repos = []config.RepoRule{{Match: "globex/*", BaseBranch: "release", CloneURL: "https://git.example.com/{owner}/{name}.git"}}
	assert.Equal(t, []route.Rule{
		{Match: "acme/platform", BaseBranch: "main", Paths: []string{"clusters/prod"}},
		{Match: "globex/*", BaseBranch: "release", CloneURL: "https://git.example.com/{owner}/{name}.git"},
	}, Rules(cfg))
}

func TestTargetAddresses(t *testing.T) {
	tests := []struct {
		name      string
		apiURL    string
		cacheDir  string
		target    route.Target
		wantClone string
		wantDir   string
	}{
		{
			name:      "github.com",
			apiURL:    "https://api.github.com/",
			cacheDir:  "/var/cache/kedge",
			target:    route.Target{Repo: "globex/team-b", Branch: "release"},
			wantClone: "https://github.com/globex/team-b.git",
			wantDir:   "/var/cache/kedge/prod-repos/globex_team-b@release",
		},
		{
			name:      "GitHub Enterprise Server, default branch",
			apiURL:    "https://git.example.com/api/v3/",
			cacheDir:  "/var/cache/kedge",
			target:    route.Target{Repo: "acme/team-a"},
			wantClone: "https://git.example.com/acme/team-a.git",
			wantDir:   "/var/cache/kedge/prod-repos/acme_team-a@default",
		},
		{
			name:      "clone URL template",
			apiURL:    "https://api.github.com/",
			cacheDir:  "/srv",
			target:    route.Target{Repo: "globex/team-b", Branch: "main", Rule: route.Rule{CloneURL: "file:///srv/git/{owner}/{name}.git"}},
			wantClone: "file:///srv/git/globex/team-b.git",
			wantDir:   "/srv/prod-repos/globex_team-b@main",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Cluster: "prod", Repo: config.RepoConfig{Owner: "acme", Name: "platform"}, GitHub: config.GitHubConfig{APIURL: tt.apiURL}}
			cfg.Git.CacheDir = tt.cacheDir
			assert.Equal(t, tt.wantClone, TargetCloneURL(cfg, tt.target))
			dir, err := TargetCacheDir(cfg, tt.target)
			assert.NoError(t, err)
			assert.Equal(t, filepath.FromSlash(tt.wantDir), dir)
			repoDir, err := CacheDir(cfg)
			assert.NoError(t, err)
			assert.False(t, strings.HasPrefix(dir, repoDir+string(filepath.Separator)), "never inside repo:'s worktree")
		})
	}
}
