package ghemu

import (
	"context"
	"net/http"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestHub(t *testing.T) (*Hub, *ghinstallation.AppsTransport) {
	t.Helper()
	key := newKey(t)
	h := NewHub(t, HubOptions{AppID: 42, AppPublicKey: &key.PublicKey, Installations: map[string]int64{"acme": 7, "globex": 9}})
	h.AddRepo(Options{Owner: "acme", Repo: "platform"})
	h.AddRepo(Options{Owner: "globex", Repo: "team-b", DefaultBranch: "release"})
	h.AddRepo(Options{Owner: "initech", Repo: "apps"})
	apps := ghinstallation.NewAppsTransportFromPrivateKey(http.DefaultTransport, 42, key)
	apps.BaseURL = h.URL
	return h, apps
}

func TestHubFindsTheInstallationOfEachOwner(t *testing.T) {
	h, apps := newTestHub(t)
	c, err := github.NewClient(&http.Client{Transport: apps}).WithEnterpriseURLs(h.URL, h.URL)
	require.NoError(t, err)
	cases := []struct {
		owner, repo string
		want        int64
		status      int
	}{
		{"acme", "platform", 7, http.StatusOK},
		{"ACME", "Platform", 7, http.StatusOK},
		{"globex", "team-b", 9, http.StatusOK},
		{"initech", "apps", 0, http.StatusNotFound},
		{"acme", "missing", 0, http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.owner+"/"+tc.repo, func(t *testing.T) {
			inst, resp, err := c.Apps.FindRepositoryInstallation(context.Background(), tc.owner, tc.repo)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status != http.StatusOK {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, inst.GetID())
			assert.Equal(t, int64(42), inst.GetAppID())
			assert.Contains(t, inst.GetAccessTokensURL(), "/app/installations/")
		})
	}
	assert.Empty(t, h.Repo("acme/platform").Calls(), "installation lookups are the Hub's, not the repository's")
}

func TestHubTokenReachesItsInstallationOnly(t *testing.T) {
	h, apps := newTestHub(t)
	acme := ghinstallation.NewFromAppsTransport(apps, 7)
	acme.BaseURL = h.URL
	c, err := github.NewClient(&http.Client{Transport: acme}).WithEnterpriseURLs(h.URL, h.URL)
	require.NoError(t, err)
	ctx := context.Background()

	repo, _, err := c.Repositories.Get(ctx, "acme", "platform")
	require.NoError(t, err)
	assert.Equal(t, "acme/platform", repo.GetFullName())

	_, resp, err := c.Repositories.Get(ctx, "globex", "team-b")
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "another account's private repository is not visible")
	_, resp, err = c.Issues.Create(ctx, "globex", "team-b", &github.IssueRequest{Title: github.String("x")})
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	refused := h.Repo("globex/team-b").MutatingCalls()
	require.Len(t, refused, 1)
	assert.Equal(t, http.StatusNotFound, refused[0].Status)
	assert.Empty(t, h.Repo("globex/team-b").Issues(), "the refused write changed nothing")

	token, err := acme.Token(ctx)
	require.NoError(t, err)
	assert.True(t, h.ValidTokenFor("acme/platform", token))
	assert.False(t, h.ValidTokenFor("globex/team-b", token))
	assert.Equal(t, map[int64]int{7: 1}, h.MintedTokens())

	globex := ghinstallation.NewFromAppsTransport(apps, 9)
	globex.BaseURL = h.URL
	gc, err := github.NewClient(&http.Client{Transport: globex}).WithEnterpriseURLs(h.URL, h.URL)
	require.NoError(t, err)
	got, _, err := gc.Repositories.Get(ctx, "globex", "team-b")
	require.NoError(t, err)
	assert.Equal(t, "release", got.GetDefaultBranch())
	assert.Equal(t, map[int64]int{7: 1, 9: 1}, h.MintedTokens())
	assert.Len(t, h.CallsTo("globex/team-b"), 3)
	assert.Empty(t, h.CallsTo("initech/apps"))
}

// A Hub's faults strike whichever repository or App endpoint a request
// names, in queue order across them, before a repository's own faults.
func TestHubFaultsSpanItsRepositories(t *testing.T) {
	h, apps := newTestHub(t)
	h.QueueFault(
		ServerError(http.StatusBadGateway).For(http.MethodPost, "/app/installations/*/access_tokens"),
		ServerError(http.StatusServiceUnavailable).For(http.MethodGet, "/repos/*/*"),
	)
	h.Repo("globex/team-b").QueueFault(TooManyRequests(3))
	acme := ghinstallation.NewFromAppsTransport(apps, 7)
	acme.BaseURL = h.URL
	ctx := context.Background()

	_, err := acme.Token(ctx)
	require.Error(t, err, "the mint is answered 502")
	c, err := github.NewClient(&http.Client{Transport: acme}).WithEnterpriseURLs(h.URL, h.URL)
	require.NoError(t, err)
	_, resp, err := c.Repositories.Get(ctx, "acme", "platform")
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Zero(t, h.PendingFaults())
	_, _, err = c.Repositories.Get(ctx, "acme", "platform")
	require.NoError(t, err, "each queued fault strikes once")

	hubCalls := h.Calls()
	require.NotEmpty(t, hubCalls)
	assert.True(t, hubCalls[0].Faulted, "the faulted mint is recorded as such")
	assert.True(t, h.Repo("acme/platform").Calls()[0].Faulted)
	assert.Equal(t, 1, h.Repo("globex/team-b").PendingFaults(), "a repository's own faults wait for its requests")

	h.SetFaultFunc(func(*http.Request) *Fault {
		f := TooManyRequests(9)
		return &f
	})
	_, resp, err = c.Repositories.Get(ctx, "acme", "platform")
	require.Error(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "9", resp.Header.Get("Retry-After"))
}

func TestHubExpireTokens(t *testing.T) {
	h, apps := newTestHub(t)
	acme := ghinstallation.NewFromAppsTransport(apps, 7)
	acme.BaseURL = h.URL
	token, err := acme.Token(context.Background())
	require.NoError(t, err)
	require.True(t, h.ValidTokenFor("acme/platform", token))
	h.ExpireTokens()
	assert.False(t, h.ValidTokenFor("acme/platform", token))
}
