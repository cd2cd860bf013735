package assemble

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/migrate"
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
