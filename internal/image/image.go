// Package image reads container image references the way container runtimes
// resolve them, for comparing proxy images and showing their versions.
package image

import (
	"strings"

	"github.com/distribution/reference"
)

// Image variants Istio publishes as tag suffixes.
const (
	VariantDefault    = "default"
	VariantDistroless = "distroless"
	VariantDebug      = "debug"
)

// shortDigest is how many hex digits of a digest a version shows, as
// `docker images` does.
const shortDigest = 12

// Ref is an image reference as written, with its normalized form when it
// parses.
type Ref struct {
	written string
	named   reference.Named
	// The parser rejects some references people and runtimes still write
	// (a truncated digest, a tag with odd characters). What they appear to
	// say is kept, so that their version still shows as written.
	looseDigest, looseTag string
}

// Parse reads an image reference. It never fails: a reference the parser
// rejects equals only the same text.
func Parse(s string) Ref {
	r := Ref{written: strings.TrimSpace(s)}
	if r.written == "" {
		return r
	}
	if named, err := reference.ParseNormalizedNamed(r.written); err == nil {
		r.named = named
		return r
	}
	name, digest, _ := strings.Cut(r.written, "@")
	r.looseDigest = digest
	if named, err := reference.ParseNormalizedNamed(name); err == nil {
		r.named = named
		return r
	}
	// Only a ':' after the last '/' starts a tag; one before it is a
	// registry port.
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		r.looseTag = name[i+1:]
	}
	return r
}

// repository is the normalized repository name: registry host and path,
// without tag or digest, with Docker Hub's implicit registry and library
// path spelled out, since runtimes and humans write both forms.
func (r Ref) repository() string {
	name := r.named.Name()
	// Docker Hub's registry host is one more spelling of docker.io, which
	// the parser folds only for index.docker.io.
	if rest, ok := strings.CutPrefix(name, dockerHubRegistryHost+"/"); ok {
		if named, err := reference.ParseNormalizedNamed(rest); err == nil {
			name = named.Name()
		}
	}
	return name
}

// digest is the reference's digest ("" without one), one the parser
// rejects included.
func (r Ref) digest() string {
	if digested, ok := r.named.(reference.Digested); ok {
		return digested.Digest().String()
	}
	return r.looseDigest
}

// dockerHubRegistryHost is the host Docker Hub's registry API is served
// from; images pulled through it are docker.io images.
const dockerHubRegistryHost = "registry-1.docker.io"

// String is the reference as written.
func (r Ref) String() string {
	return r.written
}

// Version is the short version of an image: its tag, else the first hex
// digits of its digest, else "latest" (what a bare name pulls). The empty
// reference gives "".
func (r Ref) Version() string {
	if tag := r.tag(); tag != "" {
		return tag
	}
	if digested, ok := r.named.(reference.Digested); ok {
		return shorten(digested.Digest().String())
	}
	if r.looseDigest != "" {
		return shorten(r.looseDigest)
	}
	if r.written == "" {
		return ""
	}
	return "latest"
}

func (r Ref) tag() string {
	if tagged, ok := r.named.(reference.Tagged); ok {
		return tagged.Tag()
	}
	return r.looseTag
}

func shorten(digest string) string {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok {
		return digest
	}
	return algo + ":" + hex[:min(len(hex), shortDigest)]
}

// TagWithVariant swaps a known variant suffix of the tag for the wanted
// one, as Istio's injection template does: "" keeps the tag, "default"
// means no suffix.
func TagWithVariant(tag, variant string) string {
	if variant == "" {
		return tag
	}
	for _, known := range []string{VariantDistroless, VariantDebug} {
		if trimmed, ok := strings.CutSuffix(tag, "-"+known); ok {
			tag = trimmed
			break
		}
	}
	if variant == VariantDefault {
		return tag
	}
	return tag + "-" + variant
}
