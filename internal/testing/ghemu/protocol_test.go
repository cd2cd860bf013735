package ghemu

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConditionalGetAnswers304WithoutCharging(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	createPR(t, s, c, "kedge/shop", "main")
	auth := "Bearer " + botToken
	const list = "/repos/acme/fleet/pulls?state=all"

	first := raw(t, s, http.MethodGet, list, auth, nil)
	require.Equal(t, http.StatusOK, first.status)
	etag := first.header.Get("ETag")
	require.Regexp(t, `^W/"[0-9a-f]{32}"$`, etag)
	used := s.RateUsed()

	cases := []struct {
		name        string
		ifNoneMatch string
		status      int
	}{
		{"same ETag", etag, http.StatusNotModified},
		{"strong form of the weak ETag", etag[2:], http.StatusNotModified},
		{"one of several", `"nope", ` + etag, http.StatusNotModified},
		{"other ETag", `W/"0"`, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.RateUsed()
			a := raw(t, s, http.MethodGet, list, auth, nil, "If-None-Match", tc.ifNoneMatch)
			require.Equal(t, tc.status, a.status)
			assert.NotEmpty(t, a.header.Get("X-RateLimit-Remaining"))
			if tc.status == http.StatusNotModified {
				assert.Empty(t, a.body)
				assert.Equal(t, before, s.RateUsed(), "a 304 is not charged")
			} else {
				assert.Equal(t, before+1, s.RateUsed())
			}
		})
	}
	assert.Equal(t, used+1, s.RateUsed())

	// A change anywhere in the listing gives a new ETag.
	require.NoError(t, s.EditAsHuman(1, Edit{Title: github.String("edited")}))
	a := raw(t, s, http.MethodGet, list, auth, nil, "If-None-Match", etag)
	assert.Equal(t, http.StatusOK, a.status)
	assert.NotEqual(t, etag, a.header.Get("ETag"))
}

func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.RateLimit = 3 })
	s.QueueFault(ServerError(http.StatusBadGateway).For(http.MethodGet, "/repos/*/*/issues"))
	cases := []struct {
		name          string
		method, path  string
		authorization string
		status        int
		remaining     string
	}{
		{"success", http.MethodGet, "/repos/acme/fleet", "Bearer " + botToken, http.StatusOK, "2"},
		{"unauthenticated is not charged", http.MethodGet, "/repos/acme/fleet", "", http.StatusUnauthorized, "2"},
		{"out of surface", http.MethodGet, "/repos/acme/fleet/branches", "Bearer " + botToken, http.StatusNotFound, "2"},
		{"fault", http.MethodGet, "/repos/acme/fleet/issues", "Bearer " + botToken, http.StatusBadGateway, "2"},
		{"not found inside the surface", http.MethodGet, "/repos/acme/fleet/pulls/9", "Bearer " + botToken, http.StatusNotFound, "1"},
		{"last one", http.MethodGet, "/repos/acme/fleet", "Bearer " + botToken, http.StatusOK, "0"},
		{"exhausted", http.MethodGet, "/repos/acme/fleet", "Bearer " + botToken, http.StatusForbidden, "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := raw(t, s, tc.method, tc.path, tc.authorization, nil)
			require.Equal(t, tc.status, a.status, string(a.body))
			assert.Equal(t, "3", a.header.Get("X-RateLimit-Limit"))
			assert.Equal(t, tc.remaining, a.header.Get("X-RateLimit-Remaining"))
			assert.Equal(t, "core", a.header.Get("X-RateLimit-Resource"))
			reset, err := strconv.ParseInt(a.header.Get("X-RateLimit-Reset"), 10, 64)
			require.NoError(t, err)
			assert.InDelta(t, time.Now().Add(time.Hour).Unix(), reset, 5)
			used, err := strconv.Atoi(a.header.Get("X-RateLimit-Used"))
			require.NoError(t, err)
			remaining, _ := strconv.Atoi(tc.remaining)
			assert.Equal(t, 3-remaining, used)
		})
	}

	_, _, err := ghClient(t, s, botToken).Repositories.Get(context.Background(), testOwner, testRepo)
	var rle *github.RateLimitError
	require.True(t, errors.As(err, &rle), "go-github maps the exhausted primary limit: %v", err)
	assert.Equal(t, 0, rle.Rate.Remaining)
	assert.Equal(t, "API rate limit exceeded for kedge-bot.", rle.Message)

	s.SetRateRemaining(3)
	a := raw(t, s, http.MethodGet, "/repos/acme/fleet", "Bearer "+botToken, nil)
	assert.Equal(t, http.StatusOK, a.status)
}

func TestFaultsMapToGoGithubErrors(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	ctx := context.Background()

	s.QueueFault(SecondaryRateLimit(7))
	_, _, err := c.Repositories.Get(ctx, testOwner, testRepo)
	var abuse *github.AbuseRateLimitError
	require.True(t, errors.As(err, &abuse), "%v", err)
	require.NotNil(t, abuse.RetryAfter)
	assert.Equal(t, 7*time.Second, *abuse.RetryAfter)

	// go-github does not map 429: the status and Retry-After are all there is.
	c = ghClient(t, s, botToken) // a fresh client: go-github now blocks until the secondary limit passes
	s.QueueFault(TooManyRequests(3))
	_, resp, err := c.Repositories.Get(ctx, testOwner, testRepo)
	var ghErr *github.ErrorResponse
	require.True(t, errors.As(err, &ghErr), "%v", err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))

	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	s.QueueFault(PrimaryRateLimit(reset))
	_, _, err = c.Repositories.Get(ctx, testOwner, testRepo)
	var rle *github.RateLimitError
	require.True(t, errors.As(err, &rle), "%v", err)
	assert.Equal(t, reset.Unix(), rle.Rate.Reset.Unix())
}

func TestFaultQueueAndFunc(t *testing.T) {
	s := newTestServer(t)
	auth := "Bearer " + botToken
	s.QueueFault(
		ServerError(http.StatusServiceUnavailable).For(http.MethodPost, "/repos/*/*/issues"),
		ServerError(http.StatusBadGateway),
	)
	steps := []struct {
		method, path string
		status       int
		faulted      bool
	}{
		{http.MethodGet, "/repos/acme/fleet", http.StatusBadGateway, true}, // the POST fault waits for its match
		{http.MethodGet, "/repos/acme/fleet", http.StatusOK, false},        // each fault applies once
		{http.MethodPost, "/repos/acme/fleet/issues", http.StatusServiceUnavailable, true},
		{http.MethodPost, "/repos/acme/fleet/issues", http.StatusCreated, false},
	}
	for i, st := range steps {
		a := raw(t, s, st.method, st.path, auth, map[string]string{"title": "t"})
		require.Equal(t, st.status, a.status, "step %d", i)
	}
	assert.Equal(t, 0, s.PendingFaults())
	for i, call := range s.Calls() {
		assert.Equal(t, steps[i].faulted, call.Faulted, "call %d", i)
		assert.Equal(t, steps[i].status, call.Status, "call %d", i)
	}
	assert.Len(t, s.Issues(), 1, "a faulted create changes nothing")

	calls := 0
	s.SetFaultFunc(func(r *http.Request) *Fault {
		calls++
		if r.Method == http.MethodPatch {
			f := ServerError(http.StatusInternalServerError)
			return &f
		}
		return nil
	})
	assert.Equal(t, http.StatusInternalServerError, raw(t, s, http.MethodPatch, "/repos/acme/fleet/issues/1", auth, map[string]string{"body": "x"}).status)
	assert.Equal(t, http.StatusOK, raw(t, s, http.MethodGet, "/repos/acme/fleet", auth, nil).status)
	assert.Equal(t, 2, calls)
	s.SetFaultFunc(nil)
	assert.Equal(t, http.StatusOK, raw(t, s, http.MethodPatch, "/repos/acme/fleet/issues/1", auth, map[string]string{"body": "x"}).status)
}

func TestDelayFaultTimesOutAClient(t *testing.T) {
	s := newTestServer(t)
	s.QueueFault(Delay(2 * time.Second))
	client := s.Client()
	client.Timeout = 100 * time.Millisecond
	c, err := github.NewClient(client).WithAuthToken(botToken).WithEnterpriseURLs(s.URL, s.URL)
	require.NoError(t, err)

	_, _, err = c.Repositories.Get(context.Background(), testOwner, testRepo)
	var timeout net.Error
	require.ErrorAs(t, err, &timeout)
	assert.True(t, timeout.Timeout(), "the client's own timeout ended the call: %v", err)
	require.Eventually(t, func() bool { return len(s.Calls()) == 1 }, 2*time.Second, 10*time.Millisecond)
	assert.Equal(t, 0, s.Calls()[0].Status, "the client left before any answer")

	s.QueueFault(Delay(50 * time.Millisecond))
	start := time.Now()
	repo, _, err := ghClient(t, s, botToken).Repositories.Get(context.Background(), testOwner, testRepo)
	require.NoError(t, err, "a delay without a client timeout only slows the answer")
	assert.Equal(t, "main", repo.GetDefaultBranch())
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
}

func TestOutOfSurfaceCallsAreRecorded(t *testing.T) {
	s := newTestServer(t)
	auth := "Bearer " + botToken
	cases := []struct{ method, path string }{
		{http.MethodGet, "/repos/acme/fleet/branches"},
		{http.MethodDelete, "/repos/acme/fleet/pulls/1"},
		{http.MethodPut, "/repos/acme/fleet/pulls/1/merge"},
		{http.MethodGet, "/repos/acme/fleet/issues/1"},
		{http.MethodGet, "/repos/acme/fleet/pulls/abc"},
		{http.MethodPost, "/graphql"},
		{http.MethodGet, "/user/repos"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			a := raw(t, s, tc.method, tc.path, auth, nil)
			assert.Equal(t, http.StatusNotFound, a.status)
		})
	}
	out := s.OutOfSurfaceCalls()
	require.Len(t, out, len(cases))
	for i, tc := range cases {
		assert.Equal(t, tc.method, out[i].Method)
		assert.Equal(t, tc.path, out[i].Path)
		assert.Empty(t, out[i].Route)
	}
}

func TestCallLog(t *testing.T) {
	key := newKey(t)
	s := newTestServer(t, func(o *Options) { o.AppID, o.AppPublicKey, o.InstallationID = 1, &key.PublicKey, 2 })
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	pr := createPR(t, s, c, "kedge/shop", "main")
	_, _, err := c.PullRequests.List(ctx, testOwner, testRepo, &github.PullRequestListOptions{State: "all", Head: "acme:kedge/shop"})
	require.NoError(t, err)
	_, _, err = c.Issues.AddLabelsToIssue(ctx, testOwner, testRepo, pr.GetNumber(), []string{"kedge"})
	require.NoError(t, err)
	raw(t, s, http.MethodPost, "/app/installations/2/access_tokens", "Bearer nope", nil)

	calls := s.Calls()
	require.Len(t, calls, 4)
	assert.Equal(t, "POST /repos/{owner}/{repo}/pulls", calls[0].Route)
	assert.Equal(t, "/repos/acme/fleet/pulls", calls[0].Path, "the /api/v3 prefix is not part of the path")
	var body map[string]any
	require.NoError(t, calls[0].DecodeBody(&body))
	assert.Equal(t, map[string]any{"title": "Restart kedge/shop", "head": "kedge/shop", "base": "main", "body": "body of kedge/shop"}, body)
	assert.Equal(t, "all", calls[1].Query.Get("state"))
	assert.Equal(t, "acme:kedge/shop", calls[1].Query.Get("head"))
	assert.Equal(t, http.StatusOK, calls[1].Status)
	assert.Equal(t, routeAccessTokens, calls[3].Route)
	assert.Equal(t, http.StatusUnauthorized, calls[3].Status)

	mutating := s.MutatingCalls()
	require.Len(t, mutating, 2)
	assert.Equal(t, "/repos/acme/fleet/pulls", mutating[0].Path)
	assert.Equal(t, "/repos/acme/fleet/issues/1/labels", mutating[1].Path)

	s.ResetCalls()
	assert.Empty(t, s.Calls())
}

func TestSecondaryMutationGap(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.SecondaryMutationGap = 200 * time.Millisecond })
	auth := "Bearer " + botToken
	post := func() rawAnswer {
		return raw(t, s, http.MethodPost, "/repos/acme/fleet/issues", auth, map[string]string{"title": "t"})
	}
	require.Equal(t, http.StatusCreated, post().status)
	assert.Equal(t, http.StatusOK, raw(t, s, http.MethodGet, "/repos/acme/fleet/issues", auth, nil).status, "reads are not spaced")
	a := post()
	require.Equal(t, http.StatusForbidden, a.status)
	assert.Equal(t, "1", a.header.Get("Retry-After"))
	assert.Contains(t, string(a.body), "secondary rate limit")
	time.Sleep(250 * time.Millisecond)
	assert.Equal(t, http.StatusCreated, post().status)
	assert.Len(t, s.Issues(), 2)
}
