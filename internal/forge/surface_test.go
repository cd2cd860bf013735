package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

func ptr[T any](v T) *T { return &v }

// wantCall is one request as GitHub's REST docs describe it.
type wantCall struct {
	method string
	path   string
	query  url.Values // subset that must be present
	body   string     // JSON, compared semantically; empty for none
}

func assertCalls(t *testing.T, got []ghemu.Call, want []wantCall) {
	t.Helper()
	require.Len(t, got, len(want), "calls: %v", got)
	for i, w := range want {
		assert.Equal(t, w.method, got[i].Method, "call %d", i)
		assert.Equal(t, w.path, got[i].Path, "call %d", i)
		for k, v := range w.query {
			assert.Equal(t, v, got[i].Query[k], "call %d query %s", i, k)
		}
		if w.body == "" {
			assert.Empty(t, got[i].Body, "call %d", i)
		} else {
			assert.JSONEq(t, w.body, string(got[i].Body), "call %d", i)
		}
		assert.False(t, got[i].OutOfSurface, "call %d", i)
	}
}

func TestRequestsStayOnTheDocumentedSurface(t *testing.T) {
	emu, c := setup(t, nil, nil)
	ctx := context.Background()
	branch(emu, "kedge/shop")
	issue := emu.CreateIssueAsHuman("dashboard", "<!-- kedge:dashboard -->", "kedge")
	require.Equal(t, 1, issue)
	_, err := c.CreatePR(ctx, forge.NewPR{Title: "seed", Head: "kedge/shop", Base: "main"})
	require.NoError(t, err)
	emu.ResetCalls()

	cases := []struct {
		name string
		run  func() error
		want []wantCall
	}{
		{
			name: "default branch",
			run:  func() error { _, err := c.DefaultBranch(ctx); return err },
			want: []wantCall{{method: "GET", path: "/repos/acme/fleet"}},
		},
		{
			name: "create pull request",
			run: func() error {
				_, err := c.CreatePR(ctx, forge.NewPR{Title: "Restart cart", Head: branch(emu, "kedge/cart"), Base: "main", Body: "drift", Draft: true, MaintainerCanModify: true})
				return err
			},
			want: []wantCall{{method: "POST", path: "/repos/acme/fleet/pulls",
				body: `{"title":"Restart cart","head":"kedge/cart","base":"main","body":"drift","draft":true,"maintainer_can_modify":true}`}},
		},
		{
			name: "find pull requests",
			run:  func() error { _, err := c.FindPRs(ctx, "kedge/"); return err },
			want: []wantCall{{method: "GET", path: "/repos/acme/fleet/pulls", query: url.Values{"state": {"all"}, "per_page": {"100"}}}},
		},
		{
			name: "update pull request",
			run:  func() error { return c.UpdatePR(ctx, 2, ptr("new title"), ptr("new body"), ptr("closed")) },
			want: []wantCall{{method: "PATCH", path: "/repos/acme/fleet/pulls/2", body: `{"title":"new title","body":"new body","state":"closed"}`}},
		},
		{
			name: "update with nothing to change sends nothing",
			run:  func() error { return c.UpdatePR(ctx, 2, nil, nil, nil) },
		},
		{
			name: "add labels",
			run:  func() error { return c.AddLabels(ctx, 2, "kedge", "istio") },
			want: []wantCall{{method: "POST", path: "/repos/acme/fleet/issues/2/labels", body: `["kedge","istio"]`}},
		},
		{
			name: "request reviewers, team given as org/team",
			run:  func() error { return c.RequestReviewers(ctx, 3, []string{"alice"}, []string{"acme/mesh"}) },
			want: []wantCall{{method: "POST", path: "/repos/acme/fleet/pulls/3/requested_reviewers", body: `{"reviewers":["alice"],"team_reviewers":["mesh"]}`}},
		},
		{
			name: "comment",
			run:  func() error { return c.Comment(ctx, 2, "stopped: branch edited by a person") },
			want: []wantCall{{method: "POST", path: "/repos/acme/fleet/issues/2/comments", body: `{"body":"stopped: branch edited by a person"}`}},
		},
		{
			name: "list comments",
			run:  func() error { _, err := c.ListComments(ctx, 2); return err },
			want: []wantCall{{method: "GET", path: "/repos/acme/fleet/issues/2/comments", query: url.Values{"per_page": {"100"}}}},
		},
		{
			name: "find issue",
			run:  func() error { _, err := c.FindIssue(ctx, "kedge", "<!-- kedge:dashboard -->"); return err },
			want: []wantCall{{method: "GET", path: "/repos/acme/fleet/issues",
				query: url.Values{"labels": {"kedge"}, "state": {"all"}, "sort": {"created"}, "direction": {"asc"}, "per_page": {"100"}}}},
		},
		{
			name: "create issue",
			run: func() error {
				_, err := c.CreateIssue(ctx, forge.NewIssue{Title: "kedge dashboard", Body: "b", Labels: []string{"kedge"}})
				return err
			},
			want: []wantCall{{method: "POST", path: "/repos/acme/fleet/issues", body: `{"title":"kedge dashboard","body":"b","labels":["kedge"]}`}},
		},
		{
			name: "update issue",
			run:  func() error { return c.UpdateIssue(ctx, 1, nil, ptr("rewritten"), ptr("open")) },
			want: []wantCall{{method: "PATCH", path: "/repos/acme/fleet/issues/1", body: `{"body":"rewritten","state":"open"}`}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			emu.ResetCalls()
			require.NoError(t, tc.run())
			assertCalls(t, emu.Calls(), tc.want)
		})
	}
	assert.Empty(t, emu.OutOfSurfaceCalls())

	// The effects are real.
	pr2 := prState(t, emu, 2)
	assert.Equal(t, "new title", pr2.GetTitle())
	assert.Equal(t, "closed", pr2.GetState())
	assert.ElementsMatch(t, []string{"kedge", "istio"}, labelNames(pr2.Labels))
	pr3 := prState(t, emu, 3)
	assert.True(t, pr3.GetDraft())
	assert.Equal(t, "mesh", pr3.RequestedTeams[0].GetSlug())
	is, _ := emu.Issue(1)
	assert.Equal(t, "rewritten", is.GetBody())
}

func labelNames(labels []*github.Label) []string {
	var out []string
	for _, l := range labels {
		out = append(out, l.GetName())
	}
	return out
}

func TestCreatePRAdoptsTheExistingOne(t *testing.T) {
	emu, c := setup(t, nil, nil)
	ctx := context.Background()
	first, err := c.CreatePR(ctx, forge.NewPR{Title: "Restart shop", Head: branch(emu, "kedge/shop"), Base: "main", Body: "v1"})
	require.NoError(t, err)
	// Another pull request for the same head to another base must not be
	// taken for it.
	emu.SetBranch("release", sha("release"))
	_, err = c.CreatePR(ctx, forge.NewPR{Title: "other base", Head: "kedge/shop", Base: "release"})
	require.NoError(t, err)
	emu.ResetCalls()

	again, err := c.CreatePR(ctx, forge.NewPR{Title: "Restart shop", Head: "kedge/shop", Base: "main", Body: "v2"})
	require.NoError(t, err)
	assert.Equal(t, first.Number, again.Number)
	assert.Equal(t, "v1", again.Body, "the existing pull request is returned as it is")
	assertCalls(t, emu.Calls(), []wantCall{
		{method: "POST", path: "/repos/acme/fleet/pulls", body: `{"title":"Restart shop","head":"kedge/shop","base":"main","body":"v2","draft":false,"maintainer_can_modify":false}`},
		{method: "GET", path: "/repos/acme/fleet/pulls", query: url.Values{"state": {"open"}, "head": {"acme:kedge/shop"}, "base": {"main"}}},
	})
	assert.Equal(t, http.StatusUnprocessableEntity, emu.Calls()[0].Status)
	assert.Len(t, emu.PRs(), 2)

	t.Run("other validation errors are returned", func(t *testing.T) {
		emu.SetBranch("kedge/empty", sha("main-of-empty"))
		emu.SetBranch("main-copy", sha("main-of-empty"))
		_, err := c.CreatePR(ctx, forge.NewPR{Title: "t", Head: "kedge/empty", Base: "main-copy"})
		var ghErr *github.ErrorResponse
		require.True(t, errors.As(err, &ghErr), "%v", err)
		assert.Equal(t, "No commits between main-copy and kedge/empty", ghErr.Errors[0].Message)
		var later *forge.RetryLaterError
		assert.False(t, errors.As(err, &later))

		_, err = c.CreatePR(ctx, forge.NewPR{Title: "t", Head: "kedge/never-pushed", Base: "main"})
		require.True(t, errors.As(err, &ghErr))
		assert.Equal(t, "head", ghErr.Errors[0].Field)
	})
}

// openPRs opens PRs 1 to total, on kedge/ns-NNN branches but every
// renovateEvery-th, on a renovate/ branch; after each it calls then.
func openPRs(t *testing.T, emu *ghemu.Server, c *forge.Client, total, renovateEvery int, then func(i int)) {
	t.Helper()
	for i := 1; i <= total; i++ {
		prefix := "kedge/"
		if i%renovateEvery == 0 {
			prefix = "renovate/"
		}
		_, err := c.CreatePR(context.Background(), forge.NewPR{Title: fmt.Sprint(i), Head: branch(emu, fmt.Sprintf("%sns-%03d", prefix, i)), Base: "main"})
		require.NoError(t, err)
		then(i)
	}
}

func TestFindPRs(t *testing.T) {
	emu, c := setup(t, nil, nil)
	ctx := context.Background()
	const total = 103 // more than one page of 100
	openPRs(t, emu, c, total, 10, func(int) {})
	require.NoError(t, emu.MergePR(1, nil))
	require.NoError(t, emu.ClosePR(2))
	require.NoError(t, emu.EditAsHuman(3, ghemu.Edit{AddLabels: []string{"kedge"}}))
	emu.ResetCalls()

	prs, err := c.FindPRs(ctx, "kedge/")
	require.NoError(t, err)
	require.Len(t, prs, total-total/10)
	for i, pr := range prs[1:] {
		require.Less(t, prs[i].Number, pr.Number, "ordered by number")
	}
	assert.Len(t, emu.Calls(), 2, "two pages")
	assert.Equal(t, "2", emu.Calls()[1].Query.Get("page"))

	merged, closed, labelled := prs[0], prs[1], prs[2]
	assert.Equal(t, "kedge/ns-001", merged.Head)
	assert.Equal(t, "closed", merged.State)
	assert.True(t, merged.Merged, "a listing has merged_at, not merged")
	require.NotNil(t, merged.MergedAt)
	assert.Equal(t, "closed", closed.State)
	assert.False(t, closed.Merged)
	assert.Nil(t, closed.MergedAt)
	assert.Equal(t, []string{"kedge"}, labelled.Labels)
	assert.Equal(t, "open", labelled.State)
	assert.Equal(t, sha("kedge/ns-003"), labelled.HeadSHA)
	assert.Equal(t, "main", labelled.Base)
	assert.Equal(t, emu.URL+"/acme/fleet/pull/3", labelled.HTMLURL)

	none, err := c.FindPRs(ctx, "nothing/")
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestConditionalRequestsReuseUnchangedListings(t *testing.T) {
	emu, c := setup(t, nil, nil)
	ctx := context.Background()
	for _, ns := range []string{"shop", "cart"} {
		_, err := c.CreatePR(ctx, forge.NewPR{Title: ns, Head: branch(emu, "kedge/"+ns), Base: "main"})
		require.NoError(t, err)
	}
	_, err := c.CreateIssue(ctx, forge.NewIssue{Title: "dash", Body: "<!-- m -->", Labels: []string{"kedge"}})
	require.NoError(t, err)

	cycle := func() ([]forge.PR, *forge.Issue, string) {
		prs, err := c.FindPRs(ctx, "kedge/")
		require.NoError(t, err)
		is, err := c.FindIssue(ctx, "kedge", "<!-- m -->")
		require.NoError(t, err)
		branchName, err := c.DefaultBranch(ctx)
		require.NoError(t, err)
		return prs, is, branchName
	}
	prs1, is1, b1 := cycle()
	used := emu.RateUsed()
	emu.ResetCalls()

	prs2, is2, b2 := cycle()
	assert.Equal(t, prs1, prs2)
	assert.Equal(t, is1, is2)
	assert.Equal(t, b1, b2)
	for _, call := range emu.Calls() {
		assert.Equal(t, http.StatusNotModified, call.Status, call.Path)
	}
	assert.Len(t, emu.Calls(), 3)
	assert.Equal(t, used, emu.RateUsed(), "an unchanged cycle costs no rate limit")
	assert.Equal(t, int64(3), c.Stats().NotModified)

	require.NoError(t, emu.EditAsHuman(1, ghemu.Edit{Title: ptr("renamed by a person")}))
	prs3, _, _ := cycle()
	assert.Equal(t, "renamed by a person", prs3[0].Title)
	assert.Equal(t, used+1, emu.RateUsed(), "only the pull request listing changed")

	prs4, _, _ := cycle()
	assert.Equal(t, prs3, prs4, "the changed listing, once read, replays as read")
}

func TestFindIssue(t *testing.T) {
	const marker = "<!-- kedge:dashboard -->"
	cases := []struct {
		name  string
		setup func(emu *ghemu.Server)
		want  int // 0: none
	}{
		{"none", func(*ghemu.Server) {}, 0},
		{"label without marker", func(emu *ghemu.Server) { emu.CreateIssueAsHuman("x", "no marker", "kedge") }, 0},
		{"marker without label", func(emu *ghemu.Server) { emu.CreateIssueAsHuman("x", marker, "other") }, 0},
		{"oldest open wins", func(emu *ghemu.Server) {
			emu.CreateIssueAsHuman("a", marker, "kedge")
			emu.CreateIssueAsHuman("b", marker, "kedge")
		}, 1},
		{"open beats closed", func(emu *ghemu.Server) {
			emu.CreateIssueAsHuman("a", marker, "kedge")
			emu.CreateIssueAsHuman("b", marker, "kedge")
			require.NoError(t, emu.EditAsHuman(1, ghemu.Edit{State: ptr("closed")}))
		}, 2},
		{"most recently created closed one", func(emu *ghemu.Server) {
			emu.CreateIssueAsHuman("a", marker, "kedge")
			emu.CreateIssueAsHuman("b", marker, "kedge")
			require.NoError(t, emu.EditAsHuman(1, ghemu.Edit{State: ptr("closed")}))
			require.NoError(t, emu.EditAsHuman(2, ghemu.Edit{State: ptr("closed")}))
		}, 2},
		{"a pull request is never the issue", func(emu *ghemu.Server) {
			emu.SetBranch("kedge/shop", sha("shop"))
			c := ghClient(t, emu)
			_, _, err := c.PullRequests.Create(context.Background(), owner, repo, &github.NewPullRequest{
				Title: ptr("t"), Head: ptr("kedge/shop"), Base: ptr("main"), Body: ptr(marker),
			})
			require.NoError(t, err)
			_, _, err = c.Issues.AddLabelsToIssue(context.Background(), owner, repo, 1, []string{"kedge"})
			require.NoError(t, err)
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			emu, c := setup(t, nil, nil)
			tc.setup(emu)
			got, err := c.FindIssue(context.Background(), "kedge", marker)
			require.NoError(t, err)
			if tc.want == 0 {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Number)
			assert.Contains(t, got.Body, marker)
			assert.Contains(t, got.Labels, "kedge")
		})
	}
}

func TestListCommentsPages(t *testing.T) {
	emu, c := setup(t, nil, nil)
	n := emu.CreateIssueAsHuman("x", "")
	for i := range 105 {
		author := "alice"
		if i%2 == 0 {
			author = ""
		}
		require.NoError(t, emu.CommentAsHuman(n, author, fmt.Sprint(i)))
	}
	comments, err := c.ListComments(context.Background(), n)
	require.NoError(t, err)
	require.Len(t, comments, 105)
	assert.Equal(t, "0", comments[0].Body)
	assert.Equal(t, "octocat", comments[0].Author)
	assert.Equal(t, "alice", comments[1].Author)
	assert.Equal(t, "104", comments[104].Body)
	assert.NotZero(t, comments[0].ID)
	assert.Contains(t, comments[0].HTMLURL, "#issuecomment-")
}

// ghClient acts as a person using another tool against the same server.
func ghClient(t *testing.T, emu *ghemu.Server) *github.Client {
	t.Helper()
	c, err := github.NewClient(emu.Client()).WithAuthToken(botToken).WithEnterpriseURLs(emu.URL, emu.URL)
	require.NoError(t, err)
	return c
}

// TestFindPRsReadsOnlyWhatChanged: after a first listing of every pull
// request, a listing reads the most recently updated ones until it meets
// one it has read before, and always equals a fresh client's full listing,
// changes made in the same second as the last listing included.
func TestFindPRsReadsOnlyWhatChanged(t *testing.T) {
	var offset atomic.Int64
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	emu, c := setup(t, func(o *ghemu.Options) {
		o.Clock = func() time.Time { return start.Add(time.Duration(offset.Load())) }
	}, nil)
	ctx := context.Background()
	const total = 250
	openPRs(t, emu, c, total, 25, func(i int) {
		if i%40 == 0 {
			offset.Add(int64(time.Second))
		}
	})
	fresh := func() []forge.PR {
		t.Helper()
		other, err := forge.New(ctx, forge.Config{APIURL: emu.URL, Owner: owner, Repo: repo, Token: botToken, HTTPClient: emu.Client()})
		require.NoError(t, err)
		prs, err := other.FindPRs(ctx, "kedge/")
		require.NoError(t, err)
		return prs
	}
	listing := func() ([]forge.PR, []ghemu.Call) {
		t.Helper()
		emu.ResetCalls()
		prs, err := c.FindPRs(ctx, "kedge/")
		require.NoError(t, err)
		calls := emu.Calls()
		require.Equal(t, fresh(), prs, "equal to a full listing")
		return prs, calls
	}
	first, calls := listing()
	assert.Len(t, first, total-total/25)
	assert.Len(t, calls, 3, "the first listing reads every page")

	_, calls = listing()
	require.Len(t, calls, 1, "nothing changed: one request")
	assert.Equal(t, http.StatusNotModified, calls[0].Status)

	// In the same second as the last listing.
	require.NoError(t, emu.EditAsHuman(3, ghemu.Edit{Title: ptr("renamed in the same second")}))
	prs, _ := listing()
	assert.Equal(t, "renamed in the same second", prs[2].Title)

	offset.Add(int64(time.Minute))
	require.NoError(t, emu.MergePR(5, nil))
	require.NoError(t, emu.ClosePR(7))
	require.NoError(t, emu.EditAsHuman(9, ghemu.Edit{AddLabels: []string{"hold"}}))
	_, err := c.CreatePR(ctx, forge.NewPR{Title: "new", Head: branch(emu, "kedge/ns-new"), Base: "main"})
	require.NoError(t, err)
	prs, calls = listing()
	assert.Len(t, calls, 1, "four changes fit on the first page")
	assert.True(t, prs[4].Merged)
	assert.Equal(t, "closed", prs[6].State)
	assert.Equal(t, []string{"hold"}, prs[8].Labels)
	assert.Equal(t, "kedge/ns-new", prs[len(prs)-1].Head)

	// More changes than a page holds: the listing reads on until it has
	// met every one.
	offset.Add(int64(time.Minute))
	for n := 100; n < 230; n++ {
		require.NoError(t, emu.EditAsHuman(n, ghemu.Edit{Body: ptr("edited")}))
	}
	_, calls = listing()
	assert.Len(t, calls, 2)
}
