package ghemu

import (
	"fmt"
	"slices"

	"github.com/google/go-github/v66/github"
)

// The methods below are the test's hands: what people and GitHub itself do
// to the repository outside the API calls under test.

// MergeFunc moves the base branch when a pull request is merged; headSHA is
// the commit being merged. It returns the merge commit.
type MergeFunc func(base, headSHA string) (mergeSHA string, err error)

// MergePR merges pull request number as HumanLogin: merged and merged_at
// set, state closed. update, when non-nil, moves the base branch first (see
// GitFastForward); with the in-memory branch table and no update the base
// branch simply takes the head commit.
func (s *Server) MergePR(number int, update MergeFunc) error {
	s.hub.mu.Lock()
	it, ok := s.items[number]
	if !ok || !it.isPR {
		s.hub.mu.Unlock()
		return fmt.Errorf("no pull request #%d", number)
	}
	if it.state != "open" {
		s.hub.mu.Unlock()
		return fmt.Errorf("pull request #%d is %s", number, it.state)
	}
	base, headSHA := it.base, s.currentHeadSHA(it)
	s.hub.mu.Unlock()

	mergeSHA := headSHA
	if update != nil {
		var err error
		if mergeSHA, err = update(base, headSHA); err != nil {
			return fmt.Errorf("merge #%d into %s: %w", number, base, err)
		}
	}

	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if update == nil && s.opts.Branches == nil {
		s.branches[base] = headSHA
	}
	now := s.hub.now()
	it.merged = &now
	it.mergedBy = s.opts.HumanLogin
	it.mergeSHA = mergeSHA
	it.state = "closed"
	it.closed = &now
	it.closedBy = s.opts.HumanLogin
	it.updated = now
	return nil
}

// ClosePR closes pull request number unmerged, as a person would.
func (s *Server) ClosePR(number int) error {
	closed := "closed"
	return s.EditAsHuman(number, Edit{State: &closed})
}

// Edit is a change made by a person in the web UI.
type Edit struct {
	Title, Body *string
	State       *string // "open" or "closed"
	AddLabels   []string
}

// EditAsHuman applies e to an issue or pull request as HumanLogin. GitHub's
// rules hold for people too: a merged pull request cannot be reopened.
func (s *Server) EditAsHuman(number int, e Edit) error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	it, ok := s.items[number]
	if !ok {
		return fmt.Errorf("no issue or pull request #%d", number)
	}
	change := itemChange{Title: e.Title, Body: e.Body, State: e.State}
	if r := s.checkChange(errs{"Issue", docsUpdateIssue}, it, change); r != nil {
		return fmt.Errorf("edit #%d: %s", number, mustJSON(r.body))
	}
	if len(e.AddLabels) > 0 {
		it.labels = addNames(it.labels, s.ensureLabels(e.AddLabels))
	}
	s.applyChange(it, change, s.opts.HumanLogin)
	return nil
}

// CommentAsHuman adds a comment by login (HumanLogin when empty).
func (s *Server) CommentAsHuman(number int, login, body string) error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	it, ok := s.items[number]
	if !ok {
		return fmt.Errorf("no issue or pull request #%d", number)
	}
	if login == "" {
		login = s.opts.HumanLogin
	}
	s.addComment(it, login, body)
	return nil
}

// CreateIssueAsHuman opens an issue as HumanLogin and returns its number.
func (s *Server) CreateIssueAsHuman(title, body string, labels ...string) int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.newIssue(s.opts.HumanLogin, title, body, labels).number
}

// SetBranch creates or moves a branch of the in-memory branch table. It
// panics when Options.Branches was given: the Git repository is then the
// only truth.
func (s *Server) SetBranch(name, sha string) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.mustOwnBranches()
	s.branches[name] = sha
}

func (s *Server) mustOwnBranches() {
	if s.opts.Branches != nil {
		panic("ghemu: branches come from Options.Branches")
	}
}

// inspector renders objects for the test side, with the server's own URL.
func (s *Server) inspector() *request {
	return &request{apiBase: s.URL, webBase: s.URL}
}

// PR returns pull request number as the API would show it.
func (s *Server) PR(number int) (*github.PullRequest, bool) {
	prs := inspect(s, func(it *item) bool { return it.isPR && it.number == number }, s.inspectPull)
	return firstOf(prs)
}

// PRs returns every pull request, by number.
func (s *Server) PRs() []*github.PullRequest {
	return inspect(s, func(it *item) bool { return it.isPR }, s.inspectPull)
}

// Issue returns issue number (pull requests excluded).
func (s *Server) Issue(number int) (*github.Issue, bool) {
	return firstOf(inspect(s, func(it *item) bool { return !it.isPR && it.number == number }, s.renderIssue))
}

// Issues returns every issue that is not a pull request, by number.
func (s *Server) Issues() []*github.Issue {
	return inspect(s, func(it *item) bool { return !it.isPR }, s.renderIssue)
}

func (s *Server) inspectPull(req *request, it *item) *github.PullRequest {
	return s.renderPull(req, it, true)
}

// inspect renders the items keep selects, by number, for the test side.
func inspect[T any](s *Server, keep func(*item) bool, render func(*request, *item) T) []T {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	var out []T
	for _, it := range s.sortedItems() {
		if keep(it) {
			out = append(out, render(s.inspector(), it))
		}
	}
	return out
}

func firstOf[T any](all []T) (T, bool) {
	if len(all) == 0 {
		var zero T
		return zero, false
	}
	return all[0], true
}

// Comments returns the comments of an issue or pull request, oldest first.
func (s *Server) Comments(number int) []*github.IssueComment {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	it, ok := s.items[number]
	if !ok {
		return nil
	}
	out := make([]*github.IssueComment, 0, len(it.comments))
	for _, c := range it.comments {
		out = append(out, s.renderComment(s.inspector(), it, c))
	}
	return out
}

func (s *Server) sortedItems() []*item {
	items := make([]*item, 0, len(s.items))
	for _, it := range s.items {
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b *item) int { return a.number - b.number })
	return items
}
