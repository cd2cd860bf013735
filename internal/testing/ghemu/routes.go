package ghemu

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The App endpoints, authenticated with the App's JWT rather than a token.
const (
	routeAccessTokens     = "POST /app/installations/{id}/access_tokens"
	routeRepoInstallation = "GET /repos/{owner}/{repo}/installation"
)

// route is one endpoint of DESIGN §5.
type route struct {
	name    string // "METHOD /pattern", as in GitHub's docs
	method  string
	parts   []string
	appAuth bool // authenticated with the App's JWT, not a token
	handler func(*Server, *request) *response
}

func (r *route) mutating() bool { return r.method != http.MethodGet && !r.appAuth }

var routes = buildRoutes(
	routeSpec{routeAccessTokens, handleAccessToken},
	routeSpec{routeRepoInstallation, handleRepoInstallation},
	routeSpec{"GET /repos/{owner}/{repo}", handleGetRepo},
	routeSpec{"GET /repos/{owner}/{repo}/pulls", handleListPulls},
	routeSpec{"POST /repos/{owner}/{repo}/pulls", handleCreatePull},
	routeSpec{"GET /repos/{owner}/{repo}/pulls/{number}", handleGetPull},
	routeSpec{"PATCH /repos/{owner}/{repo}/pulls/{number}", handleUpdatePull},
	routeSpec{"POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers", handleRequestReviewers},
	routeSpec{"GET /repos/{owner}/{repo}/issues", handleListIssues},
	routeSpec{"POST /repos/{owner}/{repo}/issues", handleCreateIssue},
	routeSpec{"PATCH /repos/{owner}/{repo}/issues/{number}", handleUpdateIssue},
	routeSpec{"GET /repos/{owner}/{repo}/issues/{number}/comments", handleListComments},
	routeSpec{"POST /repos/{owner}/{repo}/issues/{number}/comments", handleCreateComment},
	routeSpec{"POST /repos/{owner}/{repo}/issues/{number}/labels", handleAddLabels},
)

type routeSpec struct {
	name    string
	handler func(*Server, *request) *response
}

func buildRoutes(specs ...routeSpec) []*route {
	out := make([]*route, 0, len(specs))
	for _, spec := range specs {
		method, pattern, _ := strings.Cut(spec.name, " ")
		out = append(out, &route{
			name:    spec.name,
			method:  method,
			parts:   strings.Split(strings.Trim(pattern, "/"), "/"),
			appAuth: spec.name == routeAccessTokens || spec.name == routeRepoInstallation,
			handler: spec.handler,
		})
	}
	return out
}

// matchRoute finds the endpoint for a request. {number} and {id} only match
// digits, as on GitHub, where anything else is a different (unknown) path.
func matchRoute(method, apiPath string) (*route, map[string]string) {
	segments := strings.Split(strings.Trim(apiPath, "/"), "/")
	for _, rt := range routes {
		if rt.method != method || len(rt.parts) != len(segments) {
			continue
		}
		params := map[string]string{}
		ok := true
		for i, part := range rt.parts {
			seg := segments[i]
			switch {
			case strings.HasPrefix(part, "{"):
				name := strings.Trim(part, "{}")
				if seg == "" || ((name == "number" || name == "id") && !isDigits(seg)) {
					ok = false
				}
				params[name] = seg
			case part != seg:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			return rt, params
		}
	}
	return nil, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
