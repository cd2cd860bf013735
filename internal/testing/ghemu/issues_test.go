package ghemu

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIssuesListIncludesPullRequests(t *testing.T) {
	s := newTestServer(t)
	bot := ghClient(t, s, botToken)
	alice := ghClient(t, s, userToken)
	ctx := context.Background()

	pr := createPR(t, s, bot, "kedge/shop", "main")
	_, _, err := bot.Issues.AddLabelsToIssue(ctx, testOwner, testRepo, pr.GetNumber(), []string{"kedge"})
	require.NoError(t, err)
	dash, _, err := bot.Issues.Create(ctx, testOwner, testRepo, &github.IssueRequest{
		Title: github.String("kedge dashboard"), Body: github.String("<!-- kedge:dashboard -->"),
		Labels: &[]string{"kedge", "dashboard"},
	})
	require.NoError(t, err)
	_, _, err = alice.Issues.Create(ctx, testOwner, testRepo, &github.IssueRequest{
		Title: github.String("bug"), Labels: &[]string{"Kedge"},
	})
	require.NoError(t, err)
	closed := s.CreateIssueAsHuman("old", "", "kedge")
	require.NoError(t, s.EditAsHuman(closed, Edit{State: github.String("closed")}))

	numbers := func(issues []*github.Issue) []int {
		var out []int
		for _, is := range issues {
			out = append(out, is.GetNumber())
		}
		return out
	}
	cases := []struct {
		name string
		opts github.IssueListByRepoOptions
		want []int
	}{
		{"open, newest first", github.IssueListByRepoOptions{}, []int{3, 2, 1}},
		{"one label, case-insensitive", github.IssueListByRepoOptions{Labels: []string{"KEDGE"}}, []int{3, 2, 1}},
		{"every label must match", github.IssueListByRepoOptions{Labels: []string{"kedge", "dashboard"}}, []int{2}},
		{"creator", github.IssueListByRepoOptions{Creator: "alice"}, []int{3}},
		{"closed", github.IssueListByRepoOptions{State: "closed"}, []int{4}},
		{"all, oldest first", github.IssueListByRepoOptions{State: "all", Direction: "asc"}, []int{1, 2, 3, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			issues, _, err := bot.Issues.ListByRepo(ctx, testOwner, testRepo, &tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, numbers(issues))
		})
	}

	issues, _, err := bot.Issues.ListByRepo(ctx, testOwner, testRepo, &github.IssueListByRepoOptions{State: "all", Direction: "asc"})
	require.NoError(t, err)
	require.True(t, issues[0].IsPullRequest(), "a pull request is listed with its pull_request key")
	assert.Equal(t, pr.GetURL(), issues[0].GetPullRequestLinks().GetURL())
	assert.Equal(t, pr.GetHTMLURL(), issues[0].GetHTMLURL())
	assert.False(t, issues[1].IsPullRequest())
	assert.Equal(t, dash.GetID(), issues[1].GetID())
	assert.Equal(t, "completed", issues[3].GetStateReason())
	assert.Equal(t, "octocat", issues[3].GetClosedBy().GetLogin())
}

func TestUpdateIssueCommentsAndLabels(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	ctx := context.Background()
	is, _, err := c.Issues.Create(ctx, testOwner, testRepo, &github.IssueRequest{Title: github.String("dash")})
	require.NoError(t, err)
	n := is.GetNumber()

	edited, _, err := c.Issues.Edit(ctx, testOwner, testRepo, n, &github.IssueRequest{
		Body: github.String("rewritten"), State: github.String("closed"), StateReason: github.String("not_planned"),
	})
	require.NoError(t, err)
	assert.Equal(t, "rewritten", edited.GetBody())
	assert.Equal(t, "closed", edited.GetState())
	assert.Equal(t, "not_planned", edited.GetStateReason())
	reopened, _, err := c.Issues.Edit(ctx, testOwner, testRepo, n, &github.IssueRequest{State: github.String("open")})
	require.NoError(t, err)
	assert.Equal(t, "reopened", reopened.GetStateReason())

	// Both body forms GitHub accepts for adding labels.
	labels, _, err := c.Issues.AddLabelsToIssue(ctx, testOwner, testRepo, n, []string{"kedge"})
	require.NoError(t, err)
	assert.Len(t, labels, 1)
	a := raw(t, s, http.MethodPost, "/repos/acme/fleet/issues/1/labels", "Bearer "+botToken, map[string]any{"labels": []string{"dashboard", "KEDGE"}})
	require.Equal(t, http.StatusOK, a.status)
	var all []github.Label
	a.json(t, &all)
	require.Len(t, all, 2)
	assert.Equal(t, "kedge", all[0].GetName(), "label names are case-insensitive; the first spelling stays")
	assert.Equal(t, "dashboard", all[1].GetName())
	assert.Equal(t, "ededed", all[1].GetColor())

	_, _, err = c.Issues.CreateComment(ctx, testOwner, testRepo, n, &github.IssueComment{Body: github.String("first")})
	require.NoError(t, err)
	require.NoError(t, s.CommentAsHuman(n, "", "please stop"))
	comments, _, err := c.Issues.ListComments(ctx, testOwner, testRepo, n, nil)
	require.NoError(t, err)
	require.Len(t, comments, 2)
	assert.Equal(t, "first", comments[0].GetBody())
	assert.Equal(t, "kedge-bot", comments[0].GetUser().GetLogin())
	assert.Equal(t, "please stop", comments[1].GetBody())
	assert.Equal(t, "octocat", comments[1].GetUser().GetLogin())
	got, _ := s.Issue(n)
	assert.Equal(t, 2, got.GetComments())

	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
	}{
		{"comment without body", http.MethodPost, "/repos/acme/fleet/issues/1/comments", map[string]any{}, http.StatusUnprocessableEntity},
		{"comment on unknown issue", http.MethodPost, "/repos/acme/fleet/issues/9/comments", map[string]any{"body": "x"}, http.StatusNotFound},
		{"issue without title", http.MethodPost, "/repos/acme/fleet/issues", map[string]any{"body": "x"}, http.StatusUnprocessableEntity},
		{"invalid state", http.MethodPatch, "/repos/acme/fleet/issues/1", map[string]any{"state": "done"}, http.StatusUnprocessableEntity},
		{"no labels", http.MethodPost, "/repos/acme/fleet/issues/1/labels", []string{}, http.StatusUnprocessableEntity},
		{"labels replaced by PATCH", http.MethodPatch, "/repos/acme/fleet/issues/1", map[string]any{"labels": []string{"x"}}, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := raw(t, s, tc.method, tc.path, "Bearer "+botToken, tc.body)
			assert.Equal(t, tc.status, a.status, string(a.body))
		})
	}
	got, _ = s.Issue(n)
	require.Len(t, got.Labels, 1)
	assert.Equal(t, "x", got.Labels[0].GetName())
}

func TestClosingAPullRequestThroughTheIssuesEndpoint(t *testing.T) {
	s := newTestServer(t)
	c := ghClient(t, s, botToken)
	pr := createPR(t, s, c, "kedge/shop", "main")
	_, _, err := c.Issues.Edit(context.Background(), testOwner, testRepo, pr.GetNumber(), &github.IssueRequest{State: github.String("closed")})
	require.NoError(t, err)
	got, _ := s.PR(pr.GetNumber())
	assert.Equal(t, "closed", got.GetState())
	assert.False(t, got.GetMerged())
}
