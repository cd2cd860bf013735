package ghemu

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

// HubOptions configures a Hub: one GitHub App installed on several
// accounts, and static tokens valid everywhere.
type HubOptions struct {
	AppID        int64
	AppPublicKey *rsa.PublicKey
	// AppSlug names the App; installation tokens act as "<slug>[bot]".
	// Default "kedge".
	AppSlug string
	// Installations maps an account (organisation or user) to the id of
	// the App's installation on it; the installation covers every
	// repository of the account the Hub serves.
	Installations map[string]int64
	// Tokens maps static tokens to the login they act as; they reach every
	// repository.
	Tokens map[string]string
	// TokenTTL is the lifetime of minted tokens; default 1 h.
	TokenTTL time.Duration
	// Clock replaces time.Now.
	Clock func() time.Time
}

// Hub serves several repositories of several accounts under one API root,
// as GitHub does, with App installations per account: an installation token
// reaches the repositories of its installation only. Each repository is a
// Server of its own (its state, calls and test controls); the Hub answers
// the App endpoints and records the calls no repository answered.
type Hub struct {
	URL string

	http *httptest.Server
	opts HubOptions

	mu     sync.Mutex
	repos  map[string]*Server // by lower-case "owner/name"
	tokens map[string]mintedToken
	minted map[int64]int
	calls  []Call

	faults faultPlan
}

type mintedToken struct {
	installation int64
	expires      time.Time
}

const routeRepoInstallation = "GET /repos/{owner}/{repo}/installation"

// NewHub starts a Hub on 127.0.0.1 and stops it when the test ends.
func NewHub(t testing.TB, opts HubOptions) *Hub {
	t.Helper()
	h := StartHub(opts)
	t.Cleanup(h.Close)
	return h
}

// AddRepo serves one more repository; opts.Owner and opts.Repo name it and
// its authentication fields are ignored (the Hub's apply).
func (h *Hub) AddRepo(opts Options) *Server {
	opts.AppSlug = h.opts.AppSlug
	opts.Clock = h.opts.Clock
	opts.AppID, opts.AppPublicKey, opts.InstallationID, opts.Tokens = 0, nil, 0, nil
	s := newServer(opts)
	s.URL = h.URL
	h.mu.Lock()
	defer h.mu.Unlock()
	// Distinct ids per repository, as GitHub's are global.
	s.nextID = int64(len(h.repos)+1) * 1_000_000
	s.repo.id, s.repo.ownerID = s.id(), s.id()
	owner := opts.Owner
	s.tokenAuth = func(token string) (string, *response) { return h.authorize(token, owner) }
	s.hubFaults = &h.faults
	h.repos[strings.ToLower(s.fullName())] = s
	return s
}

// Repo returns the repository "owner/name", nil when the Hub has none.
func (h *Hub) Repo(fullName string) *Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.repos[strings.ToLower(fullName)]
}

// QueueFault adds faults for any request the Hub serves, whichever
// repository it names (App endpoints included); each applies once, to the
// first later request it matches, before the repositories' own faults.
func (h *Hub) QueueFault(faults ...Fault) { h.faults.add(faults) }

// SetFaultFunc installs a function consulted before the queue for every
// request the Hub serves; nil removes it.
func (h *Hub) SetFaultFunc(fn func(r *http.Request) *Fault) { h.faults.setFunc(fn) }

// PendingFaults is how many of the Hub's queued faults have not been used.
func (h *Hub) PendingFaults() int { return h.faults.pending() }

// ExpireTokens makes every minted installation token invalid, as if an
// hour had passed.
func (h *Hub) ExpireTokens() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for token, t := range h.tokens {
		t.expires = time.Time{}
		h.tokens[token] = t
	}
}

// Client returns an HTTP client for the Hub.
func (h *Hub) Client() *http.Client { return h.http.Client() }

// authorize resolves a token used on a repository of owner. A token of
// another installation is valid but cannot see the repository: GitHub
// answers 404, as for a private repository it does not know.
func (h *Hub) authorize(token, owner string) (string, *response) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if login, ok := h.opts.Tokens[token]; ok {
		return login, nil
	}
	t, ok := h.tokens[token]
	if !ok || !h.opts.Clock().Before(t.expires) {
		return "", badCredentials()
	}
	if t.installation != h.installationOf(owner) {
		return h.opts.AppSlug + "[bot]", notFound()
	}
	return h.opts.AppSlug + "[bot]", nil
}

// installationOf is the installation on owner, 0 for none. Callers hold
// h.mu.
func (h *Hub) installationOf(owner string) int64 {
	for account, id := range h.opts.Installations {
		if strings.EqualFold(account, owner) {
			return id
		}
	}
	return 0
}

// ValidTokenFor reports whether token may write to repository
// "owner/name", for the Git server of the same test.
func (h *Hub) ValidTokenFor(fullName, token string) bool {
	owner, _, _ := strings.Cut(fullName, "/")
	_, refused := h.authorize(token, owner)
	return refused == nil
}

// MintedTokens counts the installation tokens minted, by installation.
func (h *Hub) MintedTokens() map[int64]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int64]int, len(h.minted))
	for id, n := range h.minted {
		out[id] = n
	}
	return out
}

// Calls returns the calls the Hub answered itself (installation lookups,
// token mints, unknown repositories), in order.
func (h *Hub) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// CallsTo returns every call that named repository "owner/name", answered
// or not: the Hub's and the repository's own.
func (h *Hub) CallsTo(fullName string) []Call {
	var out []Call
	for _, c := range h.Calls() {
		if repoOfPath(c.Path) == strings.ToLower(fullName) {
			out = append(out, c)
		}
	}
	if s := h.Repo(fullName); s != nil {
		out = append(out, s.Calls()...)
	}
	return out
}

func repoOfPath(apiPath string) string {
	parts := strings.Split(strings.Trim(apiPath, "/"), "/")
	if len(parts) < 3 || parts[0] != "repos" {
		return ""
	}
	return strings.ToLower(parts[1] + "/" + parts[2])
}

func (h *Hub) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	apiPath, _ := splitPrefix(hr.URL.Path)
	if rt, params := matchHubRoute(hr.Method, apiPath); rt != "" {
		body, _ := io.ReadAll(io.LimitReader(hr.Body, 1<<20))
		call := Call{Method: hr.Method, Path: apiPath, RawPath: hr.URL.Path, Query: hr.URL.Query(), Body: body, Route: rt, At: time.Now()}
		resp, ok := h.faulted(hr, apiPath, &call)
		if !ok {
			return // the client gave up during the fault's delay
		}
		if resp == nil {
			resp = h.handleApp(rt, params, hr, apiPath)
		}
		call.Status = resp.status
		h.record(call)
		writeHubAnswer(w, resp)
		return
	}
	if s := h.Repo(repoOfPath(apiPath)); s != nil {
		s.serveHTTP(w, hr)
		return
	}
	h.record(Call{Method: hr.Method, Path: apiPath, RawPath: hr.URL.Path, Query: hr.URL.Query(), Status: http.StatusNotFound, OutOfSurface: true, At: time.Now()})
	writeHubAnswer(w, notFound())
}

// faulted applies the Hub's fault for a request to an App endpoint: its
// answer, nil to let the request through, or false when the client went
// away during the fault's delay (the call is recorded with status 0).
func (h *Hub) faulted(hr *http.Request, apiPath string, call *Call) (*response, bool) {
	f := h.faults.take(hr, apiPath)
	if f == nil {
		return nil, true
	}
	if f.Delay > 0 && !waitCtx(hr.Context(), f.Delay) {
		call.Faulted = true
		h.record(*call)
		return nil, false
	}
	if f.Status == 0 {
		return nil, true
	}
	call.Faulted = true
	return f.response(), true
}

func (h *Hub) record(c Call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

func matchHubRoute(method, apiPath string) (string, map[string]string) {
	parts := strings.Split(strings.Trim(apiPath, "/"), "/")
	switch {
	case method == http.MethodGet && len(parts) == 4 && parts[0] == "repos" && parts[3] == "installation":
		return routeRepoInstallation, map[string]string{"owner": parts[1], "repo": parts[2]}
	case method == http.MethodPost && len(parts) == 4 && parts[0] == "app" && parts[1] == "installations" &&
		isDigits(parts[2]) && parts[3] == "access_tokens":
		return routeAccessTokens, map[string]string{"id": parts[2]}
	}
	return "", nil
}

// handleApp answers the App endpoints, authenticated with the App's JWT.
func (h *Hub) handleApp(route string, params map[string]string, hr *http.Request, apiPath string) *response {
	if r := checkAppJWT(hr.Header.Get("Authorization"), h.opts.AppID, h.opts.AppPublicKey, h.opts.Clock()); r != nil {
		return r
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	scheme := "http://"
	base := scheme + hr.Host + strings.TrimSuffix(hr.URL.Path, apiPath)
	switch route {
	case routeRepoInstallation:
		id := h.installationOf(params["owner"])
		if id == 0 || h.repos[strings.ToLower(params["owner"]+"/"+params["repo"])] == nil {
			return notFound()
		}
		return &response{status: http.StatusOK, body: h.renderInstallation(base, id, params["owner"])}
	default:
		id, _ := strconv.ParseInt(params["id"], 10, 64)
		var account string
		for a, i := range h.opts.Installations {
			if i == id {
				account = a
			}
		}
		if account == "" {
			return notFound()
		}
		token := gitserver.RandomToken()
		expires := h.opts.Clock().UTC().Truncate(time.Second).Add(h.opts.TokenTTL)
		h.tokens[token] = mintedToken{installation: id, expires: expires}
		h.minted[id]++
		return &response{status: http.StatusCreated, body: accessToken{
			InstallationToken: github.InstallationToken{
				Token:       &token,
				ExpiresAt:   &github.Timestamp{Time: expires},
				Permissions: installationPermissions(),
			},
			RepositorySelection: "all",
		}}
	}
}

func installationPermissions() *github.InstallationPermissions {
	return &github.InstallationPermissions{
		Contents:     github.String("write"),
		Issues:       github.String("write"),
		Metadata:     github.String("read"),
		PullRequests: github.String("write"),
	}
}

// renderInstallation is GitHub's installation object. Callers hold h.mu.
func (h *Hub) renderInstallation(base string, id int64, owner string) *github.Installation {
	return &github.Installation{
		ID:                  github.Int64(id),
		AppID:               github.Int64(h.opts.AppID),
		AppSlug:             github.String(h.opts.AppSlug),
		TargetType:          github.String("Organization"),
		RepositorySelection: github.String("all"),
		Account:             &github.User{Login: github.String(owner), Type: github.String("Organization")},
		AccessTokensURL:     github.String(fmt.Sprintf("%s/app/installations/%d/access_tokens", base, id)),
		RepositoriesURL:     github.String(base + "/installation/repositories"),
		Permissions:         installationPermissions(),
		Events:              []string{},
	}
}

func writeHubAnswer(w http.ResponseWriter, resp *response) {
	payload, _ := json.Marshal(resp.body)
	for k, vs := range resp.header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-GitHub-Media-Type", "github.v3; format=json")
	w.WriteHeader(resp.status)
	_, _ = w.Write(payload)
}
