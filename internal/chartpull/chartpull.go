// Package chartpull fetches Helm charts from HTTP chart repositories (an
// index.yaml and the packaged charts it lists) and from OCI registries into a cache directory
// outside the GitOps checkout, so that the pure parts of kedge can render
// them as files. Every request has a deadline; a repository that cannot be
// reached, or whose index or chart is broken, is an error naming it, never
// a guess.
//
// Pulls run under a policy, because the chart name and version come from
// what a repository's writers commit: a pull starts only at a host the
// cluster names (see Hosts) or helm.allowedHosts lists; no connection of
// a pull reaches a loopback, link-local, private, CGNAT, unspecified or
// multicast address unless helm.allowedHosts lists its host (see guard);
// the version is a semver version or range and the name a Helm chart name,
// and the cache is written through an os.Root of its directory (see
// cache). A Session reads each repository's index once, and a repository
// that fails fails every pull from it at once.
package chartpull

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/untrusted"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// maxBytes caps an index or a chart archive: a chart repository answering
// with more is broken or hostile.
const maxBytes = 64 << 20

// maxRedirects bounds the redirects one request follows, as Go's client
// does by default.
const maxRedirects = 10

// Puller fetches charts into Dir.
type Puller struct {
	// Dir is the cache directory; charts are kept by repository, name and
	// version and fetched once.
	Dir string
	// Timeout bounds each request to an HTTP repository, and each whole
	// pull from an OCI registry.
	Timeout time.Duration
	// AllowedHosts is helm.allowedHosts: globs (path.Match, without case)
	// of host names or addresses a pull may start at besides those the
	// cluster names, and the only hosts a pull may reach at a loopback,
	// link-local, private, CGNAT, unspecified or multicast address.
	AllowedHosts []string
	// Resolver answers the DNS questions of pulls; nil is the system's.
	Resolver *net.Resolver
	// Proxy chooses the proxy of a request; nil reads HTTPS_PROXY,
	// HTTP_PROXY and NO_PROXY (http.ProxyFromEnvironment).
	Proxy func(*http.Request) (*url.URL, error)
	// TLS configures TLS to repositories; nil uses the system's roots.
	TLS *tls.Config

	once      sync.Once
	transport *http.Transport
}

// Ref names a chart as a Flux HelmRepository or an Argo CD Helm source
// does: the repository's URL, the chart's name and the version (a semver
// version or constraint; empty for the latest stable one).
type Ref struct {
	RepoURL, Chart, Version string
}

func (r Ref) String() string {
	v := r.Version
	if v == "" {
		v = "latest"
	}
	return fmt.Sprintf("chart %s %s from %s", untrusted.Excerpt(r.Chart, maxShown), untrusted.Excerpt(v, maxShown), untrusted.Excerpt(r.RepoURL, 2*maxShown))
}

// Session pulls the charts of one cycle from the hosts the cluster names
// in it. Each repository's index (or an OCI chart's tags) is read once, a
// chart pulled once, and the first failure to reach a repository ends
// every other pull from it in the session, so that twenty charts of one
// slow repository wait for one timeout, not twenty.
type Session struct {
	p      *Puller
	named  Hosts
	client *http.Client

	mu      sync.Mutex
	pulls   map[Ref]*call[string]
	indexes map[string]*call[*indexFile]
	tags    map[string]*call[[]string]
	down    map[string]error
}

// call is one pull or read of a session, shared by everyone asking for
// the same.
type call[T any] struct {
	done chan struct{}
	val  T
	err  error
}

func once[K comparable, T any](mu *sync.Mutex, calls map[K]*call[T], key K, f func() (T, error)) (T, error) {
	mu.Lock()
	c, ok := calls[key]
	if !ok {
		c = &call[T]{done: make(chan struct{})}
		calls[key] = c
	}
	mu.Unlock()
	if ok {
		<-c.done
		return c.val, c.err
	}
	c.val, c.err = f()
	close(c.done)
	return c.val, c.err
}

// Session starts the pulls of one cycle; named are the hosts the cluster
// names.
func (p *Puller) Session(named Hosts) *Session {
	p.once.Do(func() {
		p.transport = newGuard(p.AllowedHosts, p.Resolver, p.Proxy).transport(p.TLS)
	})
	return &Session{
		p: p, named: named,
		client:  &http.Client{Transport: p.transport, CheckRedirect: checkRedirect},
		pulls:   map[Ref]*call[string]{},
		indexes: map[string]*call[*indexFile]{},
		tags:    map[string]*call[[]string]{},
		down:    map[string]error{},
	}
}

// Pull pulls one chart in a session of its own, with no host named by a
// cluster: only helm.allowedHosts admits a start.
func (p *Puller) Pull(ctx context.Context, ref Ref) (string, error) {
	return p.Session(nil).Pull(ctx, ref)
}

// checkRedirect follows redirects to other hosts: chart repositories
// serve their files from elsewhere (GitHub release assets from
// objects.githubusercontent.com, registries' blobs from a CDN), and every
// connection a redirect makes is held to the address rule when it is
// dialled. Only http and https are followed.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("refused a redirect to a %s URL", req.URL.Scheme)
	}
	return nil
}

// Pull returns the path of the chart's archive in the cache, fetching the
// repository's index and the archive when the version is not there yet.
func (s *Session) Pull(ctx context.Context, ref Ref) (string, error) {
	return once(&s.mu, s.pulls, ref, func() (string, error) {
		archive, err := s.pull(ctx, ref)
		if err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
		return archive, nil
	})
}

func (s *Session) pull(ctx context.Context, ref Ref) (string, error) {
	v, err := parseVersion(ref.Version)
	if err != nil {
		return "", err
	}
	if msg := validChartName(ref.Chart); msg != "" {
		return "", &InputError{Msg: msg}
	}
	if !isOCI(ref.RepoURL) {
		if u, err := url.Parse(ref.RepoURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return "", errors.New("only http, https and OCI chart repositories are read")
		}
	} else if !namesRegistry(ref.RepoURL) {
		return "", fmt.Errorf("%s names no registry host: write the registry, as oci://registry-1.docker.io/bitnamicharts", shown(ref.RepoURL))
	}
	if err := s.mayStart(ref.RepoURL); err != nil {
		return "", err
	}
	if err := s.isDown(ref.RepoURL); err != nil {
		return "", err
	}
	if isOCI(ref.RepoURL) {
		return s.pullOCI(ctx, ref, v)
	}
	return s.pullHTTP(ctx, ref, v)
}

// mayStart refuses a repository at a host neither the cluster names nor
// helm.allowedHosts lists.
func (s *Session) mayStart(repoURL string) error {
	host := HostOf(repoURL)
	if host == "" {
		return fmt.Errorf("%s names no host", shown(repoURL))
	}
	if _, named := s.named[host]; named || allowList(s.p.AllowedHosts).allows(host) {
		return nil
	}
	return &HostError{Host: host}
}

// HostError refuses a pull from a host nothing admits.
type HostError struct{ Host string }

func (e *HostError) Error() string {
	return fmt.Sprintf("%s is not a host the cluster names for charts (no HelmRepository, OCIRepository or Argo CD Application of the cluster names it); list it in helm.allowedHosts to pull from it", untrusted.Excerpt(e.Host, 2*maxShown))
}

// isDown is the failure that ended pulls from the repository this
// session, nil when there is none.
func (s *Session) isDown(repoURL string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[repoKey(repoURL)]
}

// failed records err as ending the repository's pulls this session when
// it is a failure to reach it (a connection refused or not allowed, a
// deadline passed), not an answer it gave.
func (s *Session) failed(repoURL string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded) {
		s.mu.Lock()
		if _, seen := s.down[repoKey(repoURL)]; !seen {
			s.down[repoKey(repoURL)] = err
		}
		s.mu.Unlock()
	}
	return err
}

func (s *Session) pullHTTP(ctx context.Context, ref Ref, v version) (string, error) {
	if v.exact != nil {
		if cached, err := s.cached(ref.RepoURL, ref.Chart, v.exact); err != nil || cached != "" {
			return cached, err
		}
	}
	index, err := once(&s.mu, s.indexes, repoKey(ref.RepoURL), func() (*indexFile, error) {
		return s.index(ctx, ref.RepoURL)
	})
	if err != nil {
		return "", fmt.Errorf("reading the repository's index: %w", err)
	}
	cv, chosen, err := index.get(ref.Chart, v)
	if err != nil {
		return "", err
	}
	rel, err := entry(ref.RepoURL, ref.Chart, chosen.String())
	if err != nil {
		return "", err
	}
	c := cache{dir: s.p.Dir}
	if cached := c.lookup(rel); cached != "" {
		return cached, nil
	}
	if len(cv.URLs) == 0 {
		return "", fmt.Errorf("the index lists no URL for version %s", chosen)
	}
	archiveURL, err := resolve(ref.RepoURL, cv.URLs[0])
	if err != nil {
		return "", err
	}
	if u, _ := url.Parse(archiveURL); u == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("the index lists %s for version %s, not an http or https URL", shown(archiveURL), chosen)
	}
	data, err := s.get(ctx, archiveURL)
	if err != nil {
		return "", fmt.Errorf("fetching %s: %w", untrusted.Excerpt(archiveURL, 2*maxShown), s.failed(ref.RepoURL, err))
	}
	if cv.Digest != "" {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != cv.Digest {
			return "", fmt.Errorf("%s does not match the index's digest", untrusted.Excerpt(archiveURL, 2*maxShown))
		}
	}
	return c.store(rel, data)
}

// cached is the archive of an exact version already in the cache, ""
// when it is not there.
func (s *Session) cached(repoURL, chart string, v *semver.Version) (string, error) {
	rel, err := entry(repoURL, chart, v.String())
	if err != nil {
		return "", err
	}
	return cache{dir: s.p.Dir}.lookup(rel), nil
}

// indexFile is the part of a chart repository's index.yaml kedge reads
// (https://helm.sh/docs/topics/chart_repository/#the-index-file).
type indexFile struct {
	APIVersion string                    `json:"apiVersion"`
	Entries    map[string][]chartVersion `json:"entries"`
}

type chartVersion struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// get picks the highest version of chart that v allows, as Helm does:
// no version asked means the latest stable version (no pre-release).
func (i *indexFile) get(chart string, v version) (*chartVersion, *semver.Version, error) {
	var best *chartVersion
	var bestV *semver.Version
	for k := range i.Entries[chart] {
		cv := &i.Entries[chart][k]
		candidate, err := semver.NewVersion(cv.Version)
		if err != nil || !v.allows(candidate) {
			continue
		}
		if bestV == nil || candidate.GreaterThan(bestV) {
			best, bestV = cv, candidate
		}
	}
	if best == nil {
		if len(i.Entries[chart]) == 0 {
			return nil, nil, errors.New("the repository's index has no such chart")
		}
		return nil, nil, fmt.Errorf("the repository's index has no version of the chart matching %s", shown(v.String()))
	}
	return best, bestV, nil
}

func (s *Session) index(ctx context.Context, repoURL string) (*indexFile, error) {
	indexURL, err := resolve(repoURL, "index.yaml")
	if err != nil {
		return nil, err
	}
	data, err := s.get(ctx, indexURL)
	if err != nil {
		return nil, s.failed(repoURL, err)
	}
	// An index may be large (tens of MiB for big repositories), but not
	// one whose aliases expand past what it holds.
	if yamlguard.MayHaveAlias(data) {
		if err := yamlguard.Check(data, yamlguard.AliasesOnly); err != nil {
			return nil, fmt.Errorf("%s: %w", indexURL, err)
		}
	}
	var index indexFile
	if err := yaml.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("%s is not a chart repository index: %s", indexURL, untrusted.Error(err))
	}
	if index.APIVersion == "" || index.Entries == nil {
		return nil, fmt.Errorf("%s is not a chart repository index: no apiVersion or entries", indexURL)
	}
	return &index, nil
}

func (s *Session) get(ctx context.Context, u string) ([]byte, error) {
	if s.p.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.p.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", untrusted.Excerpt(u, 2*maxShown), untrusted.Excerpt(resp.Status, maxShown))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", untrusted.Excerpt(u, 2*maxShown), maxBytes)
	}
	return data, nil
}

// resolve reads ref relative to the repository's URL, as the index's
// relative chart URLs are meant.
func resolve(repoURL, ref string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repoURL, "/") + "/")
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("the index lists %s, not a URL", shown(ref))
	}
	return base.ResolveReference(r).String(), nil
}
