package controlplane_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

// ambientObjects are the objects Istio's sidecar-to-ambient guide names, as
// their authors write them, with fields kedge does not read.
const ambientObjects = `
- apiVersion: security.istio.io/v1
  kind: AuthorizationPolicy
  metadata: {name: get-only, namespace: shop}
  spec:
    selector: {matchLabels: {app: cart}}
    action: ALLOW
    rules:
    - from: [{source: {principals: ["cluster.local/ns/web/sa/frontend"], ipBlocks: ["10.0.0.0/8"]}}]
      to: [{operation: {methods: [GET], ports: ["8080"]}}]
      when: [{key: "request.headers[x-tenant]", values: [acme]}]
- apiVersion: security.istio.io/v1
  kind: AuthorizationPolicy
  metadata: {name: ext-authz, namespace: shop}
  spec:
    targetRefs: [{kind: Service, group: "", name: cart}]
    action: CUSTOM
    provider: {name: opa}
    rules: [{to: [{operation: {paths: ["/admin/*"]}}]}]
- apiVersion: security.istio.io/v1
  kind: PeerAuthentication
  metadata: {name: legacy-port, namespace: shop}
  spec:
    selector: {matchLabels: {app: cart}}
    mtls: {mode: STRICT}
    portLevelMtls: {"9090": {mode: DISABLE}}
- apiVersion: security.istio.io/v1
  kind: RequestAuthentication
  metadata: {name: jwt, namespace: shop}
  spec:
    targetRef: {kind: Gateway, group: gateway.networking.k8s.io, name: waypoint}
    jwtRules: [{issuer: "https://issuer.example.com"}]
- apiVersion: networking.istio.io/v1alpha3
  kind: EnvoyFilter
  metadata: {name: lua, namespace: shop}
  spec:
    workloadSelector: {labels: {app: cart}}
    configPatches:
    - applyTo: HTTP_FILTER
      match: {context: SIDECAR_INBOUND, listener: {portNumber: 8080}}
      patch: {operation: INSERT_BEFORE, value: {name: envoy.lua}}
- apiVersion: extensions.istio.io/v1alpha1
  kind: WasmPlugin
  metadata: {name: headers, namespace: shop}
  spec:
    selector: {matchLabels: {app: cart}}
    url: oci://registry.example.com/headers:1
- apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata: {name: cart, namespace: shop}
  spec:
    hosts: [cart]
    http: [{route: [{destination: {host: cart, subset: v1}}]}]
- apiVersion: gateway.networking.k8s.io/v1
  kind: HTTPRoute
  metadata: {name: cart, namespace: shop}
  spec:
    parentRefs: [{group: "", kind: Service, name: cart, port: 8080}, {name: ingress, namespace: gateways}]
    rules: [{backendRefs: [{name: cart-v1, port: 8080}]}]
- apiVersion: gateway.networking.k8s.io/v1
  kind: Gateway
  metadata: {name: waypoint, namespace: shop, labels: {istio.io/waypoint-for: service}}
  spec:
    gatewayClassName: istio-waypoint
    listeners: [{name: mesh, port: 15008, protocol: HBONE}]
`

var ambientResources = map[string]string{
	"AuthorizationPolicy": "authorizationpolicies", "PeerAuthentication": "peerauthentications",
	"RequestAuthentication": "requestauthentications", "EnvoyFilter": "envoyfilters", "WasmPlugin": "wasmplugins",
	"VirtualService": "virtualservices", "HTTPRoute": "httproutes", "Gateway": "gateways",
}

func createAmbientObjects(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	var items []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(ambientObjects), &items))
	for _, item := range items {
		u := &unstructured.Unstructured{Object: item}
		gvk := u.GroupVersionKind()
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: ambientResources[gvk.Kind]}
		_, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(t.Context(), u, metav1.CreateOptions{})
		require.NoError(t, err, "%s %s", gvk.Kind, u.GetName())
	}
}

// Every object of Istio's migration guide is read from the real API server
// into the fields the readiness check decides on, the Services with their
// waypoint labels, and istio-cni's ConfigMap where the chart put it: in
// kube-system, without the istio.io/rev label older charts leave off.
func TestLiveReadsWhatTheAmbientMigrationChecks(t *testing.T) {
	cfg := controlplane.ControlPlane(t, "testdata/crds")
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := t.Context()
	for _, ns := range []string{"shop", "istio-system", "team-cni"} {
		_, err := client.CoreV1().Namespaces().Create(ctx, namespace(ns, nil), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	createAmbientObjects(t, dyn)
	_, err := client.CoreV1().Services("shop").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "cart", Labels: map[string]string{"istio.io/use-waypoint": "waypoint"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "cart"}, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().ConfigMaps("kube-system").Create(ctx,
		configMap("kube-system", "istio-cni-config", map[string]string{"app": "istio-cni"}, map[string]string{"AMBIENT_ENABLED": "true", "CHAINED_CNI_PLUGIN": "true"}), metav1.CreateOptions{})
	require.NoError(t, err)
	// A ConfigMap that is neither Istio's nor istio-cni's stays out.
	_, err = client.CoreV1().ConfigMaps("team-cni").Create(ctx, configMap("team-cni", "settings", nil, map[string]string{"a": "b"}), metav1.CreateOptions{})
	require.NoError(t, err)

	live := startLive(t, cfg, cluster.LiveOptions{})
	set := live.Set()

	require.Len(t, set.AuthorizationPolicies, 2)
	ext, get := set.AuthorizationPolicies[0], set.AuthorizationPolicies[1]
	assert.Equal(t, objects.AuthorizationPolicySpec{
		TargetRefs: []objects.PolicyTargetReference{{Kind: "Service", Name: "cart"}},
		Action:     "CUSTOM",
		Rules:      []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{Paths: []string{"/admin/*"}}}}}},
	}, ext.Spec)
	assert.Equal(t, objects.AuthorizationPolicySpec{
		Selector: &objects.WorkloadSelector{MatchLabels: map[string]string{"app": "cart"}},
		Action:   "ALLOW",
		Rules: []objects.AuthorizationRule{{
			From: []objects.RuleFrom{{Source: objects.RuleSource{Principals: []string{"cluster.local/ns/web/sa/frontend"}, IPBlocks: []string{"10.0.0.0/8"}}}},
			To:   []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}, Ports: []string{"8080"}}}},
			When: []objects.RuleCondition{{Key: "request.headers[x-tenant]", Values: []string{"acme"}}},
		}},
	}, get.Spec)

	require.Len(t, set.PeerAuthentications, 1)
	assert.Equal(t, objects.PeerAuthenticationSpec{
		Selector:      &objects.WorkloadSelector{MatchLabels: map[string]string{"app": "cart"}},
		Mtls:          &objects.MutualTLS{Mode: "STRICT"},
		PortLevelMtls: map[string]objects.MutualTLS{"9090": {Mode: "DISABLE"}},
	}, set.PeerAuthentications[0].Spec)
	require.Len(t, set.RequestAuthentications, 1)
	assert.Equal(t, []objects.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "waypoint"}}, set.RequestAuthentications[0].Spec.Targets())
	require.Len(t, set.EnvoyFilters, 1)
	assert.Equal(t, objects.EnvoyFilterSpec{
		WorkloadSelector: &objects.EnvoyFilterWorkloadSelector{Labels: map[string]string{"app": "cart"}},
		ConfigPatches:    []objects.EnvoyConfigPatch{{ApplyTo: "HTTP_FILTER", Match: &objects.EnvoyPatchMatch{Context: "SIDECAR_INBOUND"}}},
	}, set.EnvoyFilters[0].Spec)
	require.Len(t, set.WasmPlugins, 1)
	assert.Equal(t, &objects.WorkloadSelector{MatchLabels: map[string]string{"app": "cart"}}, set.WasmPlugins[0].Spec.Selector)
	require.Len(t, set.VirtualServices, 1)
	assert.Equal(t, objects.VirtualServiceSpec{Hosts: []string{"cart"}}, set.VirtualServices[0].Spec)
	require.Len(t, set.HTTPRoutes, 1)
	core, service, gateway := "", "Service", "Gateway"
	apiGroup, gateways := "gateway.networking.k8s.io", "gateways"
	assert.Equal(t, []objects.ParentReference{
		{Group: &core, Kind: &service, Name: "cart"},
		{Group: &apiGroup, Kind: &gateway, Name: "ingress", Namespace: &gateways},
	}, set.HTTPRoutes[0].Spec.ParentRefs, "the API server defaults group and kind")
	require.Len(t, set.Gateways, 1)
	assert.Equal(t, "service", set.Gateways[0].Labels["istio.io/waypoint-for"])

	require.Len(t, set.Services, 2, "shop/cart and default/kubernetes")
	cart := set.Services[1]
	assert.Equal(t, "shop/cart", cart.Namespace+"/"+cart.Name)
	assert.Equal(t, "waypoint", cart.Labels["istio.io/use-waypoint"])
	assert.Equal(t, corev1.ServiceSpec{Selector: map[string]string{"app": "cart"}, ClusterIP: cart.Spec.ClusterIP, Type: corev1.ServiceTypeClusterIP},
		cart.Spec, "only the selector, type and cluster IP are kept")
	assert.NotEmpty(t, cart.Spec.ClusterIP)

	var cni []corev1.ConfigMap
	for _, cm := range set.ConfigMaps {
		assert.NotEqual(t, "team-cni", cm.Namespace, "a ConfigMap that is not Istio's")
		if cm.Name == "istio-cni-config" {
			cni = append(cni, cm)
		}
	}
	require.Len(t, cni, 1, "istio-cni-config in kube-system, without istio.io/rev")
	assert.Equal(t, "true", cni[0].Data["AMBIENT_ENABLED"])

	// Listing the namespaces reads the same ConfigMap there; a list that
	// leaves kube-system out does not find it.
	listed := startLive(t, cfg, cluster.LiveOptions{IstioNamespaces: []string{"istio-system", "kube-system"}})
	assert.Equal(t, cni, configMapsNamed(listed.Set(), "istio-cni-config"))
	only := startLive(t, cfg, cluster.LiveOptions{IstioNamespaces: []string{"istio-system"}})
	assert.Empty(t, configMapsNamed(only.Set(), "istio-cni-config"))

	// A labelled istio-cni-config is in both cluster-wide caches, and in
	// the Set once.
	labelled := configMap("istio-system", "istio-cni-config", map[string]string{"istio.io/rev": "default"}, map[string]string{"AMBIENT_ENABLED": "false"})
	_, err = client.CoreV1().ConfigMaps("istio-system").Create(ctx, labelled, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(configMapsNamed(live.Set(), "istio-cni-config")) == 2 }, 10*time.Second, 20*time.Millisecond)
	got := configMapsNamed(live.Set(), "istio-cni-config")
	assert.Equal(t, []string{"istio-system", "kube-system"}, []string{got[0].Namespace, got[1].Namespace})

	// The live source asks for every kind it reads.
	perms, err := live.Permissions()
	require.NoError(t, err)
	var listedKinds []string
	for _, p := range perms {
		if p.Verb == "list" {
			listedKinds = append(listedKinds, p.Resource)
		}
	}
	for _, r := range []string{"services", "authorizationpolicies", "peerauthentications", "requestauthentications", "envoyfilters", "wasmplugins", "virtualservices", "httproutes", "gateways"} {
		assert.Contains(t, listedKinds, r)
	}

	// A policy or a waypoint that changes can let a move go ahead: each is
	// a mesh change; an ingress Gateway is not.
	changes := &reasons{}
	live.OnMeshChange(changes.add)
	policies := dyn.Resource(schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}).Namespace("shop")
	_, err = policies.Patch(ctx, "get-only", types.MergePatchType,
		[]byte(`{"spec":{"selector":null,"targetRefs":[{"kind":"Gateway","group":"gateway.networking.k8s.io","name":"waypoint"}]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return changes.count() > 0 }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"AuthorizationPolicy shop/get-only changed"}, changes.take())
	gatewaysOf := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"})
	ingress := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "ingress", "namespace": "istio-system"},
		"spec":     map[string]any{"gatewayClassName": "istio", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}},
	}}
	_, err = gatewaysOf.Namespace("istio-system").Create(ctx, ingress, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(live.Set().Gateways) == 2 }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, gatewaysOf.Namespace("shop").Delete(ctx, "waypoint", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return changes.count() > 0 }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"Gateway shop/waypoint deleted"}, changes.take(), "the ingress Gateway is no mesh change")

	dir := t.TempDir()
	set = live.Set()
	require.NoError(t, snapshot.Write(set, dir))
	read, err := snapshot.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, set, read, "a snapshot holds what the live source read")
}

func configMapsNamed(set *objects.Set, name string) []corev1.ConfigMap {
	var out []corev1.ConfigMap
	for _, cm := range set.ConfigMaps {
		if cm.Name == name {
			out = append(out, cm)
		}
	}
	return out
}
