package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

const (
	appID          = 4242
	installationID = 77
	owner          = "example-org"
	repoName       = "gitops"
)

// github is GitHub for one test: the emulation with kedge's App installed
// on example-org, and a git server holding example-org/gitops whose
// clones take the App's installation tokens.
type githubWorld struct {
	hub     *ghemu.Hub
	repo    *ghemu.Server
	git     *gitserver.Server
	keyFile string
}

func newGitHubWorld(t *testing.T, repo ghemu.Options) *githubWorld {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	w := &githubWorld{keyFile: keyFile, git: gitserver.New(t)}
	w.hub = ghemu.NewHub(t, ghemu.HubOptions{
		AppID: appID, AppPublicKey: &key.PublicKey, Installations: map[string]int64{owner: installationID},
		Tokens: map[string]string{"ghp_personalToken": "octocat"},
	})
	w.git.CreateRepoFiles(t, repoName, map[string]string{"README.md": "gitops\n"})
	w.git.SetRepoTokenCheck(func(repo, token string) bool {
		return token == "ghp_personalToken" || w.hub.ValidTokenFor(owner+"/"+strings.TrimSuffix(repo, ".git"), token)
	})
	repo.Owner, repo.Repo = owner, repoName
	w.repo = w.hub.AddRepo(repo)
	return w
}

// config is kedge's configuration for the world, reading a snapshot: the
// cluster's checks are another test's.
func (w *githubWorld) config(t *testing.T, edit func(*config.Config)) *config.Config {
	t.Helper()
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	cfg.Source.Snapshot = t.TempDir()
	cfg.Repo.Owner, cfg.Repo.Name, cfg.Repo.URL = owner, repoName, w.git.RepoURL(repoName)
	cfg.GitHub.APIURL = w.hub.URL + "/api/v3/"
	cfg.GitHub.AppID, cfg.GitHub.InstallationID, cfg.GitHub.PrivateKeyFile = appID, installationID, w.keyFile
	if edit != nil {
		edit(cfg)
	}
	require.NoError(t, cfg.Validate(config.ModeRun))
	return cfg
}

// byCheck indexes results by the check's name.
func byCheck(results []Result) map[string]Result {
	out := map[string]Result{}
	for _, r := range results {
		out[r.Check] = r
	}
	return out
}

const repoCheck = "repository " + owner + "/" + repoName

func TestGitHubAndRepositoryChecks(t *testing.T) {
	withoutPullRequestsWrite := ghemu.KedgePermissions()
	withoutPullRequestsWrite["pull_requests"] = "read"
	withoutIssues := ghemu.KedgePermissions()
	delete(withoutIssues, "issues")
	cases := []struct {
		name        string
		repo        ghemu.Options
		permissions map[string]string
		edit        func(*config.Config)
		// want are the checks that do not pass, with what their line
		// must say; every other GitHub and repository check passes.
		want map[string]Result
	}{
		{name: "all hold"},
		{name: "the App lacks pull_requests: write", permissions: withoutPullRequestsWrite, want: map[string]Result{
			checkGitHub: {Status: Fail, Detail: "App 4242, installation 77 on example-org lacks pull_requests: write (granted: read)",
				Fix: "give the App Pull requests: Read and write in its settings (deploy/github-app.json lists what kedge needs), then have an owner of example-org accept the new permissions on the installation"},
		}},
		{name: "the App lacks issues", permissions: withoutIssues, want: map[string]Result{
			checkGitHub:    {Status: Fail, Detail: "App 4242, installation 77 on example-org lacks issues: write (not granted)"},
			checkDashboard: {Status: Skip, Fix: "grant the App issues: write (above) first"},
		}},
		{name: "a wrong repository name", edit: func(c *config.Config) {
			c.Repo.Name = "gitopz"
			c.Repo.URL = strings.TrimSuffix(c.Repo.URL, "gitops.git") + "gitopz.git"
		}, want: map[string]Result{
			"repository example-org/gitopz": {Status: Fail, Fix: "check that the repository exists under this name (repo.owner and repo.name, or the repos: rule) and that kedge's GitHub App is installed on it with Contents access"},
			checkDashboard:                  {Status: Skip, Fix: "fix repository example-org/gitopz above first"},
		}},
		{name: "an installation that does not exist", edit: func(c *config.Config) { c.GitHub.InstallationID = 78 }, want: map[string]Result{
			checkGitHub:    {Status: Fail, Detail: "App 4242 has no installation 78"},
			repoCheck:      {Status: Fail},
			checkDashboard: {Status: Skip, Fix: "fix the GitHub credentials above first"},
		}},
		{name: "no installation id: found on the owner's account", edit: func(c *config.Config) { c.GitHub.InstallationID = 0 }},
		{name: "an archived repository", repo: ghemu.Options{Archived: true}, want: map[string]Result{
			checkDashboard: {Status: Fail, Detail: "example-org/gitops is archived, so read-only"},
		}},
		{name: "issues turned off", repo: ghemu.Options{IssuesDisabled: true}, want: map[string]Result{
			checkDashboard: {Status: Fail, Detail: "example-org/gitops has issues turned off"},
		}},
		{name: "a personal token", edit: func(c *config.Config) {
			c.GitHub.AppID, c.GitHub.InstallationID, c.GitHub.PrivateKeyFile, c.GitHub.Token = 0, 0, "", "ghp_personalToken"
		}},
		{name: "a token GitHub does not know", edit: func(c *config.Config) {
			c.GitHub.AppID, c.GitHub.InstallationID, c.GitHub.PrivateKeyFile, c.GitHub.Token = 0, 0, "", "ghp_unknown"
		}, want: map[string]Result{
			checkGitHub:    {Status: Fail, Detail: "GitHub refused the token: Bad credentials", Fix: "set KEDGE_GITHUB_TOKEN to a valid token"},
			repoCheck:      {Status: Fail},
			checkDashboard: {Status: Skip},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newGitHubWorld(t, tc.repo)
			if tc.permissions != nil {
				w.hub.SetPermissions(tc.permissions)
			}
			cfg := w.config(t, tc.edit)
			results := byCheck(Run(context.Background(), Env{Config: cfg}))
			for _, check := range []string{checkGitHub, "repository " + cfg.Repo.Owner + "/" + cfg.Repo.Name, checkDashboard} {
				got, ok := results[check]
				require.True(t, ok, "no %s line in %v", check, results)
				want, failing := tc.want[check]
				if !failing {
					assert.Equal(t, Pass, got.Status, "%s: %+v", check, got)
					continue
				}
				assert.Equal(t, want.Status, got.Status, "%s: %+v", check, got)
				if want.Detail != "" {
					assert.True(t, strings.HasPrefix(got.Detail, want.Detail), "%s detail: %q", check, got.Detail)
				}
				if want.Fix != "" {
					assert.Equal(t, want.Fix, got.Fix, check)
				}
			}
			for _, c := range w.hub.Calls() {
				assert.False(t, c.Mutating() && c.Route != "", "doctor changes nothing on GitHub: %s %s", c.Method, c.Path)
			}
			for _, c := range w.repo.Calls() {
				assert.False(t, c.Mutating(), "doctor changes nothing on GitHub: %s %s", c.Method, c.Path)
			}
			assert.Zero(t, w.git.Pushes(), "nor in the repositories")
		})
	}
}

func TestConfigurationThatIsNotValid(t *testing.T) {
	results := Run(context.Background(), Env{ConfigFile: "kedge.yaml", ConfigErr: &config.Error{Key: "repo.name", Msg: "required"}})
	require.Len(t, results, 7)
	assert.Equal(t, Result{Check: checkConfig, Status: Fail, Detail: "kedge.yaml: config repo.name: required", Fix: "correct repo.name; config/kedge.example.yaml documents it"}, results[0])
	for _, r := range results[1:] {
		assert.Equal(t, Skip, r.Status, r.Check)
	}
	assert.Equal(t, 7, Failed(results))
}

func TestWriteIsOneLinePerCheck(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Write(&out, []Result{
		{Check: "configuration", Status: Pass, Detail: "kedge.yaml is valid", Fix: "never shown for a passing check"},
		{Check: "lease", Status: Fail, Detail: "namespace kedge\ndoes not exist", Fix: "create it"},
		{Check: "dashboard issue", Status: Skip, Detail: "not checked", Fix: "fix the lease first"},
	}))
	assert.Equal(t, "ok    configuration: kedge.yaml is valid\n"+
		"FAIL  lease: namespace kedge does not exist — fix: create it\n"+
		"skip  dashboard issue: not checked — fix: fix the lease first\n", out.String())
	assert.Equal(t, 2, Failed([]Result{{Status: Fail}, {Status: Skip}, {Status: Pass}}))
}

// TestRepositoriesTheClusterAppliesFrom: with repos:, the repositories
// checked are repo: and those the cluster's Flux sources name that a rule
// admits, each cloned at the branch the source follows.
func TestRepositoriesTheClusterAppliesFrom(t *testing.T) {
	w := newGitHubWorld(t, ghemu.Options{})
	w.git.CreateRepoFiles(t, "team-reviews", map[string]string{"deploy/app.yaml": "kind: Deployment\n"})
	w.hub.AddRepo(ghemu.Options{Owner: owner, Repo: "team-reviews"})
	cfg := w.config(t, func(c *config.Config) {
		c.Source.Snapshot = ""
		c.Repos = []config.RepoRule{{Match: owner + "/team-*", CloneURL: w.git.URL + "/{name}.git"}}
	})
	source := func(name, url, branch string) (objects.GitRepository, objects.Kustomization) {
		repo := objects.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec: objects.GitRepositorySpec{URL: url, Ref: &objects.GitRepositoryRef{Branch: branch}}}
		ks := objects.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec: objects.KustomizationSpec{Path: "./deploy", SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: name}}}
		return repo, ks
	}
	set := &objects.Set{}
	for _, s := range [][3]string{
		{"reviews", "https://github.com/example-org/team-reviews", "main"},
		{"elsewhere", "https://github.com/other-org/apps", "main"},
	} {
		repo, ks := source(s[0], s[1], s[2])
		set.GitRepositories = append(set.GitRepositories, repo)
		set.Kustomizations = append(set.Kustomizations, ks)
	}
	c := &checker{env: Env{Config: cfg, Kube: &rest.Config{Host: "https://127.0.0.1:1"}}, setup: set}
	c.credentials(context.Background())
	results := byCheck(c.repositories(context.Background()))
	require.Len(t, results, 2, "repo: and the team repository, not other-org's: %v", results)
	assert.Equal(t, Pass, results[repoCheck].Status, "%+v", results[repoCheck])
	team := results["repository example-org/team-reviews@main"]
	assert.Equal(t, Pass, team.Status, "%+v", team)
	assert.Contains(t, team.Detail, "/team-reviews.git; branch main can be cloned")
}
