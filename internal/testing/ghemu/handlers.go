package ghemu

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/ptr"
)

// GitHub caps bodies of issues, pull requests and comments at 65,536
// characters.
const maxBodyChars = 65536

func handleGetRepo(s *Server, req *request) *response {
	return answer(http.StatusOK, s.renderRepo(req))
}

func handleListPulls(s *Server, req *request) *response {
	// GitHub only filters on head when it has the user:ref form; a bare
	// branch name is silently ignored and every pull request is listed.
	headOwner, headRef, headFilter := strings.Cut(req.Query.Get("head"), ":")
	base := req.Query.Get("base")
	direction := "asc"
	if queryDefault(req.Query, "sort", "created") == "created" {
		direction = "desc"
	}
	return s.list(req, direction, func(it *item) bool {
		return it.isPR && (base == "" || it.base == base) &&
			(!headFilter || strings.EqualFold(headOwner, s.opts.Owner) && (headRef == "" || it.head == headRef))
	}, func(it *item) any { return s.renderPull(req, it, false) })
}

func handleListIssues(s *Server, req *request) *response {
	var labels []string
	for _, name := range strings.Split(req.Query.Get("labels"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			labels = append(labels, name)
		}
	}
	creator := req.Query.Get("creator")
	var since time.Time
	if v := req.Query.Get("since"); v != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, v); err != nil {
			return req.invalid("since", "invalid")
		}
	}
	return s.list(req, "desc", func(it *item) bool {
		return (creator == "" || strings.EqualFold(creator, it.user)) && !it.updated.Before(since) &&
			hasAll(it.labels, labels)
	}, func(it *item) any { return s.renderIssue(req, it) })
}

// list answers a listing of the items keep selects in the state the query
// asks for (open by default, closed or all), sorted and paginated.
func (s *Server) list(req *request, direction string, keep func(*item) bool, render func(*item) any) *response {
	state := queryDefault(req.Query, "state", "open")
	if !slices.Contains([]string{"open", "closed", "all"}, state) {
		return req.invalid("state", "invalid")
	}
	var items []*item
	for _, it := range s.items {
		if (state == "all" || it.state == state) && keep(it) {
			items = append(items, it)
		}
	}
	sortItems(items, queryDefault(req.Query, "sort", "created"), queryDefault(req.Query, "direction", direction))
	return listPage(req, items, render)
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

func handleCreatePull(s *Server, req *request, in *createPullBody) *response {
	if r := cmp.Or(req.required("title", in.Title), req.required("base", in.Base), req.required("head", in.Head)); r != nil {
		return r
	}
	head, base := *in.Head, *in.Base
	if owner, ref, ok := strings.Cut(head, ":"); ok {
		// Pull requests from forks are outside what the emulation models.
		if !strings.EqualFold(owner, s.opts.Owner) {
			return req.invalid("head", "invalid")
		}
		head = ref
	}
	baseSHA, baseOK := s.branch(base)
	headSHA, headOK := s.branch(head)
	switch {
	case !baseOK:
		return req.invalid("base", "invalid")
	case !headOK:
		return req.invalid("head", "invalid")
	}
	if r := cmp.Or(req.checkBody(in.Body), s.checkOnlyOpenPull(req.errs, nil, head, base)); r != nil {
		return r
	}
	if baseSHA == headSHA {
		return req.refuse("", "No commits between "+base+" and "+head)
	}
	it := s.addItem(&item{
		isPR: true, title: *in.Title, body: ptr.Deref(in.Body, ""), user: req.actor,
		head: head, base: base, headSHA: headSHA, draft: in.Draft != nil && *in.Draft,
		maintainerCanModify: in.MaintainerCanModify == nil || *in.MaintainerCanModify,
	})
	pr := s.renderPull(req, it, true)
	return created(pr, pr.GetURL())
}

func handleGetPull(s *Server, req *request) *response {
	if mediaTypeDiff(req.accept) {
		return s.pullDiff(req)
	}
	return answer(http.StatusOK, s.renderPull(req, req.item, true))
}

// mediaTypeDiff reports whether Accept asks for a pull request's diff:
// application/vnd.github.diff, with or without the API version
// (application/vnd.github.v3.diff, which go-github sends).
func mediaTypeDiff(accept string) bool {
	for _, mt := range strings.Split(accept, ",") {
		mt, _, _ = strings.Cut(strings.TrimSpace(mt), ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/vnd.github.diff", "application/vnd.github.v3.diff":
			return true
		}
	}
	return false
}

// pullDiff answers a pull request's diff from the Git side: the commit
// its head branch points at (or last pointed at) against its base branch.
func (s *Server) pullDiff(req *request) *response {
	if s.opts.Diffs == nil {
		req.OutOfSurface = true
		return notFound()
	}
	baseSHA, ok := s.branch(req.item.base)
	if !ok {
		return notFound()
	}
	diff, err := s.opts.Diffs(baseSHA, s.currentHeadSHA(req.item))
	if err != nil {
		return errorResponse(http.StatusInternalServerError, err.Error(), docsRoot)
	}
	return &response{status: http.StatusOK, raw: []byte(diff), mediaType: "application/vnd.github.diff"}
}

type updatePullBody struct {
	itemChange
	Base                *string `json:"base"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
}

func handleUpdatePull(s *Server, req *request, in *updatePullBody) *response {
	it := req.item
	if in.Base != nil {
		if _, ok := s.branch(*in.Base); !ok {
			return req.invalid("base", "invalid")
		}
	}
	if r := s.checkChange(req.errs, it, in.itemChange); r != nil {
		return r
	}
	it.base = cmp.Or(ptr.Deref(in.Base, ""), it.base)
	if in.MaintainerCanModify != nil {
		it.maintainerCanModify = *in.MaintainerCanModify
	}
	s.applyChange(it, in.itemChange, req.actor)
	return answer(http.StatusOK, s.renderPull(req, it, true))
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
func (s *Server) checkChange(e errs, it *item, c itemChange) *response {
	if c.State != nil && *c.State != "open" && *c.State != "closed" {
		return e.invalid("state", "invalid")
	}
	if r := e.checkBody(c.Body); r != nil {
		return r
	}
	if it.isPR && ptr.Deref(c.State, "") == "open" && it.state == "closed" {
		if r := s.checkReopen(it); r != nil {
			return r
		}
	}
	if c.Title != nil && strings.TrimSpace(*c.Title) == "" {
		return e.invalid("title", "missing_field")
	}
	return nil
}

// applyChange makes a change that checkChange accepted, as actor.
func (s *Server) applyChange(it *item, c itemChange, actor string) {
	it.title = cmp.Or(ptr.Deref(c.Title, ""), it.title)
	if c.Body != nil {
		it.body = *c.Body
	}
	if c.State != nil {
		s.setState(it, *c.State, ptr.Deref(c.StateReason, ""), actor)
	}
	it.updated = s.hub.now()
}

// checkReopen applies GitHub's rules for reopening a pull request.
func (s *Server) checkReopen(it *item) *response {
	e := errs{"PullRequest", docsUpdatePull}
	if it.merged != nil {
		return e.refuse("state", "state cannot be changed. The pull request has been merged.")
	}
	if _, ok := s.branch(it.head); !ok {
		return e.refuse("state", "state cannot be changed. The "+it.head+" branch has been deleted.")
	}
	return s.checkOnlyOpenPull(e, it, it.head, it.base)
}

// checkOnlyOpenPull refuses a second open pull request, besides self, for
// the same head and base, as GitHub does.
func (s *Server) checkOnlyOpenPull(e errs, self *item, head, base string) *response {
	for _, other := range s.items {
		if other != self && other.isPR && other.state == "open" && other.head == head && other.base == base {
			return e.refuse("", "A pull request already exists for "+s.opts.Owner+":"+head+".")
		}
	}
	return nil
}

func (s *Server) setState(it *item, state, reason, actor string) {
	if state == it.state {
		return
	}
	it.state = state
	it.closed, it.closedBy = nil, ""
	if state == "closed" {
		now := s.hub.now()
		it.closed, it.closedBy = &now, actor
	}
	if !it.isPR {
		it.stateReason = "reopened"
		if state == "closed" {
			it.stateReason = cmp.Or(reason, "completed")
		}
	}
}

type reviewersBody struct {
	Reviewers     []string `json:"reviewers"`
	TeamReviewers []string `json:"team_reviewers"`
}

func handleRequestReviewers(s *Server, req *request, in *reviewersBody) *response {
	it := req.item
	for _, login := range in.Reviewers {
		if strings.EqualFold(login, it.user) {
			return req.refuse("", "Review cannot be requested from pull request author.")
		}
		if s.opts.Collaborators != nil && !containsFold(s.opts.Collaborators, login) {
			return req.refuse("", "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the "+s.fullName()+" repository.")
		}
	}
	it.reviewers = addNames(it.reviewers, in.Reviewers)
	it.teams = addNames(it.teams, in.TeamReviewers)
	it.updated = s.hub.now()
	return answer(http.StatusCreated, s.renderPull(req, it, false))
}

type createIssueBody struct {
	Title  *string  `json:"title"`
	Body   *string  `json:"body"`
	Labels []string `json:"labels"`
}

func handleCreateIssue(s *Server, req *request, in *createIssueBody) *response {
	if r := cmp.Or(req.required("title", in.Title), req.checkBody(in.Body)); r != nil {
		return r
	}
	is := s.renderIssue(req, s.newIssue(req.actor, *in.Title, ptr.Deref(in.Body, ""), in.Labels))
	return created(is, is.GetURL())
}

func (s *Server) newIssue(user, title, body string, labels []string) *item {
	return s.addItem(&item{title: title, body: body, user: user, labels: addNames(nil, s.ensureLabels(labels))})
}

// addItem numbers a new open issue or pull request and keeps it.
func (s *Server) addItem(it *item) *item {
	it.number, it.id, it.state = s.next, s.hub.newID(), "open"
	it.issueID = it.id
	if it.isPR {
		it.issueID = s.hub.newID() // a pull request is also an issue, with its own id
	}
	it.created = s.hub.now()
	it.updated = it.created
	s.next++
	s.items[it.number] = it
	return it
}

type updateIssueBody struct {
	itemChange
	Labels *[]string `json:"labels"`
}

// handleUpdateIssue also edits pull requests, which are issues on GitHub.
func handleUpdateIssue(s *Server, req *request, in *updateIssueBody) *response {
	it := req.item
	if r := s.checkChange(req.errs, it, in.itemChange); r != nil {
		return r
	}
	if in.Labels != nil {
		it.labels = addNames(nil, s.ensureLabels(*in.Labels))
	}
	s.applyChange(it, in.itemChange, req.actor)
	return answer(http.StatusOK, s.renderIssue(req, it))
}

func handleListComments(s *Server, req *request) *response {
	return listPage(req, req.item.comments, func(c *comment) any { return s.renderComment(req, req.item, c) })
}

type commentBody struct {
	Body *string `json:"body"`
}

func handleCreateComment(s *Server, req *request, in *commentBody) *response {
	if r := cmp.Or(req.required("body", in.Body), req.checkBody(in.Body)); r != nil {
		return r
	}
	c := s.renderComment(req, req.item, s.addComment(req.item, req.actor, *in.Body))
	return created(c, c.GetURL())
}

func (s *Server) addComment(it *item, user, body string) *comment {
	now := s.hub.now()
	c := &comment{id: s.hub.newID(), body: body, user: user, created: now, updated: now}
	it.comments = append(it.comments, c)
	it.updated = now
	return c
}

func handleAddLabels(s *Server, req *request) *response {
	// GitHub accepts {"labels": [...]} and a bare array of names.
	var names []string
	var wrapped struct {
		Labels []string `json:"labels"`
	}
	trimmed := strings.TrimSpace(string(req.Body))
	target := any(&wrapped)
	if strings.HasPrefix(trimmed, "[") {
		target = &names
	}
	if json.Unmarshal([]byte(trimmed), target) != nil {
		return errorResponse(http.StatusBadRequest, "Problems parsing JSON", req.docs)
	}
	if names == nil {
		names = wrapped.Labels
	}
	if len(names) == 0 {
		return req.invalid("labels", "missing_field")
	}
	it := req.item
	it.labels = addNames(it.labels, s.ensureLabels(names))
	it.updated = s.hub.now()
	return answer(http.StatusOK, s.renderLabels(req, it.labels))
}

// required is the 422 for a string field that is missing or blank.
func (e errs) required(field string, value *string) *response {
	if value == nil || strings.TrimSpace(*value) == "" {
		return e.invalid(field, "missing_field")
	}
	return nil
}

func (e errs) checkBody(body *string) *response {
	if body != nil && len([]rune(*body)) > maxBodyChars {
		return e.refuse("body", fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars))
	}
	return nil
}

// hasAll reports whether have holds every name of want, ignoring case.
func hasAll(have, want []string) bool {
	return !slices.ContainsFunc(want, func(w string) bool { return !containsFold(have, w) })
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(l string) bool { return strings.EqualFold(l, s) })
}

// addNames appends the names have lacks, ignoring case as GitHub does for
// labels and logins.
func addNames(have, add []string) []string {
	for _, name := range add {
		if !containsFold(have, name) {
			have = append(have, name)
		}
	}
	return have
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

// listPage answers a listing with the page the request asks for.
func listPage[E any](req *request, all []E, render func(E) any) *response {
	from, to, link := paginate(req, len(all))
	out := make([]any, 0, to-from)
	for _, e := range all[from:to] {
		out = append(out, render(e))
	}
	return &response{status: http.StatusOK, body: out, header: link}
}

// paginate applies per_page (default 30, at most 100) and page, and builds
// the Link header GitHub sends when there is more than one page.
func paginate(req *request, total int) (from, to int, link http.Header) {
	perPage := 30
	if v, err := strconv.Atoi(req.Query.Get("per_page")); err == nil && v > 0 {
		perPage = min(v, 100)
	}
	page := 1
	if v, err := strconv.Atoi(req.Query.Get("page")); err == nil && v > 0 {
		page = v
	}
	from = min((page-1)*perPage, total)
	to = min(from+perPage, total)
	last := max((total+perPage-1)/perPage, 1)

	linkTo := func(p int, rel string) string {
		q := maps.Clone(req.Query)
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, req.apiBase, req.Path, q.Encode(), rel)
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

func queryDefault(q url.Values, key, def string) string { return cmp.Or(q.Get(key), def) }

// created is a 201 whose Location names the new object, as GitHub's are.
func created(body any, location string) *response {
	return &response{status: http.StatusCreated, body: body, header: http.Header{"Location": {location}}}
}
