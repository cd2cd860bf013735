// Package ghemu is an in-process emulation of the part of GitHub's REST v3 API
// that kedge uses (docs/design.md, "The REST surface kedge uses"), with state, for tests. No compatible server can
// be run on the test machines, so this one follows GitHub's documented JSON
// shapes, status codes and headers: rate-limit headers on every answer, ETags
// with 304 on conditional GETs, 401 "Bad credentials", 403 secondary limits,
// 422 validation errors. Anything outside that surface answers 404 and is
// recorded, so tests can assert kedge never strays from it.
//
// A Hub serves several repositories of several accounts under one API root,
// as GitHub does; a Server is one repository of a Hub. New starts a Hub that
// serves one repository and returns it.
package ghemu

import (
	"cmp"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// BranchLookup reports whether a branch exists in the emulated repository and
// the commit it points at. It stands for the Git side of GitHub, which the
// emulator does not implement itself.
type BranchLookup func(branch string) (sha string, ok bool)

// DiffFunc is the Git side of a pull request's diff: the changes between
// the merge base of base and head and head, in `git diff` format, as GitHub
// shows a pull request's "Files changed".
type DiffFunc func(baseSHA, headSHA string) (string, error)

// Options configures a Hub and the repositories it serves: NewHub reads the
// fields that hold for every repository (credentials, limits, clock),
// AddRepo the repository's own, and New both. Zero values pick the
// documented defaults.
type Options struct {
	// Owner and Repo name a repository; requests for one the Hub does not
	// serve answer 404 like a private repository the caller cannot see.
	Owner, Repo string
	// DefaultBranch is reported by GET /repos/{o}/{r}; default "main".
	DefaultBranch string
	// Branches answers which branches exist. Nil keeps an in-memory branch
	// table (see SetBranch) holding only the default branch at first.
	Branches BranchLookup
	// Diffs computes a pull request's diff for GET pulls/{number} with the
	// diff media type (see GitDiff). Without it that request is outside
	// the emulated surface: 404, recorded as such.
	Diffs DiffFunc
	// Collaborators restricts who may be requested as a reviewer. Nil
	// accepts any login.
	Collaborators []string
	// Archived and IssuesDisabled are the repository's settings; by
	// default, as on GitHub, it is not archived and has issues.
	Archived, IssuesDisabled bool

	// Tokens maps static tokens (personal access tokens) to the login they
	// act as; they reach every repository.
	Tokens map[string]string

	// AppID and AppPublicKey enable App authentication: the App endpoints
	// accept an RS256 JWT signed by the matching private key.
	AppID        int64
	AppPublicKey *rsa.PublicKey
	// Installations maps an account (organisation or user) to the id of the
	// App's installation on it; the installation covers every repository of
	// the account, and its tokens reach those only. InstallationID, for New,
	// is an installation on Owner.
	Installations  map[string]int64
	InstallationID int64
	// Permissions are what the App's installations were granted, in
	// GitHub's shape ("contents": "write", "metadata": "read"); nil grants
	// what kedge needs (KedgePermissions). SetPermissions changes them, as
	// an owner accepting or an App losing a permission does.
	Permissions map[string]string
	// TokenTTL is the lifetime of minted installation tokens; default 1 h
	// as on GitHub.
	TokenTTL time.Duration

	// RateLimit is the primary limit per hour; default 5000, the
	// installation limit.
	RateLimit int
	// SecondaryMutationGap, when positive, answers a mutating request that
	// follows the previous one sooner than this with GitHub's 403 secondary
	// rate limit error, so tests can prove a client spaces its writes.
	SecondaryMutationGap time.Duration

	// Clock replaces time.Now, for token expiry tests.
	Clock func() time.Time
}

// HubOptions are the Options NewHub reads.
type HubOptions = Options

func withDefaults(opts Options) Options {
	opts.Owner = cmp.Or(opts.Owner, "kedge-io")
	opts.Repo = cmp.Or(opts.Repo, "gitops")
	opts.DefaultBranch = cmp.Or(opts.DefaultBranch, "main")
	opts.TokenTTL = cmp.Or(opts.TokenTTL, time.Hour)
	opts.RateLimit = cmp.Or(opts.RateLimit, 5000)
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return opts
}

// Hub is a running emulation: the App endpoints, the credentials and limits,
// the call log, and the repositories. It is safe for concurrent use.
type Hub struct {
	// URL is the server's root (http://127.0.0.1:port). GitHub Enterprise
	// clients append /api/v3; both forms are served.
	URL string

	http *httptest.Server
	opts Options
	// selection is the repository_selection of minted tokens: "selected"
	// when the Hub stands for one repository's installation.
	selection string
	Faults

	mu         sync.Mutex         // guards the fields below and every repository's state
	repos      map[string]*Server // by lower-case "owner/name"
	tokens     map[string]mintedToken
	minted     map[int64]int
	calls      []Call
	userIDs    map[string]int64
	nextID     int64
	requestSeq int
	// rate is the limit of the App endpoints and of the repositories the
	// Hub does not serve.
	rate rate
}

// Server is one repository of a Hub, with its state and test controls.
type Server struct {
	// URL is the Hub's.
	URL string

	hub  *Hub
	opts Options
	// solo is set for New's repository, which answers for its whole Hub:
	// its calls, faults and tokens are the Hub's.
	solo bool
	*Faults
	// rate is the repository's limit; New's repository shares its Hub's.
	rate *rate

	// Guarded by hub.mu. Pull requests and issues share one number
	// sequence, as on GitHub.
	repoID   int64
	items    map[int]*item
	next     int
	labels   map[string]*labelState // by lower-case name: GitHub's label names are case-insensitive
	branches map[string]string      // used when Options.Branches is nil
}

// NewHub starts a Hub on 127.0.0.1 and stops it when the test ends.
func NewHub(t testing.TB, opts Options) *Hub {
	t.Helper()
	h := StartHub(opts)
	t.Cleanup(h.Close)
	return h
}

// StartHub starts a Hub on 127.0.0.1 for a program rather than a test (the
// offline demo); Close stops it.
func StartHub(opts Options) *Hub {
	h := &Hub{
		opts:      withDefaults(opts),
		selection: "all",
		repos:     map[string]*Server{},
		tokens:    map[string]mintedToken{},
		minted:    map[int64]int{},
		userIDs:   map[string]int64{},
		nextID:    1000,
	}
	h.http = httptest.NewServer(http.HandlerFunc(h.serveHTTP))
	h.URL = h.http.URL
	return h
}

// New starts a Hub serving the one repository opts names, and stops it when
// the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

// NewServer is New for a program; the caller must Close the Server.
func NewServer(opts Options) *Server {
	opts = withDefaults(opts)
	if opts.InstallationID != 0 {
		opts.Installations = map[string]int64{opts.Owner: opts.InstallationID}
	}
	h := StartHub(opts)
	h.selection = "selected"
	s := h.AddRepo(opts)
	s.solo, s.Faults, s.rate = true, &h.Faults, &h.rate
	return s
}

// AddRepo serves one more repository; the fields of opts that hold for
// every repository are ignored (the Hub's apply).
func (h *Hub) AddRepo(opts Options) *Server {
	opts = withDefaults(opts)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Server{
		URL:      h.URL,
		hub:      h,
		opts:     opts,
		Faults:   &Faults{},
		rate:     &rate{},
		repoID:   h.newID(),
		items:    map[int]*item{},
		next:     1,
		labels:   map[string]*labelState{},
		branches: map[string]string{opts.DefaultBranch: fakeSHA(opts.DefaultBranch)},
	}
	h.repos[strings.ToLower(s.fullName())] = s
	return s
}

// Repo returns the repository "owner/name", nil when the Hub has none.
func (h *Hub) Repo(fullName string) *Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.repos[strings.ToLower(fullName)]
}

// Close stops the Hub.
func (h *Hub) Close() { h.http.Close() }

// Client returns an HTTP client for the Hub.
func (h *Hub) Client() *http.Client { return h.http.Client() }

// Close stops New's Hub; a repository added to a Hub stops with it.
func (s *Server) Close() {
	if s.solo {
		s.hub.Close()
	}
}

// Client returns an HTTP client for the Hub.
func (s *Server) Client() *http.Client { return s.hub.Client() }

func (s *Server) fullName() string { return s.opts.Owner + "/" + s.opts.Repo }

func (h *Hub) now() time.Time { return h.opts.Clock().UTC().Truncate(time.Second) }

// newID hands out the numeric ids GitHub gives every object, unique across
// the Hub as GitHub's are global. Callers hold h.mu.
func (h *Hub) newID() int64 {
	h.nextID++
	return h.nextID
}

// userID is login's id, the same in every repository. Callers hold h.mu.
func (h *Hub) userID(login string) int64 {
	if id, ok := h.userIDs[login]; ok {
		return id
	}
	id := h.newID()
	h.userIDs[login] = id
	return id
}
