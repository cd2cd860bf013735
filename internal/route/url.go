package route

import "strings"

// NormalizeURL reduces the spellings of one repository address (https,
// ssh://, scp-like git@host:owner/name, with or without .git, a user or a
// port) to host/path, lower-cased: GitHub and most forges ignore case in
// paths. "" for an empty address.
func NormalizeURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	scp := false
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	} else {
		scp = true
	}
	if at := strings.LastIndex(u, "@"); at >= 0 && at < strings.IndexAny(u+"/", "/") {
		u = u[at+1:]
	}
	if scp {
		u = strings.Replace(u, ":", "/", 1)
	}
	host, rest, _ := strings.Cut(u, "/")
	if h, _, ok := strings.Cut(host, ":"); ok && !scp {
		host = h // drop a port
	}
	rest = strings.TrimSuffix(strings.TrimSuffix(rest, "/"), ".git")
	return strings.ToLower(host + "/" + rest)
}

// RepoOf reads "owner/name" (lower-cased) from a repository address of any
// host; "" when its path is not exactly two segments, as no GitHub
// repository's is otherwise.
func RepoOf(u string) string {
	n := NormalizeURL(u)
	if n == "" {
		return ""
	}
	_, p, _ := strings.Cut(n, "/")
	owner, name, ok := strings.Cut(p, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return ""
	}
	return owner + "/" + name
}
