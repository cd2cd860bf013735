package forge

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// PR is a pull request as kedge needs it.
type PR struct {
	Number int
	// Head and Base are branch names.
	Head, Base  string
	Title, Body string
	// State is "open" or "closed"; a merged pull request is closed with
	// Merged set.
	State    string
	Merged   bool
	MergedAt *time.Time
	Labels   []string
	HTMLURL  string
	HeadSHA  string
}

// NewPR is a pull request to open.
type NewPR struct {
	Title string
	// Head is the branch with the changes, in the same repository.
	Head                string
	Base                string
	Body                string
	Draft               bool
	MaintainerCanModify bool
}

// listPageSize is GitHub's largest page: fewer requests per listing.
const listPageSize = 100

// FindPRs lists kedge's pull requests: every pull request, open or closed,
// whose head branch is in this repository and starts with headPrefix,
// ordered by number.
//
// GitHub cannot filter by a branch prefix, so the first call lists every
// pull request. Later calls list them most recently updated first and stop
// at the first one not updated since the last listing's newest: whatever
// changes a pull request (title, body, labels, state, base, a merge)
// updates it, and GitHub never deletes one. An unchanged repository then
// costs one conditional request answered 304, however many pull requests
// it has; a cycle that changed some costs the pages holding them.
func (c *Client) FindPRs(ctx context.Context, headPrefix string) ([]PR, error) {
	c.listingMu.Lock()
	defer c.listingMu.Unlock()
	known, err := c.listPRsSince(ctx, c.listing)
	if err != nil {
		return nil, err
	}
	c.listing = known
	var out []PR
	for _, pr := range known.own {
		if strings.HasPrefix(pr.Head, headPrefix) {
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b PR) int { return a.Number - b.Number })
	return out, nil
}

// prListing is what the listings so far said: every pull request of
// kedge's repository by number, and the newest update among them.
type prListing struct {
	own    map[int]PR
	newest time.Time
}

// listPRsSince reads the pull requests updated since the newest update of
// known (all of them when known is nil) and returns the listing they make
// with known. known is not written: a call that fails leaves it whole.
func (c *Client) listPRsSince(ctx context.Context, known *prListing) (*prListing, error) {
	next := &prListing{own: map[int]PR{}}
	if known != nil {
		maps.Copy(next.own, known.own)
		next.newest = known.newest
	}
	opts := &github.PullRequestListOptions{State: "all", Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: listPageSize}}
	for {
		var page []*github.PullRequest
		var resp *github.Response
		err := c.call(ctx, op{name: "list pull requests", idempotent: true}, func(ctx context.Context) (*github.Response, error) {
			var err error
			page, resp, err = c.gh.PullRequests.List(ctx, c.cfg.Owner, c.cfg.Repo, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		caughtUp := false
		for _, pr := range c.pageOf(resp.Response, func() any { return c.listedPRs(page) }).([]listedPR) {
			// Equal times are read again: GitHub keeps whole seconds, and a
			// change in the second of the last listing may have come after it.
			if known != nil && pr.updated.Before(known.newest) {
				caughtUp = true
				break
			}
			if pr.updated.After(next.newest) {
				next.newest = pr.updated
			}
			if pr.own {
				next.own[pr.Number] = pr.PR
			}
		}
		if caughtUp || resp.NextPage == 0 {
			return next, nil
		}
		opts.Page = resp.NextPage
	}
}

// listedPR is one pull request of a listing page.
type listedPR struct {
	PR
	updated time.Time
	// own is set when its head branch is in kedge's repository.
	own bool
}

// listedPRs keeps of a listing page what kedge reads.
func (c *Client) listedPRs(page []*github.PullRequest) []listedPR {
	out := make([]listedPR, 0, len(page))
	for _, pr := range page {
		out = append(out, listedPR{PR: toPR(pr), updated: pr.GetUpdatedAt().Time, own: c.ownHead(pr)})
	}
	return out
}

// ownHead is true when the head branch lives in kedge's repository, not in
// a fork that happens to use the same branch name.
func (c *Client) ownHead(pr *github.PullRequest) bool {
	if owner, _, ok := strings.Cut(pr.GetHead().GetLabel(), ":"); ok {
		return strings.EqualFold(owner, c.cfg.Owner)
	}
	// Some GitHub-compatible servers leave out head.label; the head
	// repository says the same. With neither, the branch name is all there
	// is, and a PR kedge cannot place must not be opened twice.
	if login := pr.GetHead().GetRepo().GetOwner().GetLogin(); login != "" {
		return strings.EqualFold(login, c.cfg.Owner)
	}
	return true
}

// CreatePR opens a pull request. When GitHub answers that one already
// exists for the branch (a previous cycle created it but did not learn the
// answer, or a person did), that one is returned instead.
func (c *Client) CreatePR(ctx context.Context, n NewPR) (PR, error) {
	var created *github.PullRequest
	err := c.call(ctx, op{name: "create pull request", mutating: true, idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		var resp *github.Response
		var err error
		created, resp, err = c.gh.PullRequests.Create(ctx, c.cfg.Owner, c.cfg.Repo, &github.NewPullRequest{
			Title:               github.String(n.Title),
			Head:                github.String(n.Head),
			Base:                github.String(n.Base),
			Body:                github.String(n.Body),
			Draft:               github.Bool(n.Draft),
			MaintainerCanModify: github.Bool(n.MaintainerCanModify),
		})
		return resp, err
	})
	if err == nil {
		return toPR(created), nil
	}
	if !alreadyExists(err) {
		return PR{}, err
	}
	existing, findErr := c.findOpenPR(ctx, n.Head, n.Base)
	if findErr != nil {
		return PR{}, findErr
	}
	if existing == nil {
		// Closed between the two calls: report the original answer.
		return PR{}, err
	}
	return *existing, nil
}

// alreadyExists recognises GitHub's 422 for a second open pull request on
// the same head and base.
func alreadyExists(err error) bool {
	var ghErr *github.ErrorResponse
	if !errors.As(err, &ghErr) || ghErr.Response == nil || ghErr.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, e := range ghErr.Errors {
		if strings.Contains(e.Message, "already exists") {
			return true
		}
	}
	return strings.Contains(ghErr.Message, "already exists")
}

func (c *Client) findOpenPR(ctx context.Context, head, base string) (*PR, error) {
	var page []*github.PullRequest
	err := c.call(ctx, op{name: "find pull request", idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		var resp *github.Response
		var err error
		page, resp, err = c.gh.PullRequests.List(ctx, c.cfg.Owner, c.cfg.Repo, &github.PullRequestListOptions{
			State: "open",
			Head:  c.cfg.Owner + ":" + head,
			Base:  base,
		})
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	for _, pr := range page {
		if c.ownHead(pr) && pr.GetHead().GetRef() == head {
			found := toPR(pr)
			return &found, nil
		}
	}
	return nil, nil
}

// UpdatePR changes the title, body or state ("open", "closed") of a pull
// request; nil leaves a field alone.
func (c *Client) UpdatePR(ctx context.Context, number int, title, body, state *string) error {
	if title == nil && body == nil && state == nil {
		return nil
	}
	return c.call(ctx, op{name: "update pull request", mutating: true, idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		_, resp, err := c.gh.PullRequests.Edit(ctx, c.cfg.Owner, c.cfg.Repo, number, &github.PullRequest{
			Title: title, Body: body, State: state,
		})
		return resp, err
	})
}

// AddLabels adds labels to a pull request or issue; GitHub creates labels
// that do not exist yet.
func (c *Client) AddLabels(ctx context.Context, number int, labels ...string) error {
	if len(labels) == 0 {
		return nil
	}
	return c.call(ctx, op{name: "add labels", mutating: true, idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		_, resp, err := c.gh.Issues.AddLabelsToIssue(ctx, c.cfg.Owner, c.cfg.Repo, number, labels)
		return resp, err
	})
}

// RequestReviewers asks users and teams for a review. Teams may be given
// as "org/team" (the config form) or as the bare slug GitHub wants.
func (c *Client) RequestReviewers(ctx context.Context, number int, users, teams []string) error {
	if len(users) == 0 && len(teams) == 0 {
		return nil
	}
	slugs := make([]string, 0, len(teams))
	for _, t := range teams {
		slugs = append(slugs, t[strings.LastIndex(t, "/")+1:])
	}
	return c.call(ctx, op{name: "request reviewers", mutating: true, idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		_, resp, err := c.gh.PullRequests.RequestReviewers(ctx, c.cfg.Owner, c.cfg.Repo, number, github.ReviewersRequest{
			Reviewers: users, TeamReviewers: slugs,
		})
		return resp, err
	})
}

func toPR(pr *github.PullRequest) PR {
	// The strings are copied, together, out of what the JSON decoder left
	// them in: listings are kept between cycles, and each string kept where
	// it was decoded would hold on to a stretch of the decoder's garbage.
	out := PR{
		Number:  pr.GetNumber(),
		Head:    strings.Clone(pr.GetHead().GetRef()),
		Base:    strings.Clone(pr.GetBase().GetRef()),
		Title:   strings.Clone(pr.GetTitle()),
		Body:    strings.Clone(pr.GetBody()),
		State:   strings.Clone(pr.GetState()),
		HTMLURL: strings.Clone(pr.GetHTMLURL()),
		HeadSHA: strings.Clone(pr.GetHead().GetSHA()),
		// Listings carry merged_at but not merged.
		Merged: pr.GetMerged() || pr.MergedAt != nil,
	}
	if pr.MergedAt != nil {
		t := pr.MergedAt.Time
		out.MergedAt = &t
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, strings.Clone(l.GetName()))
	}
	return out
}
