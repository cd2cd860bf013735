package mesh_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/mesh/meshtest"
)

const (
	image123 = "docker.io/istio/proxyv2:1.23.2"
	image124 = "docker.io/istio/proxyv2:1.24.0"
	image125 = "docker.io/istio/proxyv2:1.25.0"
)

func modelOf(installs ...meshtest.Install) *mesh.Model {
	in := meshtest.Merge(installs...)
	return mesh.New(in.WebhookConfigurations, in.ConfigMaps)
}

func TestDecide(t *testing.T) {
	// A mesh with the default revision, a canary revision and a tag, the
	// shape most upgrades pass through.
	canary := modelOf(
		meshtest.IstiodRevision("default", image123),
		meshtest.IstiodRevision("1-24-0", image124),
		meshtest.RevisionTag("stable", "1-24-0"),
	)
	tagMoved := modelOf(
		meshtest.IstiodRevision("default", image123),
		meshtest.IstiodRevision("1-24-0", image124),
		meshtest.IstiodRevision("1-25-0", image125),
		meshtest.RevisionTag("stable", "1-25-0"),
	)
	defaultTagged := modelOf(
		meshtest.Deactivate(meshtest.IstiodRevision("default", image123)),
		meshtest.IstiodRevision("1-24-0", image124),
		meshtest.RevisionTag("default", "1-24-0"),
	)
	conflicting := modelOf(
		meshtest.IstiodRevision("default", image123),
		meshtest.IstiodRevision("1-24-0", image124),
		meshtest.RevisionTag("default", "1-24-0"),
	)
	autoInject := modelOf(meshtest.IstiodRevision("default", image124, meshtest.WithAutoInject()))
	policyDisabled := modelOf(meshtest.IstiodRevision("default", image124,
		meshtest.WithPolicy("disabled"),
		meshtest.WithAlwaysInjectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "yes"}})))
	neverSelector := modelOf(meshtest.IstiodRevision("default", image124,
		meshtest.WithNeverInjectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"job": "batch"}})))
	policyInvalid := modelOf(meshtest.IstiodRevision("default", image124, meshtest.WithPolicy("sometimes")))
	remote := modelOf(meshtest.IstiodRevision("1-24-0", image124, meshtest.WithoutConfigMap()))

	enabled := map[string]string{"istio-injection": "enabled"}
	tests := []struct {
		name      string
		model     *mesh.Model
		namespace string
		nsLabels  map[string]string
		template  mesh.Template
		want      mesh.Decision
	}{
		{
			name: "istio-injection=enabled selects the default revision", model: canary,
			namespace: "shop", nsLabels: enabled,
			want: injected("default", image123),
		},
		{
			name: "istio.io/rev selects a named revision", model: canary,
			namespace: "shop", nsLabels: map[string]string{"istio.io/rev": "1-24-0"},
			want: injected("1-24-0", image124),
		},
		{
			name: "a tag resolves to its revision", model: canary,
			namespace: "shop", nsLabels: map[string]string{"istio.io/rev": "stable"},
			want: injected("1-24-0", image124),
		},
		{
			name: "a moved tag resolves to its new revision", model: tagMoved,
			namespace: "shop", nsLabels: map[string]string{"istio.io/rev": "stable"},
			want: injected("1-25-0", image125),
		},
		{
			name: "istio-injection=enabled beats istio.io/rev", model: canary,
			namespace: "shop", nsLabels: map[string]string{"istio-injection": "enabled", "istio.io/rev": "1-24-0"},
			want: injected("default", image123),
		},
		{
			name: "istio-injection=disabled matches nothing, whatever else is set", model: canary,
			namespace: "shop", nsLabels: map[string]string{"istio-injection": "disabled", "istio.io/rev": "1-24-0"},
			template: mesh.Template{Labels: map[string]string{"istio.io/rev": "1-24-0", "sidecar.istio.io/inject": "true"}},
			want:     mesh.Decision{Cause: mesh.CauseNoWebhook},
		},
		{
			name: "pod label inject=false fails every object selector", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"sidecar.istio.io/inject": "false"}},
			want:     mesh.Decision{Cause: mesh.CauseNoWebhook},
		},
		{
			name: "pod annotation inject=false is honoured by the injector", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Annotations: map[string]string{"sidecar.istio.io/inject": "false"}},
			want:     mesh.Decision{Matched: "default", Cause: mesh.CauseInjectFalse},
		},
		{
			name: "pod label beats pod annotation", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{
				Labels:      map[string]string{"sidecar.istio.io/inject": "true"},
				Annotations: map[string]string{"sidecar.istio.io/inject": "false"},
			},
			want: injected("default", image123),
		},
		{
			name: "the namespace label beats the pod's revision label", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"istio.io/rev": "1-24-0"}},
			want:     injected("default", image123),
		},
		{
			name: "object selector alone injects in an unlabelled namespace", model: canary,
			namespace: "tools",
			template:  mesh.Template{Labels: map[string]string{"istio.io/rev": "1-24-0"}},
			want:      injected("1-24-0", image124),
		},
		{
			name: "pod inject=true in an unlabelled namespace uses the default revision", model: canary,
			namespace: "tools",
			template:  mesh.Template{Labels: map[string]string{"sidecar.istio.io/inject": "true"}},
			want:      injected("default", image123),
		},
		{
			name: "pod revision label beats pod inject=true", model: canary,
			namespace: "tools",
			template:  mesh.Template{Labels: map[string]string{"sidecar.istio.io/inject": "true", "istio.io/rev": "stable"}},
			want:      injected("1-24-0", image124),
		},
		{
			name: "unlabelled namespace and pod get nothing", model: canary,
			namespace: "tools",
			want:      mesh.Decision{Cause: mesh.CauseNoWebhook},
		},
		{
			name: "deactivated default webhooks give way to the default tag", model: defaultTagged,
			namespace: "shop", nsLabels: enabled,
			want: injected("1-24-0", image124),
		},
		{
			name: "istio.io/rev=default follows the default tag", model: defaultTagged,
			namespace: "shop", nsLabels: map[string]string{"istio.io/rev": "default"},
			want: injected("1-24-0", image124),
		},
		{
			name: "default tag next to active default webhooks is a conflict", model: conflicting,
			namespace: "shop", nsLabels: enabled,
			want: mesh.Decision{Conflict: []string{"1-24-0", "default"}, Cause: mesh.CauseConflict},
		},
		{
			name: "host-network pods are never injected", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{HostNetwork: true},
			want:     mesh.Decision{Matched: "default", Cause: mesh.CauseHostNetwork},
		},
		{
			name: "ambient namespace without injection labels gets no sidecar", model: canary,
			namespace: "mesh-ambient", nsLabels: map[string]string{"istio.io/dataplane-mode": "ambient"},
			want: mesh.Decision{Cause: mesh.CauseNoWebhook, Ambient: true},
		},
		{
			name: "ambient pod label in an unlabelled namespace", model: canary,
			namespace: "tools",
			template:  mesh.Template{Labels: map[string]string{"istio.io/dataplane-mode": "ambient"}},
			want:      mesh.Decision{Cause: mesh.CauseNoWebhook, Ambient: true},
		},
		{
			name: "the injector ignores ambient labels: a selected pod still gets a sidecar", model: canary,
			namespace: "mixed", nsLabels: map[string]string{"istio.io/dataplane-mode": "ambient", "istio-injection": "enabled"},
			want: injected("default", image123),
		},
		{
			name: "auto injection selects unlabelled namespaces", model: autoInject,
			namespace: "tools", nsLabels: map[string]string{"kubernetes.io/metadata.name": "tools"},
			want: injected("default", image124),
		},
		{
			name: "auto injection excludes kube-system by its name label even when the object lacks it", model: autoInject,
			namespace: "kube-system",
			want:      mesh.Decision{Cause: mesh.CauseNoWebhook},
		},
		{
			name: "auto injection does not select pods that set inject themselves", model: autoInject,
			namespace: "tools",
			template:  mesh.Template{Labels: map[string]string{"sidecar.istio.io/inject": "false"}},
			want:      mesh.Decision{Cause: mesh.CauseNoWebhook},
		},
		{
			name: "the injector refuses Kubernetes system namespaces", model: canary,
			namespace: "kube-public", nsLabels: enabled,
			want: mesh.Decision{Matched: "default", Cause: mesh.CauseIgnoredNamespace},
		},
		{
			name: "policy disabled injects only on request", model: policyDisabled,
			namespace: "shop", nsLabels: enabled,
			want: mesh.Decision{Matched: "default", Cause: mesh.CausePolicyDisabled},
		},
		{
			name: "policy disabled with inject=true annotation", model: policyDisabled,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Annotations: map[string]string{"sidecar.istio.io/inject": "true"}},
			want:     injected("default", image124),
		},
		{
			name: "policy disabled with alwaysInjectSelector", model: policyDisabled,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"mesh": "yes"}},
			want:     injected("default", image124),
		},
		{
			name: "neverInjectSelector", model: neverSelector,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"job": "batch"}},
			want:     mesh.Decision{Matched: "default", Cause: mesh.CauseNeverInjectSelector},
		},
		{
			name: "inject=true beats neverInjectSelector", model: neverSelector,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"job": "batch", "sidecar.istio.io/inject": "true"}},
			want:     injected("default", image124),
		},
		{
			name: "an unknown policy turns injection off, as the injector does", model: policyInvalid,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"sidecar.istio.io/inject": "true"}},
			want:     mesh.Decision{Matched: "default", Cause: mesh.CausePolicyInvalid},
		},
		{
			name: "a revision without its ConfigMap injects an unknown image", model: remote,
			namespace: "shop", nsLabels: map[string]string{"istio.io/rev": "1-24-0"},
			want: injected("1-24-0", ""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.model.Decide(tt.namespace, tt.nsLabels, tt.template)
			assert.Equal(t, tt.want, got)
		})
	}
}

func injected(rev, image string) mesh.Decision {
	return mesh.Decision{Inject: true, Revision: rev, Image: image, Matched: rev, Cause: mesh.CauseInjected}
}
