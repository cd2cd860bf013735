package chartpull

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// guard dials chart repositories under the address rule: it resolves the
// host itself, refuses when any address of the answer is of a forbidden
// class (unless helm.allowedHosts lists the host), and connects to the
// addresses it checked, never to a second answer: a name that resolves to
// a public address once and to 127.0.0.1 the next time (DNS rebinding)
// cannot slip between the check and the connection. Every connection of
// a pull goes through it: the first request, each redirect, the archive
// URL an index lists, an OCI registry's token realm and its blob
// redirects.
type guard struct {
	allowed  allowList
	resolver *net.Resolver
	proxy    func(*http.Request) (*url.URL, error)
	dialer   net.Dialer

	// proxies are the proxy addresses requests were handed to: the
	// operator's, set in the environment, so not held to the rule.
	proxies sync.Map
}

func newGuard(allowed []string, resolver *net.Resolver, proxy func(*http.Request) (*url.URL, error)) *guard {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	return &guard{allowed: allowed, resolver: resolver, proxy: proxy, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
}

// transport is the HTTP transport of every pull.
func (g *guard) transport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                 g.proxyFor,
		DialContext:           g.dial,
		TLSClientConfig:       tlsConfig.Clone(),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// dial connects to addr (host:port) when the rule allows it.
func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, viaProxy := g.proxies.Load(addr); viaProxy {
		return g.dialer.DialContext(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.checked(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// checked resolves host and returns its addresses when the rule allows
// every one of them.
func (g *guard) checked(ctx context.Context, network, host string) ([]netip.Addr, error) {
	addrs, err := g.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	if g.allowed.allows(host) {
		return addrs, nil
	}
	for _, a := range addrs {
		if class := addressClass(a); class != "" {
			return nil, &AddressError{Host: host, Addr: a, Class: class}
		}
	}
	return addrs, nil
}

func (g *guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.WithZone("")}, nil
	}
	family := "ip"
	switch network {
	case "tcp4":
		family = "ip4"
	case "tcp6":
		family = "ip6"
	}
	addrs, err := g.resolver.LookupNetIP(ctx, family, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return addrs, nil
}

// proxyFor picks the proxy of a request as the environment says
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY). Through a proxy, the proxy
// resolves and connects: kedge holds the request's host to the rule by its
// own DNS answer first, where it gets one (a pod behind an egress proxy
// may resolve no outside names at all); what the proxy's own answer
// reaches is the proxy's egress policy to decide.
func (g *guard) proxyFor(req *http.Request) (*url.URL, error) {
	proxy, err := g.proxy(req)
	if err != nil || proxy == nil {
		return proxy, err
	}
	host := req.URL.Hostname()
	if !g.allowed.allows(host) {
		// An answer kedge cannot get is the proxy's to find.
		addrs, _ := g.resolve(req.Context(), "tcp", host)
		for _, a := range addrs {
			if class := addressClass(a); class != "" {
				return nil, &AddressError{Host: host, Addr: a, Class: class}
			}
		}
	}
	g.proxies.Store(proxyAddr(proxy), true)
	return proxy, nil
}

// proxyAddr is the host:port the transport dials for a proxy URL.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
