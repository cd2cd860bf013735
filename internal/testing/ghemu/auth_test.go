package ghemu

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokenAuthentication(t *testing.T) {
	s := newTestServer(t)
	cases := []struct {
		name          string
		authorization string
		status        int
		message       string
	}{
		{"no credentials", "", http.StatusUnauthorized, "Requires authentication"},
		{"unknown token", "Bearer ghp_nobody", http.StatusUnauthorized, "Bad credentials"},
		{"unknown scheme", "Basic " + botToken, http.StatusUnauthorized, "Requires authentication"},
		{"bearer scheme", "Bearer " + botToken, http.StatusOK, ""},
		{"token scheme", "token " + botToken, http.StatusOK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := raw(t, s, http.MethodGet, "/repos/acme/fleet", tc.authorization, nil)
			require.Equal(t, tc.status, a.status)
			if tc.message != "" {
				assert.JSONEq(t, `{"message":"`+tc.message+`","documentation_url":"https://docs.github.com/rest","status":"401"}`, string(a.body))
			}
		})
	}
}

func TestAppJWTMintsInstallationTokens(t *testing.T) {
	key := newKey(t)
	otherKey := newKey(t)
	now := time.Now().Truncate(time.Second)
	s := newTestServer(t, func(o *Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 42, &key.PublicKey, 7
	})
	sign := func(method jwt.SigningMethod, signKey any, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(signKey)
		require.NoError(t, err)
		return tok
	}
	valid := jwt.MapClaims{"iss": "42", "iat": now.Add(-30 * time.Second).Unix(), "exp": now.Add(2 * time.Minute).Unix()}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for ck, cv := range valid {
			c[ck] = cv
		}
		c[k] = v
		return c
	}
	cases := []struct {
		name    string
		path    string
		jwt     string
		status  int
		message string
	}{
		{"valid", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, valid), http.StatusCreated, ""},
		{"numeric iss", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("iss", 42)), http.StatusCreated, ""},
		{"other key", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, otherKey, valid), http.StatusUnauthorized, "A JSON web token could not be decoded"},
		{"HS256", "/app/installations/7/access_tokens", sign(jwt.SigningMethodHS256, []byte("secret"), valid), http.StatusUnauthorized, "A JSON web token could not be decoded"},
		{"another App", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("iss", "43")), http.StatusUnauthorized, "A JSON web token could not be decoded"},
		{"issuer not a number", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("iss", "kedge")), http.StatusUnauthorized, "'Issuer' claim ('iss') must be an Integer"},
		{"no credentials", "/app/installations/7/access_tokens", "", http.StatusUnauthorized, "Requires authentication"},
		{"expired", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("exp", now.Add(-time.Second).Unix())), http.StatusUnauthorized, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"},
		{"lives too long", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("exp", now.Add(11*time.Minute).Unix())), http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future"},
		{"fractional iat", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("iat", float64(now.Unix())+0.5)), http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"},
		{"issued in the future", "/app/installations/7/access_tokens", sign(jwt.SigningMethodRS256, key, with("iat", now.Add(5*time.Minute).Unix())), http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"},
		{"not a JWT", "/app/installations/7/access_tokens", botToken, http.StatusUnauthorized, "A JSON web token could not be decoded"},
		{"other installation", "/app/installations/8/access_tokens", sign(jwt.SigningMethodRS256, key, valid), http.StatusNotFound, "Not Found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authorization := ""
			if tc.jwt != "" {
				authorization = "Bearer " + tc.jwt
			}
			a := raw(t, s, http.MethodPost, "/api/v3"+tc.path, authorization, nil)
			require.Equal(t, tc.status, a.status, string(a.body))
			if tc.status != http.StatusCreated {
				var e errorBody
				a.json(t, &e)
				assert.Equal(t, tc.message, e.Message)
				assert.Equal(t, strconv.Itoa(tc.status), e.Status)
				return
			}
			var tok accessToken
			a.json(t, &tok)
			assert.Regexp(t, `^ghs_[A-Za-z0-9]{36}$`, tok.GetToken())
			assert.WithinDuration(t, time.Now().Add(time.Hour), tok.GetExpiresAt().Time, 5*time.Second)
			assert.Equal(t, "selected", tok.RepositorySelection)
			assert.Equal(t, "write", tok.Permissions["pull_requests"])

			repo := raw(t, s, http.MethodGet, "/repos/acme/fleet", "token "+tok.GetToken(), nil)
			assert.Equal(t, http.StatusOK, repo.status)
		})
	}
	assert.Equal(t, 2, s.MintedTokens())
	assert.Empty(t, s.MutatingCalls(), "minting a token is not a content change")
}

func TestGhinstallationRoundTrip(t *testing.T) {
	key := newKey(t)
	s := newTestServer(t, func(o *Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 42, &key.PublicKey, 7
	})
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	itr, err := ghinstallation.New(s.Client().Transport, 42, 7, pemKey)
	require.NoError(t, err)
	itr.BaseURL = s.URL + "/api/v3"
	c, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(s.URL, s.URL)
	require.NoError(t, err)

	repo, _, err := c.Repositories.Get(context.Background(), testOwner, testRepo)
	require.NoError(t, err)
	assert.Equal(t, "main", repo.GetDefaultBranch())

	s.SetBranch("kedge/shop", fakeSHA("shop"))
	pr, _, err := c.PullRequests.Create(context.Background(), testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("kedge/shop"), Base: github.String("main"),
	})
	require.NoError(t, err)
	assert.Equal(t, "kedge[bot]", pr.GetUser().GetLogin())
	assert.Equal(t, "Bot", pr.GetUser().GetType())
	assert.Equal(t, 1, s.MintedTokens(), "the installation token is reused while valid")

	token, err := itr.Token(context.Background())
	require.NoError(t, err)
	assert.True(t, s.ValidToken(token))
	s.ExpireTokens()
	assert.False(t, s.ValidToken(token))
	a := raw(t, s, http.MethodGet, "/repos/acme/fleet", "token "+token, nil)
	assert.Equal(t, http.StatusUnauthorized, a.status)
}

func TestInstallationTokenExpiresWithTheClock(t *testing.T) {
	key := newKey(t)
	now := time.Now()
	var offset atomic.Int64 // the test moves the clock while the server reads it
	s := newTestServer(t, func(o *Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 42, &key.PublicKey, 7
		o.Clock = func() time.Time { return now.Add(time.Duration(offset.Load())) }
	})
	claims := jwt.MapClaims{"iss": "42", "iat": now.Add(-30 * time.Second).Unix(), "exp": now.Add(time.Minute).Unix()}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(key)
	require.NoError(t, err)
	a := raw(t, s, http.MethodPost, "/app/installations/7/access_tokens", "Bearer "+signed, nil)
	require.Equal(t, http.StatusCreated, a.status)
	var tok accessToken
	a.json(t, &tok)

	assert.True(t, s.ValidToken(tok.GetToken()))
	offset.Store(int64(59 * time.Minute))
	assert.True(t, s.ValidToken(tok.GetToken()))
	offset.Store(int64(61 * time.Minute))
	assert.False(t, s.ValidToken(tok.GetToken()))
}

// TestInstallationPermissions: the App reads its installation, by id or by
// the account it is installed on, with the permissions in GitHub's shape;
// a test takes one away.
func TestInstallationPermissions(t *testing.T) {
	key := newKey(t)
	s := newTestServer(t, func(o *Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 42, &key.PublicKey, 7
	})
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	atr, err := ghinstallation.NewAppsTransport(s.Client().Transport, 42, pemKey)
	require.NoError(t, err)
	app, err := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(s.URL, s.URL)
	require.NoError(t, err)
	ctx := context.Background()

	byID, _, err := app.Apps.GetInstallation(ctx, 7)
	require.NoError(t, err)
	assert.Equal(t, int64(42), byID.GetAppID())
	assert.Equal(t, testOwner, byID.GetAccount().GetLogin())
	assert.Equal(t, "write", byID.GetPermissions().GetPullRequests())
	assert.Equal(t, "read", byID.GetPermissions().GetMetadata())
	byOrg, _, err := app.Apps.FindOrganizationInstallation(ctx, testOwner)
	require.NoError(t, err)
	assert.Equal(t, int64(7), byOrg.GetID())
	byUser, _, err := app.Apps.FindUserInstallation(ctx, testOwner)
	require.NoError(t, err)
	assert.Equal(t, "User", byUser.GetTargetType())

	a := raw(t, s, http.MethodGet, "/app/installations/7", "Bearer "+mustSign(t, key), nil)
	require.Equal(t, http.StatusOK, a.status)
	var shape struct {
		Permissions map[string]string `json:"permissions"`
	}
	a.json(t, &shape)
	assert.Equal(t, map[string]string{"contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"}, shape.Permissions)

	perms := KedgePermissions()
	perms["pull_requests"] = "read"
	delete(perms, "contents")
	s.hub.SetPermissions(perms)
	a = raw(t, s, http.MethodGet, "/app/installations/7", "Bearer "+mustSign(t, key), nil)
	shape.Permissions = nil
	a.json(t, &shape)
	assert.Equal(t, map[string]string{"issues": "write", "metadata": "read", "pull_requests": "read"}, shape.Permissions)

	_, resp, err := app.Apps.GetInstallation(ctx, 8)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, resp, err = app.Apps.FindOrganizationInstallation(ctx, "other-org")
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func mustSign(t *testing.T, key any) string {
	t.Helper()
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": "42", "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix()}).SignedString(key)
	require.NoError(t, err)
	return tok
}

func TestAuthenticatedUser(t *testing.T) {
	key := newKey(t)
	s := newTestServer(t, func(o *Options) { o.AppID, o.AppPublicKey, o.InstallationID = 42, &key.PublicKey, 7 })
	user, _, err := ghClient(t, s, botToken).Users.Get(context.Background(), "")
	require.NoError(t, err)
	assert.NotEmpty(t, user.GetLogin())

	a := raw(t, s, http.MethodGet, "/user", "token ghp_nobody", nil)
	assert.Equal(t, http.StatusUnauthorized, a.status)
	minted := raw(t, s, http.MethodPost, "/app/installations/7/access_tokens", "Bearer "+mustSign(t, key), nil)
	var tok accessToken
	minted.json(t, &tok)
	a = raw(t, s, http.MethodGet, "/user", "token "+tok.GetToken(), nil)
	assert.Equal(t, http.StatusForbidden, a.status, "an installation token has no account")
}

// TestInstallationTokenNeedsThePermission: an installation token reaches an
// endpoint only when the installation holds one of the permissions GitHub
// documents for it; otherwise GitHub's 403, with the accepted permissions
// in X-Accepted-GitHub-Permissions. A personal token is not held to them.
func TestInstallationTokenNeedsThePermission(t *testing.T) {
	key := newKey(t)
	s := newTestServer(t, func(o *Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 42, &key.PublicKey, 7
	})
	minted := raw(t, s, http.MethodPost, "/app/installations/7/access_tokens", "Bearer "+mustSign(t, key), nil)
	require.Equal(t, http.StatusCreated, minted.status, string(minted.body))
	var tok struct {
		Token string `json:"token"`
	}
	minted.json(t, &tok)
	s.SetBranch("kedge/shop", fakeSHA("kedge/shop"))
	newPR := map[string]string{"title": "Restart shop", "head": "kedge/shop", "base": "main"}
	comment := map[string]string{"body": "noted"}

	tests := []struct {
		name, method, path string
		body               any
		grant              map[string]string
		want               int
		accepted           string
	}{
		{name: "open a PR with pull_requests read", method: http.MethodPost, path: "/repos/acme/fleet/pulls", body: newPR,
			grant: map[string]string{"metadata": "read", "pull_requests": "read", "issues": "write"}, want: http.StatusForbidden, accepted: "pull_requests=write"},
		{name: "list PRs with pull_requests read", method: http.MethodGet, path: "/repos/acme/fleet/pulls",
			grant: map[string]string{"metadata": "read", "pull_requests": "read"}, want: http.StatusOK},
		{name: "list PRs without pull_requests", method: http.MethodGet, path: "/repos/acme/fleet/pulls",
			grant: map[string]string{"metadata": "read", "issues": "write"}, want: http.StatusForbidden, accepted: "pull_requests=read"},
		{name: "open the dashboard issue without issues", method: http.MethodPost, path: "/repos/acme/fleet/issues", body: map[string]string{"title": "kedge"},
			grant: map[string]string{"metadata": "read", "pull_requests": "write"}, want: http.StatusForbidden, accepted: "issues=write"},
		{name: "comment on a PR with pull_requests write alone", method: http.MethodPost, path: "/repos/acme/fleet/issues/1/comments", body: comment,
			grant: map[string]string{"metadata": "read", "pull_requests": "write"}, want: http.StatusCreated},
		{name: "comment with neither", method: http.MethodPost, path: "/repos/acme/fleet/issues/1/comments", body: comment,
			grant: map[string]string{"metadata": "read", "contents": "write"}, want: http.StatusForbidden, accepted: "issues=write; pull_requests=write"},
		{name: "admin is more than write", method: http.MethodPost, path: "/repos/acme/fleet/issues", body: map[string]string{"title": "kedge"},
			grant: map[string]string{"metadata": "read", "issues": "admin"}, want: http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.hub.SetPermissions(KedgePermissions())
			if tt.method == http.MethodPost && strings.HasSuffix(tt.path, "/1/comments") {
				if got := raw(t, s, http.MethodGet, "/repos/acme/fleet/pulls/1", "Bearer "+botToken, nil); got.status == http.StatusNotFound {
					require.Equal(t, http.StatusCreated, raw(t, s, http.MethodPost, "/repos/acme/fleet/pulls", "Bearer "+tok.Token, newPR).status)
				}
			}
			s.hub.SetPermissions(tt.grant)
			got := raw(t, s, tt.method, tt.path, "Bearer "+tok.Token, tt.body)
			assert.Equal(t, tt.want, got.status, string(got.body))
			if tt.want == http.StatusForbidden {
				assert.Contains(t, string(got.body), `"message":"Resource not accessible by integration"`)
				assert.Equal(t, tt.accepted, got.header.Get("X-Accepted-GitHub-Permissions"))
			}
			s.hub.SetPermissions(map[string]string{"metadata": "read"})
			assert.NotEqual(t, http.StatusForbidden, raw(t, s, tt.method, tt.path, "Bearer "+botToken, tt.body).status, "a personal token is not held to the App's permissions")
		})
	}
}
