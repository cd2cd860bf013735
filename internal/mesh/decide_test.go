package mesh_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	image123 = "docker.io/istio/proxyv2:1.23.2"
	image124 = "docker.io/istio/proxyv2:1.24.0"
	image125 = "docker.io/istio/proxyv2:1.25.0"
)

func modelOf(installs ...meshtest.Install) *mesh.Model {
	return meshtest.Merge(installs...).Model()
}

// istioAt is the istio/istio commit the source citations below were read at.
const istioAt = "istio/istio@86c9f01fd735"

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

	// ProxyConfigs at every level, in the shapes the ProxyConfig reference
	// documents: mesh-wide in the root namespace, per namespace, per workload.
	proxyConfigs := modelOf(
		meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless")),
		meshtest.ProxyConfig("istio-system", "mesh-wide", "default", nil),
		meshtest.ProxyConfig("istio-system", "root-workloads", "debug", map[string]string{"app": "cart"}),
		meshtest.ProxyConfig("debugging", "namespace", "debug", nil),
		meshtest.ProxyConfig("debugging", "later-namespace", "distroless", nil),
		meshtest.ProxyConfig("debugging", "cart", "distroless", map[string]string{"app": "cart"}),
		meshtest.ProxyConfig("debugging", "selects-nothing", "default", map[string]string{}),
		meshtest.ProxyConfig("unset", "first-without-image", "", nil),
		meshtest.ProxyConfig("unset", "second", "debug", nil),
	)
	canaryOnly := modelOf(
		meshtest.IstiodRevision("default", image124),
		meshtest.IstiodRevision("1-25-0", image125),
		revisionLabelled(meshtest.ProxyConfig("shop", "canary-debug", "debug", nil), "1-25-0"),
	)
	otherRoot := modelOf(
		meshtest.IstiodRevision("default", image124, meshtest.WithNamespace("istio-control")),
		meshtest.ProxyConfig("istio-system", "not-the-root", "debug", nil),
		meshtest.ProxyConfig("istio-control", "mesh-wide", "distroless", nil),
	)
	ownProxy := func(image string) []corev1.Container {
		return []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}, {Name: "istio-proxy", Image: image}}
	}
	always := corev1.ContainerRestartPolicyAlways
	const fips = "registry.example.com/mesh/proxyv2:1.24.0-fips"
	const pinned = "mirror.local/istio/proxyv2:1.24.0"

	enabled := map[string]string{"istio-injection": "enabled"}
	tests := []struct {
		name      string
		model     *mesh.Model
		namespace string
		nsLabels  map[string]string
		template  mesh.Template
		want      mesh.Decision
		// follows cites the Istio source the row restates.
		follows string
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
		{
			name: "a template's own istio-proxy container keeps its image", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: templateOf(nil, ownProxy(fips), nil),
			want:     injected("default", fips),
			follows:  "pkg/kube/inject/webhook.go:525-550 reapplyOverwrittenContainers lays the original pod's istio-proxy over the template's",
		},
		{
			name: "a template's own istio-proxy init container (native sidecar) keeps its image", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: templateOf(nil, ownProxy("registry.example.com/app:1")[:1],
				[]corev1.Container{{Name: "istio-proxy", Image: fips, RestartPolicy: &always}}),
			want:    injected("default", fips),
			follows: "pkg/kube/inject/webhook.go:551-573 reapplyOverwrittenContainers, init containers found by app_probe.go:50 FindContainerFromPod",
		},
		{
			name: "image auto leaves the injected image", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: templateOf(nil, ownProxy("auto"), nil),
			want:     injected("default", image123),
			follows:  "pkg/kube/inject/webhook.go:541-543 an overlay image of AutoImage (webhook.go:1066) is cleared",
		},
		{
			name: "a template's own image goes ahead of sidecar.istio.io/proxyImage", model: canary,
			namespace: "shop", nsLabels: enabled,
			template: templateOf(map[string]string{"sidecar.istio.io/proxyImage": pinned}, ownProxy(fips), nil),
			want:     injected("default", fips),
			follows:  "pkg/kube/inject/webhook.go:474-480 injectPod runs reapplyOverwrittenContainers after the template (files/injection-template.yaml:188-189) rendered the annotation",
		},
		{
			name: "a template's own image is kept whatever ProxyConfig says", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			template: templateOf(nil, ownProxy(fips), nil),
			want:     injected("default", fips),
			follows:  "pkg/kube/inject/webhook.go:525-550 reapplyOverwrittenContainers runs after RunTemplate rendered .ProxyImage (inject.go:489)",
		},
		{
			name: "a root-namespace ProxyConfig applies mesh-wide, ahead of the mesh config", model: proxyConfigs,
			namespace: "shop", nsLabels: enabled,
			want:    injected("default", image124),
			follows: "pilot/pkg/model/proxy_config.go:45-48 EffectiveProxyConfig merges the root namespace's config over meshConfig.defaultConfig",
		},
		{
			name: "a namespace ProxyConfig beats the root namespace's", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			want:    injected("default", image124+"-debug"),
			follows: "pilot/pkg/model/proxy_config.go:50-53 EffectiveProxyConfig, namespace over global",
		},
		{
			name: "a workload ProxyConfig beats the namespace's", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"app": "cart", "version": "v2"}},
			want:     injected("default", image124+"-distroless"),
			follows:  "pilot/pkg/model/proxy_config.go:55,65 EffectiveProxyConfig and :101-114 mergedWorkloadConfig (matchLabels a subset of the pod's)",
		},
		{
			name: "a workload ProxyConfig beats the proxy.istio.io/config annotation", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			template: mesh.Template{
				Labels:      map[string]string{"app": "cart"},
				Annotations: map[string]string{"proxy.istio.io/config": "image:\n  imageType: debug\n"},
			},
			want:    injected("default", image124+"-distroless"),
			follows: "pilot/pkg/model/proxy_config.go:57-64 the annotation merges below the workload-matching ProxyConfig",
		},
		{
			name: "the proxy.istio.io/config annotation beats the namespace's ProxyConfig", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			template: mesh.Template{Annotations: map[string]string{"proxy.istio.io/config": "image:\n  imageType: default\n"}},
			want:     injected("default", image124),
			follows:  "pilot/pkg/model/proxy_config.go:57-65 EffectiveProxyConfig, workload level (annotation) over namespace",
		},
		{
			name: "the proxyImageType annotation beats every ProxyConfig", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			template: mesh.Template{
				Labels:      map[string]string{"app": "cart"},
				Annotations: map[string]string{"sidecar.istio.io/proxyImageType": "debug"},
			},
			want:    injected("default", image124+"-debug"),
			follows: "pkg/kube/inject/inject.go:360-362 proxyImageURL, the annotation after the ProxyConfig's image type",
		},
		{
			name: "a workload ProxyConfig in the root namespace selects only pods there", model: proxyConfigs,
			namespace: "shop", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"app": "cart"}},
			want:     injected("default", image124),
			follows:  "pilot/pkg/model/proxy_config.go:55 mergedWorkloadConfig(meta.Namespace, ...) looks in the pod's namespace only",
		},
		{
			name: "a ProxyConfig with an empty selector applies to nothing", model: proxyConfigs,
			namespace: "debugging", nsLabels: enabled,
			template: mesh.Template{Labels: map[string]string{"app": "web"}},
			want:     injected("default", image124+"-debug"),
			follows:  "pilot/pkg/model/proxy_config.go:91 (selector nil only) and :103 (matchLabels empty skipped)",
		},
		{
			name: "the oldest namespace-wide ProxyConfig decides, even without an image", model: proxyConfigs,
			namespace: "unset", nsLabels: enabled,
			want:    injected("default", image124),
			follows: "pilot/pkg/model/proxy_config.go:90-95 mergedNamespaceConfig returns the first match after GetProxyConfigs sorted by creation (:76)",
		},
		{
			name: "a ProxyConfig labelled for another revision is not read", model: canaryOnly,
			namespace: "shop", nsLabels: enabled,
			want:    injected("default", image124),
			follows: "pilot/pkg/config/kube/crdclient/client.go:399,444 inRevision, pkg/config/model.go:111 LabelsInRevision",
		},
		{
			name: "a ProxyConfig labelled for the injecting revision is read", model: canaryOnly,
			namespace: "shop", nsLabels: map[string]string{"istio.io/rev": "1-25-0"},
			want:    injected("1-25-0", image125+"-debug"),
			follows: "pkg/config/model.go:111-124 LabelsInRevision",
		},
		{
			name: "the root namespace is the mesh config's rootNamespace", model: otherRoot,
			namespace: "shop", nsLabels: enabled,
			want:    injected("default", image124+"-distroless"),
			follows: "pilot/pkg/model/proxy_config.go:73 rootNamespace from meshConfig; manifests/charts/istio-control/istio-discovery/templates/configmap.yaml:10",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.model.Decide(tt.namespace, tt.nsLabels, tt.template)
			assert.Equal(t, tt.want, got, "follows %s %s", istioAt, tt.follows)
		})
	}
}

// templateOf is the mesh's view of a pod template with these containers.
func templateOf(annotations map[string]string, containers, initContainers []corev1.Container) mesh.Template {
	return mesh.TemplateOf(&corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: containers, InitContainers: initContainers},
	})
}

func revisionLabelled(in meshtest.Install, rev string) meshtest.Install {
	for i := range in.ProxyConfigs {
		in.ProxyConfigs[i].Labels = map[string]string{"istio.io/rev": rev}
	}
	return in
}

func injected(rev, image string) mesh.Decision {
	return mesh.Decision{Inject: true, Revision: rev, Image: image, Matched: rev, Cause: mesh.CauseInjected}
}
