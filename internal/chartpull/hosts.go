package chartpull

import (
	"net/url"
	"path"
	"strings"
)

// Hosts are the hosts the cluster names as places charts come from, each
// with the first object that names it (for messages). A pull may start
// only at one of them or at a host helm.allowedHosts lists: what a
// repository's writers commit chooses a chart, never a new host to ask.
type Hosts map[string]string

// Add records the host of a repository URL (http(s)://, oci://, or an
// OCI repository written without a scheme, as Argo CD writes one); by
// names the object naming it. A URL without a host adds nothing.
func (h Hosts) Add(repoURL, by string) {
	if host := HostOf(repoURL); host != "" {
		if _, seen := h[host]; !seen {
			h[host] = by
		}
	}
}

// HostOf is the host name of a repository URL, lower-cased, without port
// or brackets; "" when it has none.
func HostOf(repoURL string) string {
	raw := strings.TrimSpace(repoURL)
	if !strings.Contains(raw, "://") {
		raw = "oci://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return normalHost(u.Hostname())
}

func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// allowList is helm.allowedHosts: globs (path.Match, compared without
// case) over host names or IP addresses, without port.
type allowList []string

func (l allowList) allows(host string) bool {
	host = normalHost(strings.Trim(host, "[]"))
	for _, pattern := range l {
		if ok, err := path.Match(strings.ToLower(pattern), host); ok && err == nil {
			return true
		}
	}
	return false
}

// ValidAllowedHost says what is wrong with an helm.allowedHosts entry, ""
// when nothing is.
func ValidAllowedHost(pattern string) string {
	switch {
	case strings.TrimSpace(pattern) == "":
		return "an empty entry"
	case strings.Contains(pattern, "://") || strings.Contains(pattern, "/"):
		return "a host name or glob, not a URL or path"
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return "not a valid glob"
	}
	return ""
}
