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
	s.mu.Lock()
	it, ok := s.repo.items[number]
	if !ok || !it.isPR {
		s.mu.Unlock()
		return fmt.Errorf("no pull request #%d", number)
	}
	if it.state != "open" {
		s.mu.Unlock()
		return fmt.Errorf("pull request #%d is %s", number, it.state)
	}
	base, headSHA := it.base, s.currentHeadSHA(it)
	s.mu.Unlock()

	mergeSHA := headSHA
	if update != nil {
		var err error
		if mergeSHA, err = update(base, headSHA); err != nil {
			return fmt.Errorf("merge #%d into %s: %w", number, base, err)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if update == nil && s.opts.Branches == nil {
		s.repo.branches[base] = headSHA
	}
	now := s.now()
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

// EditAsHuman applies e to an issue or pull request as HumanLogin.
func (s *Server) EditAsHuman(number int, e Edit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.repo.items[number]
	if !ok {
		return fmt.Errorf("no issue or pull request #%d", number)
	}
	if e.State != nil && *e.State == "open" && it.isPR && it.state == "closed" {
		if r := s.checkReopen(it); r != nil {
			return fmt.Errorf("reopen #%d: %s", number, mustJSON(r.body))
		}
	}
	if e.Title != nil {
		it.title = *e.Title
	}
	if e.Body != nil {
		it.body = *e.Body
	}
	if len(e.AddLabels) > 0 {
		it.labels = addLabelNames(it.labels, s.ensureLabels(e.AddLabels))
	}
	if e.State != nil {
		s.setState(it, *e.State, "", s.opts.HumanLogin)
	}
	it.updated = s.now()
	return nil
}

// CommentAsHuman adds a comment by login (HumanLogin when empty).
func (s *Server) CommentAsHuman(number int, login, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.repo.items[number]
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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newIssue(s.opts.HumanLogin, title, body, labels).number
}

// SetBranch creates or moves a branch of the in-memory branch table. It
// panics when Options.Branches was given: the Git repository is then the
// only truth.
func (s *Server) SetBranch(name, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustOwnBranches()
	s.repo.branches[name] = sha
}

// DeleteBranch removes a branch of the in-memory branch table.
func (s *Server) DeleteBranch(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustOwnBranches()
	delete(s.repo.branches, name)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.repo.items[number]
	if !ok || !it.isPR {
		return nil, false
	}
	return s.renderPull(s.inspector(), it, true), true
}

// PRs returns every pull request, by number.
func (s *Server) PRs() []*github.PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*github.PullRequest
	for _, it := range s.sortedItems() {
		if it.isPR {
			out = append(out, s.renderPull(s.inspector(), it, true))
		}
	}
	return out
}

// Issue returns issue number (pull requests excluded).
func (s *Server) Issue(number int) (*github.Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.repo.items[number]
	if !ok || it.isPR {
		return nil, false
	}
	return s.renderIssue(s.inspector(), it), true
}

// Issues returns every issue that is not a pull request, by number.
func (s *Server) Issues() []*github.Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*github.Issue
	for _, it := range s.sortedItems() {
		if !it.isPR {
			out = append(out, s.renderIssue(s.inspector(), it))
		}
	}
	return out
}

// Comments returns the comments of an issue or pull request, oldest first.
func (s *Server) Comments(number int) []*github.IssueComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.repo.items[number]
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
	items := make([]*item, 0, len(s.repo.items))
	for _, it := range s.repo.items {
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b *item) int { return a.number - b.number })
	return items
}
