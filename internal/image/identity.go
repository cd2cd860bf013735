package image

import (
	"fmt"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// Identity says when the proxy image a pod runs is the one Istio's injector
// gives it. Between the injector and the container runtime, admission
// policies may still rewrite the image: Kyverno's verifyImages (mutateDigest
// is on by default) and google/k8s-digester append the digest the tag
// resolves to, and a replace-registry policy moves every image to a mirror.
// Neither changes what runs, so neither is drift (docs/design.md, "What runs
// the pods").
//
// Two references are the same image when their repositories are the same,
// once Docker Hub's implicit registry and library path are spelled out and
// Mirrors are resolved (only the image name counts with IgnoreRegistry),
// and
//
//   - the injector pins a digest, and the pod runs that digest: the runtime
//     pulls by digest whatever tag is written beside it;
//   - the injector names a tag, and the pod runs that tag, with or without a
//     digest added after it. A pod whose reference holds a digest and no tag
//     cannot be told apart from another build without asking the registry,
//     and drifts.
type Identity struct {
	// Mirrors maps a repository prefix images are rewritten to onto the
	// prefix it mirrors ("mirror.corp/istio" → "docker.io/istio"). A prefix
	// matches whole path components; the longest one that matches wins.
	Mirrors map[string]string
	// IgnoreRegistry compares the image name alone (the last path
	// component: "proxyv2"), whatever registry and path (Istio's hub) come
	// before it, as Fortsa's --compare-hub=false does. The zero Identity
	// compares them.
	IgnoreRegistry bool
}

// Validate reports a mirror prefix that is no repository name.
func (id Identity) Validate() error {
	for _, from := range sortedKeys(id.Mirrors) {
		for _, prefix := range []string{from, id.Mirrors[from]} {
			if _, err := normalizePrefix(prefix); err != nil {
				return fmt.Errorf("%q: %w", prefix, err)
			}
		}
	}
	return nil
}

// Runs reports whether a pod running the image running runs the image the
// injector names injected.
func (id Identity) Runs(running, injected string) bool {
	if running == injected {
		return true
	}
	r, i := Parse(running), Parse(injected)
	if r.named == nil || i.named == nil {
		return r.written == i.written
	}
	if id.repository(r) != id.repository(i) {
		return false
	}
	if pinned := i.digest(); pinned != "" {
		return r.digest() == pinned
	}
	return r.pulledTag() != "" && r.pulledTag() == i.pulledTag()
}

// repository is what of a reference's repository is compared.
func (id Identity) repository(r Ref) string {
	repo := r.repository()
	if id.IgnoreRegistry {
		return repo[strings.LastIndexByte(repo, '/')+1:]
	}
	return id.unmirrored(repo)
}

// unmirrored rewrites the longest mirror prefix of repo to what it mirrors.
func (id Identity) unmirrored(repo string) string {
	best, to := "", ""
	for from, upstream := range id.Mirrors {
		prefix, err := normalizePrefix(from)
		if err != nil || len(prefix) <= len(best) {
			continue
		}
		if repo == prefix || strings.HasPrefix(repo, prefix+"/") {
			best, to = prefix, upstream
		}
	}
	if best == "" {
		return repo
	}
	target, err := normalizePrefix(to)
	if err != nil {
		return repo
	}
	return target + repo[len(best):]
}

// pulledTag is the tag a runtime resolves: the written one, "latest" for a
// bare name, "" for a reference pinned by digest alone.
func (r Ref) pulledTag() string {
	if tag := r.tag(); tag != "" {
		return tag
	}
	if r.digest() != "" {
		return ""
	}
	return "latest"
}

// normalizePrefix spells a repository prefix out as the parser spells
// names: with its registry host, docker.io when the first component names
// none (a lone component names a host when it has a dot or a port, as in a
// reference). Docker Hub's library path is not added: "istio" stands for
// docker.io/istio, a prefix of docker.io/istio/proxyv2.
func normalizePrefix(prefix string) (string, error) {
	prefix = strings.TrimSuffix(strings.TrimSpace(prefix), "/")
	if prefix == "" {
		return "", fmt.Errorf("empty repository prefix")
	}
	if _, err := reference.ParseNormalizedNamed(prefix); err != nil {
		return "", fmt.Errorf("not a repository name: %w", err)
	}
	// Without a path, a colon is a registry's port.
	if slash := strings.LastIndexByte(prefix, '/'); strings.Contains(prefix, "@") || (slash >= 0 && strings.LastIndexByte(prefix, ':') > slash) {
		return "", fmt.Errorf("a repository prefix has no tag or digest")
	}
	host, rest, _ := strings.Cut(prefix, "/")
	switch {
	case !looksLikeHost(host):
		return "docker.io/" + prefix, nil
	case host == "index.docker.io" || host == dockerHubRegistryHost:
		return strings.TrimSuffix("docker.io/"+rest, "/"), nil
	}
	return prefix, nil
}

// looksLikeHost tells a registry host from a first path component, as the
// reference grammar does.
func looksLikeHost(component string) bool {
	return strings.ContainsAny(component, ".:") || component == "localhost" || strings.ToLower(component) != component
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
