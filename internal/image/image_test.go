package image

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const digest64 = "sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"

func TestVersion(t *testing.T) {
	tests := []struct {
		image, want string
	}{
		{"docker.io/istio/proxyv2:1.24.0", "1.24.0"},
		{"gcr.io/istio-release/proxyv2:1.24.0-distroless", "1.24.0-distroless"},
		{"docker.io/istio/proxyv2@" + digest64, "sha256:4f2a9c0b7d1e"},
		{"docker.io/istio/proxyv2@sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c", "sha256:4f2a9c0b7d1e"},
		{"docker.io/istio/proxyv2:1.24.0@sha256:4f2a9c0b7d1e5f3a", "1.24.0"},
		{"registry:5000/istio/proxyv2", "latest"},
		{"registry:5000/istio/proxyv2:1.23.2", "1.23.2"},
		{" proxyv2 ", "latest"},
		{"", ""},
		{"Not A Reference", "latest"},
		{"evil.io/proxy:1.0|x", "1.0|x"},
		{"evil.io/proxy@sha256:[x](http://evil)", "sha256:[x](http://e"},
		{"host:5000/Proxy", "latest"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			assert.Equal(t, tt.want, Parse(tt.image).Version())
		})
	}
}

func TestTagWithVariant(t *testing.T) {
	tests := []struct {
		tag, variant, want string
	}{
		{"1.24.0", "", "1.24.0"},
		{"1.24.0", VariantDefault, "1.24.0"},
		{"1.24.0", VariantDistroless, "1.24.0-distroless"},
		{"1.24.0-distroless", VariantDebug, "1.24.0-debug"},
		{"1.24.0-debug", VariantDefault, "1.24.0"},
		{"1.24.0-distroless", "", "1.24.0-distroless"},
		{"1.24.0-distroless", VariantDistroless, "1.24.0-distroless"},
	}
	for _, tt := range tests {
		t.Run(tt.tag+"+"+tt.variant, func(t *testing.T) {
			assert.Equal(t, tt.want, TagWithVariant(tt.tag, tt.variant))
		})
	}
}

func TestIdentityRuns(t *testing.T) {
	const (
		upstream = "docker.io/istio/proxyv2:1.24.1"
		other    = "sha256:9e1d3b5c7a9f0b2d4e6f8a0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f"
	)
	mirrored := Identity{Mirrors: map[string]string{"mirror.corp/istio": "docker.io/istio"}}
	wholeRegistry := Identity{Mirrors: map[string]string{"registry.corp:5000": "docker.io"}}
	nested := Identity{Mirrors: map[string]string{
		"mirror.corp":           "quay.io",
		"mirror.corp/dockerhub": "docker.io",
	}}
	hubIgnored := Identity{IgnoreRegistry: true}
	tests := []struct {
		name              string
		id                Identity
		running, injected string
		want              bool
	}{
		{"the same text", Identity{}, upstream, upstream, true},
		{"Docker Hub spelled two ways", Identity{}, "istio/proxyv2:1.24.1", upstream, true},
		{"Docker Hub's index host", Identity{}, "index.docker.io/istio/proxyv2:1.24.1", upstream, true},
		{"Docker Hub's registry host", Identity{}, "registry-1.docker.io/istio/proxyv2:1.24.1", upstream, true},
		{"Docker Hub's library path", Identity{}, "registry-1.docker.io/busybox:1", "docker.io/library/busybox:1", true},
		{"another tag", Identity{}, "registry-1.docker.io/istio/proxyv2:1.24.0", upstream, false},
		{"a digest appended after injection (Kyverno mutateDigest, k8s-digester)", Identity{}, upstream + "@" + digest64, upstream, true},
		{"a digest appended to another tag", Identity{}, "docker.io/istio/proxyv2:1.23.2@" + digest64, upstream, false},
		{"a digest in place of the tag cannot be told from another build", Identity{}, "docker.io/istio/proxyv2@" + digest64, upstream, false},
		{"a bare name pulls latest", Identity{}, "docker.io/istio/proxyv2@" + digest64, "docker.io/istio/proxyv2", false},
		{"bare name and latest", Identity{}, "docker.io/istio/proxyv2:latest", "istio/proxyv2", true},
		{"the injector pins a digest the pod runs", Identity{}, "docker.io/istio/proxyv2@" + digest64, "docker.io/istio/proxyv2@" + digest64, true},
		{"the injector pins a digest, the pod runs another", Identity{}, "docker.io/istio/proxyv2@" + other, "docker.io/istio/proxyv2@" + digest64, false},
		{"a pinned digest wins over the tag beside it", Identity{}, "docker.io/istio/proxyv2:1.24.1@" + digest64, "docker.io/istio/proxyv2:1.24.0@" + digest64, true},
		{"a pinned digest the pod runs only a tag of", Identity{}, upstream, upstream + "@" + digest64, false},
		{"truncated digests compare as written", Identity{}, "istio/proxyv2@sha256:4f2a", "docker.io/istio/proxyv2@sha256:4f2a", true},
		{"truncated digests that differ", Identity{}, "istio/proxyv2@sha256:4f2a", "docker.io/istio/proxyv2@sha256:4f2b", false},
		{"another registry", Identity{}, "mirror.corp/istio/proxyv2:1.24.1", upstream, false},
		{"a mirror that is configured", mirrored, "mirror.corp/istio/proxyv2:1.24.1", upstream, true},
		{"a mirror and an appended digest", mirrored, "mirror.corp/istio/proxyv2:1.24.1@" + digest64, upstream, true},
		{"a mirror still compares tags", mirrored, "mirror.corp/istio/proxyv2:1.23.2", upstream, false},
		{"a mirror prefix matches whole path components", mirrored, "mirror.corp/istio-extra/proxyv2:1.24.1", upstream, false},
		{"a mirror of a whole registry, with a port", wholeRegistry, "registry.corp:5000/istio/proxyv2:1.24.1", upstream, true},
		{"the longest mirror prefix wins", nested, "mirror.corp/dockerhub/istio/proxyv2:1.24.1", upstream, true},
		{"the shorter prefix maps elsewhere", nested, "mirror.corp/istio/proxyv2:1.24.1", upstream, false},
		{"both sides are mirrored", mirrored, "mirror.corp/istio/proxyv2:1.24.1", "mirror.corp/istio/proxyv2:1.24.1@" + digest64, false},
		{"registry ignored: another hub", hubIgnored, "gcr.io/istio-release/proxyv2:1.24.1", upstream, true},
		{"registry ignored: still the tag", hubIgnored, "gcr.io/istio-release/proxyv2:1.23.2", upstream, false},
		{"registry ignored: still the image name", hubIgnored, "gcr.io/istio-release/proxy:1.24.1", upstream, false},
		{"registry ignored: still the digest the injector pins", hubIgnored, "gcr.io/istio-release/proxyv2@" + other, "docker.io/istio/proxyv2@" + digest64, false},
		{"unparsable references compare as written", Identity{}, "Not A Reference", "Not A Reference", true},
		{"unparsable references that differ", Identity{}, "Not A Reference", "not a reference", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.id.Runs(tt.running, tt.injected))
		})
	}
}

func TestIdentityValidate(t *testing.T) {
	tests := []struct {
		mirrors map[string]string
		wantErr string
	}{
		{mirrors: map[string]string{"mirror.corp/istio": "docker.io/istio", "registry.corp:5000": "docker.io", "istio": "gcr.io/istio-release"}},
		{mirrors: map[string]string{"mirror.corp/istio:1.24": "docker.io/istio"}, wantErr: `"mirror.corp/istio:1.24": a repository prefix has no tag or digest`},
		{mirrors: map[string]string{"mirror.corp/Istio": "docker.io/istio"}, wantErr: `"mirror.corp/Istio": not a repository name`},
		{mirrors: map[string]string{"mirror.corp/istio": ""}, wantErr: `"": empty repository prefix`},
	}
	for _, tt := range tests {
		err := Identity{Mirrors: tt.mirrors}.Validate()
		if tt.wantErr == "" {
			assert.NoError(t, err)
			continue
		}
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), tt.wantErr)
		}
	}
}
