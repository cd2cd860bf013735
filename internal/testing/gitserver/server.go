// Package gitserver runs a real Git smart-HTTP server for tests: Debian git's
// `git http-backend` behind net/http/cgi on a loopback httptest server, with
// the token authentication GitHub uses for installation tokens (basic auth,
// user "x-access-token"). Because the protocol side is git itself, clients
// under test meet the same negotiation, pack checks and ref locking as on a
// real forge. On top of it the server counts pushes, records requests and can
// inject faults, and the helpers in repo.go create and inspect repositories
// with the git command line.
package gitserver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TokenUser is the basic-auth user name GitHub expects with an installation
// token; any other user name is refused.
const TokenUser = "x-access-token"

// Request is one HTTP request the server answered.
type Request struct {
	Method string
	// Path is the URL path, e.g. "/acme/gitops.git/git-receive-pack".
	Path string
	// Service is the git service asked for ("git-upload-pack",
	// "git-receive-pack") or "" for anything else.
	Service string
	// Status is the HTTP status code answered.
	Status int
	// Authenticated is true when the request carried the current token.
	Authenticated bool
}

// Server is a Git smart-HTTP server over a directory of bare repositories.
// All methods are safe for concurrent use.
type Server struct {
	// URL is the server's base URL, without a trailing slash.
	URL string

	root    string
	home    string
	backend string
	http    *httptest.Server

	mu    sync.Mutex
	token string
	// check, when set, decides which tokens a repository accepts instead
	// of token.
	check      func(repo, token string) bool
	delay      time.Duration
	failPushTo map[string]int // by repository, "" for any
	pushesTo   map[string]int
	requests   []Request
	stderr     bytes.Buffer
}

// New starts a server on 127.0.0.1 with a random token and stops it when the
// test ends. It fails the test when git or git-http-backend is missing.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server on 127.0.0.1 with a random token, outside a test
// (a benchmark program); the caller must Close it.
func Start() (*Server, error) {
	backend, err := httpBackendPath()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "gitserver-root-")
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "gitserver-home-")
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	s := &Server{root: root, home: home, backend: backend, token: RandomToken(), pushesTo: map[string]int{}, failPushTo: map[string]int{}}
	s.http = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.http.URL
	return s, nil
}

// Close stops the server and removes its repositories.
func (s *Server) Close() {
	s.http.Close()
	os.RemoveAll(s.root)
	os.RemoveAll(s.home)
}

// RandomToken returns a fresh token in the shape of a GitHub installation
// token ("ghs_" and 36 alphanumerics): the server's own, the ones a GitHub
// emulation mints, and the wrong ones tests rotate to.
func RandomToken() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "ghs_" + hex.EncodeToString(b)
}

// Token returns the token the server accepts now.
func (s *Server) Token() (token string) {
	s.locked(func() { token = s.token })
	return token
}

// SetToken makes the server accept only token from now on, as when an
// installation token expires and a new one is minted.
func (s *Server) SetToken(token string) { s.locked(func() { s.token, s.check = token, nil }) }

// SetTokenCheck makes the server accept the tokens check approves instead
// of one fixed token, e.g. the installation tokens a GitHub emulation mints.
func (s *Server) SetTokenCheck(check func(token string) bool) {
	s.SetRepoTokenCheck(func(_, token string) bool { return check(token) })
}

// SetRepoTokenCheck makes the server accept, for each repository, the
// tokens check approves, e.g. the installation tokens of the account that
// owns it.
func (s *Server) SetRepoTokenCheck(check func(repo, token string) bool) {
	s.locked(func() { s.check = check })
}

// Pushes returns how many pushes (POSTs to git-receive-pack with a valid
// token) the server has received, including ones it failed on purpose.
func (s *Server) Pushes() (n int) {
	s.locked(func() {
		for _, pushes := range s.pushesTo {
			n += pushes
		}
	})
	return n
}

// PushesTo returns how many pushes repo has received.
func (s *Server) PushesTo(repo string) (n int) {
	s.locked(func() { n = s.pushesTo[repo] })
	return n
}

func (s *Server) locked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

// Requests returns every request answered so far, oldest first.
func (s *Server) Requests() (out []Request) {
	s.locked(func() { out = slices.Clone(s.requests) })
	return out
}

// FailNextPush makes the next push answer status (e.g. 503) without touching
// the repository. The push still counts as received.
func (s *Server) FailNextPush(status int) { s.FailNextPushTo("", status) }

// FailNextPushTo is FailNextPush for pushes to repo only.
func (s *Server) FailNextPushTo(repo string, status int) {
	s.locked(func() { s.failPushTo[repo] = status })
}

// SetDelay makes every request wait d before it is served (0 turns it off),
// to exercise client timeouts. A request whose context ends first is dropped.
func (s *Server) SetDelay(d time.Duration) { s.locked(func() { s.delay = d }) }

// RepoURL returns the clone URL of repo (e.g. "acme/gitops" →
// "<URL>/acme/gitops.git").
func (s *Server) RepoURL(repo string) string { return s.URL + "/" + repo + ".git" }

// RepoPath returns the bare repository directory of repo on disk; file://
// clients can use it directly.
func (s *Server) RepoPath(repo string) string {
	return filepath.Join(s.root, filepath.FromSlash(repo)+".git")
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	entry := Request{Method: r.Method, Path: r.URL.Path, Service: serviceOf(r)}
	defer func() {
		entry.Status = rec.status
		s.locked(func() { s.requests = append(s.requests, entry) })
	}()

	s.mu.Lock()
	delay, token, check := s.delay, s.token, s.check
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			rec.status = 499 // client went away; nothing is written
			return
		}
	}

	user, password, ok := r.BasicAuth()
	repo := repoOfRequest(r.URL.Path)
	if !ok || user != TokenUser || check == nil && password != token || check != nil && !check(repo, password) {
		rec.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
		http.Error(rec, "authentication required", http.StatusUnauthorized)
		return
	}
	entry.Authenticated = true

	if r.Method == http.MethodPost && entry.Service == "git-receive-pack" {
		if fail := s.receivePush(repo); fail != 0 {
			http.Error(rec, "push failed on purpose", fail)
			return
		}
	}

	h := &cgi.Handler{
		Stderr: lockedWriter{s},
		Path:   s.backend,
		Root:   "/",
		Dir:    s.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			// http-backend enables receive-pack only for authenticated users.
			"REMOTE_USER=" + TokenUser,
			"HOME=" + s.home,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
		},
	}
	h.ServeHTTP(rec, r)
}

// receivePush counts a push to repo and returns the status it must fail
// with, 0 for none.
func (s *Server) receivePush(repo string) (fail int) {
	s.locked(func() {
		s.pushesTo[repo]++
		for _, key := range []string{repo, ""} {
			if status, ok := s.failPushTo[key]; ok && fail == 0 {
				fail = status
				delete(s.failPushTo, key)
			}
		}
	})
	return fail
}

// Stderr returns what git wrote to its standard error so far: the server's
// side of refused pushes and failed hooks.
func (s *Server) Stderr() (out string) {
	s.locked(func() { out = s.stderr.String() })
	return out
}

type lockedWriter struct{ s *Server }

func (w lockedWriter) Write(p []byte) (n int, err error) {
	w.s.locked(func() { n, err = w.s.stderr.Write(p) })
	return n, err
}

func serviceOf(r *http.Request) string {
	if svc := r.URL.Query().Get("service"); svc != "" {
		return svc
	}
	for _, svc := range []string{"git-upload-pack", "git-receive-pack"} {
		if strings.HasSuffix(r.URL.Path, "/"+svc) {
			return svc
		}
	}
	return ""
}

// repoOfRequest turns any smart-HTTP path ("/acme/gitops.git/info/refs")
// into the repository it addresses ("acme/gitops").
func repoOfRequest(path string) string {
	p, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), ".git/")
	return strings.TrimSuffix(p, ".git")
}

func httpBackendPath() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", err
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
