package mesh_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

func TestImage(t *testing.T) {
	const digest = "registry.example.com/istio/proxyv2@sha256:0c1f5b8e0a6e3b8e5a2c9d1f4e7b6a5c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a"
	tests := []struct {
		name        string
		install     meshtest.Install
		revision    string
		annotations map[string]string
		want        string
	}{
		{
			name:    "hub, image and tag",
			install: meshtest.IstiodRevision("1-24-0", image124), revision: "1-24-0",
			want: image124,
		},
		{
			name:    "variant is appended to the tag",
			install: meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless")), revision: "default",
			want: image124 + "-distroless",
		},
		{
			name: "variant from values alone when the mesh ConfigMap is not visible",
			install: meshtest.IstiodRevision("default", image124,
				meshtest.WithVariant("distroless"), meshtest.WithoutMeshConfig()),
			revision: "default",
			want:     image124 + "-distroless",
		},
		{
			name:    "a known variant already on the tag is replaced, not doubled",
			install: meshtest.IstiodRevision("default", image124+"-debug", meshtest.WithVariant("distroless")), revision: "default",
			want: image124 + "-distroless",
		},
		{
			name:    "proxyImageType annotation overrides the variant",
			install: meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless")), revision: "default",
			annotations: map[string]string{"sidecar.istio.io/proxyImageType": "debug"},
			want:        image124 + "-debug",
		},
		{
			name:    "proxyImageType default drops the variant",
			install: meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless")), revision: "default",
			annotations: map[string]string{"sidecar.istio.io/proxyImageType": "default"},
			want:        image124,
		},
		{
			name:    "proxy.istio.io/config imageType overrides the mesh default",
			install: meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless")), revision: "default",
			annotations: map[string]string{"proxy.istio.io/config": "image:\n  imageType: debug\n"},
			want:        image124 + "-debug",
		},
		{
			name:    "proxyImage annotation with a registry path is used verbatim",
			install: meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless")), revision: "default",
			annotations: map[string]string{"sidecar.istio.io/proxyImage": "mirror.local/istio/proxyv2:1.24.0-fips"},
			want:        "mirror.local/istio/proxyv2:1.24.0-fips",
		},
		{
			name:    "proxyImage annotation without a slash is ignored",
			install: meshtest.IstiodRevision("default", image124), revision: "default",
			annotations: map[string]string{"sidecar.istio.io/proxyImage": "proxyv2-custom"},
			want:        image124,
		},
		{
			name:    "digest reference in values is used verbatim",
			install: meshtest.IstiodRevision("1-24-0", digest, meshtest.WithVariant("distroless")), revision: "1-24-0",
			want: digest,
		},
		{
			name: "a mesh-wide ProxyConfig is part of the revision's image",
			install: meshtest.Merge(meshtest.IstiodRevision("default", image124),
				meshtest.ProxyConfig("istio-system", "mesh-wide", "distroless", nil)),
			revision: "default",
			want:     image124 + "-distroless",
		},
		{
			name: "a namespace's ProxyConfig is not",
			install: meshtest.Merge(meshtest.IstiodRevision("default", image124),
				meshtest.ProxyConfig("shop", "shop", "distroless", nil)),
			revision: "default",
			want:     image124,
		},
		{
			name: "without the mesh ConfigMap the root namespace is istiod's, as the chart writes it",
			install: meshtest.Merge(
				meshtest.IstiodRevision("default", image124, meshtest.WithNamespace("istio-control"), meshtest.WithoutMeshConfig()),
				meshtest.ProxyConfig("istio-control", "mesh-wide", "debug", nil)),
			revision: "default",
			want:     image124 + "-debug",
		},
		{
			name:    "revision without ConfigMap has no known image",
			install: meshtest.IstiodRevision("1-24-0", image124, meshtest.WithoutConfigMap()), revision: "1-24-0",
			want: "",
		},
		{
			name:    "unknown revision has no known image",
			install: meshtest.IstiodRevision("1-24-0", image124), revision: "1-25-0",
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.install.Model().Image(tt.revision, tt.annotations))
		})
	}
}

func TestConfigMapRevision(t *testing.T) {
	tests := []struct {
		name   string
		values string
		labels map[string]string
		want   string
	}{
		{name: "values.revision", values: `{"revision":"1-24-0","global":{"revision":"other"}}`, labels: map[string]string{"istio.io/rev": "x"}, want: "1-24-0"},
		{name: "values.global.revision", values: `{"global":{"revision":"1-24-0"}}`, labels: map[string]string{"istio.io/rev": "x"}, want: "1-24-0"},
		{name: "label", values: `{"revision":""}`, labels: map[string]string{"istio.io/rev": "1-24-0"}, want: "1-24-0"},
		{name: "default", values: `{}`, want: "default"},
		{name: "unreadable values fall back to the label", values: `{not json`, labels: map[string]string{"istio.io/rev": "1-24-0"}, want: "1-24-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-x", Namespace: "istio-system", Labels: tt.labels},
				Data:       map[string]string{"values": tt.values},
			}
			m := mesh.New(nil, []corev1.ConfigMap{cm})
			revs := m.Revisions()
			require.Len(t, revs, 1)
			assert.Equal(t, tt.want, revs[0].Name)
			assert.Equal(t, "istio-system/istio-sidecar-injector-x", revs[0].ConfigMap)
		})
	}
}

func TestNumericTag(t *testing.T) {
	cm := corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector", Namespace: "istio-system"},
		Data:       map[string]string{"values": `{"global":{"hub":"gcr.io/istio-release","tag":1.24,"proxy":{"image":"proxyv2"}}}`},
	}
	m := mesh.New(nil, []corev1.ConfigMap{cm})
	assert.Equal(t, "gcr.io/istio-release/proxyv2:1.24", m.Image("default", nil))
}

func TestModelRevisionsAndTags(t *testing.T) {
	in := meshtest.Merge(
		meshtest.Deactivate(meshtest.IstiodRevision("default", image123)),
		meshtest.IstiodRevision("1-24-0", image124, meshtest.WithPolicy("disabled")),
		meshtest.IstiodRevision("1-25-0", image125, meshtest.WithoutConfigMap()),
		meshtest.RevisionTag("default", "1-24-0"),
		meshtest.RevisionTag("stable", "1-24-0"),
		meshtest.RevisionTag("canary", "1-25-0"),
	)
	// Unrelated objects must not become revisions.
	in.WebhookConfigurations = append(in.WebhookConfigurations, admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-webhook", Labels: map[string]string{"istio.io/rev": "nope"}},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "webhook.cert-manager.io"}},
	})
	in.ConfigMaps = append(in.ConfigMaps, corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ca-root-cert", Namespace: "shop"},
		Data:       map[string]string{"root-cert.pem": "x"},
	})
	m := mesh.New(in.WebhookConfigurations, in.ConfigMaps)

	assert.Equal(t, map[string]string{"default": "1-24-0", "stable": "1-24-0", "canary": "1-25-0"}, m.Tags())
	rev, ok := m.ResolveTag("stable")
	assert.True(t, ok)
	assert.Equal(t, "1-24-0", rev)

	assert.Equal(t, []mesh.Revision{
		{Name: "1-24-0", Tags: []string{"default", "stable"}, Image: image124, HasWebhooks: true,
			ConfigMap: "istio-system/istio-sidecar-injector-1-24-0", Policy: "disabled"},
		{Name: "1-25-0", Tags: []string{"canary"}, Image: "", HasWebhooks: true},
		{Name: "default", Tags: []string{}, Image: image123, HasWebhooks: true,
			ConfigMap: "istio-system/istio-sidecar-injector", Policy: "enabled"},
	}, m.Revisions())
	assert.Empty(t, m.Warnings())
}

func TestWebhookRevisionWithoutLabel(t *testing.T) {
	in := meshtest.IstiodRevision("1-24-0", image124)
	mwc := in.WebhookConfigurations[0]
	delete(mwc.Labels, "istio.io/rev")
	m := mesh.New([]admissionregistrationv1.MutatingWebhookConfiguration{mwc}, in.ConfigMaps)
	d := m.Decide("shop", map[string]string{"istio.io/rev": "1-24-0"}, mesh.Template{})
	assert.Equal(t, "1-24-0", d.Revision)
	assert.Equal(t, image124, d.Image)
}

func TestInvalidSelectorIsReported(t *testing.T) {
	in := meshtest.IstiodRevision("default", image124)
	in.WebhookConfigurations[0].Webhooks[0].NamespaceSelector = &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "istio.io/rev", Operator: "Bogus"}},
	}
	m := mesh.New(in.WebhookConfigurations, in.ConfigMaps)
	require.Len(t, m.Warnings(), 1)
	assert.Contains(t, m.Warnings()[0], "rev.namespace.sidecar-injector.istio.io")
	// The broken webhook is dropped; the others still answer.
	d := m.Decide("shop", map[string]string{"istio-injection": "enabled"}, mesh.Template{})
	assert.True(t, d.Inject)
}

func TestWebhookNotCalledForPodCreateIsIgnored(t *testing.T) {
	in := meshtest.IstiodRevision("default", image124)
	for i := range in.WebhookConfigurations[0].Webhooks {
		in.WebhookConfigurations[0].Webhooks[i].Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	}
	m := mesh.New(in.WebhookConfigurations, in.ConfigMaps)
	d := m.Decide("shop", map[string]string{"istio-injection": "enabled"}, mesh.Template{})
	assert.Equal(t, mesh.CauseNoWebhook, d.Cause)
}

func TestNilSelectorsMatchEverything(t *testing.T) {
	in := meshtest.IstiodRevision("default", image124)
	mwc := in.WebhookConfigurations[0]
	mwc.Webhooks = mwc.Webhooks[:1]
	mwc.Webhooks[0].NamespaceSelector = nil
	mwc.Webhooks[0].ObjectSelector = &metav1.LabelSelector{}
	m := mesh.New([]admissionregistrationv1.MutatingWebhookConfiguration{mwc}, in.ConfigMaps)
	d := m.Decide("anything", nil, mesh.Template{})
	assert.True(t, d.Inject)
}

func TestTemplateOfPod(t *testing.T) {
	const own = "registry.example.com/mesh/proxyv2:1.24.0-fips"
	injectedWith := func(annotations map[string]string) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}
		meshtest.InjectPod(&p, "default", image124)
		return p
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{
			// The annotation as the injector writes it (pkg/kube/inject/webhook.go
			// reapplyOverwrittenContainers, testdata/inject/proxy-override.yaml.injected).
			name: "an injected pod's own istio-proxy is read from the overrides annotation",
			pod: injectedWith(map[string]string{"proxy.istio.io/overrides": `{"containers":[{"name":"istio-proxy","image":"` + own +
				`","resources":{"limits":{"cpu":"3"}}}]}`}),
			want: own,
		},
		{
			name: "a native sidecar override is read from its init containers",
			pod: injectedWith(map[string]string{"proxy.istio.io/overrides": `{"initContainers":[{"name":"istio-init","image":"x/init"},` +
				`{"name":"istio-proxy","image":"` + own + `"}]}`}),
			want: own,
		},
		{
			name: "an override without an image (it was auto) leaves the injected one",
			pod:  injectedWith(map[string]string{"proxy.istio.io/overrides": `{"containers":[{"name":"istio-proxy","resources":{}}]}`}),
			want: "",
		},
		{
			name: "an injected pod's istio-proxy container is the injector's, not its template's",
			pod:  injectedWith(nil),
			want: "",
		},
		{
			name: "an unreadable overrides annotation is ignored",
			pod:  injectedWith(map[string]string{"proxy.istio.io/overrides": `{"containers":`}),
			want: "",
		},
		{
			name: "a pod not injected yet shows its own istio-proxy container",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Image: "app:1"}, {Name: "istio-proxy", Image: own},
			}}},
			want: own,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := objects.PodOf(&tt.pod)
			assert.Equal(t, tt.want, mesh.TemplateOfPod(&pod).ProxyImage)
		})
	}
}
