package ghemu

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetRepository(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.DefaultBranch = "trunk" })
	cases := []struct {
		name   string
		path   string
		status int
	}{
		{"github.com form", "/repos/acme/fleet", http.StatusOK},
		{"enterprise form", "/api/v3/repos/acme/fleet", http.StatusOK},
		{"owner is case-insensitive", "/repos/ACME/Fleet", http.StatusOK},
		{"other repository", "/repos/acme/other", http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := raw(t, s, http.MethodGet, tc.path, "Bearer "+botToken, nil)
			require.Equal(t, tc.status, a.status)
			if tc.status != http.StatusOK {
				assert.JSONEq(t, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`, string(a.body))
				return
			}
			var repo github.Repository
			a.json(t, &repo)
			assert.Equal(t, "trunk", repo.GetDefaultBranch())
			assert.Equal(t, "acme/fleet", repo.GetFullName())
			assert.Equal(t, "Organization", repo.GetOwner().GetType())
		})
	}
	assert.Empty(t, s.OutOfSurfaceCalls(), "an unknown repository is inside the surface")
}

func TestCreatePullRequest(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	s.SetBranch("kedge/shop", fakeSHA("shop"))

	pr, resp, err := c.PullRequests.Create(ctx, testOwner, testRepo, &github.NewPullRequest{
		Title:               github.String("Restart shop"),
		Head:                github.String("acme:kedge/shop"),
		Base:                github.String("main"),
		Body:                github.String("drift"),
		Draft:               github.Bool(true),
		MaintainerCanModify: github.Bool(false),
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, pr.GetURL(), resp.Header.Get("Location"))
	assert.Equal(t, 1, pr.GetNumber())
	assert.Equal(t, "open", pr.GetState())
	assert.Equal(t, "Restart shop", pr.GetTitle())
	assert.Equal(t, "drift", pr.GetBody())
	assert.True(t, pr.GetDraft())
	assert.False(t, pr.GetMaintainerCanModify())
	assert.False(t, pr.GetMerged())
	assert.Equal(t, "kedge-bot", pr.GetUser().GetLogin())
	assert.Equal(t, "acme:kedge/shop", pr.GetHead().GetLabel())
	assert.Equal(t, "kedge/shop", pr.GetHead().GetRef())
	assert.Equal(t, fakeSHA("shop"), pr.GetHead().GetSHA())
	assert.Equal(t, "main", pr.GetBase().GetRef())
	assert.Equal(t, "acme/fleet", pr.GetHead().GetRepo().GetFullName())
	assert.Equal(t, s.URL+"/acme/fleet/pull/1", pr.GetHTMLURL())
	assert.Equal(t, s.URL+"/api/v3/repos/acme/fleet/pulls/1", pr.GetURL())

	// Issues and pull requests share one number sequence.
	issue, _, err := c.Issues.Create(ctx, testOwner, testRepo, &github.IssueRequest{Title: github.String("dashboard")})
	require.NoError(t, err)
	assert.Equal(t, 2, issue.GetNumber())
	assert.Equal(t, 3, createPR(t, s, c, "kedge/cart", "main").GetNumber())

	// The test side finds one PR by its head as the listing shows it.
	found, ok := s.PRWithHead("kedge/cart")
	require.True(t, ok)
	assert.Equal(t, s.PRs()[1], found)
	_, ok = s.PRWithHead("kedge/none")
	assert.False(t, ok)
}

func TestCreatePullRequestValidation(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	s.SetBranch("release", fakeSHA("release"))
	createPR(t, s, c, "kedge/shop", "main")
	s.SetBranch("kedge/same", fakeSHA("main"))

	long := strings.Repeat("x", maxBodyChars+1)
	cases := []struct {
		name string
		body map[string]any
		want string // the 422 body
	}{
		{
			name: "open pull request for the same head and base",
			body: map[string]any{"title": "t", "head": "kedge/shop", "base": "main"},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:kedge/shop."}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
		{
			name: "head branch missing",
			body: map[string]any{"title": "t", "head": "kedge/nope", "base": "main"},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"head","code":"invalid"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
		{
			name: "base branch missing",
			body: map[string]any{"title": "t", "head": "kedge/shop", "base": "nope"},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"base","code":"invalid"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
		{
			name: "head from another owner",
			body: map[string]any{"title": "t", "head": "mallory:kedge/shop", "base": "main"},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"head","code":"invalid"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
		{
			name: "no commits between base and head",
			body: map[string]any{"title": "t", "head": "kedge/same", "base": "main"},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and kedge/same"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
		{
			name: "title missing",
			body: map[string]any{"head": "kedge/shop", "base": "release"},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"title","code":"missing_field"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
		{
			name: "body too long",
			body: map[string]any{"title": "t", "head": "kedge/shop", "base": "release", "body": long},
			want: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","field":"body","code":"custom","message":"body is too long (maximum is 65536 characters)"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := raw(t, s, http.MethodPost, "/repos/acme/fleet/pulls", "Bearer "+botToken, tc.body)
			require.Equal(t, http.StatusUnprocessableEntity, a.status)
			assert.JSONEq(t, tc.want, string(a.body))
		})
	}

	// go-github surfaces the same answer as an *ErrorResponse.
	_, _, err := c.PullRequests.Create(context.Background(), testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("kedge/shop"), Base: github.String("main"),
	})
	var ghErr *github.ErrorResponse
	require.True(t, errors.As(err, &ghErr))
	require.Len(t, ghErr.Errors, 1)
	assert.Equal(t, "A pull request already exists for acme:kedge/shop.", ghErr.Errors[0].Message)

	// The same head may target another base, as on GitHub.
	s.SetBranch("release", fakeSHA("release"))
	a := raw(t, s, http.MethodPost, "/repos/acme/fleet/pulls", "Bearer "+botToken,
		map[string]any{"title": "t", "head": "kedge/shop", "base": "release"})
	assert.Equal(t, http.StatusCreated, a.status)
}

func TestListPullRequestsFiltersAndPages(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	s.SetBranch("release", fakeSHA("release"))
	for _, head := range []string{"kedge/a", "kedge/b", "kedge/c", "other/d"} {
		createPR(t, s, c, head, "main")
	}
	createPR(t, s, c, "kedge/e", "release")
	require.NoError(t, s.ClosePR(2))
	require.NoError(t, s.MergePR(3, nil))

	heads := func(prs []*github.PullRequest) []string {
		var out []string
		for _, pr := range prs {
			out = append(out, pr.GetHead().GetRef())
		}
		return out
	}
	cases := []struct {
		name string
		opts github.PullRequestListOptions
		want []string
	}{
		{"open by default, newest first", github.PullRequestListOptions{}, []string{"kedge/e", "other/d", "kedge/a"}},
		{"closed", github.PullRequestListOptions{State: "closed"}, []string{"kedge/c", "kedge/b"}},
		{"all", github.PullRequestListOptions{State: "all"}, []string{"kedge/e", "other/d", "kedge/c", "kedge/b", "kedge/a"}},
		{"head owner:branch", github.PullRequestListOptions{State: "all", Head: "acme:kedge/b"}, []string{"kedge/b"}},
		{"head of another owner", github.PullRequestListOptions{State: "all", Head: "mallory:kedge/b"}, nil},
		{"bare branch name is ignored, as on GitHub", github.PullRequestListOptions{Head: "kedge/b"}, []string{"kedge/e", "other/d", "kedge/a"}},
		{"base", github.PullRequestListOptions{Base: "release"}, []string{"kedge/e"}},
		{"ascending", github.PullRequestListOptions{State: "all", Direction: "asc"}, []string{"kedge/a", "kedge/b", "kedge/c", "other/d", "kedge/e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prs, _, err := c.PullRequests.List(ctx, testOwner, testRepo, &tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, heads(prs))
		})
	}

	t.Run("list objects carry no merged flag, merged_at tells", func(t *testing.T) {
		prs, _, err := c.PullRequests.List(ctx, testOwner, testRepo, &github.PullRequestListOptions{State: "closed", Head: "acme:kedge/c"})
		require.NoError(t, err)
		require.Len(t, prs, 1)
		assert.Nil(t, prs[0].Merged)
		assert.NotNil(t, prs[0].MergedAt)
		full, _, err := c.PullRequests.Get(ctx, testOwner, testRepo, 3)
		require.NoError(t, err)
		assert.True(t, full.GetMerged())
		assert.Equal(t, "octocat", full.GetMergedBy().GetLogin())
	})

	t.Run("pages with Link headers", func(t *testing.T) {
		var got []string
		opts := &github.PullRequestListOptions{State: "all", ListOptions: github.ListOptions{PerPage: 2}}
		pages := 0
		for {
			prs, resp, err := c.PullRequests.List(ctx, testOwner, testRepo, opts)
			require.NoError(t, err)
			pages++
			got = append(got, heads(prs)...)
			if pages == 1 {
				assert.Equal(t, 2, resp.NextPage)
				assert.Equal(t, 3, resp.LastPage)
			}
			if resp.NextPage == 0 {
				assert.Equal(t, 2, resp.PrevPage)
				assert.Equal(t, 1, resp.FirstPage)
				break
			}
			opts.Page = resp.NextPage
		}
		assert.Equal(t, 3, pages)
		assert.Equal(t, []string{"kedge/e", "other/d", "kedge/c", "kedge/b", "kedge/a"}, got)
	})

	t.Run("invalid state", func(t *testing.T) {
		a := raw(t, s, http.MethodGet, "/repos/acme/fleet/pulls?state=merged", "Bearer "+botToken, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, a.status)
	})
}

func TestUpdatePullRequest(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	s.SetBranch("release", fakeSHA("release"))
	pr := createPR(t, s, c, "kedge/shop", "main")
	n := pr.GetNumber()

	updated, _, err := c.PullRequests.Edit(ctx, testOwner, testRepo, n, &github.PullRequest{
		Title: github.String("new title"), Body: github.String("new body"),
	})
	require.NoError(t, err)
	assert.Equal(t, "new title", updated.GetTitle())
	assert.Equal(t, "new body", updated.GetBody())

	closed, _, err := c.PullRequests.Edit(ctx, testOwner, testRepo, n, &github.PullRequest{State: github.String("closed")})
	require.NoError(t, err)
	assert.Equal(t, "closed", closed.GetState())
	assert.NotNil(t, closed.ClosedAt)
	assert.False(t, closed.GetMerged())

	// A second pull request for the same head blocks reopening the first.
	second := createPR(t, s, c, "kedge/shop", "main")
	a := raw(t, s, http.MethodPatch, "/repos/acme/fleet/pulls/1", "Bearer "+botToken, map[string]any{"state": "open"})
	require.Equal(t, http.StatusUnprocessableEntity, a.status)
	assert.Contains(t, string(a.body), "A pull request already exists for acme:kedge/shop.")

	rebased, _, err := c.PullRequests.Edit(ctx, testOwner, testRepo, second.GetNumber(), &github.PullRequest{
		Base: &github.PullRequestBranch{Ref: github.String("release")},
	})
	require.NoError(t, err)
	assert.Equal(t, "release", rebased.GetBase().GetRef())
	reopened, _, err := c.PullRequests.Edit(ctx, testOwner, testRepo, n, &github.PullRequest{State: github.String("open")})
	require.NoError(t, err, "heads to different bases do not clash")
	assert.Equal(t, "open", reopened.GetState())
	assert.Nil(t, reopened.ClosedAt)

	require.NoError(t, s.MergePR(n, nil))
	a = raw(t, s, http.MethodPatch, "/repos/acme/fleet/pulls/1", "Bearer "+botToken, map[string]any{"state": "open"})
	assert.Equal(t, http.StatusUnprocessableEntity, a.status)

	a = raw(t, s, http.MethodPatch, "/repos/acme/fleet/pulls/99", "Bearer "+botToken, map[string]any{"title": "x"})
	assert.Equal(t, http.StatusNotFound, a.status)
	a = raw(t, s, http.MethodPatch, "/repos/acme/fleet/pulls/2", "Bearer "+botToken, map[string]any{"base": "nope"})
	assert.Equal(t, http.StatusUnprocessableEntity, a.status)
	a = raw(t, s, http.MethodPatch, "/repos/acme/fleet/pulls/2", "Bearer "+botToken, `{"title":`)
	assert.Equal(t, http.StatusBadRequest, a.status)
	assert.Contains(t, string(a.body), "Problems parsing JSON")
}

func TestRequestReviewers(t *testing.T) {
	s := newTestServer(t, func(o *Options) { o.Collaborators = []string{"alice", "bob"} })
	c := ghClient(t, s, botToken)
	pr := createPR(t, s, c, "kedge/shop", "main")

	cases := []struct {
		name    string
		req     github.ReviewersRequest
		status  int
		message string
	}{
		{"collaborators and a team", github.ReviewersRequest{Reviewers: []string{"alice"}, TeamReviewers: []string{"mesh"}}, http.StatusCreated, ""},
		{"the author", github.ReviewersRequest{Reviewers: []string{"kedge-bot"}}, http.StatusUnprocessableEntity, "Review cannot be requested from pull request author."},
		{"not a collaborator", github.ReviewersRequest{Reviewers: []string{"mallory"}}, http.StatusUnprocessableEntity, "Reviews may only be requested from collaborators."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := c.PullRequests.RequestReviewers(context.Background(), testOwner, testRepo, pr.GetNumber(), tc.req)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.message == "" {
				require.NoError(t, err)
				return
			}
			var ghErr *github.ErrorResponse
			require.True(t, errors.As(err, &ghErr))
			assert.Contains(t, ghErr.Errors[0].Message, tc.message)
		})
	}
	got, ok := s.PR(pr.GetNumber())
	require.True(t, ok)
	require.Len(t, got.RequestedReviewers, 1)
	assert.Equal(t, "alice", got.RequestedReviewers[0].GetLogin())
	require.Len(t, got.RequestedTeams, 1)
	assert.Equal(t, "mesh", got.RequestedTeams[0].GetSlug())
}

// TestBaseRenamedAndDeleted: renaming a branch retargets the open pull
// requests on it; deleting one closes them, unmerged. Closed ones keep
// their base, and others are untouched.
func TestBaseRenamedAndDeleted(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	s.SetBranch("staging", fakeSHA("staging"))
	open := func(head, base string) int {
		s.SetBranch(head, fakeSHA(head))
		pr, _, err := c.PullRequests.Create(ctx, testOwner, testRepo, &github.NewPullRequest{Title: github.String(head), Head: github.String(head), Base: github.String(base)})
		require.NoError(t, err)
		return pr.GetNumber()
	}
	onStaging, onMain, closedOnStaging := open("a", "staging"), open("b", "main"), open("c", "staging")
	require.NoError(t, s.ClosePR(closedOnStaging))

	s.BaseRenamed("staging", "stage")
	base := func(n int) string { pr, _ := s.PR(n); return pr.GetBase().GetRef() }
	assert.Equal(t, "stage", base(onStaging))
	assert.Equal(t, "main", base(onMain))
	assert.Equal(t, "staging", base(closedOnStaging), "a closed PR keeps its base")

	s.BaseDeleted("stage")
	pr, _ := s.PR(onStaging)
	assert.Equal(t, "closed", pr.GetState())
	assert.False(t, pr.GetMerged())
	pr, _ = s.PR(onMain)
	assert.Equal(t, "open", pr.GetState())
}
