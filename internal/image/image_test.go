package image

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const digest64 = "sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"

func TestSame(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"docker.io/istio/proxyv2:1.24.0", "istio/proxyv2:1.24.0", true},
		{"index.docker.io/istio/proxyv2:1.24.0", "istio/proxyv2:1.24.0", true},
		{"registry-1.docker.io/istio/proxyv2:1.24.0", "docker.io/istio/proxyv2:1.24.0", true},
		{"registry-1.docker.io/busybox:1", "busybox:1", true},
		{"registry-1.docker.io/istio/proxyv2:1.24.0", "docker.io/istio/proxyv2:1.25.0", false},
		{"docker.io/library/busybox:1", "busybox:1", true},
		{"busybox:1", "busybox:2", false},
		{"istio/proxyv2:1.24.0", "istio/proxyv2", false},
		{"gcr.io/istio-release/proxyv2:1.24.0", "docker.io/istio/proxyv2:1.24.0", false},
		{"istio/proxyv2@" + digest64, "docker.io/istio/proxyv2@" + digest64, true},
		{"istio/proxyv2@sha256:4f2a", "docker.io/istio/proxyv2@sha256:4f2a", true},
		{"istio/proxyv2@sha256:4f2a", "docker.io/istio/proxyv2@sha256:4f2b", false},
		{"Not A Reference", "Not A Reference", true},
		{"Not A Reference", "not a reference", false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			assert.Equal(t, tt.want, Same(tt.a, tt.b))
			assert.Equal(t, tt.want, Same(tt.b, tt.a))
		})
	}
}

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
