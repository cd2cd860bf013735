package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/kedge-io/kedge/internal/gitrepo"
)

// AppPermissions are what kedge's GitHub App needs of an installation,
// and no more (deploy/github-app.json asks for exactly these): it pushes
// branches (contents), opens and updates pull requests (pull_requests),
// keeps its dashboard in an issue and labels (issues), and reads the
// repository (metadata, which every App has).
var AppPermissions = map[string]string{
	"contents":      "write",
	"issues":        "write",
	"metadata":      "read",
	"pull_requests": "write",
}

// permissionLabels are the names GitHub's App settings page gives them.
var permissionLabels = map[string]string{
	"contents": "Contents", "issues": "Issues", "metadata": "Metadata", "pull_requests": "Pull requests",
}

// accessLevel orders GitHub's permission levels.
var accessLevel = map[string]int{"": 0, "none": 0, "read": 1, "write": 2, "admin": 3}

// githubAccess is how the credentials reach repositories: a token, or an
// App installation.
type githubAccess struct {
	apiURL string
	http   *http.Client
	token  string
	// installation is nil with a token.
	installation *ghinstallation.Transport
	// permissions are the installation's; nil with a token.
	permissions map[string]string
}

// client is a REST client acting as the credentials.
func (g *githubAccess) client() (*github.Client, error) {
	hc := *g.http
	if g.installation != nil {
		hc.Transport = g.installation
	} else {
		hc.Transport = &bearer{token: g.token, next: transportOf(g.http)}
	}
	return github.NewClient(&hc).WithEnterpriseURLs(g.apiURL, g.apiURL)
}

// Token is a token git may use: the installation's, minted as kedge
// mints it, or the configured one.
func (g *githubAccess) Token(ctx context.Context) (string, error) {
	if g.installation != nil {
		return g.installation.Token(ctx)
	}
	return g.token, nil
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

func transportOf(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}

// gitAuth is the credentials for cloning, none when the GitHub check
// failed (the clone then says what the remote answers anonymously).
func (c *checker) gitAuth() gitrepo.Auth {
	if c.access == nil {
		return nil
	}
	return c.access
}

func (c *checker) apiURL() string {
	apiURL := c.env.Config.GitHub.APIURL
	if apiURL == "" {
		apiURL = "https://api.github.com/"
	}
	return apiURL
}

func (c *checker) httpClient() *http.Client {
	if c.env.HTTPClient != nil {
		return c.env.HTTPClient
	}
	return &http.Client{}
}

func (c *checker) credentials(ctx context.Context) Result {
	gh := c.env.Config.GitHub
	if gh.Token != "" {
		return c.githubToken(ctx)
	}
	fixKey := "check github.appID, and that github.privateKeyFile holds that App's current private key"
	apps, err := ghinstallation.NewAppsTransportKeyFromFile(transportOf(c.httpClient()), gh.AppID, gh.PrivateKeyFile)
	if err != nil {
		return Result{Check: checkGitHub, Status: Fail, Detail: "GitHub App key: " + err.Error(),
			Fix: "mount the App's private key (the Secret kedge-github-app) at github.privateKeyFile"}
	}
	base, err := github.NewClient(c.httpClient()).WithEnterpriseURLs(c.apiURL(), c.apiURL())
	if err != nil {
		return Result{Check: checkGitHub, Status: Fail, Detail: "github.apiURL: " + err.Error(), Fix: "set github.apiURL to GitHub's REST root"}
	}
	apps.BaseURL = strings.TrimSuffix(base.BaseURL.String(), "/")
	hc := *c.httpClient()
	hc.Transport = apps
	app, _ := github.NewClient(&hc).WithEnterpriseURLs(c.apiURL(), c.apiURL())

	owner := c.env.Config.Repo.Owner
	inst, where, err := findInstallation(ctx, app, gh.InstallationID, owner)
	if err != nil {
		var gerr *github.ErrorResponse
		switch {
		case errors.As(err, &gerr) && gerr.Response.StatusCode == http.StatusUnauthorized:
			return Result{Check: checkGitHub, Status: Fail, Detail: fmt.Sprintf("GitHub refused App %d's token: %s", gh.AppID, gerr.Message), Fix: fixKey}
		case errors.As(err, &gerr) && gerr.Response.StatusCode == http.StatusNotFound:
			return Result{Check: checkGitHub, Status: Fail, Detail: fmt.Sprintf("App %d has no installation %s", gh.AppID, where),
				Fix: "install the App on " + owner + " (Install App in the App's settings) and set github.installationID to the installation's id"}
		}
		return Result{Check: checkGitHub, Status: Fail, Detail: "cannot ask GitHub: " + err.Error(), Fix: "check github.apiURL and that GitHub is reachable"}
	}
	granted := installationPermissions(inst.GetPermissions())
	access := &githubAccess{apiURL: c.apiURL(), http: c.httpClient(), permissions: granted,
		installation: ghinstallation.NewFromAppsTransport(apps, inst.GetID())}
	access.installation.BaseURL = apps.BaseURL
	c.access = access

	who := fmt.Sprintf("App %d, installation %d on %s", gh.AppID, inst.GetID(), inst.GetAccount().GetLogin())
	var missing, fixes []string
	for _, name := range slices.Sorted(maps.Keys(AppPermissions)) {
		need, has := AppPermissions[name], granted[name]
		if accessLevel[has] >= accessLevel[need] {
			continue
		}
		what := name + ": " + need
		if has == "" {
			what += " (not granted)"
		} else {
			what += " (granted: " + has + ")"
		}
		missing = append(missing, what)
		level := "Read-only"
		if need == "write" {
			level = "Read and write"
		}
		fixes = append(fixes, permissionLabels[name]+": "+level)
	}
	if len(missing) > 0 {
		return Result{Check: checkGitHub, Status: Fail, Detail: who + " lacks " + strings.Join(missing, ", "),
			Fix: "give the App " + strings.Join(fixes, ", ") + " in its settings (deploy/github-app.json lists what kedge needs), then have an owner of " +
				inst.GetAccount().GetLogin() + " accept the new permissions on the installation"}
	}
	detail := who + ": " + permissionSummary(granted, AppPermissions)
	var extra []string
	for _, name := range slices.Sorted(maps.Keys(granted)) {
		if _, needed := AppPermissions[name]; !needed && accessLevel[granted[name]] > 0 {
			extra = append(extra, name+": "+granted[name])
		}
	}
	if len(extra) > 0 {
		detail += "; also granted, and not needed: " + strings.Join(extra, ", ")
	}
	return Result{Check: checkGitHub, Status: Pass, Detail: detail}
}

// findInstallation is the configured installation, or the App's
// installation on owner's account (an organisation's, else a user's).
func findInstallation(ctx context.Context, app *github.Client, id int64, owner string) (*github.Installation, string, error) {
	if id != 0 {
		inst, _, err := app.Apps.GetInstallation(ctx, id)
		return inst, fmt.Sprint(id), err
	}
	inst, _, err := app.Apps.FindOrganizationInstallation(ctx, owner)
	var gerr *github.ErrorResponse
	if errors.As(err, &gerr) && gerr.Response.StatusCode == http.StatusNotFound {
		inst, _, err = app.Apps.FindUserInstallation(ctx, owner)
	}
	return inst, "on " + owner, err
}

// installationPermissions are the permissions as GitHub sends them, name
// to level, whatever go-github models of them.
func installationPermissions(p *github.InstallationPermissions) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	raw, err := json.Marshal(p)
	if err == nil {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

func permissionSummary(granted, names map[string]string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		parts = append(parts, name+" "+granted[name])
	}
	return strings.Join(parts, ", ")
}

// githubToken checks a personal token: GitHub knows it, and a classic
// token carries the repo scope. A fine-grained token's permissions are not
// readable through the API; the repository checks try them.
func (c *checker) githubToken(ctx context.Context) Result {
	access := &githubAccess{apiURL: c.apiURL(), http: c.httpClient(), token: c.env.Config.GitHub.Token}
	client, err := access.client()
	if err != nil {
		return Result{Check: checkGitHub, Status: Fail, Detail: "github.apiURL: " + err.Error(), Fix: "set github.apiURL to GitHub's REST root"}
	}
	user, resp, err := client.Users.Get(ctx, "")
	if err != nil {
		var gerr *github.ErrorResponse
		if errors.As(err, &gerr) && gerr.Response.StatusCode == http.StatusUnauthorized {
			return Result{Check: checkGitHub, Status: Fail, Detail: "GitHub refused the token: " + gerr.Message, Fix: "set KEDGE_GITHUB_TOKEN to a valid token"}
		}
		return Result{Check: checkGitHub, Status: Fail, Detail: "cannot ask GitHub: " + err.Error(), Fix: "check github.apiURL and that GitHub is reachable"}
	}
	scopes := resp.Header.Get("X-OAuth-Scopes")
	if scopes != "" && !slices.Contains(strings.Split(strings.ReplaceAll(scopes, " ", ""), ","), "repo") {
		return Result{Check: checkGitHub, Status: Fail, Detail: fmt.Sprintf("the token of %s has scopes %s, not repo", user.GetLogin(), scopes),
			Fix: "give the token the repo scope, or use a GitHub App (deploy/github-app.json)"}
	}
	c.access = access
	return Result{Check: checkGitHub, Status: Pass, Detail: "a token of " + user.GetLogin() + " (a token's permissions are not readable: the repository checks below try them)"}
}

// dashboard checks that kedge can keep its dashboard issue in repo:: the
// credentials see the repository, it is not archived, and it has issues.
func (c *checker) dashboard(ctx context.Context) Result {
	cfg := c.env.Config
	repo := cfg.Repo.Owner + "/" + cfg.Repo.Name
	switch {
	case c.access == nil:
		return Result{Check: checkDashboard, Status: Skip, Detail: "repository " + repo + " not checked", Fix: "fix the GitHub credentials above first"}
	case !c.reachable[strings.ToLower(repo)]:
		return Result{Check: checkDashboard, Status: Skip, Detail: "repository " + repo + " not checked", Fix: "fix repository " + repo + " above first"}
	case c.access.permissions != nil && accessLevel[c.access.permissions["issues"]] < accessLevel["write"]:
		return Result{Check: checkDashboard, Status: Skip, Detail: "repository " + repo + " not checked", Fix: "grant the App issues: write (above) first"}
	}
	client, err := c.access.client()
	if err != nil {
		return Result{Check: checkDashboard, Status: Fail, Detail: err.Error()}
	}
	r, _, err := client.Repositories.Get(ctx, cfg.Repo.Owner, cfg.Repo.Name)
	if err != nil {
		return Result{Check: checkDashboard, Status: Fail, Detail: fmt.Sprintf("GitHub does not show %s to kedge's credentials: %v", repo, err),
			Fix: "install the App on " + repo + " (or give the token access to it)"}
	}
	switch {
	case r.GetArchived():
		return Result{Check: checkDashboard, Status: Fail, Detail: repo + " is archived, so read-only",
			Fix: "unarchive " + repo + ", or point repo: at the repository the dashboard should live in"}
	case !r.GetHasIssues():
		return Result{Check: checkDashboard, Status: Fail, Detail: repo + " has issues turned off",
			Fix: "turn Issues on in " + repo + "'s settings: kedge keeps its dashboard in an issue"}
	case r.Permissions != nil && !r.GetPermissions()["push"] && !r.GetPermissions()["triage"] && !r.GetPermissions()["maintain"] && !r.GetPermissions()["admin"]:
		return Result{Check: checkDashboard, Status: Fail, Detail: "the token may only read " + repo,
			Fix: "give the token's account triage or write access to " + repo}
	}
	return Result{Check: checkDashboard, Status: Pass, Detail: repo + " has issues and is not archived; kedge may write its dashboard issue there"}
}
