package ghemu

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Call is one request the server received. Credentials are never kept.
type Call struct {
	Method string
	// Path is the API path without the /api/v3 prefix; RawPath is the path
	// as received.
	Path    string
	RawPath string
	Query   url.Values
	Body    []byte
	// Status is what was answered; 0 when the client went away first.
	Status int
	// Route names the endpoint, e.g. "POST /repos/{owner}/{repo}/pulls";
	// empty when the request was outside the emulated surface.
	Route        string
	OutOfSurface bool
	// Faulted is set when an injected fault answered or delayed it.
	Faulted bool
	// At is when the request arrived.
	At time.Time

	repo *Server // the repository that answered; nil for the Hub
}

// Repo is the lower-case "owner/name" of the repository the call's path
// names, "" for the App endpoints.
func (c Call) Repo() string { return repoOfPath(c.Path) }

// DecodeBody unmarshals the request body.
func (c Call) DecodeBody(v any) error { return json.Unmarshal(c.Body, v) }

// Mutating reports whether the call asks GitHub to change something.
// Minting an installation token does not count: it creates no content and
// is not subject to the content-creation limits.
func (c Call) Mutating() bool {
	switch c.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return c.Route != routeAccessTokens
}

func (h *Hub) record(c Call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

func (h *Hub) callsWhere(keep func(Call) bool) []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Call
	for _, c := range h.calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// Calls returns the calls the Hub answered itself (installation lookups,
// token mints, repositories it does not serve), in order.
func (h *Hub) Calls() []Call { return h.callsWhere(func(c Call) bool { return c.repo == nil }) }

// AllCalls returns every call the Hub and its repositories received, in
// order.
func (h *Hub) AllCalls() []Call { return h.callsWhere(func(Call) bool { return true }) }

// CallsTo returns every call that named repository "owner/name", in order.
func (h *Hub) CallsTo(fullName string) []Call {
	return h.callsWhere(func(c Call) bool { return c.Repo() == strings.ToLower(fullName) })
}

// owns reports whether c is the repository's call; New's repository owns
// every call of its Hub.
func (s *Server) owns(c Call) bool { return s.solo || c.repo == s }

// Calls returns every request the repository received so far, in order.
func (s *Server) Calls() []Call { return s.hub.callsWhere(s.owns) }

// MutatingCalls returns the calls that ask for a change (see Call.Mutating).
func (s *Server) MutatingCalls() []Call {
	return s.hub.callsWhere(func(c Call) bool { return s.owns(c) && c.Mutating() })
}

// OutOfSurfaceCalls returns the calls to endpoints the emulation (and
// kedge's contract) does not include.
func (s *Server) OutOfSurfaceCalls() []Call {
	return s.hub.callsWhere(func(c Call) bool { return s.owns(c) && c.OutOfSurface })
}

// ResetCalls forgets the repository's recorded calls, e.g. between two
// cycles.
func (s *Server) ResetCalls() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.calls = slices.DeleteFunc(s.hub.calls, s.owns)
}
