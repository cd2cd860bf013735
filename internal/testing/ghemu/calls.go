package ghemu

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
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
}

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

func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// Calls returns every request received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// MutatingCalls returns the calls that ask for a change (see Call.Mutating).
func (s *Server) MutatingCalls() []Call {
	return slices.DeleteFunc(s.Calls(), func(c Call) bool { return !c.Mutating() })
}

// OutOfSurfaceCalls returns the calls to endpoints the emulation (and
// kedge's contract) does not include.
func (s *Server) OutOfSurfaceCalls() []Call {
	return slices.DeleteFunc(s.Calls(), func(c Call) bool { return !c.OutOfSurface })
}

// ResetCalls forgets the recorded calls, e.g. between two cycles.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}
