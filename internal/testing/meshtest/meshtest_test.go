package meshtest_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const image = "docker.io/istio/proxyv2:1.24.1"

// TestShapes pins the objects to reviewed golden files, so a change to a
// builder shows up as a diff against the chart's shapes.
func TestShapes(t *testing.T) {
	tests := []struct {
		name    string
		install meshtest.Install
	}{
		{name: "default-revision", install: meshtest.IstiodRevision("", image, meshtest.WithAutoInject())},
		{name: "named-revision", install: meshtest.IstiodRevision("1-24-1", image, meshtest.WithVariant("distroless"))},
		{name: "tag-stable", install: meshtest.RevisionTag("stable", "1-24-1")},
		{name: "tag-default", install: meshtest.RevisionTag("default", "1-24-1")},
		{name: "deactivated-default", install: meshtest.Deactivate(meshtest.IstiodRevision("default", image, meshtest.WithoutConfigMap()))},
		{name: "other-namespace", install: meshtest.IstiodRevision("1-24-1", image, meshtest.WithNamespace("istio-canary"), meshtest.WithoutConfigMap())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			for _, mwc := range tt.install.WebhookConfigurations {
				out, err := yaml.Marshal(mwc)
				require.NoError(t, err)
				buf.WriteString("---\n")
				buf.Write(out)
			}
			for _, cm := range tt.install.ConfigMaps {
				out, err := yaml.Marshal(cm)
				require.NoError(t, err)
				buf.WriteString("---\n")
				buf.Write(out)
			}
			golden := filepath.Join("testdata", tt.name, "objects.yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, string(want), buf.String())
		})
	}
}

func TestWebhookNames(t *testing.T) {
	names := func(in meshtest.Install) (mwcName string, webhooks []string) {
		require.Len(t, in.WebhookConfigurations, 1)
		mwc := in.WebhookConfigurations[0]
		for _, wh := range mwc.Webhooks {
			webhooks = append(webhooks, wh.Name)
		}
		return mwc.Name, webhooks
	}
	tests := []struct {
		name         string
		install      meshtest.Install
		wantName     string
		wantWebhooks []string
		wantLabels   map[string]string
	}{
		{
			name: "default revision", install: meshtest.IstiodRevision("default", image),
			wantName: "istio-sidecar-injector",
			wantWebhooks: []string{"rev.namespace.sidecar-injector.istio.io", "rev.object.sidecar-injector.istio.io",
				"namespace.sidecar-injector.istio.io", "object.sidecar-injector.istio.io"},
			wantLabels: map[string]string{"istio.io/rev": "default"},
		},
		{
			name: "named revision", install: meshtest.IstiodRevision("1-24-1", image, meshtest.WithAutoInject()),
			wantName:     "istio-sidecar-injector-1-24-1",
			wantWebhooks: []string{"rev.namespace.sidecar-injector.istio.io", "rev.object.sidecar-injector.istio.io"},
			wantLabels:   map[string]string{"istio.io/rev": "1-24-1"},
		},
		{
			name: "default tag with auto injection", install: meshtest.RevisionTag("default", "1-24-1", meshtest.WithAutoInject()),
			wantName: "istio-revision-tag-default",
			wantWebhooks: []string{"rev.namespace.sidecar-injector.istio.io", "rev.object.sidecar-injector.istio.io",
				"namespace.sidecar-injector.istio.io", "object.sidecar-injector.istio.io", "auto.sidecar-injector.istio.io"},
			wantLabels: map[string]string{"istio.io/rev": "1-24-1", "istio.io/tag": "default"},
		},
		{
			name: "revision outside istio-system", install: meshtest.IstiodRevision("1-24-1", image, meshtest.WithNamespace("istio-canary")),
			wantName:     "istio-sidecar-injector-1-24-1-istio-canary",
			wantWebhooks: []string{"rev.namespace.sidecar-injector.istio.io", "rev.object.sidecar-injector.istio.io"},
			wantLabels:   map[string]string{"istio.io/rev": "1-24-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, webhooks := names(tt.install)
			assert.Equal(t, tt.wantName, name)
			assert.Equal(t, tt.wantWebhooks, webhooks)
			for k, v := range tt.wantLabels {
				assert.Equal(t, v, tt.install.WebhookConfigurations[0].Labels[k], k)
			}
		})
	}
}

func TestSplitImage(t *testing.T) {
	tests := []struct{ in, hub, name, tag string }{
		{"docker.io/istio/proxyv2:1.24.1", "docker.io/istio", "proxyv2", "1.24.1"},
		{"registry:5000/istio/proxyv2:1.24.1-distroless", "registry:5000/istio", "proxyv2", "1.24.1-distroless"},
		{"quay.io/x/proxyv2@sha256:abcd", "quay.io/x", "proxyv2", ""},
		{"proxyv2:1.0", "", "proxyv2", "1.0"},
	}
	for _, tt := range tests {
		hub, name, tag := meshtest.SplitImage(tt.in)
		assert.Equal(t, []string{tt.hub, tt.name, tt.tag}, []string{hub, name, tag}, tt.in)
	}
}
