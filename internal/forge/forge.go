// Package forge is kedge's GitHub client. It speaks REST v3 only, within the
// surface of docs/design.md ("The REST surface kedge uses"), under a configurable API URL so GitHub Enterprise
// Server works. It authenticates as a GitHub App installation or with a
// plain token, spaces its writes to stay under GitHub's secondary limits,
// answers unchanged listings from an ETag cache (a 304 costs no rate limit),
// retries what is safe to retry, and turns everything else that a later
// cycle may fix into a *RetryLaterError.
package forge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// Defaults for the Config fields whose zero value means "use the default".
const (
	DefaultAPIURL         = "https://api.github.com/"
	DefaultMinMutationGap = time.Second
	DefaultMaxRetries     = 3
	DefaultMaxRetryAfter  = time.Minute
	DefaultRetryBackoff   = time.Second
	DefaultRequestTimeout = 30 * time.Second
	// DefaultInstallationRecheck is how long GitHub's answer that the App
	// is not installed for an owner is believed: the owner's repositories
	// together cost one lookup per this time, not one per cycle or per
	// repository, and an installation made meanwhile is found at the next
	// lookup after it.
	DefaultInstallationRecheck = 10 * time.Minute
)

// Config says where GitHub is and how to authenticate. Set Token, or AppID
// + InstallationID + PrivateKeyFile, not both.
type Config struct {
	// APIURL is the REST root: https://api.github.com/ (default) or
	// https://<host>/api/v3/ for GitHub Enterprise Server (the /api/v3
	// suffix is added when missing, as go-github does).
	APIURL string
	Owner  string
	Repo   string

	// Token is a plain token, for development.
	Token string
	// AppID, InstallationID and PrivateKeyFile authenticate as a GitHub App
	// installation; installation tokens are minted and renewed as needed.
	AppID          int64
	InstallationID int64
	PrivateKeyFile string

	// MinMutationGap is the least time between the end of one write and
	// the start of the next. GitHub asks for at least a second; the config
	// key limits.mutationGap defaults to DefaultMinMutationGap. Zero means
	// no gap (tests).
	MinMutationGap time.Duration
	// MaxRetries bounds the retries of one call; zero means
	// DefaultMaxRetries, negative none.
	MaxRetries int
	// MaxRetryAfter is the longest wait honoured within a call (a
	// Retry-After, a rate-limit reset, a backoff); a longer one ends the
	// call with *RetryLaterError. Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// RetryBackoff is the first wait before retrying a 5xx or a timeout;
	// it doubles on each retry. Zero means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// RequestTimeout bounds one attempt. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// InstallationRecheck is how long an owner the App is not installed
	// for is not asked about again. Zero means
	// DefaultInstallationRecheck.
	InstallationRecheck time.Duration

	// HTTPClient, optional, supplies the transport (proxies, TLS roots).
	HTTPClient *http.Client
}

// String keeps the token out of logs and error messages.
func (c Config) String() string {
	token := ""
	if c.Token != "" {
		token = "<redacted>"
	}
	return fmt.Sprintf("forge.Config{APIURL:%q Owner:%q Repo:%q Token:%q AppID:%d InstallationID:%d PrivateKeyFile:%q MinMutationGap:%s}",
		c.APIURL, c.Owner, c.Repo, token, c.AppID, c.InstallationID, c.PrivateKeyFile, c.MinMutationGap)
}

// GoString keeps the token out of %#v.
func (c Config) GoString() string { return c.String() }

// LogValue keeps the token out of slog.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c Config) withDefaults() Config {
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	c.MaxRetries = max(c.MaxRetries, 0)
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.InstallationRecheck == 0 {
		c.InstallationRecheck = DefaultInstallationRecheck
	}
	c.MinMutationGap = max(c.MinMutationGap, 0)
	return c
}

func (c Config) validate() error {
	if c.Owner == "" || c.Repo == "" {
		return errors.New("forge: owner and repo are required")
	}
	return c.validateAuth()
}

func (c Config) validateAuth() error {
	app := c.AppID != 0 || c.InstallationID != 0 || c.PrivateKeyFile != ""
	switch {
	case app && c.Token != "":
		return errors.New("forge: set either a token or the GitHub App keys, not both")
	case app && (c.AppID <= 0 || c.InstallationID < 0 || c.PrivateKeyFile == ""):
		return errors.New("forge: GitHub App auth needs the App ID and the private key file")
	case !app && c.Token == "":
		return errors.New("forge: a token or GitHub App keys are required")
	}
	return nil
}

// Client is kedge's GitHub client for one repository. It is safe for
// concurrent use; writes are serialised with those of every client of its
// Pool.
type Client struct {
	cfg   Config
	gh    *github.Client
	app   *installationTransport // nil with a static token
	meter *meter
	pace  *pacing
	// answers is the pool's ETag cache, which keeps decoded listings.
	answers *etagCache

	// listing is what FindPRs has read so far; listingMu keeps two
	// listings from racing to replace it.
	listingMu sync.Mutex
	listing   *prListing
}

// New builds a Client for cfg.Owner/cfg.Repo in a Pool of its own. With App
// auth it reads the private key now but mints no token until the first
// call; without cfg.InstallationID the first call also looks the
// installation up.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p, err := NewPool(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return p.client(cfg.Owner, cfg.Repo), nil
}

// Pool hands out the clients of several repositories under one API root and
// one identity. Its clients share what GitHub limits per identity rather
// than per repository: the spacing of writes and the pause a secondary
// limit asks for (so N repositories do not multiply the write rate), the
// counters, the ETag cache, and one installation token per installation.
// With App auth and no fixed installation ID, the installation of each
// owner is looked up through the API once and kept.
type Pool struct {
	cfg   Config
	meter *meter
	pace  *pacing
	// cached is the transport under authentication: metered, conditional.
	cached *etagCache
	apps   *ghinstallation.AppsTransport
	// appClient calls the App's own endpoints, authenticated by its JWT.
	appClient *Client
	httpProto http.Client
	baseURL   string

	mu            sync.Mutex
	clients       map[string]*Client
	installations map[string]int64 // by lower-case owner
	// notInstalled are GitHub's answers that the App is not installed for
	// an owner (by lower-case owner), each believed until
	// cfg.InstallationRecheck after it was given: an App is installed
	// once per account, so every repository of the owner shares the
	// answer and none asks again meanwhile.
	notInstalled map[string]notInstalled
	transports   map[string]*installationTransport
}

// notInstalled is a lookup GitHub answered 404: the App has no
// installation on the account.
type notInstalled struct {
	err     error
	recheck time.Time
}

// NewPool builds a Pool; cfg.Owner and cfg.Repo are not read. It makes no
// request.
func NewPool(_ context.Context, cfg Config) (*Pool, error) {
	if err := cfg.validateAuth(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	base := http.DefaultTransport
	p := &Pool{cfg: cfg, clients: map[string]*Client{}, installations: map[string]int64{}, notInstalled: map[string]notInstalled{}, transports: map[string]*installationTransport{}}
	if cfg.HTTPClient != nil {
		p.httpProto = *cfg.HTTPClient
		if cfg.HTTPClient.Transport != nil {
			base = cfg.HTTPClient.Transport
		}
	}
	p.meter = newMeter(base)
	p.pace = &pacing{gap: cfg.MinMutationGap}
	// The cache sits under the authenticating transport so every GET,
	// whatever token it carried, can be revalidated.
	p.cached = newETagCache(p.meter)
	probe, err := p.githubClient(p.cached)
	if err != nil {
		return nil, err
	}
	p.baseURL = strings.TrimSuffix(probe.BaseURL.String(), "/")
	if cfg.Token == "" {
		p.apps, err = ghinstallation.NewAppsTransportKeyFromFile(p.cached, cfg.AppID, cfg.PrivateKeyFile)
		if err != nil {
			// The error names the file, never its content.
			return nil, fmt.Errorf("forge: GitHub App key: %w", err)
		}
		// ghinstallation mints tokens under its own BaseURL: point it at
		// the same root as the API calls (GitHub Enterprise Server).
		p.apps.BaseURL = p.baseURL
		gh, err := p.githubClient(p.apps)
		if err != nil {
			return nil, err
		}
		p.appClient = &Client{cfg: cfg, gh: gh, meter: p.meter, pace: p.pace}
	}
	return p, nil
}

func (p *Pool) githubClient(transport http.RoundTripper) (*github.Client, error) {
	hc := p.httpProto
	hc.Transport = transport
	gh, err := github.NewClient(&hc).WithEnterpriseURLs(p.cfg.APIURL, p.cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("forge: github.apiURL %q: %w", p.cfg.APIURL, err)
	}
	gh.UserAgent = "kedge"
	return gh, nil
}

// Client returns the client of repository owner/name, made once. It makes
// no request: with App auth and no fixed installation ID, the first call
// finds the installation on the owner's account (GET /orgs/{org}/installation,
// then GET /users/{username}/installation), once per owner, and fails
// naming the account when the App is not installed there.
func (p *Pool) Client(_ context.Context, owner, name string) (*Client, error) {
	if owner == "" || name == "" {
		return nil, errors.New("forge: owner and repo are required")
	}
	return p.client(owner, name), nil
}

func (p *Pool) client(owner, name string) *Client {
	key := strings.ToLower(owner + "/" + name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[key]; ok {
		return c
	}
	cfg := p.cfg
	cfg.Owner, cfg.Repo = owner, name
	c := &Client{cfg: cfg, meter: p.meter, pace: p.pace, answers: p.cached}
	var auth http.RoundTripper
	if cfg.Token != "" {
		auth = &tokenTransport{token: cfg.Token, next: p.cached}
	} else {
		c.app = p.transportFor(owner, name)
		auth = c.app
	}
	// The API URL was checked by NewPool.
	c.gh, _ = p.githubClient(auth)
	p.clients[key] = c
	return c
}

// transportFor shares one token source per installation: the repositories
// of one owner cost one token, not one each. An App is installed once per
// account, so without a fixed installation the owner names it. Callers
// hold p.mu.
func (p *Pool) transportFor(owner, name string) *installationTransport {
	key := strings.ToLower(owner)
	if p.cfg.InstallationID != 0 {
		key = ""
	}
	if t, ok := p.transports[key]; ok {
		return t
	}
	t := &installationTransport{apps: p.apps, baseURL: p.baseURL, installationID: p.cfg.InstallationID,
		lookup: func(ctx context.Context) (int64, error) { return p.installationOf(ctx, owner) }}
	p.transports[key] = t
	return t
}

// installationOf looks the installation of owner's account up, unless an
// earlier lookup found it, or found recently that the App is not
// installed there. An App is installed once per account and its
// installation's id serves every repository of the account, so the
// account is asked (GitHub's organisation lookup, then its user lookup
// for a personal account), not one of its repositories: a repository the
// installation does not include would say nothing of the others.
func (p *Pool) installationOf(ctx context.Context, owner string) (int64, error) {
	account := strings.ToLower(owner)
	p.mu.Lock()
	id, ok := p.installations[account]
	missing, known := p.notInstalled[account]
	p.mu.Unlock()
	if ok {
		return id, nil
	}
	if known && time.Now().Before(missing.recheck) {
		// The same error as when GitHub gave it: the dashboard shows it,
		// and a text that changed between cycles would rewrite it.
		return 0, missing.err
	}
	find := func(lookup func(context.Context, string) (*github.Installation, *github.Response, error)) (*github.Installation, int, error) {
		var inst *github.Installation
		var status int
		err := p.appClient.call(ctx, op{name: "find installation of " + owner, idempotent: true}, func(ctx context.Context) (*github.Response, error) {
			var resp *github.Response
			var err error
			inst, resp, err = lookup(ctx, owner)
			if resp != nil {
				status = resp.StatusCode
			}
			return resp, err
		})
		return inst, status, err
	}
	inst, status, err := find(p.appClient.gh.Apps.FindOrganizationInstallation)
	if status == http.StatusNotFound {
		inst, status, err = find(p.appClient.gh.Apps.FindUserInstallation)
	}
	if err != nil {
		err = fmt.Errorf("forge: the GitHub App is not installed on the account %s: %w", owner, err)
		if status == http.StatusNotFound {
			// Only GitHub's own answer is kept: a timeout or a 5xx says
			// nothing about the installation and is asked again next time.
			p.mu.Lock()
			p.notInstalled[account] = notInstalled{err: err, recheck: time.Now().Add(p.cfg.InstallationRecheck)}
			p.mu.Unlock()
		}
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.notInstalled, account)
	p.installations[account] = inst.GetID()
	return inst.GetID(), nil
}

// Stats returns the counters of every client of the pool.
func (p *Pool) Stats() Stats { return p.meter.snapshot() }

// tokenTransport adds a static token.
type tokenTransport struct {
	token string
	next  http.RoundTripper
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// Minimum life left on an installation token handed to Git: a clone or a
// push of a large repository must not outlive it. ghinstallation itself
// only renews a token in its last minute.
const gitTokenMinLife = 10 * time.Minute

// GitToken returns the token for Git over HTTPS (user x-access-token): a
// fresh installation token, or the static token.
func (c *Client) GitToken(ctx context.Context) (string, error) {
	if c.app == nil {
		return c.cfg.Token, nil
	}
	var token string
	err := c.call(ctx, op{name: "mint installation token", idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		var err error
		token, err = c.app.tokenValidFor(ctx, gitTokenMinLife)
		return nil, err
	})
	return token, err
}

// DefaultBranch is the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	var repo *github.Repository
	err := c.call(ctx, op{name: "get repository", idempotent: true}, func(ctx context.Context) (*github.Response, error) {
		var resp *github.Response
		var err error
		repo, resp, err = c.gh.Repositories.Get(ctx, c.cfg.Owner, c.cfg.Repo)
		return resp, err
	})
	if err != nil {
		return "", err
	}
	if repo.GetDefaultBranch() == "" {
		return "", fmt.Errorf("forge: %s/%s reports no default branch (empty repository?)", c.cfg.Owner, c.cfg.Repo)
	}
	return repo.GetDefaultBranch(), nil
}
