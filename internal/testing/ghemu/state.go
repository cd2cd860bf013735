package ghemu

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

type labelState struct {
	id    int64
	name  string
	color string
}

// item is an issue or a pull request.
type item struct {
	number      int
	id          int64
	issueID     int64 // its id as an issue: a pull request's is its own
	isPR        bool
	title, body string
	state       string // open | closed
	stateReason string
	user        string
	labels      []string // label names, in the order added
	created     time.Time
	updated     time.Time
	closed      *time.Time
	closedBy    string
	comments    []*comment

	// Pull request only.
	head, base          string
	headSHA             string // last seen head commit, kept once the branch is gone
	draft               bool
	maintainerCanModify bool
	merged              *time.Time
	mergedBy            string
	mergeSHA            string
	reviewers           []string
	teams               []string
}

type comment struct {
	id      int64
	body    string
	user    string
	created time.Time
	updated time.Time
}

// fakeSHA gives branches of the in-memory table stable, distinct commits.
func fakeSHA(seed string) string {
	return digest([]byte(seed)) + digest([]byte("commit:" + seed))[:8]
}

func (s *Server) branch(name string) (string, bool) {
	if s.opts.Branches != nil {
		return s.opts.Branches(name)
	}
	sha, ok := s.branches[name]
	return sha, ok
}

func (s *Server) renderUser(req *request, login string) *github.User {
	if login == "" {
		return nil
	}
	kind := "User"
	switch {
	case strings.HasSuffix(login, "[bot]"):
		kind = "Bot"
	case strings.EqualFold(login, s.opts.Owner):
		kind = "Organization"
	}
	id := s.hub.userID(login)
	return &github.User{
		Login:     github.String(login),
		ID:        github.Int64(id),
		NodeID:    github.String(fmt.Sprintf("U_emu%d", id)),
		URL:       github.String(req.apiBase + "/users/" + login),
		HTMLURL:   github.String(req.webBase + "/" + login),
		Type:      github.String(kind),
		SiteAdmin: github.Bool(false),
	}
}

func (s *Server) renderRepo(req *request) *github.Repository {
	full := s.fullName()
	return &github.Repository{
		ID:            github.Int64(s.repoID),
		NodeID:        github.String(fmt.Sprintf("R_emu%d", s.repoID)),
		Name:          github.String(s.opts.Repo),
		FullName:      github.String(full),
		Owner:         s.renderUser(req, s.opts.Owner),
		Private:       github.Bool(true),
		Visibility:    github.String("private"),
		Fork:          github.Bool(false),
		HTMLURL:       github.String(req.webBase + "/" + full),
		URL:           github.String(req.apiBase + "/repos/" + full),
		CloneURL:      github.String(req.webBase + "/" + full + ".git"),
		DefaultBranch: github.String(s.opts.DefaultBranch),
		Archived:      github.Bool(s.opts.Archived),
		Disabled:      github.Bool(false),
		HasIssues:     github.Bool(!s.opts.IssuesDisabled),
	}
}

func (s *Server) renderLabels(req *request, names []string) []*github.Label {
	out := make([]*github.Label, 0, len(names))
	for _, name := range names {
		l := s.labels[strings.ToLower(name)]
		out = append(out, &github.Label{
			ID:      github.Int64(l.id),
			NodeID:  github.String(fmt.Sprintf("LA_emu%d", l.id)),
			URL:     github.String(req.apiBase + "/repos/" + s.fullName() + "/labels/" + l.name),
			Name:    github.String(l.name),
			Color:   github.String(l.color),
			Default: github.Bool(false),
		})
	}
	return out
}

// ensureLabels creates unknown labels, as adding a label to an issue does
// on GitHub, and returns the canonical names.
func (s *Server) ensureLabels(names []string) []string {
	out := make([]string, 0, len(names))
	for _, name := range names {
		key := strings.ToLower(name)
		l, ok := s.labels[key]
		if !ok {
			l = &labelState{id: s.hub.newID(), name: name, color: "ededed"}
			s.labels[key] = l
		}
		out = append(out, l.name)
	}
	return out
}

func ts(t time.Time) *github.Timestamp { return &github.Timestamp{Time: t} }

func tsPtr(t *time.Time) *github.Timestamp {
	if t == nil {
		return nil
	}
	return ts(*t)
}

// currentHeadSHA reads the head branch and remembers its commit, so a
// merged pull request whose branch was deleted still reports it.
func (s *Server) currentHeadSHA(it *item) string {
	if it.merged == nil {
		if sha, ok := s.branch(it.head); ok {
			it.headSHA = sha
		}
	}
	return it.headSHA
}

func (s *Server) renderBranch(req *request, ref, sha string) *github.PullRequestBranch {
	return &github.PullRequestBranch{
		Label: github.String(s.opts.Owner + ":" + ref),
		Ref:   github.String(ref),
		SHA:   github.String(sha),
		Repo:  s.renderRepo(req),
		User:  s.renderUser(req, s.opts.Owner),
	}
}

// renderPull builds GitHub's pull request object. The list endpoint omits
// the fields that need the merge machinery (merged, mergeable, counts),
// as GitHub's does.
func (s *Server) renderPull(req *request, it *item, full bool) *github.PullRequest {
	u := s.links(req, it)
	apiURL, htmlURL, issueURL := u.pull, u.html, u.issue
	baseSHA, _ := s.branch(it.base)
	pr := &github.PullRequest{
		ID:                  github.Int64(it.id),
		NodeID:              github.String(fmt.Sprintf("PR_emu%d", it.id)),
		Number:              github.Int(it.number),
		State:               github.String(it.state),
		Locked:              github.Bool(false),
		Title:               github.String(it.title),
		Body:                github.String(it.body),
		User:                s.renderUser(req, it.user),
		Labels:              s.renderLabels(req, it.labels),
		CreatedAt:           ts(it.created),
		UpdatedAt:           ts(it.updated),
		ClosedAt:            tsPtr(it.closed),
		MergedAt:            tsPtr(it.merged),
		Draft:               github.Bool(it.draft),
		URL:                 github.String(apiURL),
		HTMLURL:             github.String(htmlURL),
		IssueURL:            github.String(issueURL),
		DiffURL:             github.String(htmlURL + ".diff"),
		PatchURL:            github.String(htmlURL + ".patch"),
		CommentsURL:         github.String(issueURL + "/comments"),
		CommitsURL:          github.String(apiURL + "/commits"),
		AuthorAssociation:   github.String(s.association(it.user)),
		MaintainerCanModify: github.Bool(it.maintainerCanModify),
		Head:                s.renderBranch(req, it.head, s.currentHeadSHA(it)),
		Base:                s.renderBranch(req, it.base, baseSHA),
		RequestedReviewers:  []*github.User{},
		RequestedTeams:      []*github.Team{},
		Links: &github.PRLinks{
			Self:     &github.PRLink{HRef: github.String(apiURL)},
			HTML:     &github.PRLink{HRef: github.String(htmlURL)},
			Issue:    &github.PRLink{HRef: github.String(issueURL)},
			Comments: &github.PRLink{HRef: github.String(issueURL + "/comments")},
		},
	}
	if it.mergeSHA != "" {
		pr.MergeCommitSHA = github.String(it.mergeSHA)
	}
	for _, login := range it.reviewers {
		pr.RequestedReviewers = append(pr.RequestedReviewers, s.renderUser(req, login))
	}
	for _, slug := range it.teams {
		pr.RequestedTeams = append(pr.RequestedTeams, &github.Team{
			Name: github.String(slug),
			Slug: github.String(slug),
			URL:  github.String(req.apiBase + "/orgs/" + s.opts.Owner + "/teams/" + slug),
		})
	}
	if full {
		pr.Merged = github.Bool(it.merged != nil)
		pr.MergedBy = s.renderUser(req, it.mergedBy)
		pr.Comments = github.Int(len(it.comments))
		pr.ReviewComments = github.Int(0)
		pr.Commits = github.Int(1)
		if it.state == "open" {
			pr.Mergeable = github.Bool(true)
			pr.MergeableState = github.String("clean")
		}
	}
	return pr
}

// renderIssue builds GitHub's issue object; pull requests appear with a
// "pull_request" key, which is how clients tell them apart.
func (s *Server) renderIssue(req *request, it *item) *github.Issue {
	u := s.links(req, it)
	issueURL, id := u.issue, it.issueID
	is := &github.Issue{
		ID:                github.Int64(id),
		NodeID:            github.String(fmt.Sprintf("I_emu%d", id)),
		Number:            github.Int(it.number),
		State:             github.String(it.state),
		Locked:            github.Bool(false),
		Title:             github.String(it.title),
		Body:              github.String(it.body),
		User:              s.renderUser(req, it.user),
		Labels:            s.renderLabels(req, it.labels),
		Assignees:         []*github.User{},
		Comments:          github.Int(len(it.comments)),
		CreatedAt:         ts(it.created),
		UpdatedAt:         ts(it.updated),
		ClosedAt:          tsPtr(it.closed),
		ClosedBy:          s.renderUser(req, it.closedBy),
		AuthorAssociation: github.String(s.association(it.user)),
		URL:               github.String(issueURL),
		HTMLURL:           github.String(u.html),
		CommentsURL:       github.String(issueURL + "/comments"),
		LabelsURL:         github.String(issueURL + "/labels{/name}"),
		EventsURL:         github.String(issueURL + "/events"),
		RepositoryURL:     github.String(u.repo),
	}
	if it.stateReason != "" {
		is.StateReason = github.String(it.stateReason)
	}
	if it.isPR {
		is.Draft = github.Bool(it.draft)
		is.PullRequestLinks = &github.PullRequestLinks{
			URL:      github.String(u.pull),
			HTMLURL:  github.String(u.html),
			DiffURL:  github.String(u.html + ".diff"),
			PatchURL: github.String(u.html + ".patch"),
			MergedAt: tsPtr(it.merged),
		}
	}
	return is
}

func (s *Server) renderComment(req *request, it *item, c *comment) *github.IssueComment {
	u := s.links(req, it)
	return &github.IssueComment{
		ID:                github.Int64(c.id),
		NodeID:            github.String(fmt.Sprintf("IC_emu%d", c.id)),
		Body:              github.String(c.body),
		User:              s.renderUser(req, c.user),
		CreatedAt:         ts(c.created),
		UpdatedAt:         ts(c.updated),
		AuthorAssociation: github.String(s.association(c.user)),
		URL:               github.String(fmt.Sprintf("%s/issues/comments/%d", u.repo, c.id)),
		HTMLURL:           github.String(fmt.Sprintf("%s#issuecomment-%d", u.html, c.id)),
		IssueURL:          github.String(u.issue),
	}
}

// links are the addresses GitHub gives an issue or pull request, and its
// repository's.
type links struct{ repo, pull, issue, html string }

func (s *Server) links(req *request, it *item) links {
	repo, n := req.apiBase+"/repos/"+s.fullName(), strconv.Itoa(it.number)
	kind := "issues"
	if it.isPR {
		kind = "pull"
	}
	return links{repo: repo, pull: repo + "/pulls/" + n, issue: repo + "/issues/" + n, html: req.webBase + "/" + s.fullName() + "/" + kind + "/" + n}
}

func (s *Server) association(login string) string {
	switch {
	case strings.HasSuffix(login, "[bot]"):
		return "NONE"
	case strings.EqualFold(login, s.opts.Owner):
		return "OWNER"
	}
	return "MEMBER"
}
