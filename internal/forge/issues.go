package forge

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Issue is an issue (never a pull request) as kedge needs it.
type Issue struct {
	Number      int
	Title, Body string
	State       string
	Labels      []string
	HTMLURL     string
}

// NewIssue is an issue to open.
type NewIssue struct {
	Title, Body string
	Labels      []string
}

// Comment is a comment on an issue or pull request.
type Comment struct {
	ID        int64
	Author    string
	Body      string
	CreatedAt time.Time
	HTMLURL   string
}

// FindIssue finds kedge's issue carrying label whose body contains marker
// (a hidden HTML comment). An open one wins, the oldest if several; else
// the newest closed one, so the caller can reopen it rather than open
// another. Nil when there is none.
func (c *Client) FindIssue(ctx context.Context, label, marker string) (*Issue, error) {
	opts := &github.IssueListByRepoOptions{
		State:       "all",
		Labels:      []string{label},
		Sort:        "created",
		Direction:   "asc",
		ListOptions: github.ListOptions{PerPage: listPageSize},
	}
	var open, closed []Issue
	for {
		var page []*github.Issue
		var resp *github.Response
		err := c.call(ctx, op{name: "list issues", idempotent: true}, func(ctx context.Context) (*github.Response, error) {
			var err error
			page, resp, err = c.gh.Issues.ListByRepo(ctx, c.cfg.Owner, c.cfg.Repo, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		// kedge's label is on its pull requests too, which the listing
		// includes: the page is kept without them, so an unchanged page
		// replays a few issues rather than a hundred pull requests.
		for _, is := range c.pageOf(resp.Response, func() any { return issuesOnly(page) }).([]Issue) {
			if !strings.Contains(is.Body, marker) {
				continue
			}
			if is.State == "open" {
				open = append(open, is)
			} else {
				closed = append(closed, is)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if len(open) > 0 {
		return &open[0], nil
	}
	if len(closed) > 0 {
		return &closed[len(closed)-1], nil
	}
	return nil, nil
}

// issuesOnly keeps the issues of a listing page, without its pull requests.
func issuesOnly(page []*github.Issue) []Issue {
	out := []Issue{}
	for _, is := range page {
		if !is.IsPullRequest() {
			out = append(out, toIssue(is))
		}
	}
	return out
}

// CreateIssue opens an issue. It is not retried after an ambiguous failure
// (5xx, timeout): that would risk a duplicate, and FindIssue in the next
// cycle finds the issue if GitHub did create it.
func (c *Client) CreateIssue(ctx context.Context, n NewIssue) (Issue, error) {
	var created *github.Issue
	err := c.call(ctx, op{name: "create issue", mutating: true}, func(ctx context.Context) (*github.Response, error) {
		var resp *github.Response
		var err error
		req := &github.IssueRequest{Title: github.String(n.Title), Body: github.String(n.Body)}
		if len(n.Labels) > 0 {
			req.Labels = &n.Labels
		}
		created, resp, err = c.gh.Issues.Create(ctx, c.cfg.Owner, c.cfg.Repo, req)
		return resp, err
	})
	if err != nil {
		return Issue{}, err
	}
	return toIssue(created), nil
}

// UpdateIssue changes the title, body or state ("open", "closed") of an
// issue; nil leaves a field alone.
func (c *Client) UpdateIssue(ctx context.Context, number int, title, body, state *string) error {
	if title == nil && body == nil && state == nil {
		return nil
	}
	return c.call(ctx, op{name: "update issue", mutating: true, idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		_, resp, err := c.gh.Issues.Edit(ctx, c.cfg.Owner, c.cfg.Repo, number, &github.IssueRequest{
			Title: title, Body: body, State: state,
		})
		return resp, err
	})
}

// Comment adds a comment to an issue or pull request. Like CreateIssue it
// is not retried after an ambiguous failure.
func (c *Client) Comment(ctx context.Context, number int, body string) error {
	return c.call(ctx, op{name: "comment", mutating: true}, func(ctx context.Context) (*github.Response, error) {
		_, resp, err := c.gh.Issues.CreateComment(ctx, c.cfg.Owner, c.cfg.Repo, number, &github.IssueComment{Body: github.String(body)})
		return resp, err
	})
}

// ListComments returns every comment of an issue or pull request, oldest
// first.
func (c *Client) ListComments(ctx context.Context, number int) ([]Comment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: listPageSize}}
	var out []Comment
	for {
		var page []*github.IssueComment
		var resp *github.Response
		err := c.call(ctx, op{name: "list comments", idempotent: true}, func(ctx context.Context) (*github.Response, error) {
			var err error
			page, resp, err = c.gh.Issues.ListComments(ctx, c.cfg.Owner, c.cfg.Repo, number, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, cm := range page {
			out = append(out, Comment{
				ID:        cm.GetID(),
				Author:    cm.GetUser().GetLogin(),
				Body:      cm.GetBody(),
				CreatedAt: cm.GetCreatedAt().Time,
				HTMLURL:   cm.GetHTMLURL(),
			})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	slices.SortStableFunc(out, func(a, b Comment) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func toIssue(is *github.Issue) Issue {
	out := Issue{
		Number:  is.GetNumber(),
		Title:   is.GetTitle(),
		Body:    is.GetBody(),
		State:   is.GetState(),
		HTMLURL: is.GetHTMLURL(),
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}
