package dashboard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/drift"
)

func TestProxyVersion(t *testing.T) {
	tests := []struct {
		image, want string
	}{
		{"docker.io/istio/proxyv2:1.24.0", "1.24.0"},
		{"gcr.io/istio-release/proxyv2:1.24.0-distroless", "1.24.0-distroless"},
		{"docker.io/istio/proxyv2@sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c", "sha256:4f2a9c0b7d1e"},
		{"docker.io/istio/proxyv2:1.24.0@sha256:4f2a9c0b7d1e5f3a", "1.24.0"},
		{"registry:5000/istio/proxyv2", "latest"},
		{"registry:5000/istio/proxyv2:1.23.2", "1.23.2"},
		{"proxyv2", "latest"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			assert.Equal(t, tt.want, ProxyVersion(tt.image))
		})
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	tests := []struct {
		name  string
		start *time.Time
		now   time.Time
		want  string
	}{
		{"days and hours", at(3*24*time.Hour + 4*time.Hour + 5*time.Minute), now, "3d 4h"},
		{"whole days", at(2 * 24 * time.Hour), now, "2d"},
		{"hours and minutes", at(5*time.Hour + 12*time.Minute), now, "5h 12m"},
		{"minutes", at(7 * time.Minute), now, "7m"},
		{"seconds", at(20 * time.Second), now, "under 1m"},
		{"unknown start", nil, now, "–"},
		{"no reference time gives the start date", at(time.Hour), time.Time{}, "since " + now.Add(-time.Hour).UTC().Format("2006-01-02")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, age(tt.now, tt.start))
		})
	}
}

func TestTook(t *testing.T) {
	assert.Equal(t, "850ms", took(850*time.Millisecond))
	assert.Equal(t, "4.2s", took(4200*time.Millisecond))
	assert.Equal(t, "2m5s", took(125*time.Second))
	assert.Equal(t, "–", took(0))
}

func TestChange(t *testing.T) {
	assert.Equal(t, "1-24-0", change([]string{"1-24-0"}, "1-24-0"))
	assert.Equal(t, "1-22-0, 1-23-2 → **1-24-0**", change([]string{"1-22-0", "1-23-2"}, "1-24-0"))
	assert.Equal(t, "no sidecar → **1-24-0**", change(nil, "1-24-0"))
	assert.Equal(t, "1-23-2 → **no sidecar**", change([]string{"1-23-2"}, ""))
	assert.Equal(t, `a\|b → **&lt;c&gt;**`, change([]string{"a|b"}, "<c>"))
}

// The proxy column shows versions, unless they read the same while the
// images differ: then the images, as the pods run them.
func TestProxyChange(t *testing.T) {
	const (
		upstream = "docker.io/istio/proxyv2:1.24.0"
		mirrored = "mirror.corp/istio/proxyv2:1.24.0"
		pinned   = "docker.io/istio/proxyv2@sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
		other    = "docker.io/istio/proxyv2@sha256:4f2a9c0b7d1e00000000000000000000000000000000000000000000000000ff"
	)
	tests := []struct {
		images  []string
		desired string
		want    string
	}{
		{[]string{"docker.io/istio/proxyv2:1.23.2"}, upstream, "1.23.2 → **1.24.0**"},
		{[]string{upstream}, upstream, "1.24.0"},
		{nil, upstream, "no sidecar → **1.24.0**"},
		{[]string{upstream}, "", "1.24.0 → **no sidecar**"},
		{[]string{mirrored}, upstream, "mirror.corp/istio/proxyv2:1.24.0 → **docker.io/istio/proxyv2:1.24.0**"},
		{[]string{mirrored, upstream}, upstream, "mirror.corp/istio/proxyv2:1.24.0, docker.io/istio/proxyv2:1.24.0 → **docker.io/istio/proxyv2:1.24.0**"},
		{[]string{other}, pinned, EscapeMarkdown(other) + " → **" + EscapeMarkdown(pinned) + "**"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, proxyChange(tt.images, tt.desired), "%v → %s", tt.images, tt.desired)
	}
}

func TestMeaningShowsUnknownCodes(t *testing.T) {
	assert.Equal(t, "opted out by annotation", meaning(drift.SkipOptedOut))
	assert.Equal(t, "several files could define it", meaning(drift.ManifestAmbiguous))
	// no-repo covers a repository that is not listed, one pinned to a tag
	// and one that could not be checked out: the detail beside it says which.
	assert.Equal(t, "in no repository kedge can write to", meaning(drift.ManifestNoRepo))
	assert.Equal(t, "patch in the namespace's overlay", meaning(drift.EditOverlayPatch))
	assert.Equal(t, "post-renderer patch in its HelmRelease; helm-controller upgrades the release", meaning(drift.EditHelmPostRenderer))
	assert.Equal(t, "chart value in its HelmRelease or Argo CD Application; helm-controller upgrades the release, Argo CD syncs the Application", meaning(drift.EditHelmValues))
	assert.Equal(t, "brand-new", meaning(drift.Reason("brand-new")))
}
