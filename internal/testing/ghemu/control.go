package ghemu

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/google/go-github/v66/github"
)

// The methods below are the test's hands: what people and GitHub itself do
// to the repository outside the API calls under test. People act as
// humanLogin.
const humanLogin = "octocat"

// MergeFunc moves the base branch when a pull request is merged; headSHA is
// the commit being merged. It returns the merge commit.
type MergeFunc func(base, headSHA string) (mergeSHA string, err error)

// MergePR merges pull request number as a person: merged and merged_at
// set, state closed. update, when non-nil, moves the base branch first (see
// GitFastForward); with the in-memory branch table and no update the base
// branch simply takes the head commit.
func (s *Server) MergePR(number int, update MergeFunc) error {
	base, headSHA, err := s.openPull(number)
	if err != nil {
		return err
	}
	mergeSHA := headSHA
	if update != nil {
		if mergeSHA, err = update(base, headSHA); err != nil {
			return fmt.Errorf("merge #%d into %s: %w", number, base, err)
		}
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if update == nil && s.opts.Branches == nil {
		s.branches[base] = headSHA
	}
	it := s.items[number]
	s.setState(it, "closed", "", humanLogin)
	it.merged, it.mergedBy, it.mergeSHA, it.updated = it.closed, humanLogin, mergeSHA, *it.closed
	return nil
}

// openPull is the base branch and head commit of open pull request number.
func (s *Server) openPull(number int) (base, headSHA string, err error) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	switch it, ok := s.items[number]; {
	case !ok || !it.isPR:
		return "", "", fmt.Errorf("no pull request #%d", number)
	case it.state != "open":
		return "", "", fmt.Errorf("pull request #%d is %s", number, it.state)
	default:
		return it.base, s.currentHeadSHA(it), nil
	}
}

// BaseRenamed is what GitHub does when a person renames branch old to
// renamed: the base of every open pull request on old becomes renamed
// ("Renaming a branch", docs.github.com: the base branch of open pull
// requests is updated). With Options.Branches the test renames the branch
// in the Git repository itself; the in-memory table is renamed here.
func (s *Server) BaseRenamed(old, renamed string) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if s.opts.Branches == nil {
		if sha, ok := s.branches[old]; ok {
			s.branches[renamed] = sha
			delete(s.branches, old)
		}
	}
	now := s.hub.now()
	for _, it := range s.items {
		if it.isPR && it.state == "open" && it.base == old {
			it.base, it.updated = renamed, now
		}
	}
}

// BaseDeleted is what GitHub does when a person deletes branch, the base of
// open pull requests: it closes them, unmerged (their timelines show
// base_ref_deleted, then closed). With Options.Branches the test deletes
// the branch in the Git repository itself.
func (s *Server) BaseDeleted(branch string) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if s.opts.Branches == nil {
		delete(s.branches, branch)
	}
	for _, it := range s.items {
		if it.isPR && it.state == "open" && it.base == branch {
			s.setState(it, "closed", "", humanLogin)
			it.updated = *it.closed
		}
	}
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

// EditAsHuman applies e to an issue or pull request as a person. GitHub's
// rules hold for people too: a merged pull request cannot be reopened.
func (s *Server) EditAsHuman(number int, e Edit) error {
	return s.onItem(number, func(it *item) error {
		change := itemChange{Title: e.Title, Body: e.Body, State: e.State}
		if r := s.checkChange(errs{"Issue", docsUpdateIssue}, it, change); r != nil {
			return fmt.Errorf("edit #%d: %s", number, mustJSON(r.body))
		}
		it.labels = addNames(it.labels, s.ensureLabels(e.AddLabels))
		s.applyChange(it, change, humanLogin)
		return nil
	})
}

// CommentAsHuman adds a comment by login (a person when empty).
func (s *Server) CommentAsHuman(number int, login, body string) error {
	return s.onItem(number, func(it *item) error {
		s.addComment(it, cmp.Or(login, humanLogin), body)
		return nil
	})
}

// onItem runs fn on issue or pull request number, under the Hub's lock.
func (s *Server) onItem(number int, fn func(*item) error) error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	it, ok := s.items[number]
	if !ok {
		return fmt.Errorf("no issue or pull request #%d", number)
	}
	return fn(it)
}

// CreateIssueAsHuman opens an issue as a person and returns its number.
func (s *Server) CreateIssueAsHuman(title, body string, labels ...string) int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.newIssue(humanLogin, title, body, labels).number
}

// SetBranch creates or moves a branch of the in-memory branch table. It
// panics when Options.Branches was given: the Git repository is then the
// only truth.
func (s *Server) SetBranch(name, sha string) {
	if s.opts.Branches != nil {
		panic("ghemu: branches come from Options.Branches")
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.branches[name] = sha
}

// PR returns pull request number as the API would show it.
func (s *Server) PR(number int) (*github.PullRequest, bool) {
	return firstOf(inspect(s, func(it *item) bool { return it.isPR && it.number == number }, s.renderFullPull))
}

// PRs returns every pull request, by number.
func (s *Server) PRs() []*github.PullRequest {
	return inspect(s, func(it *item) bool { return it.isPR }, s.renderFullPull)
}

// PRWithHead returns the pull request whose head is branch, without
// rendering the others: a measurement that polls for one PR among
// thousands must not hold the lock kedge's calls wait on while it renders
// them all.
func (s *Server) PRWithHead(branch string) (*github.PullRequest, bool) {
	return firstOf(inspect(s, func(it *item) bool { return it.isPR && it.head == branch }, s.renderFullPull))
}

// Issue returns issue number (pull requests excluded).
func (s *Server) Issue(number int) (*github.Issue, bool) {
	return firstOf(inspect(s, func(it *item) bool { return !it.isPR && it.number == number }, s.renderIssue))
}

// Issues returns every issue that is not a pull request, by number.
func (s *Server) Issues() []*github.Issue {
	return inspect(s, func(it *item) bool { return !it.isPR }, s.renderIssue)
}

// Comments returns the comments of an issue or pull request, oldest first.
func (s *Server) Comments(number int) []*github.IssueComment {
	var out []*github.IssueComment
	_ = s.onItem(number, func(it *item) error {
		for _, c := range it.comments {
			out = append(out, s.renderComment(s.inspector(), it, c))
		}
		return nil
	})
	return out
}

func (s *Server) renderFullPull(req *request, it *item) *github.PullRequest {
	return s.renderPull(req, it, true)
}

// inspect renders the items keep selects, by number, for the test side.
func inspect[T any](s *Server, keep func(*item) bool, render func(*request, *item) T) []T {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	req := s.inspector()
	var out []T
	for _, it := range slices.SortedFunc(maps.Values(s.items), func(a, b *item) int { return a.number - b.number }) {
		if keep(it) {
			out = append(out, render(req, it))
		}
	}
	return out
}

// inspector renders objects for the test side, with the Hub's own URL.
func (s *Server) inspector() *request { return &request{apiBase: s.URL, webBase: s.URL} }

func firstOf[T any](all []T) (T, bool) {
	if len(all) == 0 {
		var zero T
		return zero, false
	}
	return all[0], true
}
