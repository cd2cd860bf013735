// Package forge is kedge's GitHub client. It speaks REST v3 only, within the
// surface of DESIGN §5, under a configurable API URL so GitHub Enterprise
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
	c.MinMutationGap = max(c.MinMutationGap, 0)
	return c
}

func (c Config) validate() error {
	app := c.AppID != 0 || c.InstallationID != 0 || c.PrivateKeyFile != ""
	switch {
	case c.Owner == "" || c.Repo == "":
		return errors.New("forge: owner and repo are required")
	case app && c.Token != "":
		return errors.New("forge: set either a token or the GitHub App keys, not both")
	case app && (c.AppID <= 0 || c.InstallationID <= 0 || c.PrivateKeyFile == ""):
		return errors.New("forge: GitHub App auth needs the App ID, the installation ID and the private key file")
	case !app && c.Token == "":
		return errors.New("forge: a token or GitHub App keys are required")
	}
	return nil
}

// Client is kedge's GitHub client for one repository. It is safe for
// concurrent use; writes are serialised.
type Client struct {
	cfg   Config
	gh    *github.Client
	app   *installationTransport // nil with a static token
	meter *meter

	mutationMu   sync.Mutex
	lastMutation time.Time
}

// New builds a Client. With App auth it reads the private key now but
// mints no token until the first call, so New itself makes no request.
func New(_ context.Context, cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()

	base := http.DefaultTransport
	httpClient := &http.Client{}
	if cfg.HTTPClient != nil {
		*httpClient = *cfg.HTTPClient
		if cfg.HTTPClient.Transport != nil {
			base = cfg.HTTPClient.Transport
		}
	}
	m := newMeter(base)
	// The cache sits under the authenticating transport so every GET,
	// whatever token it carried, can be revalidated.
	cached := newETagCache(m)

	c := &Client{cfg: cfg, meter: m}
	var auth http.RoundTripper
	if cfg.Token != "" {
		auth = &tokenTransport{token: cfg.Token, next: cached}
	} else {
		atr, err := ghinstallation.NewAppsTransportKeyFromFile(cached, cfg.AppID, cfg.PrivateKeyFile)
		if err != nil {
			// The error names the file, never its content.
			return nil, fmt.Errorf("forge: GitHub App key: %w", err)
		}
		c.app = &installationTransport{apps: atr, installationID: cfg.InstallationID}
		auth = c.app
	}
	httpClient.Transport = auth

	gh, err := github.NewClient(httpClient).WithEnterpriseURLs(cfg.APIURL, cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("forge: github.apiURL %q: %w", cfg.APIURL, err)
	}
	gh.UserAgent = "kedge"
	c.gh = gh
	if c.app != nil {
		// ghinstallation mints tokens under its own BaseURL: point it at
		// the same root as the API calls (GitHub Enterprise Server).
		c.app.setBaseURL(strings.TrimSuffix(gh.BaseURL.String(), "/"))
	}
	return c, nil
}

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
