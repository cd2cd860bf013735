package chartpull

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/testing/dnstest"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// counted serves a fixed body (or a handler) and counts the requests it
// gets.
type counted struct {
	srv      *httptest.Server
	requests atomic.Int64
}

func countedServer(t *testing.T, h http.HandlerFunc) *counted {
	t.Helper()
	c := &counted{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		h(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *counted) port() string {
	u, _ := url.Parse(c.srv.URL)
	return u.Port()
}

// repository serves an index of the charts (name → versions) under /repo
// and their archives, counting index and archive requests apart.
type repository struct {
	srv              *httptest.Server
	index, archives  atomic.Int64
	indexOverride    string
	archiveOverrides map[string]string
}

func newRepository(t *testing.T, charts map[string][]string) *repository {
	t.Helper()
	r := &repository{}
	data := map[string][]byte{}
	index := "apiVersion: v1\nentries:\n"
	for name, versions := range charts {
		index += "  " + name + ":\n"
		for _, v := range versions {
			archive := packaged(t, v)
			file := name + "-" + v + ".tgz"
			data[file] = archive
			sum := sha256.Sum256(archive)
			index += fmt.Sprintf("    - version: %s\n      urls: [charts/%s]\n      digest: %s\n", v, file, hex.EncodeToString(sum[:]))
		}
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == "/repo/index.yaml":
			r.index.Add(1)
			if r.indexOverride != "" {
				_, _ = w.Write([]byte(r.indexOverride))
				return
			}
			_, _ = w.Write([]byte(index))
		case strings.HasPrefix(req.URL.Path, "/repo/charts/"):
			r.archives.Add(1)
			if body, ok := data[strings.TrimPrefix(req.URL.Path, "/repo/charts/")]; ok {
				_, _ = w.Write(body)
				return
			}
			http.NotFound(w, req)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *repository) port() string {
	u, _ := url.Parse(r.srv.URL)
	return u.Port()
}

// TestRedirectsToForbiddenAddresses: a repository the policy admits (at a
// name the operator listed, resolving to loopback) redirects its index,
// or lists its archive, at an address no chart pull may reach; the
// connection is refused before it is made.
func TestRedirectsToForbiddenAddresses(t *testing.T) {
	target := countedServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("apiVersion: v1\nentries: {}\n")) })
	dns := dnstest.Start(t, map[string][][]netip.Addr{
		"charts.example.com":  {{loopback}},
		"rebound.example.com": {{loopback}},
		"mixed.example.com":   {{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("10.0.0.9")}},
	})
	tests := []struct {
		name, location, class string
	}{
		{name: "loopback by address", location: "http://127.0.0.1:" + target.port() + "/index.yaml", class: "a loopback address"},
		{name: "loopback by localhost", location: "http://localhost:" + target.port() + "/index.yaml", class: "a loopback address"},
		{name: "IPv6 loopback", location: "http://[::1]:" + target.port() + "/index.yaml", class: "a loopback address"},
		{name: "IPv4-mapped IPv6 loopback", location: "http://[::ffff:127.0.0.1]:" + target.port() + "/index.yaml", class: "a loopback address"},
		{name: "NAT64 of loopback", location: "http://[64:ff9b::7f00:1]:" + target.port() + "/index.yaml", class: "a loopback address"},
		{name: "unspecified", location: "http://0.0.0.0:" + target.port() + "/index.yaml", class: "an unspecified address"},
		{name: "a name resolving to loopback", location: "http://rebound.example.com:" + target.port() + "/index.yaml", class: "a loopback address"},
		{name: "instance metadata", location: "http://169.254.169.254/latest/meta-data/iam/security-credentials/", class: "a link-local address"},
		{name: "IPv6 link-local", location: "http://[fe80::1]/index.yaml", class: "a link-local address"},
		{name: "IPv6 link-local with a zone", location: "http://[fe80::1%25eth0]/index.yaml", class: "a link-local address"},
		{name: "private 10/8", location: "http://10.1.2.3/index.yaml", class: "a private address"},
		{name: "private 172.16/12", location: "http://172.20.0.1/index.yaml", class: "a private address"},
		{name: "private 192.168/16", location: "http://192.168.1.1/index.yaml", class: "a private address"},
		{name: "unique local IPv6", location: "http://[fd00::1]/index.yaml", class: "a private address"},
		{name: "CGNAT", location: "http://100.64.0.1/index.yaml", class: "a CGNAT address"},
		{name: "multicast", location: "http://224.0.0.1/index.yaml", class: "a multicast address"},
		{name: "a name with one private answer among public ones", location: "http://mixed.example.com/index.yaml", class: "a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.location, http.StatusFound)
			})
			dir := t.TempDir()
			p := &Puller{Dir: dir, Timeout: 5 * time.Second, AllowedHosts: []string{"charts.example.com"}, Resolver: dns.Resolver()}
			_, err := p.Pull(context.Background(), Ref{RepoURL: "http://charts.example.com:" + start.port() + "/repo", Chart: "podinfo", Version: "6.7.0"})
			require.Error(t, err)
			var refused *AddressError
			require.ErrorAs(t, err, &refused)
			assert.Contains(t, err.Error(), "refused to connect to")
			assert.Contains(t, err.Error(), tt.class)
			assert.Contains(t, err.Error(), "helm.allowedHosts")
			assert.EqualValues(t, 1, start.requests.Load(), "the admitted repository is asked")
			assert.Zero(t, target.requests.Load(), "nothing reaches the forbidden address")
			assert.Empty(t, filesUnder(t, dir))
		})
	}

	t.Run("an archive URL the index lists", func(t *testing.T) {
		repo := newRepository(t, map[string][]string{"podinfo": {"6.7.0"}})
		repo.indexOverride = "apiVersion: v1\nentries:\n  podinfo:\n    - version: 6.7.0\n      urls: [\"http://169.254.169.254/latest/meta-data/podinfo-6.7.0.tgz\"]\n"
		p := &Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, AllowedHosts: []string{"charts.example.com"}, Resolver: dns.Resolver()}
		_, err := p.Pull(context.Background(), Ref{RepoURL: "http://charts.example.com:" + repo.port() + "/repo", Chart: "podinfo", Version: "6.7.0"})
		var refused *AddressError
		require.ErrorAs(t, err, &refused)
		assert.Equal(t, "link-local", refused.Class)
		assert.EqualValues(t, 0, repo.archives.Load())
	})
}

// TestRedirectsToOtherHosts: a redirect to another host the address rule
// admits is followed, as chart repositories serve archives from elsewhere
// (GitHub release assets, registry CDNs).
func TestRedirectsToOtherHosts(t *testing.T) {
	repo := newRepository(t, map[string][]string{"podinfo": {"6.7.0"}})
	dns := dnstest.Start(t, map[string][][]netip.Addr{
		"charts.example.com": {{loopback}},
		"cdn.example.com":    {{loopback}},
	})
	front := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://cdn.example.com:"+repo.port()+r.URL.Path, http.StatusFound)
	})
	p := &Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, AllowedHosts: []string{"*.example.com"}, Resolver: dns.Resolver()}
	got, err := p.Pull(context.Background(), Ref{RepoURL: "http://charts.example.com:" + front.port() + "/repo", Chart: "podinfo", Version: "6.7.0"})
	require.NoError(t, err)
	assert.Equal(t, "podinfo-6.7.0.tgz", filepath.Base(got))
	assert.EqualValues(t, 2, front.requests.Load(), "the index and the archive, each redirected")
	assert.EqualValues(t, 1, repo.archives.Load())
}

// TestNamesResolvingToLoopback: a host the cluster names that resolves
// to loopback is refused unless helm.allowedHosts lists it; a glob there
// lists it as well.
func TestNamesResolvingToLoopback(t *testing.T) {
	repo := newRepository(t, map[string][]string{"podinfo": {"6.7.0"}})
	dns := dnstest.Start(t, map[string][][]netip.Addr{"charts.example.com": {{loopback}}})
	named := Hosts{"charts.example.com": "HelmRepository flux-system/podinfo"}
	tests := []struct {
		name    string
		allowed []string
		wantErr string
	}{
		{name: "not listed", wantErr: "refused to connect to charts.example.com (127.0.0.1), a loopback address"},
		{name: "another host listed", allowed: []string{"other.example.com", "*.example.org"}, wantErr: "a loopback address"},
		{name: "listed", allowed: []string{"charts.example.com"}},
		{name: "listed with another case", allowed: []string{"Charts.Example.COM"}},
		{name: "listed by a glob", allowed: []string{"*.example.com"}},
		{name: "listed by a character class", allowed: []string{"chart[st].example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := repo.index.Load()
			p := &Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, AllowedHosts: tt.allowed, Resolver: dns.Resolver()}
			got, err := p.Session(named).Pull(context.Background(), Ref{RepoURL: "http://charts.example.com:" + repo.port() + "/repo", Chart: "podinfo", Version: "6.7.0"})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, before, repo.index.Load(), "no request reached the repository")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "podinfo-6.7.0.tgz", filepath.Base(got))
		})
	}
}

// TestDNSRebinding: the dialler connects to the very address it checked,
// from one answer; a name answering a public address first and loopback
// next cannot have the second one connected to. The connection is stopped
// before it is made (the dialler's Control), so nothing leaves loopback.
func TestDNSRebinding(t *testing.T) {
	public := netip.MustParseAddr("203.0.113.7")
	dns := dnstest.Start(t, map[string][][]netip.Addr{"rebind.example.com": {{public}, {loopback}}})
	g := newGuard(nil, dns.Resolver(), nil)
	var dialled []string
	stop := errors.New("stopped before connecting")
	g.dialer.Control = func(_, address string, _ syscall.RawConn) error {
		dialled = append(dialled, address)
		return stop
	}
	_, err := g.dial(context.Background(), "tcp", "rebind.example.com:80")
	require.ErrorIs(t, err, stop)
	assert.Equal(t, []string{"203.0.113.7:80"}, dialled, "the checked address, not a second answer")
	assert.Equal(t, 1, dns.Asked("rebind.example.com"), "one DNS answer per connection")

	_, err = g.dial(context.Background(), "tcp", "rebind.example.com:80")
	var refused *AddressError
	require.ErrorAs(t, err, &refused, "the next answer is checked in its turn")
	assert.Equal(t, []string{"203.0.113.7:80"}, dialled)
}

// TestHostsNotNamed: a pull may start only at a host the cluster names or
// helm.allowedHosts lists; anything else is refused before any DNS
// question or connection, with a message naming the host and the key.
func TestHostsNotNamed(t *testing.T) {
	dns := dnstest.Start(t, map[string][][]netip.Addr{"elsewhere.example.net": {{loopback}}})
	named := Hosts{}
	named.Add("https://charts.example.com/stable", "HelmRepository flux-system/stable")
	named.Add("oci://ghcr.io/acme/charts", "OCIRepository flux-system/acme")
	tests := []struct {
		name, repoURL string
		allowed       []string
		wantHost      string
	}{
		{name: "an HTTP repository", repoURL: "https://elsewhere.example.net/charts", wantHost: "elsewhere.example.net"},
		{name: "an OCI repository", repoURL: "oci://elsewhere.example.net/charts", wantHost: "elsewhere.example.net"},
		{name: "an Argo CD OCI source", repoURL: "elsewhere.example.net/charts", wantHost: "elsewhere.example.net"},
		{name: "a sub-domain of a named host", repoURL: "https://evil.charts.example.com/stable", wantHost: "evil.charts.example.com"},
		{name: "a named host's name as a user", repoURL: "https://charts.example.com@elsewhere.example.net/stable", wantHost: "elsewhere.example.net"},
		{name: "a glob that does not match", repoURL: "https://elsewhere.example.net/charts", allowed: []string{"*.example.com"}, wantHost: "elsewhere.example.net"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &Puller{Dir: dir, Timeout: time.Second, AllowedHosts: tt.allowed, Resolver: dns.Resolver()}
			_, err := p.Session(named).Pull(context.Background(), Ref{RepoURL: tt.repoURL, Chart: "podinfo", Version: "6.7.0"})
			var refused *HostError
			require.ErrorAs(t, err, &refused)
			assert.Equal(t, tt.wantHost, refused.Host)
			assert.Contains(t, err.Error(), tt.wantHost+" is not a host the cluster names for charts")
			assert.Contains(t, err.Error(), "list it in helm.allowedHosts to pull from it")
			assert.Zero(t, dns.Asked(tt.wantHost), "not even a DNS question")
			assert.Empty(t, filesUnder(t, dir))
		})
	}
}

// TestOCIRepositoryWithoutRegistry: an OCI URL whose first element the
// registry client would read as a Docker Hub namespace is refused, listed
// or not: the host asked would not be the host checked.
func TestOCIRepositoryWithoutRegistry(t *testing.T) {
	for _, repoURL := range []string{"oci://charts/podinfo", "charts/podinfo", "oci://bitnamicharts"} {
		t.Run(repoURL, func(t *testing.T) {
			p := &Puller{Dir: t.TempDir(), Timeout: time.Second, AllowedHosts: []string{"*"}}
			_, err := p.Pull(context.Background(), Ref{RepoURL: repoURL, Chart: "podinfo", Version: "1.0.0"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "names no registry host")
		})
	}
}

// TestThroughAProxy: behind HTTPS_PROXY/HTTP_PROXY the proxy connects;
// kedge dials the proxy, and refuses a host whose own DNS answer is of a
// forbidden class before asking the proxy.
func TestThroughAProxy(t *testing.T) {
	repo := newRepository(t, map[string][]string{"podinfo": {"6.7.0"}})
	upstream, _ := url.Parse(repo.srv.URL)
	// The proxy serves every absolute-form request from the repository,
	// whatever host it names: nothing is dialled but loopback.
	proxy := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		r.URL.Scheme, r.URL.Host, r.RequestURI = upstream.Scheme, upstream.Host, ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
	proxyURL, _ := url.Parse(proxy.srv.URL)
	dns := dnstest.Start(t, map[string][][]netip.Addr{
		"charts.example.com":   {{netip.MustParseAddr("203.0.113.10")}},
		"internal.example.com": {{netip.MustParseAddr("10.0.0.8")}},
	})
	named := Hosts{"charts.example.com": "HelmRepository flux-system/podinfo", "internal.example.com": "HelmRepository flux-system/internal"}
	p := &Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, Resolver: dns.Resolver(), Proxy: http.ProxyURL(proxyURL)}
	s := p.Session(named)

	got, err := s.Pull(context.Background(), Ref{RepoURL: "http://charts.example.com/repo", Chart: "podinfo", Version: "6.7.0"})
	require.NoError(t, err)
	assert.Equal(t, "podinfo-6.7.0.tgz", filepath.Base(got))
	assert.EqualValues(t, 2, proxy.requests.Load(), "the index and the archive, through the proxy")

	_, err = s.Pull(context.Background(), Ref{RepoURL: "http://internal.example.com/repo", Chart: "podinfo", Version: "6.7.0"})
	var refused *AddressError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, "private", refused.Class)
	assert.EqualValues(t, 2, proxy.requests.Load(), "the proxy is not asked for it")
}

// TestOneIndexPerSession: twenty-one releases of one repository read its
// index once per session (a cycle), whatever versions they ask for.
func TestOneIndexPerSession(t *testing.T) {
	charts := map[string][]string{}
	for i := range 21 {
		charts[fmt.Sprintf("app-%d", i)] = []string{"1.0.0", "1.1.0"}
	}
	repo := newRepository(t, charts)
	p := loopbackPuller(t.TempDir(), 5*time.Second)
	versions := []string{"~1.0", "1.1.0", "", ">=1.0.0 <2.0.0"}
	for cycle := 1; cycle <= 2; cycle++ {
		s := p.Session(nil)
		for i := range 21 {
			ref := Ref{RepoURL: repo.srv.URL + "/repo", Chart: fmt.Sprintf("app-%d", i), Version: versions[i%len(versions)]}
			_, err := s.Pull(context.Background(), ref)
			require.NoError(t, err)
			_, err = s.Pull(context.Background(), ref)
			require.NoError(t, err, "the same release again")
		}
		assert.EqualValues(t, cycle, repo.index.Load(), "one index read per cycle")
	}
	assert.EqualValues(t, 21, repo.archives.Load(), "each archive once; the second cycle finds them cached")
}

// TestSlowRepositoryFailsAtOnce: a repository that does not answer within
// the timeout fails every chart pulled from it in the session after one
// request: twenty-one charts wait for one timeout, not twenty-one.
func TestSlowRepositoryFailsAtOnce(t *testing.T) {
	sleeping := func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	tests := []struct {
		name    string
		repoURL func(host string) string
	}{
		{name: "an HTTP repository", repoURL: func(host string) string { return "http://" + host + "/repo" }},
		{name: "an OCI registry", repoURL: func(host string) string { return "oci://" + host + "/charts" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slow := countedServer(t, sleeping)
			p := loopbackPuller(t.TempDir(), 300*time.Millisecond)
			s := p.Session(nil)
			var errs []string
			for i := range 21 {
				_, err := s.Pull(context.Background(), Ref{RepoURL: tt.repoURL(strings.TrimPrefix(slow.srv.URL, "http://")), Chart: fmt.Sprintf("app-%d", i), Version: "~1.0"})
				require.Error(t, err)
				errs = append(errs, err.Error())
			}
			assert.EqualValues(t, 1, slow.requests.Load(), "one request waited for the timeout; the others were not made")
			for i, msg := range errs {
				assert.Contains(t, msg, "deadline exceeded", "chart %d", i)
				assert.Contains(t, msg, fmt.Sprintf("chart app-%d ~1.0", i))
			}
		})
	}
}

// TestTraversal: a version or chart name that is not one, over HTTP and
// OCI, is refused before anything is read or written; the cache holds
// nothing and nothing is written next to it. Files planted where a
// traversal would lead are never served.
func TestTraversal(t *testing.T) {
	repo := newRepository(t, map[string][]string{"podinfo": {"1.0.0"}})
	host, _ := ociRegistry(t, nil)
	versions := []string{
		"1.0.0/../../x", "1.0.0/../../../../planted/podinfo-1.0.0", "../../../planted/x", "..", ".", "1.0.0/..",
		`1.0.0\..\..\x`, "/etc/passwd", "1.0.0/x", "%2e%2e/x", "1.0.0\x00", "1.0.0\n../x", "~1.0 || ../x",
		strings.Repeat("../", 200) + "x",
	}
	names := []string{"../podinfo", "../../planted/podinfo", "..", ".", "a/b", `a\b`, "/podinfo", "podinfo\x00", strings.Repeat("p", 251)}
	type pull struct{ name, version string }
	var pulls []pull
	for _, v := range versions {
		pulls = append(pulls, pull{"podinfo", v})
	}
	for _, n := range names {
		pulls = append(pulls, pull{n, "1.0.0"})
	}
	for _, repoURL := range []string{repo.srv.URL + "/repo", "oci://" + host + "/charts"} {
		for _, pl := range pulls {
			t.Run(repoURL[:4]+" "+fmt.Sprintf("%q %q", pl.name, pl.version), func(t *testing.T) {
				base := t.TempDir()
				planted := filepath.Join(base, "planted")
				require.NoError(t, os.MkdirAll(planted, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(planted, "podinfo-1.0.0.tgz"), []byte("planted"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(planted, "x.tgz"), []byte("planted"), 0o644))
				cacheDir := filepath.Join(base, "cache", "charts")
				before := repo.index.Load() + repo.archives.Load()

				_, err := loopbackPuller(cacheDir, 5*time.Second).Pull(context.Background(), Ref{RepoURL: repoURL, Chart: pl.name, Version: pl.version})
				require.Error(t, err)
				if pl.name == "podinfo" {
					assert.Contains(t, err.Error(), "is neither a semver version nor a semver range")
				} else {
					assert.Contains(t, err.Error(), "chart name")
				}
				assert.Equal(t, []string{"planted/podinfo-1.0.0.tgz", "planted/x.tgz"}, filesUnder(t, base), "no file written anywhere")
				assert.Equal(t, before, repo.index.Load()+repo.archives.Load(), "nothing asked of the repository")
			})
		}
	}
}

// TestHostileIndexAndTags: an index or a registry listing a "version" that
// would climb out of the cache has it ignored; the real versions are
// pulled into the cache and nowhere else.
func TestHostileIndexAndTags(t *testing.T) {
	t.Run("an index", func(t *testing.T) {
		repo := newRepository(t, map[string][]string{"podinfo": {"1.0.0"}})
		good := packaged(t, "1.0.0")
		sum := sha256.Sum256(good)
		repo.indexOverride = fmt.Sprintf("apiVersion: v1\nentries:\n  podinfo:\n"+
			"    - version: \"9.9.9/../../../x\"\n      urls: [charts/podinfo-1.0.0.tgz]\n"+
			"    - version: 1.0.0\n      urls: [charts/podinfo-1.0.0.tgz]\n      digest: %s\n", hex.EncodeToString(sum[:]))
		base := t.TempDir()
		got, err := loopbackPuller(filepath.Join(base, "cache"), 5*time.Second).Pull(context.Background(), Ref{RepoURL: repo.srv.URL + "/repo", Chart: "podinfo", Version: ""})
		require.NoError(t, err)
		assert.Equal(t, "podinfo-1.0.0.tgz", filepath.Base(got))
		files := filesUnder(t, base)
		require.Len(t, files, 1)
		assert.True(t, strings.HasPrefix(files[0], "cache/"), files[0])
	})
	t.Run("a registry's tags", func(t *testing.T) {
		host, _ := ociRegistry(t, map[string]v1.Image{"1.0.0": helmChart(t, "1.0.0")})
		base := t.TempDir()
		got, err := loopbackPuller(filepath.Join(base, "cache"), 5*time.Second).Pull(context.Background(), Ref{RepoURL: "oci://" + host + "/charts", Chart: "podinfo", Version: ">=0.1"})
		require.NoError(t, err)
		assert.Equal(t, "podinfo-1.0.0.tgz", filepath.Base(got))
		files := filesUnder(t, base)
		require.Len(t, files, 1)
		assert.True(t, strings.HasPrefix(files[0], "cache/"), files[0])
	})
}

// TestOCIThroughTheRule: an OCI registry reached by a name resolving to
// loopback is refused unless listed, its token realm and blobs included.
func TestOCIThroughTheRule(t *testing.T) {
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	pushCharts(t, fmt.Sprintf("127.0.0.1:%d", port), map[string]v1.Image{"6.7.0": helmChart(t, "6.7.0")}, remote.WithTransport(srv.Client().Transport))
	dns := dnstest.Start(t, map[string][][]netip.Addr{"registry.example.com": {{loopback}}})
	tlsConfig := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	ref := Ref{RepoURL: fmt.Sprintf("oci://registry.example.com:%d/charts", port), Chart: "podinfo", Version: "6.7.0"}
	named := Hosts{"registry.example.com": "OCIRepository flux-system/podinfo"}

	p := &Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, Resolver: dns.Resolver(), TLS: tlsConfig}
	_, err := p.Session(named).Pull(context.Background(), ref)
	var refused *AddressError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, "loopback", refused.Class)

	p = &Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, Resolver: dns.Resolver(), TLS: tlsConfig, AllowedHosts: []string{"registry.example.com"}}
	got, err := p.Session(named).Pull(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, "podinfo-6.7.0.tgz", filepath.Base(got))
}
