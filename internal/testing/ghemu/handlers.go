package ghemu

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// GitHub caps bodies of issues, pull requests and comments at 65,536
// characters.
const maxBodyChars = 65536

func handleGetRepo(s *Server, req *request) *response {
	return &response{status: http.StatusOK, body: s.renderRepo(req)}
}

func handleListPulls(s *Server, req *request) *response {
	state, r := stateFilter(req, "PullRequest")
	if r != nil {
		return r
	}
	// GitHub only filters on head when it has the user:ref form; a bare
	// branch name is silently ignored and every pull request is listed.
	headOwner, headRef, headFilter := strings.Cut(req.query.Get("head"), ":")
	base := req.query.Get("base")

	var pulls []*item
	for _, it := range s.items {
		if !it.isPR || !state(it) {
			continue
		}
		if headFilter && (!strings.EqualFold(headOwner, s.opts.Owner) || (headRef != "" && it.head != headRef)) {
			continue
		}
		if base != "" && it.base != base {
			continue
		}
		pulls = append(pulls, it)
	}
	sortKey := queryDefault(req.query, "sort", "created")
	defaultDir := "asc"
	if sortKey == "created" {
		defaultDir = "desc"
	}
	sortItems(pulls, sortKey, queryDefault(req.query, "direction", defaultDir))

	return listPage(req, pulls, func(it *item) *github.PullRequest { return s.renderPull(req, it, false) })
}

// createPullBody mirrors github.NewPullRequest with presence detection.
type createPullBody struct {
	Title               *string `json:"title"`
	Head                *string `json:"head"`
	Base                *string `json:"base"`
	Body                *string `json:"body"`
	Draft               *bool   `json:"draft"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
}

func handleCreatePull(s *Server, req *request) *response {
	var in createPullBody
	if r := req.decode(&in); r != nil {
		return r
	}
	if in.Title == nil || strings.TrimSpace(*in.Title) == "" {
		return validationFailed(docsCreatePull, validationError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
	}
	if in.Base == nil || *in.Base == "" {
		return validationFailed(docsCreatePull, validationError{Resource: "PullRequest", Field: "base", Code: "missing_field"})
	}
	if in.Head == nil || *in.Head == "" {
		return validationFailed(docsCreatePull, validationError{Resource: "PullRequest", Field: "head", Code: "missing_field"})
	}
	head := *in.Head
	if owner, ref, ok := strings.Cut(head, ":"); ok {
		// Pull requests from forks are outside what the emulation models.
		if !strings.EqualFold(owner, s.opts.Owner) {
			return validationFailed(docsCreatePull, validationError{Resource: "PullRequest", Field: "head", Code: "invalid"})
		}
		head = ref
	}
	base := *in.Base
	if _, ok := s.branch(base); !ok {
		return validationFailed(docsCreatePull, validationError{Resource: "PullRequest", Field: "base", Code: "invalid"})
	}
	headSHA, ok := s.branch(head)
	if !ok {
		return validationFailed(docsCreatePull, validationError{Resource: "PullRequest", Field: "head", Code: "invalid"})
	}
	if r := checkBody(in.Body, "PullRequest", docsCreatePull); r != nil {
		return r
	}
	if r := s.checkOnlyOpenPull(nil, head, base, docsCreatePull); r != nil {
		return r
	}
	if baseSHA, _ := s.branch(base); baseSHA == headSHA {
		return validationFailed(docsCreatePull, validationError{
			Resource: "PullRequest", Code: "custom",
			Message: "No commits between " + base + " and " + head,
		})
	}
	now := s.hub.now()
	it := &item{
		number:              s.next,
		id:                  s.hub.newID(),
		issueID:             s.hub.newID(),
		isPR:                true,
		title:               *in.Title,
		body:                deref(in.Body),
		state:               "open",
		user:                req.actor,
		created:             now,
		updated:             now,
		head:                head,
		base:                base,
		headSHA:             headSHA,
		draft:               derefBool(in.Draft),
		maintainerCanModify: in.MaintainerCanModify == nil || *in.MaintainerCanModify,
	}
	s.next++
	s.items[it.number] = it
	pr := s.renderPull(req, it, true)
	return &response{status: http.StatusCreated, body: pr, header: location(pr.GetURL())}
}

// itemFor finds the issue or pull request the path's {number} names. The
// /pulls/ endpoints answer 404 for an issue; the /issues/ ones serve both,
// since a pull request is an issue on GitHub.
func (s *Server) itemFor(req *request, pullOnly bool) (*item, *response) {
	it, ok := s.items[req.number()]
	if !ok || (pullOnly && !it.isPR) {
		return nil, notFound()
	}
	return it, nil
}

func handleGetPull(s *Server, req *request) *response {
	it, r := s.itemFor(req, true)
	if r != nil {
		return r
	}
	return &response{status: http.StatusOK, body: s.renderPull(req, it, true)}
}

type updatePullBody struct {
	itemChange
	Base                *string `json:"base"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
}

func handleUpdatePull(s *Server, req *request) *response {
	it, r := s.itemFor(req, true)
	if r != nil {
		return r
	}
	var in updatePullBody
	if r := req.decode(&in); r != nil {
		return r
	}
	if in.Base != nil {
		if _, ok := s.branch(*in.Base); !ok {
			return validationFailed(docsUpdatePull, validationError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		}
	}
	if r := s.checkChange(it, in.itemChange, "PullRequest", docsUpdatePull); r != nil {
		return r
	}
	if in.Base != nil {
		it.base = *in.Base
	}
	if in.MaintainerCanModify != nil {
		it.maintainerCanModify = *in.MaintainerCanModify
	}
	s.applyChange(it, in.itemChange, req.actor)
	return &response{status: http.StatusOK, body: s.renderPull(req, it, true)}
}

// itemChange is what the update endpoints of issues and pull requests, and
// a person in the web UI, can change on either.
type itemChange struct {
	Title       *string `json:"title"`
	Body        *string `json:"body"`
	State       *string `json:"state"`
	StateReason *string `json:"state_reason"`
}

// checkChange refuses a change the way GitHub's update endpoints do,
// before anything is changed.
func (s *Server) checkChange(it *item, c itemChange, resource, docs string) *response {
	if c.State != nil && *c.State != "open" && *c.State != "closed" {
		return validationFailed(docs, validationError{Resource: resource, Field: "state", Code: "invalid"})
	}
	if r := checkBody(c.Body, resource, docs); r != nil {
		return r
	}
	if it.isPR && c.State != nil && *c.State == "open" && it.state == "closed" {
		if r := s.checkReopen(it); r != nil {
			return r
		}
	}
	if c.Title != nil && strings.TrimSpace(*c.Title) == "" {
		return validationFailed(docs, validationError{Resource: resource, Field: "title", Code: "missing_field"})
	}
	return nil
}

// applyChange makes a change that checkChange accepted, as actor.
func (s *Server) applyChange(it *item, c itemChange, actor string) {
	if c.Title != nil {
		it.title = *c.Title
	}
	if c.Body != nil {
		it.body = *c.Body
	}
	if c.State != nil {
		s.setState(it, *c.State, deref(c.StateReason), actor)
	}
	it.updated = s.hub.now()
}

// checkReopen applies GitHub's rules for reopening a pull request.
func (s *Server) checkReopen(it *item) *response {
	if it.merged != nil {
		return validationFailed(docsUpdatePull, validationError{
			Resource: "PullRequest", Field: "state", Code: "custom",
			Message: "state cannot be changed. The pull request has been merged.",
		})
	}
	if _, ok := s.branch(it.head); !ok {
		return validationFailed(docsUpdatePull, validationError{
			Resource: "PullRequest", Field: "state", Code: "custom",
			Message: "state cannot be changed. The " + it.head + " branch has been deleted.",
		})
	}
	return s.checkOnlyOpenPull(it, it.head, it.base, docsUpdatePull)
}

// checkOnlyOpenPull refuses a second open pull request, besides self, for
// the same head and base, as GitHub does.
func (s *Server) checkOnlyOpenPull(self *item, head, base, docs string) *response {
	for _, other := range s.items {
		if other != self && other.isPR && other.state == "open" && other.head == head && other.base == base {
			return validationFailed(docs, validationError{
				Resource: "PullRequest", Code: "custom",
				Message: "A pull request already exists for " + s.opts.Owner + ":" + head + ".",
			})
		}
	}
	return nil
}

func (s *Server) setState(it *item, state, reason, actor string) {
	if state == it.state {
		return
	}
	it.state = state
	if state == "closed" {
		now := s.hub.now()
		it.closed = &now
		it.closedBy = actor
		if !it.isPR {
			it.stateReason = cmp.Or(reason, "completed")
		}
		return
	}
	it.closed = nil
	it.closedBy = ""
	if !it.isPR {
		it.stateReason = "reopened"
	}
}

type reviewersBody struct {
	Reviewers     []string `json:"reviewers"`
	TeamReviewers []string `json:"team_reviewers"`
}

func handleRequestReviewers(s *Server, req *request) *response {
	it, r := s.itemFor(req, true)
	if r != nil {
		return r
	}
	var in reviewersBody
	if r := req.decode(&in); r != nil {
		return r
	}
	for _, login := range in.Reviewers {
		if strings.EqualFold(login, it.user) {
			return validationFailed(docsRequestReview, validationError{
				Resource: "PullRequest", Code: "custom",
				Message: "Review cannot be requested from pull request author.",
			})
		}
		if s.opts.Collaborators != nil && !slices.ContainsFunc(s.opts.Collaborators, func(c string) bool { return strings.EqualFold(c, login) }) {
			return validationFailed(docsRequestReview, validationError{
				Resource: "PullRequest", Code: "custom",
				Message: "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the " + s.fullName() + " repository.",
			})
		}
	}
	it.reviewers = addLabelNames(it.reviewers, in.Reviewers)
	it.teams = addLabelNames(it.teams, in.TeamReviewers)
	it.updated = s.hub.now()
	return &response{status: http.StatusCreated, body: s.renderPull(req, it, false)}
}

func handleListIssues(s *Server, req *request) *response {
	state, r := stateFilter(req, "Issue")
	if r != nil {
		return r
	}
	var wantLabels []string
	if l := req.query.Get("labels"); l != "" {
		for _, name := range strings.Split(l, ",") {
			if name = strings.TrimSpace(name); name != "" {
				wantLabels = append(wantLabels, name)
			}
		}
	}
	creator := req.query.Get("creator")
	var since time.Time
	if v := req.query.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return validationFailed(docsRoot, validationError{Resource: "Issue", Field: "since", Code: "invalid"})
		}
		since = t
	}

	var issues []*item
	for _, it := range s.items {
		if !state(it) {
			continue
		}
		if creator != "" && !strings.EqualFold(creator, it.user) {
			continue
		}
		if !since.IsZero() && it.updated.Before(since) {
			continue
		}
		if !hasAllLabels(it.labels, wantLabels) {
			continue
		}
		issues = append(issues, it)
	}
	sortItems(issues, queryDefault(req.query, "sort", "created"), queryDefault(req.query, "direction", "desc"))

	return listPage(req, issues, func(it *item) *github.Issue { return s.renderIssue(req, it) })
}

type createIssueBody struct {
	Title  *string  `json:"title"`
	Body   *string  `json:"body"`
	Labels []string `json:"labels"`
}

func handleCreateIssue(s *Server, req *request) *response {
	var in createIssueBody
	if r := req.decode(&in); r != nil {
		return r
	}
	if in.Title == nil || strings.TrimSpace(*in.Title) == "" {
		return validationFailed(docsCreateIssue, validationError{Resource: "Issue", Field: "title", Code: "missing_field"})
	}
	if r := checkBody(in.Body, "Issue", docsCreateIssue); r != nil {
		return r
	}
	it := s.newIssue(req.actor, *in.Title, deref(in.Body), in.Labels)
	is := s.renderIssue(req, it)
	return &response{status: http.StatusCreated, body: is, header: location(is.GetURL())}
}

func (s *Server) newIssue(user, title, body string, labels []string) *item {
	now := s.hub.now()
	it := &item{
		number:  s.next,
		id:      s.hub.newID(),
		title:   title,
		body:    body,
		state:   "open",
		user:    user,
		labels:  addLabelNames(nil, s.ensureLabels(labels)),
		created: now,
		updated: now,
	}
	s.next++
	s.items[it.number] = it
	return it
}

type updateIssueBody struct {
	itemChange
	Labels *[]string `json:"labels"`
}

// handleUpdateIssue also edits pull requests, which are issues on GitHub.
func handleUpdateIssue(s *Server, req *request) *response {
	it, r := s.itemFor(req, false)
	if r != nil {
		return r
	}
	var in updateIssueBody
	if r := req.decode(&in); r != nil {
		return r
	}
	if r := s.checkChange(it, in.itemChange, "Issue", docsUpdateIssue); r != nil {
		return r
	}
	if in.Labels != nil {
		it.labels = addLabelNames(nil, s.ensureLabels(*in.Labels))
	}
	s.applyChange(it, in.itemChange, req.actor)
	return &response{status: http.StatusOK, body: s.renderIssue(req, it)}
}

func handleListComments(s *Server, req *request) *response {
	it, r := s.itemFor(req, false)
	if r != nil {
		return r
	}
	return listPage(req, it.comments, func(c *comment) *github.IssueComment { return s.renderComment(req, it, c) })
}

type createCommentBody struct {
	Body *string `json:"body"`
}

func handleCreateComment(s *Server, req *request) *response {
	it, r := s.itemFor(req, false)
	if r != nil {
		return r
	}
	var in createCommentBody
	if r := req.decode(&in); r != nil {
		return r
	}
	if in.Body == nil || strings.TrimSpace(*in.Body) == "" {
		return validationFailed(docsCreateComment, validationError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
	}
	if r := checkBody(in.Body, "IssueComment", docsCreateComment); r != nil {
		return r
	}
	c := s.addComment(it, req.actor, *in.Body)
	rendered := s.renderComment(req, it, c)
	return &response{status: http.StatusCreated, body: rendered, header: location(rendered.GetURL())}
}

func (s *Server) addComment(it *item, user, body string) *comment {
	now := s.hub.now()
	c := &comment{id: s.hub.newID(), body: body, user: user, created: now, updated: now}
	it.comments = append(it.comments, c)
	it.updated = now
	return c
}

func handleAddLabels(s *Server, req *request) *response {
	it, r := s.itemFor(req, false)
	if r != nil {
		return r
	}
	// GitHub accepts {"labels": [...]} and a bare array of names.
	var names []string
	var wrapped struct {
		Labels []string `json:"labels"`
	}
	if err := decodeEither(req.body, &wrapped, &names); err != nil {
		return errorResponse(http.StatusBadRequest, "Problems parsing JSON", docsAddLabels)
	}
	if names == nil {
		names = wrapped.Labels
	}
	if len(names) == 0 {
		return validationFailed(docsAddLabels, validationError{Resource: "Label", Field: "labels", Code: "missing_field"})
	}
	it.labels = addLabelNames(it.labels, s.ensureLabels(names))
	it.updated = s.hub.now()
	return &response{status: http.StatusOK, body: s.renderLabels(req, it.labels)}
}

func checkBody(body *string, resource, docs string) *response {
	if body != nil && len([]rune(*body)) > maxBodyChars {
		return validationFailed(docs, validationError{
			Resource: resource, Field: "body", Code: "custom",
			Message: fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars),
		})
	}
	return nil
}

func hasAllLabels(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}

func sortItems(items []*item, key, direction string) {
	slices.SortFunc(items, func(a, b *item) int {
		var c int
		switch key {
		case "updated":
			c = a.updated.Compare(b.updated)
		case "comments":
			c = cmp.Compare(len(a.comments), len(b.comments))
		default:
			c = a.created.Compare(b.created)
		}
		// Items made in the same second keep creation order.
		c = cmp.Or(c, cmp.Compare(a.number, b.number))
		if direction == "desc" {
			return -c
		}
		return c
	})
}

// stateFilter reads a listing's state parameter: open (the default),
// closed or all.
func stateFilter(req *request, resource string) (func(*item) bool, *response) {
	state := queryDefault(req.query, "state", "open")
	if !slices.Contains([]string{"open", "closed", "all"}, state) {
		return nil, validationFailed(docsRoot, validationError{Resource: resource, Field: "state", Code: "invalid"})
	}
	return func(it *item) bool { return state == "all" || it.state == state }, nil
}

// listPage answers a listing with the page the request asks for.
func listPage[E, T any](req *request, all []E, render func(E) T) *response {
	from, to, link := paginate(req, len(all))
	out := make([]T, 0, to-from)
	for _, e := range all[from:to] {
		out = append(out, render(e))
	}
	return &response{status: http.StatusOK, body: out, header: link}
}

// paginate applies per_page (default 30, at most 100) and page, and builds
// the Link header GitHub sends when there is more than one page.
func paginate(req *request, total int) (from, to int, link http.Header) {
	perPage := 30
	if v, err := strconv.Atoi(req.query.Get("per_page")); err == nil && v > 0 {
		perPage = min(v, 100)
	}
	page := 1
	if v, err := strconv.Atoi(req.query.Get("page")); err == nil && v > 0 {
		page = v
	}
	from = min((page-1)*perPage, total)
	to = min(from+perPage, total)
	last := max((total+perPage-1)/perPage, 1)

	linkTo := func(p int, rel string) string {
		q := url.Values{}
		for k, vs := range req.query {
			q[k] = vs
		}
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, req.apiBase, req.path, q.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, linkTo(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, linkTo(page+1, "next"), linkTo(last, "last"))
	}
	if page > 1 {
		links = append(links, linkTo(1, "first"))
	}
	if len(links) == 0 {
		return from, to, nil
	}
	return from, to, http.Header{"Link": {strings.Join(links, ", ")}}
}

func queryDefault(q url.Values, key, def string) string {
	if v := q.Get(key); v != "" {
		return v
	}
	return def
}

func location(u string) http.Header { return http.Header{"Location": {u}} }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefBool(b *bool) bool { return b != nil && *b }

// decodeEither unmarshals body into whichever of object or array matches
// its first character.
func decodeEither(body []byte, object, array any) error {
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") {
		return json.Unmarshal([]byte(trimmed), array)
	}
	return json.Unmarshal([]byte(trimmed), object)
}
