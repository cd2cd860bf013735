package forge_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

// hub serves acme/platform, acme/team-a and globex/team-b, with the App
// installed on acme (7) and globex (9), and initech/apps without it.
func hub(t *testing.T) (*ghemu.Hub, string) {
	t.Helper()
	key, keyFile := appKey(t)
	h := ghemu.NewHub(t, ghemu.HubOptions{AppID: 42, AppPublicKey: &key.PublicKey, Installations: map[string]int64{"acme": 7, "globex": 9}})
	for _, r := range []ghemu.Options{
		{Owner: "acme", Repo: "platform"}, {Owner: "acme", Repo: "team-a"},
		{Owner: "globex", Repo: "team-b", DefaultBranch: "release"}, {Owner: "initech", Repo: "apps"},
	} {
		h.AddRepo(r)
	}
	return h, keyFile
}

func TestPoolFindsEachOwnersInstallationAndMintsOneTokenPerInstallation(t *testing.T) {
	h, keyFile := hub(t)
	pool, err := forge.NewPool(context.Background(), forge.Config{APIURL: h.URL, AppID: 42, PrivateKeyFile: keyFile, HTTPClient: h.Client()})
	require.NoError(t, err)
	ctx := context.Background()

	want := map[string]string{"acme/platform": "main", "acme/team-a": "main", "globex/team-b": "release"}
	for _, name := range []string{"acme/platform", "acme/team-a", "globex/team-b", "acme/platform"} {
		owner, repoName := splitRepo(name)
		c, err := pool.Client(ctx, owner, repoName)
		require.NoError(t, err, name)
		got, err := c.DefaultBranch(ctx)
		require.NoError(t, err, name)
		assert.Equal(t, want[name], got, name)
	}

	lookups := map[string]int{}
	for _, call := range h.Calls() {
		require.NotEqual(t, http.StatusNotFound, call.Status, call.Path)
		lookups[call.Route+" "+call.Path]++
	}
	assert.Equal(t, map[string]int{
		"GET /orgs/{org}/installation /orgs/acme/installation":                          1,
		"GET /orgs/{org}/installation /orgs/globex/installation":                        1,
		"POST /app/installations/{id}/access_tokens /app/installations/7/access_tokens": 1,
		"POST /app/installations/{id}/access_tokens /app/installations/9/access_tokens": 1,
	}, lookups, "one lookup per account, one token per installation")
	assert.Equal(t, map[int64]int{7: 1, 9: 1}, h.MintedTokens())
	assert.Equal(t, int64(2), pool.Stats().TokenMints)

	acme, err := pool.Client(ctx, "acme", "team-a")
	require.NoError(t, err)
	token, err := acme.GitToken(ctx)
	require.NoError(t, err)
	assert.True(t, h.ValidTokenFor("acme/team-a", token))
	assert.False(t, h.ValidTokenFor("globex/team-b", token), "an installation token reaches its own account only")

	initech, err := pool.Client(ctx, "initech", "apps")
	require.NoError(t, err, "a client makes no request")
	_, err = initech.FindPRs(ctx, "kedge/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the GitHub App is not installed on the account initech")
	assert.Empty(t, h.Repo("initech/apps").Calls(), "a repository the App is not installed on is never called")
}

func TestPoolKeepsAFixedInstallation(t *testing.T) {
	h, keyFile := hub(t)
	c, err := forge.New(context.Background(), forge.Config{APIURL: h.URL, Owner: "acme", Repo: "platform", AppID: 42, InstallationID: 7, PrivateKeyFile: keyFile, HTTPClient: h.Client()})
	require.NoError(t, err)
	_, err = c.DefaultBranch(context.Background())
	require.NoError(t, err)
	for _, call := range h.Calls() {
		assert.NotEqual(t, "GET /repos/{owner}/{repo}/installation", call.Route, "a configured installation is not looked up")
	}
	assert.Equal(t, map[int64]int{7: 1}, h.MintedTokens())
}

func TestPoolOpensPullRequestsInEachRepository(t *testing.T) {
	h, keyFile := hub(t)
	pool, err := forge.NewPool(context.Background(), forge.Config{APIURL: h.URL, AppID: 42, PrivateKeyFile: keyFile, HTTPClient: h.Client()})
	require.NoError(t, err)
	ctx := context.Background()
	cases := []struct{ repo, head, base string }{
		{"acme/team-a", "kedge/prod/shop", "main"},
		{"globex/team-b", "kedge/prod/billing", "release"},
	}
	for _, tc := range cases {
		emu := h.Repo(tc.repo)
		emu.SetBranch(tc.head, sha(tc.repo+tc.head))
		if tc.base != "main" {
			emu.SetBranch(tc.base, sha(tc.repo+tc.base))
		}
		owner, name := splitRepo(tc.repo)
		c, err := pool.Client(ctx, owner, name)
		require.NoError(t, err)
		pr, err := c.CreatePR(ctx, forge.NewPR{Title: "Restart " + tc.head, Head: tc.head, Base: tc.base, Body: "body"})
		require.NoError(t, err)
		assert.Contains(t, pr.HTMLURL, "/"+tc.repo+"/pull/")

		calls := emu.MutatingCalls()
		require.Len(t, calls, 1, tc.repo)
		assert.Equal(t, "POST", calls[0].Method)
		assert.Equal(t, "/repos/"+tc.repo+"/pulls", calls[0].Path)
		var body struct{ Head, Base, Title string }
		require.NoError(t, calls[0].DecodeBody(&body))
		assert.Equal(t, tc.head, body.Head)
		assert.Equal(t, tc.base, body.Base, "the PR targets the branch the cluster follows")
	}
}

// The gap between writes holds across the repositories of a pool: writes
// to N repositories are not N times as fast.
func TestPoolSpacesWritesAcrossRepositories(t *testing.T) {
	h, keyFile := hub(t)
	const gap = 150 * time.Millisecond
	pool, err := forge.NewPool(context.Background(), forge.Config{APIURL: h.URL, AppID: 42, PrivateKeyFile: keyFile, HTTPClient: h.Client(), MinMutationGap: gap})
	require.NoError(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, name := range []string{"acme/platform", "acme/team-a", "globex/team-b"} {
		owner, repoName := splitRepo(name)
		c, err := pool.Client(ctx, owner, repoName)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.CreateIssue(ctx, forge.NewIssue{Title: "dashboard", Body: "b"})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()

	var writes []time.Time
	for _, name := range []string{"acme/platform", "acme/team-a", "globex/team-b"} {
		for _, c := range h.Repo(name).MutatingCalls() {
			writes = append(writes, c.At)
		}
	}
	require.Len(t, writes, 3)
	sortTimes(writes)
	for i := 1; i < len(writes); i++ {
		assert.GreaterOrEqual(t, writes[i].Sub(writes[i-1]), gap-10*time.Millisecond, "write %d", i)
	}
}

// TestPoolBelievesAMissingInstallationUntilItsRecheck: GitHub's 404 for an
// account without the App (asked as an organisation, then as a user)
// holds for Config.InstallationRecheck. Until
// then the clients of that repository get the same error, word for word
// (the dashboard shows it), and no request is made; after it, an
// installation made meanwhile is found. A failure that is not GitHub's
// answer (a 5xx) is asked again at once.
func TestPoolBelievesAMissingInstallationUntilItsRecheck(t *testing.T) {
	ctx := context.Background()
	lookups := func(h *ghemu.Hub) int {
		n := 0
		for _, call := range h.Calls() {
			if call.Path == "/orgs/initech/installation" {
				n++
			}
		}
		return n
	}
	findPRs := func(t *testing.T, h *ghemu.Hub, keyFile string, recheck time.Duration) (*forge.Client, func() error) {
		pool, err := forge.NewPool(ctx, forge.Config{APIURL: h.URL, AppID: 42, PrivateKeyFile: keyFile, HTTPClient: h.Client(),
			InstallationRecheck: recheck, MaxRetries: -1})
		require.NoError(t, err)
		c, err := pool.Client(ctx, "initech", "apps")
		require.NoError(t, err)
		return c, func() error { _, err := c.FindPRs(ctx, "kedge/"); return err }
	}

	t.Run("within the recheck", func(t *testing.T) {
		h, keyFile := hub(t)
		_, find := findPRs(t, h, keyFile, time.Hour)
		first := find()
		require.Error(t, first)
		assert.Contains(t, first.Error(), "the GitHub App is not installed on the account initech")
		assert.Contains(t, first.Error(), "404")
		h.Install("initech", 11)
		for range 3 {
			err := find()
			require.Error(t, err)
			assert.Equal(t, first.Error(), err.Error())
		}
		assert.Equal(t, 1, lookups(h), "one lookup for four calls")
		assert.Empty(t, h.Repo("initech/apps").Calls())
	})

	t.Run("every repository of the owner shares the answer", func(t *testing.T) {
		h, keyFile := hub(t)
		h.AddRepo(ghemu.Options{Owner: "initech", Repo: "billing"})
		pool, err := forge.NewPool(ctx, forge.Config{APIURL: h.URL, AppID: 42, PrivateKeyFile: keyFile, HTTPClient: h.Client(),
			InstallationRecheck: time.Hour, MaxRetries: -1})
		require.NoError(t, err)
		apps, err := pool.Client(ctx, "initech", "apps")
		require.NoError(t, err)
		_, err = apps.FindPRs(ctx, "kedge/")
		require.Error(t, err)
		billing, err := pool.Client(ctx, "initech", "billing")
		require.NoError(t, err)
		for range 3 {
			_, err := billing.FindPRs(ctx, "kedge/")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "the GitHub App is not installed on the account initech", "the account's answer, as GitHub gave it")
		}
		assert.Equal(t, 1, lookups(h), "one lookup for the owner, not one per repository")
		for _, call := range h.Calls() {
			assert.NotContains(t, call.Path, "/repos/initech/billing", "no repository is asked")
		}
		assert.Empty(t, h.Repo("initech/billing").Calls())
	})

	t.Run("after the recheck", func(t *testing.T) {
		h, keyFile := hub(t)
		_, find := findPRs(t, h, keyFile, time.Nanosecond)
		require.Error(t, find())
		h.Install("initech", 11)
		require.NoError(t, find(), "the installation made meanwhile is found")
		require.NoError(t, find())
		assert.Equal(t, 2, lookups(h), "a found installation is kept")
		assert.Equal(t, map[int64]int{11: 1}, h.MintedTokens())
	})

	t.Run("a server error is not an answer", func(t *testing.T) {
		h, keyFile := hub(t)
		h.Install("initech", 11)
		h.QueueFault(ghemu.ServerError(http.StatusBadGateway).For(http.MethodGet, "/orgs/initech/installation"))
		_, find := findPRs(t, h, keyFile, time.Hour)
		err := find()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "502")
		require.NoError(t, find(), "asked again at once")
		assert.Equal(t, 2, lookups(h))
	})
}
