package ghemu

import (
	"encoding/json"
	"strings"
)

// The App endpoints, authenticated with the App's JWT rather than a token.
const (
	routeAccessTokens     = "POST /app/installations/{id}/access_tokens"
	routeRepoInstallation = "GET /repos/{owner}/{repo}/installation"
	routeInstallation     = "GET /app/installations/{id}"
	routeOrgInstallation  = "GET /orgs/{org}/installation"
	routeUserInstallation = "GET /users/{username}/installation"
	// routeUser is the account a token acts as; no repository's.
	routeUser = "GET /user"
)

// appRoutes are authenticated with the App's JWT.
var appRoutes = map[string]bool{
	routeAccessTokens: true, routeRepoInstallation: true, routeInstallation: true,
	routeOrgInstallation: true, routeUserInstallation: true,
}

// route is one endpoint kedge uses (docs/design.md, "The REST surface kedge uses").
type route struct {
	name    string // "METHOD /pattern", as in GitHub's docs
	method  string
	parts   []string
	appAuth bool // authenticated with the App's JWT, not a token
	// item is set when {number} must name an issue or pull request;
	// pullOnly when it must be a pull request.
	item, pullOnly bool
	errs
	// needs are the installation permissions GitHub documents for the
	// endpoint, any one of which admits an installation token.
	needs   []need
	handler func(*Server, *request) *response
}

// need is one permission at a level: "read" or "write".
type need struct{ permission, level string }

// routeNeeds are the permissions of each endpoint, from the "Permissions
// required for GitHub Apps" of GitHub's REST reference: a comment or a
// label on a pull request is admitted by either issues or pull_requests.
var routeNeeds = map[string][]need{
	"GET /repos/{owner}/{repo}":                                     {{"metadata", "read"}},
	"GET /repos/{owner}/{repo}/pulls":                               {{"pull_requests", "read"}},
	"POST /repos/{owner}/{repo}/pulls":                              {{"pull_requests", "write"}},
	"GET /repos/{owner}/{repo}/pulls/{number}":                      {{"pull_requests", "read"}},
	"PATCH /repos/{owner}/{repo}/pulls/{number}":                    {{"pull_requests", "write"}},
	"POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers": {{"pull_requests", "write"}},
	"GET /repos/{owner}/{repo}/issues":                              {{"issues", "read"}, {"pull_requests", "read"}},
	"POST /repos/{owner}/{repo}/issues":                             {{"issues", "write"}},
	"PATCH /repos/{owner}/{repo}/issues/{number}":                   {{"issues", "write"}, {"pull_requests", "write"}},
	"GET /repos/{owner}/{repo}/issues/{number}/comments":            {{"issues", "read"}, {"pull_requests", "read"}},
	"POST /repos/{owner}/{repo}/issues/{number}/comments":           {{"issues", "write"}, {"pull_requests", "write"}},
	"POST /repos/{owner}/{repo}/issues/{number}/labels":             {{"issues", "write"}, {"pull_requests", "write"}},
}

var routes = []*route{
	newRoute(routeAccessTokens, "", docsRoot, handleAccessToken),
	newRoute(routeRepoInstallation, "", docsRoot, handleRepoInstallation),
	newRoute(routeInstallation, "", docsRoot, handleInstallation),
	newRoute(routeOrgInstallation, "", docsRoot, handleAccountInstallation("org", "Organization")),
	newRoute(routeUserInstallation, "", docsRoot, handleAccountInstallation("username", "User")),
	newRoute(routeUser, "", docsRoot, handleGetUser),
	newRoute("GET /repos/{owner}/{repo}", "", docsRoot, handleGetRepo),
	newRoute("GET /repos/{owner}/{repo}/pulls", "PullRequest", docsRoot, handleListPulls),
	newRoute("POST /repos/{owner}/{repo}/pulls", "PullRequest", docsCreatePull, withBody(handleCreatePull)),
	newRoute("GET /repos/{owner}/{repo}/pulls/{number}", "PullRequest", docsRoot, handleGetPull),
	newRoute("PATCH /repos/{owner}/{repo}/pulls/{number}", "PullRequest", docsUpdatePull, withBody(handleUpdatePull)),
	newRoute("POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", "PullRequest", docsRequestReview, withBody(handleRequestReviewers)),
	newRoute("GET /repos/{owner}/{repo}/issues", "Issue", docsRoot, handleListIssues),
	newRoute("POST /repos/{owner}/{repo}/issues", "Issue", docsCreateIssue, withBody(handleCreateIssue)),
	newRoute("PATCH /repos/{owner}/{repo}/issues/{number}", "Issue", docsUpdateIssue, withBody(handleUpdateIssue)),
	newRoute("GET /repos/{owner}/{repo}/issues/{number}/comments", "IssueComment", docsRoot, handleListComments),
	newRoute("POST /repos/{owner}/{repo}/issues/{number}/comments", "IssueComment", docsCreateComment, withBody(handleCreateComment)),
	newRoute("POST /repos/{owner}/{repo}/issues/{number}/labels", "Label", docsAddLabels, handleAddLabels),
}

// newRoute is an endpoint whose validation errors name resource and docs.
func newRoute(name, resource, docs string, handler func(*Server, *request) *response) *route {
	method, pattern, _ := strings.Cut(name, " ")
	return &route{
		name:     name,
		method:   method,
		parts:    strings.Split(strings.Trim(pattern, "/"), "/"),
		appAuth:  appRoutes[name],
		item:     strings.Contains(pattern, "{number}"),
		pullOnly: strings.Contains(pattern, "/pulls/{number}"),
		errs:     errs{resource, docs},
		needs:    routeNeeds[name],
		handler:  handler,
	}
}

// withBody decodes the JSON body for handler.
func withBody[T any](handler func(*Server, *request, *T) *response) func(*Server, *request) *response {
	return func(s *Server, req *request) *response {
		var in T
		if r := req.decode(&in); r != nil {
			return r
		}
		return handler(s, req, &in)
	}
}

// matchRoute finds the endpoint for a request. {number} and {id} only match
// digits, as on GitHub, where anything else is a different (unknown) path.
func matchRoute(method, apiPath string) (*route, map[string]string) {
	segments := strings.Split(strings.Trim(apiPath, "/"), "/")
	for _, rt := range routes {
		if params, ok := rt.match(method, segments); ok {
			return rt, params
		}
	}
	return nil, nil
}

func (rt *route) match(method string, segments []string) (map[string]string, bool) {
	if rt.method != method || len(rt.parts) != len(segments) {
		return nil, false
	}
	params := map[string]string{}
	for i, part := range rt.parts {
		seg := segments[i]
		name, isParam := strings.CutPrefix(part, "{")
		if !isParam {
			if part != seg {
				return nil, false
			}
			continue
		}
		name = strings.TrimSuffix(name, "}")
		if seg == "" || (name == "number" || name == "id") && !isDigits(seg) {
			return nil, false
		}
		params[name] = seg
	}
	return params, true
}

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
