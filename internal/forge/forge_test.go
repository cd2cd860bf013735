package forge_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

func TestNewValidatesConfig(t *testing.T) {
	_, keyFile := appKey(t)
	cases := []struct {
		name string
		cfg  forge.Config
		err  string
	}{
		{"token", forge.Config{Owner: "o", Repo: "r", Token: "t"}, ""},
		{"app", forge.Config{Owner: "o", Repo: "r", AppID: 1, InstallationID: 2, PrivateKeyFile: keyFile}, ""},
		{"no repository", forge.Config{Owner: "o", Token: "t"}, "owner and repo are required"},
		{"no credentials", forge.Config{Owner: "o", Repo: "r"}, "a token or GitHub App keys are required"},
		{"both", forge.Config{Owner: "o", Repo: "r", Token: "t", AppID: 1, InstallationID: 2, PrivateKeyFile: keyFile}, "not both"},
		{"app without installation: looked up per owner", forge.Config{Owner: "o", Repo: "r", AppID: 1, PrivateKeyFile: keyFile}, ""},
		{"app without key", forge.Config{Owner: "o", Repo: "r", AppID: 1, InstallationID: 2}, "private key file"},
		{"unreadable key", forge.Config{Owner: "o", Repo: "r", AppID: 1, InstallationID: 2, PrivateKeyFile: keyFile + ".missing"}, "GitHub App key"},
		{"bad API URL", forge.Config{Owner: "o", Repo: "r", Token: "t", APIURL: "http://[::1"}, "github.apiURL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := forge.New(context.Background(), tc.cfg)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestConfigNeverShowsTheToken(t *testing.T) {
	cfg := forge.Config{Owner: "o", Repo: "r", Token: "ghp_secret123"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
	for _, shown := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logged.String()} {
		assert.NotContains(t, shown, "ghp_secret123")
		assert.Contains(t, shown, "<redacted>")
	}
}

func TestAppAuthentication(t *testing.T) {
	key, keyFile := appKey(t)
	cases := []struct {
		name   string
		apiURL func(emu *ghemu.Server) string
	}{
		{"server root, /api/v3 added as for Enterprise", func(emu *ghemu.Server) string { return emu.URL }},
		{"explicit /api/v3", func(emu *ghemu.Server) string { return emu.URL + "/api/v3/" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			emu, c := setup(t, func(o *ghemu.Options) {
				o.Tokens = nil
				o.AppID, o.AppPublicKey, o.InstallationID = 314, &key.PublicKey, 2718
			}, nil)
			c, err := forge.New(context.Background(), forge.Config{
				APIURL: tc.apiURL(emu), Owner: owner, Repo: repo,
				AppID: 314, InstallationID: 2718, PrivateKeyFile: keyFile,
				HTTPClient: emu.Client(),
			})
			require.NoError(t, err)
			assert.Empty(t, emu.Calls(), "New makes no request")

			branchName, err := c.DefaultBranch(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "main", branchName)
			_, err = c.DefaultBranch(context.Background())
			require.NoError(t, err)

			calls := emu.Calls()
			require.Len(t, calls, 3)
			assert.Equal(t, "POST /app/installations/{id}/access_tokens", calls[0].Route)
			assert.Equal(t, "/api/v3/app/installations/2718/access_tokens", calls[0].RawPath, "tokens are minted under the API root")
			assert.Equal(t, http.StatusCreated, calls[0].Status)
			assert.Equal(t, "/api/v3/repos/acme/fleet", calls[1].RawPath)
			assert.Equal(t, 1, emu.MintedTokens(), "the token is reused while valid")

			token, err := c.GitToken(context.Background())
			require.NoError(t, err)
			assert.True(t, emu.ValidToken(token))
			assert.Regexp(t, `^ghs_`, token)
			assert.Equal(t, 1, emu.MintedTokens(), "an hour-long token is fresh enough for Git")
			assert.Empty(t, emu.MutatingCalls())
			assert.Empty(t, emu.OutOfSurfaceCalls())
			assert.Equal(t, int64(1), c.Stats().TokenMints)
		})
	}
}

func TestGitTokenRenewsAShortLivedToken(t *testing.T) {
	key, keyFile := appKey(t)
	emu, _ := setup(t, func(o *ghemu.Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 1, &key.PublicKey, 2
		o.TokenTTL = 5 * time.Minute // less than a clone or push may need
	}, nil)
	c, err := forge.New(context.Background(), forge.Config{
		APIURL: emu.URL, Owner: owner, Repo: repo, AppID: 1, InstallationID: 2, PrivateKeyFile: keyFile, HTTPClient: emu.Client(),
	})
	require.NoError(t, err)

	first, err := c.GitToken(context.Background())
	require.NoError(t, err)
	second, err := c.GitToken(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, first, second)
	assert.True(t, emu.ValidToken(second))
	assert.Equal(t, 3, emu.MintedTokens(), "each GitToken renews a token that would expire too soon")

	// API calls go on with the renewed token.
	_, err = c.DefaultBranch(context.Background())
	require.NoError(t, err)
}

func TestStaticGitToken(t *testing.T) {
	emu, c := setup(t, nil, nil)
	token, err := c.GitToken(context.Background())
	require.NoError(t, err)
	assert.Equal(t, botToken, token)
	assert.Empty(t, emu.Calls())
}

func TestStatsCountCalls(t *testing.T) {
	emu, c := setup(t, func(o *ghemu.Options) { o.RateLimit = 100 }, nil)
	ctx := context.Background()
	before := c.Stats()
	assert.Equal(t, -1, before.RateLimit, "unknown before any answer")

	_, err := c.CreatePR(ctx, forge.NewPR{Title: "t", Head: branch(emu, "kedge/shop"), Base: "main"})
	require.NoError(t, err)
	require.NoError(t, c.AddLabels(ctx, 1, "kedge"))
	_, err = c.FindPRs(ctx, "kedge/")
	require.NoError(t, err)
	_, err = c.FindPRs(ctx, "kedge/")
	require.NoError(t, err)
	emu.QueueFault(ghemu.ServerError(http.StatusBadGateway).For(http.MethodGet, "/repos/*/*"))
	_, err = c.DefaultBranch(ctx)
	require.NoError(t, err)

	s := c.Stats()
	assert.Equal(t, map[string]int64{"GET": 4, "POST": 2}, s.Calls)
	assert.Equal(t, int64(2), s.Mutating)
	assert.Equal(t, int64(1), s.NotModified)
	assert.Equal(t, int64(1), s.Retries)
	assert.Equal(t, int64(0), s.TokenMints)
	assert.Equal(t, 100, s.RateLimit)
	assert.Equal(t, 100-emu.RateUsed(), s.RateRemaining)
	assert.WithinDuration(t, time.Now().Add(time.Hour), s.RateReset, 5*time.Second)
}

// The emulator's own answers are the reference for shapes; these helpers
// read its state back.
func prState(t *testing.T, emu *ghemu.Server, n int) *github.PullRequest {
	t.Helper()
	pr, ok := emu.PR(n)
	require.True(t, ok, "pull request #%d", n)
	return pr
}

// TestAMissingPermissionIsNamed: an installation without pull_requests
// write cannot open a pull request; the error names the permission GitHub
// asked for and is not retried.
func TestAMissingPermissionIsNamed(t *testing.T) {
	key, keyFile := appKey(t)
	emu, _ := setup(t, func(o *ghemu.Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 1, &key.PublicKey, 2
	}, nil)
	c, err := forge.New(context.Background(), forge.Config{
		APIURL: emu.URL, Owner: owner, Repo: repo, AppID: 1, InstallationID: 2, PrivateKeyFile: keyFile, HTTPClient: emu.Client(),
	})
	require.NoError(t, err)
	perms := ghemu.KedgePermissions()
	perms["pull_requests"] = "read"
	emu.SetPermissions(perms)

	_, err = c.CreatePR(context.Background(), forge.NewPR{Title: "t", Head: branch(emu, "kedge/shop"), Base: "main"})
	var refused *forge.PermissionError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, "pull_requests=write", refused.Accepted)
	assert.Contains(t, err.Error(), "forge: create pull request: the GitHub App's installation lacks the permission it needs (pull_requests=write); grant it in the App's settings, as deploy/github-app.json asks: ")
	assert.Contains(t, err.Error(), "403 Resource not accessible by integration")
	assert.Equal(t, int64(0), c.Stats().Retries)

	_, err = c.FindPRs(context.Background(), "kedge/")
	require.NoError(t, err, "reading pull requests needs only read")
}
