package chaos

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Step is one request kedge made, as the fault plan sees it.
type Step struct {
	// Seq counts every request through either proxy of a Wire, from 1,
	// since the last Take.
	Seq int
	// Service is "github" or "git".
	Service string
	Method  string
	Path    string
	// Mutating is true for a request that changes something remotely: a
	// GitHub write (minting a token does not count) or a git push.
	Mutating bool
}

func (s Step) String() string { return s.Service + " " + s.Method + " " + s.Path }

// Verdict is what the wire does with one request.
type Verdict int

const (
	// Pass forwards the request and its answer.
	Pass Verdict = iota
	// CutBefore drops the connection without forwarding: the remote side
	// never sees the request.
	CutBefore
	// CutAfter forwards the request, lets the remote side act on it, then
	// drops the connection instead of answering: the client cannot know
	// whether it happened, as after a timeout or a crash.
	CutAfter
	// Answer502After forwards the request, lets the remote side act, and
	// answers 502 Bad Gateway, as a load balancer does when the backend is
	// slow: the worst case of a 5xx for a create.
	Answer502After
)

// Rule decides a request's fate. It runs with no lock held.
type Rule func(Step) Verdict

// Wire carries kedge's traffic to the git server and to the GitHub
// emulation through two loopback proxies that share one request counter and
// one fault plan, so a fault can be placed at "the Nth request of the
// cycle" whichever service it goes to, and a kill stops both.
type Wire struct {
	mu   sync.Mutex
	rule Rule
	// onCut runs, once, when a rule first cuts a request: it is how a kill
	// reaches the process under test.
	onCut func(Step)
	// dead refuses every later request, as a killed process makes none.
	dead  bool
	trace Trace
	// credentials are every credential kedge sent, for the secrets scan.
	credentials map[string]bool
}

// Trace is what the wire saw of one process.
type Trace struct {
	// Steps are the requests, in order.
	Steps []Step
	// Cuts counts requests a rule did not pass, to tell that a fault
	// really happened.
	Cuts int
	// AfterDeath counts requests that arrived after the kill: a process
	// that honoured its cancellation makes none.
	AfterDeath int
	// Killed is the step at which the process was killed, if it was.
	Killed *Step
}

// Credentials returns every distinct credential kedge has sent (tokens,
// App JWTs).
func (w *Wire) Credentials() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Collect(maps.Keys(w.credentials))
}

func (w *Wire) noteCredential(c string) {
	if c == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.credentials == nil {
		w.credentials = map[string]bool{}
	}
	w.credentials[c] = true
}

// SetRule installs rule for the following requests; nil passes everything.
func (w *Wire) SetRule(rule Rule) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rule = rule
}

// KillOnCut makes the first cut kill the process under test: fn runs before
// the connection is dropped, and every later request is cut before it
// reaches a server.
func (w *Wire) KillOnCut(fn func(Step)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onCut = fn
}

// Take returns what the wire saw since the last Take and clears it, the
// rule and a kill, for the next process.
func (w *Wire) Take() Trace {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.trace
	w.trace, w.rule, w.onCut, w.dead = Trace{}, nil, nil, false
	return t
}

// Proxy starts a proxy to target for service ("github" or "git") and
// returns its URL; it stops when the test ends. For git, a request whose
// token valid accepts is passed on with serverToken() instead, so the git
// server takes every token the GitHub emulation takes (installation tokens
// change every hour; the git server knows one).
func (w *Wire) Proxy(t interface{ Cleanup(func()) }, service, target string, serverToken func() string, valid func(string) bool) string {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	p := &proxy{
		wire: w, service: service, target: u, serverToken: serverToken, valid: valid,
		transport: &http.Transport{DisableCompression: true},
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		srv.Close()
		p.transport.CloseIdleConnections()
	})
	return srv.URL
}

type proxy struct {
	wire        *Wire
	service     string
	target      *url.URL
	serverToken func() string
	valid       func(string) bool
	transport   *http.Transport
}

func (p *proxy) classify(r *http.Request) Step {
	s := Step{Service: p.service, Method: r.Method, Path: r.URL.Path}
	switch p.service {
	case "git":
		s.Mutating = r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	default:
		write := r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
		s.Mutating = write && !strings.HasSuffix(r.URL.Path, "/access_tokens")
	}
	return s
}

// decide numbers the request and applies the rule.
func (p *proxy) decide(r *http.Request) (Step, Verdict) {
	w := p.wire
	step := p.classify(r)
	w.mu.Lock()
	if w.dead {
		w.trace.AfterDeath++
		w.mu.Unlock()
		return step, CutBefore
	}
	step.Seq = len(w.trace.Steps) + 1
	w.trace.Steps = append(w.trace.Steps, step)
	rule := w.rule
	w.mu.Unlock()

	verdict := Pass
	if rule != nil {
		verdict = rule(step)
	}
	if verdict != Pass {
		w.mu.Lock()
		w.trace.Cuts++
		w.mu.Unlock()
	}
	return step, verdict
}

// kill runs the kill callback, if one is set, before a cut connection
// drops, so the process is gone before it could learn anything.
func (p *proxy) kill(step Step) {
	w := p.wire
	w.mu.Lock()
	fn := w.onCut
	if fn == nil || w.dead {
		w.mu.Unlock()
		return
	}
	w.dead = true
	w.trace.Killed = &step
	w.mu.Unlock()
	fn(step)
}

func (p *proxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(rw)
		return
	}
	step, verdict := p.decide(r)
	if verdict == CutBefore {
		p.kill(step)
		hangUp(rw)
		return
	}

	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Host = p.target.Host
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Del("Content-Length")
	cred := credentialOf(r)
	p.wire.noteCredential(cred)
	if user, _, ok := r.BasicAuth(); ok && p.serverToken != nil && p.valid != nil && p.valid(cred) {
		out.SetBasicAuth(user, p.serverToken())
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		hangUp(rw)
		return
	}
	payload, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		hangUp(rw)
		return
	}

	switch verdict {
	case CutAfter:
		p.kill(step)
		hangUp(rw)
		return
	case Answer502After:
		rw.Header().Set("Content-Type", "text/html")
		rw.WriteHeader(http.StatusBadGateway)
		_, _ = rw.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>\n"))
		return
	}
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" || k == "Connection" {
			continue
		}
		rw.Header()[k] = append([]string(nil), vs...)
	}
	rw.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	rw.WriteHeader(resp.StatusCode)
	_, _ = rw.Write(payload)
}

// hangUp closes the client's connection without an answer.
func hangUp(rw http.ResponseWriter) {
	hj, ok := rw.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
