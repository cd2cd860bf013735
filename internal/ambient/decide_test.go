package ambient

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// The decision table: namespace shop moves to ambient mode on a cluster
// where ztunnel and istio-cni are ready. It has a Service cart (app=cart)
// with two pods, and waypoint shop/waypoint, Programmed. Each row changes
// one thing and names the guide's requirement it checks; every requirement
// has a row where it holds and one where it refuses.

const (
	shop = "shop"
	root = "istio-system"
)

type world struct {
	set    *objects.Set
	labels map[string]string
}

func newWorld() *world {
	w := &world{
		set: &objects.Set{
			Nodes:      nodes(2),
			DaemonSets: []*appsv1.DaemonSet{ztunnel(2, 2)},
			ConfigMaps: []corev1.ConfigMap{cni("kube-system", "true")},
			Services:   []corev1.Service{service("cart", map[string]string{"app": "cart"}, nil)},
			Gateways:   []objects.Gateway{waypoint("waypoint", metav1.ConditionTrue, nil)},
		},
		labels: map[string]string{LabelDataplaneMode: ModeAmbient},
	}
	for _, name := range []string{"cart-1", "cart-2"} {
		p := objects.Pod{Namespace: shop, Name: name, Labels: map[string]string{"app": "cart", "version": "v1"}, Phase: corev1.PodRunning}
		w.set.Pods = append(w.set.Pods, &p)
	}
	return w
}

// useWaypoint is the move with migrations[].waypoint set: the namespace
// is labelled istio.io/use-waypoint.
func (w *world) useWaypoint(name string) { w.labels[LabelUseWaypoint] = name }

func service(name string, selector, labels map[string]string) corev1.Service {
	return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: name, Labels: labels}, Spec: corev1.ServiceSpec{Selector: selector, ClusterIP: "10.0.0.10"}}
}

func waypoint(name string, status metav1.ConditionStatus, labels map[string]string) objects.Gateway {
	g := objects.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: name, Labels: labels}, Spec: objects.GatewaySpec{GatewayClassName: WaypointClass}}
	if status != "" {
		g.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}, {Type: "Programmed", Status: status}}
	}
	return g
}

func selectApp(app string) *objects.WorkloadSelector {
	return &objects.WorkloadSelector{MatchLabels: map[string]string{"app": app}}
}

func authz(ns, name string, spec objects.AuthorizationPolicySpec) objects.AuthorizationPolicy {
	return objects.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

var (
	getOnly = []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}}}}}}
	fromWeb = []objects.AuthorizationRule{{From: []objects.RuleFrom{{Source: objects.RuleSource{Principals: []string{"cluster.local/ns/web/sa/frontend"}}}}}}
	toSvc   = []objects.PolicyTargetReference{{Kind: "Service", Name: "cart"}}
	toWP    = []objects.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "waypoint"}}
)

func peer(ns, name string, sel *objects.WorkloadSelector, mode string, ports map[string]objects.MutualTLS) objects.PeerAuthentication {
	pa := objects.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: objects.PeerAuthenticationSpec{Selector: sel, PortLevelMtls: ports}}
	if mode != "" {
		pa.Spec.Mtls = &objects.MutualTLS{Mode: mode}
	}
	return pa
}

func attachedSpec(sel *objects.WorkloadSelector, targets []objects.PolicyTargetReference) objects.AttachedPolicySpec {
	return objects.AttachedPolicySpec{Selector: sel, TargetRefs: targets}
}

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func ptr(s string) *string { return &s }

func newView(set *objects.Set, mv Move) *view { return NewCluster(set).view(mv) }

// want is one expected finding: the object, the field, the step, a part of
// the reason, and whether the move carries it over.
type want struct {
	object  string
	field   string
	step    Step
	reason  string
	rewrite bool
}

func TestToAmbientDecisionTable(t *testing.T) {
	ap := func(w *world, a objects.AuthorizationPolicy) {
		w.set.AuthorizationPolicies = append(w.set.AuthorizationPolicies, a)
	}
	tests := []struct {
		requirement string
		change      func(*world)
		want        []want
	}{
		// Install ambient components.
		{"install: ztunnel Ready on every node, istio-cni with ambient (holds)", func(*world) {}, nil},
		{"install: ztunnel Ready on every node (refuses)", func(w *world) { w.set.DaemonSets = []*appsv1.DaemonSet{ztunnel(2, 1)} },
			[]want{{"DaemonSet istio-system/ztunnel", "status.numberReady", StepInstall, "ready on 1 of 2 nodes", false}}},
		{"install: istio-cni with AMBIENT_ENABLED (refuses)", func(w *world) { w.set.ConfigMaps = []corev1.ConfigMap{cni("kube-system", "false")} },
			[]want{{"ConfigMap kube-system/istio-cni-config", "data.AMBIENT_ENABLED", StepInstall, "runs without ambient", false}}},

		// What is not supported: PeerAuthentication mode DISABLE.
		{"PeerAuthentication STRICT in the namespace (holds)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(shop, "strict", nil, "STRICT", nil)}
		}, nil},
		{"PeerAuthentication DISABLE at namespace level (refuses)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(shop, "plain", nil, "DISABLE", nil)}
		}, []want{{"PeerAuthentication shop/plain", "spec.mtls.mode", StepNotSupported, "disables mTLS for every workload of the namespace", false}}},
		{"PeerAuthentication DISABLE at workload level (refuses)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(shop, "cart-plain", selectApp("cart"), "DISABLE", nil)}
		}, []want{{"PeerAuthentication shop/cart-plain", "spec.mtls.mode", StepNotSupported, "disables mTLS for the workloads it selects", false}}},
		{"PeerAuthentication PERMISSIVE on a port (holds)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(shop, "metrics", selectApp("cart"), "STRICT", map[string]objects.MutualTLS{"9090": {Mode: "PERMISSIVE"}})}
		}, nil},
		{"PeerAuthentication DISABLE at port level (refuses)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(shop, "metrics", selectApp("cart"), "STRICT", map[string]objects.MutualTLS{"9090": {Mode: "DISABLE"}})}
		}, []want{{"PeerAuthentication shop/metrics", "spec.portLevelMtls[9090].mode", StepNotSupported, "disables mTLS on port 9090", false}}},
		{"PeerAuthentication DISABLE mesh-wide in the root namespace (refuses)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(root, "default", nil, "DISABLE", nil)}
		}, []want{{"PeerAuthentication istio-system/default", "spec.mtls.mode", StepNotSupported, "every workload of the mesh", false}}},
		{"PeerAuthentication DISABLE with a selector in the root namespace, which Istio ignores, or in another namespace (holds)", func(w *world) {
			w.set.PeerAuthentications = []objects.PeerAuthentication{peer(root, "cart", selectApp("cart"), "DISABLE", nil), peer("web", "default", nil, "DISABLE", nil)}
		}, nil},

		// Migrate policies: AuthorizationPolicy with L7 rules or CUSTOM/AUDIT.
		{"L7 AuthorizationPolicy by selector, no waypoint for the namespace (refuses)", func(w *world) {
			ap(w, authz(shop, "get-only", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Rules: getOnly}))
		}, []want{{"AuthorizationPolicy shop/get-only", "spec.rules[0].to[0].operation.methods", StepAuthorization, "uses no waypoint after the move", false}}},
		{"L7 AuthorizationPolicy by selector while a Programmed waypoint exists that nothing uses (refuses)", func(w *world) {
			ap(w, authz(shop, "get-only", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Rules: getOnly}))
			w.set.Services = []corev1.Service{service("cart", map[string]string{"app": "cart"}, map[string]string{LabelUseWaypoint: "none"})}
		}, []want{{"AuthorizationPolicy shop/get-only", "spec.rules[0].to[0].operation.methods", StepAuthorization, "it would deny all traffic to those workloads", false}}},
		{"L7 AuthorizationPolicy by selector, the namespace uses the waypoint (carried over to targetRefs)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "get-only", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Rules: getOnly}))
		}, []want{{"AuthorizationPolicy shop/get-only", "spec.selector", StepAuthorization, "attaches it to Service cart on waypoint shop/waypoint", true}}},
		{"L7 AuthorizationPolicy attached to the whole namespace (refuses)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "paths", objects.AuthorizationPolicySpec{Rules: []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{NotPaths: []string{"/admin"}}}}}}}))
		}, []want{{"AuthorizationPolicy shop/paths", "spec.rules[0].to[0].operation.notPaths", StepAuthorization, "attached to every workload of the namespace", false}}},
		{"L7 AuthorizationPolicy mesh-wide in the root namespace (refuses)", func(w *world) {
			ap(w, authz(root, "jwt-everywhere", objects.AuthorizationPolicySpec{Rules: []objects.AuthorizationRule{{From: []objects.RuleFrom{{Source: objects.RuleSource{RequestPrincipals: []string{"*"}}}}}}}))
		}, []want{{"AuthorizationPolicy istio-system/jwt-everywhere", "spec.rules[0].from[0].source.requestPrincipals", StepAuthorization, "every workload of the mesh", false}}},
		{"L7 AuthorizationPolicy with a root-namespace selector no pod of the namespace matches (holds)", func(w *world) {
			ap(w, authz(root, "admin-headers", objects.AuthorizationPolicySpec{Selector: selectApp("admin"),
				Rules: []objects.AuthorizationRule{{When: []objects.RuleCondition{{Key: "request.headers[x-admin]"}}}}}))
		}, nil},
		{"AuthorizationPolicy with action CUSTOM by selector (refuses)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "ext-authz", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Action: "CUSTOM"}))
		}, []want{{"AuthorizationPolicy shop/ext-authz", "spec.action", StepAuthorization, "action CUSTOM is enforced by a waypoint only, so it would deny all traffic to those workloads. Attach it to a waypoint with targetRefs first (kedge does not carry it over: it carries over ALLOW and DENY policies only", false}}},
		{"AuthorizationPolicy with action CUSTOM attached to the waypoint the namespace uses (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "ext-authz", objects.AuthorizationPolicySpec{TargetRefs: toWP, Action: "CUSTOM"}))
		}, nil},
		{"AuthorizationPolicy with action AUDIT by selector (refuses)", func(w *world) {
			ap(w, authz(shop, "audit", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Action: "AUDIT"}))
		}, []want{{"AuthorizationPolicy shop/audit", "spec.action", StepAuthorization, "action AUDIT is enforced by a waypoint only", false}}},

		// Migrate policies: targetRefs must reach a waypoint in use.
		{"AuthorizationPolicy attached to a Service that uses the waypoint (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "svc", objects.AuthorizationPolicySpec{TargetRefs: toSvc, Rules: getOnly}))
		}, nil},
		{"AuthorizationPolicy attached to a Service that uses no waypoint (refuses)", func(w *world) {
			ap(w, authz(shop, "svc", objects.AuthorizationPolicySpec{TargetRefs: toSvc, Rules: getOnly}))
		}, []want{{"AuthorizationPolicy shop/svc", "spec.targetRefs[0]", StepAuthorization, "Service cart uses no waypoint after the move", false}}},
		{"AuthorizationPolicy attached to a waypoint the namespace uses (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "gw", objects.AuthorizationPolicySpec{TargetRefs: toWP, Rules: getOnly}))
		}, nil},
		{"AuthorizationPolicy attached to a Programmed waypoint nothing uses (refuses)", func(w *world) {
			ap(w, authz(shop, "gw", objects.AuthorizationPolicySpec{TargetRef: &toWP[0], Rules: getOnly}))
		}, []want{{"AuthorizationPolicy shop/gw", "spec.targetRefs[0]", StepAuthorization, "nothing uses waypoint shop/waypoint after the move", false}}},
		{"AuthorizationPolicy attached to a waypoint that is not Programmed (refuses)", func(w *world) {
			w.set.Gateways = []objects.Gateway{waypoint("waypoint", metav1.ConditionFalse, nil)}
			ap(w, authz(shop, "gw", objects.AuthorizationPolicySpec{TargetRefs: toWP, Rules: getOnly}))
		}, []want{{"AuthorizationPolicy shop/gw", "spec.targetRefs[0]", StepAuthorization, "waypoint shop/waypoint is not Programmed", false}}},

		// Prevent waypoint bypass: L4 rules on source identity behind a waypoint.
		{"L4 AuthorizationPolicy on source principals, no waypoint in the path (holds)", func(w *world) {
			ap(w, authz(shop, "from-web", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Rules: fromWeb}))
		}, nil},
		{"L4 AuthorizationPolicy on source principals behind the waypoint (carried over to targetRefs)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "from-web", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Rules: fromWeb}))
		}, []want{{"AuthorizationPolicy shop/from-web", "spec.selector", StepBypass, "ztunnel sees the waypoint's identity and address, not the client's, so the pull request attaches it to Service cart", true}}},
		{"L4 AuthorizationPolicy on source addresses behind the waypoint (refuses)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "from-office", objects.AuthorizationPolicySpec{Selector: selectApp("cart"),
				Rules: []objects.AuthorizationRule{{From: []objects.RuleFrom{{Source: objects.RuleSource{IPBlocks: []string{"10.1.0.0/16"}}}}}}}))
		}, []want{{"AuthorizationPolicy shop/from-office", "spec.rules[0].from[0].source.ipBlocks", StepBypass, "would no longer match the clients it was written for", false}}},
		{"the guide's bypass-prevention DENY behind the waypoint (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			ap(w, authz(shop, "deny-bypass", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Action: "DENY",
				Rules: []objects.AuthorizationRule{{From: []objects.RuleFrom{{Source: objects.RuleSource{NotPrincipals: []string{"cluster.local/ns/shop/sa/waypoint"}}}}}}}))
		}, nil},

		// Migrate policies: RequestAuthentication and WasmPlugin attach to a waypoint.
		{"RequestAuthentication by selector, the namespace uses the waypoint (carried over to targetRefs)", func(w *world) {
			w.useWaypoint("waypoint")
			w.set.RequestAuthentications = []objects.RequestAuthentication{{ObjectMeta: meta(shop, "jwt"), Spec: attachedSpec(selectApp("cart"), nil)}}
		}, []want{{"RequestAuthentication shop/jwt", "spec.selector", StepAttach, "attaches it to Service cart on waypoint shop/waypoint", true}}},
		{"RequestAuthentication attached to a Service that uses the waypoint (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			w.set.RequestAuthentications = []objects.RequestAuthentication{{ObjectMeta: meta(shop, "jwt"), Spec: attachedSpec(nil, toSvc)}}
		}, nil},
		{"RequestAuthentication by selector without a waypoint (refuses)", func(w *world) {
			w.set.RequestAuthentications = []objects.RequestAuthentication{{ObjectMeta: meta(shop, "jwt"), Spec: attachedSpec(selectApp("cart"), nil)}}
		}, []want{{"RequestAuthentication shop/jwt", "spec.selector", StepAttach, "validates JWTs in the sidecars", false}}},
		{"RequestAuthentication mesh-wide in the root namespace (refuses)", func(w *world) {
			w.set.RequestAuthentications = []objects.RequestAuthentication{{ObjectMeta: meta(root, "jwt"), Spec: attachedSpec(nil, nil)}}
		}, []want{{"RequestAuthentication istio-system/jwt", "spec.selector", StepAttach, "sidecars of every workload of the mesh", false}}},
		{"WasmPlugin attached to the waypoint the namespace uses (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			w.set.WasmPlugins = []objects.WasmPlugin{{ObjectMeta: meta(shop, "headers"), Spec: attachedSpec(nil, toWP)}}
		}, nil},
		{"WasmPlugin by selector (refuses)", func(w *world) {
			w.useWaypoint("waypoint")
			w.set.WasmPlugins = []objects.WasmPlugin{{ObjectMeta: meta(shop, "headers"), Spec: attachedSpec(selectApp("cart"), nil)}}
		}, []want{{"WasmPlugin shop/headers", "spec.selector", StepAttach, "kedge carries over AuthorizationPolicies and RequestAuthentications only", false}}},

		// Migrate policies: EnvoyFilter is not supported on waypoints.
		{"EnvoyFilter for gateways only, or attached with targetRefs (holds)", func(w *world) {
			w.set.EnvoyFilters = []objects.EnvoyFilter{
				{ObjectMeta: meta(shop, "ingress-lua"), Spec: objects.EnvoyFilterSpec{ConfigPatches: []objects.EnvoyConfigPatch{{Match: &objects.EnvoyPatchMatch{Context: "GATEWAY"}}}}},
				{ObjectMeta: meta(shop, "waypoint-lua"), Spec: objects.EnvoyFilterSpec{TargetRefs: toWP}},
			}
		}, nil},
		{"EnvoyFilter patching the namespace's sidecars (refuses)", func(w *world) {
			w.set.EnvoyFilters = []objects.EnvoyFilter{{ObjectMeta: meta(shop, "lua"), Spec: objects.EnvoyFilterSpec{
				WorkloadSelector: &objects.EnvoyFilterWorkloadSelector{Labels: map[string]string{"app": "cart"}},
				ConfigPatches:    []objects.EnvoyConfigPatch{{Match: &objects.EnvoyPatchMatch{Context: "SIDECAR_INBOUND"}}},
			}}}
		}, []want{{"EnvoyFilter shop/lua", "spec.workloadSelector", StepAttach, "EnvoyFilters are not supported on waypoints", false}}},
		{"EnvoyFilter patching every sidecar of the mesh (refuses)", func(w *world) {
			w.set.EnvoyFilters = []objects.EnvoyFilter{{ObjectMeta: meta(root, "stats"), Spec: objects.EnvoyFilterSpec{ConfigPatches: []objects.EnvoyConfigPatch{{ApplyTo: "HTTP_FILTER"}}}}}
		}, []want{{"EnvoyFilter istio-system/stats", "spec.workloadSelector", StepAttach, "sidecars of every workload of the mesh", false}}},

		// Migrate policies: VirtualService to HTTPRoute.
		{"VirtualService with an HTTPRoute on its Service, which uses the waypoint (holds)", func(w *world) {
			w.useWaypoint("waypoint")
			w.set.VirtualServices = []objects.VirtualService{{ObjectMeta: meta(shop, "cart"), Spec: objects.VirtualServiceSpec{Hosts: []string{"cart"}}}}
			w.set.HTTPRoutes = []objects.HTTPRoute{{ObjectMeta: meta(shop, "cart"), Spec: objects.HTTPRouteSpec{ParentRefs: []objects.ParentReference{{Group: ptr(""), Kind: ptr("Service"), Name: "cart"}}}}}
		}, nil},
		{"VirtualService without an equivalent HTTPRoute (refuses)", func(w *world) {
			w.useWaypoint("waypoint")
			w.set.VirtualServices = []objects.VirtualService{{ObjectMeta: meta("web", "cart-canary"), Spec: objects.VirtualServiceSpec{Hosts: []string{"cart.shop.svc.cluster.local"}}}}
			w.set.HTTPRoutes = []objects.HTTPRoute{{ObjectMeta: meta(shop, "ingress"), Spec: objects.HTTPRouteSpec{ParentRefs: []objects.ParentReference{{Name: "cart"}}}}}
		}, []want{{"VirtualService web/cart-canary", "spec.hosts[0]", StepVirtualService, "no HTTPRoute has that Service as its parent", false}}},
		{"VirtualService with an HTTPRoute whose Service uses no waypoint (refuses)", func(w *world) {
			w.set.VirtualServices = []objects.VirtualService{{ObjectMeta: meta(shop, "cart"), Spec: objects.VirtualServiceSpec{Hosts: []string{"cart.shop"}, Gateways: []string{"mesh"}}}}
			w.set.HTTPRoutes = []objects.HTTPRoute{{ObjectMeta: meta(shop, "cart"), Spec: objects.HTTPRouteSpec{ParentRefs: []objects.ParentReference{{Group: ptr(""), Kind: ptr("Service"), Name: "cart"}}}}}
		}, []want{{"VirtualService shop/cart", "spec.hosts[0]", StepVirtualService, "only a waypoint applies HTTPRoutes", false}}},
		{"VirtualService routing a host that is no Service (refuses)", func(w *world) {
			w.set.VirtualServices = []objects.VirtualService{{ObjectMeta: meta(shop, "payments-api"), Spec: objects.VirtualServiceSpec{Hosts: []string{"api.payments.example.com"}}}}
		}, []want{{"VirtualService shop/payments-api", "spec.hosts[0]", StepVirtualService, "names no Service of the cluster", false}}},
		{"VirtualService bound to ingress gateways only (holds)", func(w *world) {
			w.set.VirtualServices = []objects.VirtualService{{ObjectMeta: meta(shop, "public"), Spec: objects.VirtualServiceSpec{Hosts: []string{"shop.example.com"}, Gateways: []string{"istio-system/public"}}}}
		}, nil},

		// Enable ambient mode, step 1: the waypoints used are ready.
		{"the waypoint the namespace will use is Programmed (holds)", func(w *world) { w.useWaypoint("waypoint") }, nil},
		{"the waypoint the namespace will use does not exist (refuses)", func(w *world) { w.useWaypoint("waypoint-2") },
			[]want{{"Namespace shop", "metadata.labels[istio.io/use-waypoint]", StepWaypoints, "waypoint shop/waypoint-2 does not exist", false}}},
		{"a Service's own waypoint is Programmed and handles all traffic (holds)", func(w *world) {
			w.set.Gateways = append(w.set.Gateways, waypoint("cart-waypoint", metav1.ConditionTrue, map[string]string{LabelWaypointFor: "all"}))
			w.set.Services = []corev1.Service{service("cart", map[string]string{"app": "cart"}, map[string]string{LabelUseWaypoint: "cart-waypoint"})}
		}, nil},
		{"a Service's waypoint handles workload traffic only (refuses)", func(w *world) {
			w.set.Gateways = append(w.set.Gateways, waypoint("pods", metav1.ConditionTrue, map[string]string{LabelWaypointFor: "workload"}))
			w.set.Services = []corev1.Service{service("cart", map[string]string{"app": "cart"}, map[string]string{LabelUseWaypoint: "pods"})}
		}, []want{{"Service shop/cart", "metadata.labels[istio.io/use-waypoint]", StepWaypoints, "handles workload traffic (istio.io/waypoint-for), not service traffic", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.requirement, func(t *testing.T) {
			w := newWorld()
			tt.change(w)
			r := ToAmbient(w.set, Move{Namespace: shop, Labels: w.labels, RootNamespace: root})
			var got []want
			for _, f := range append(append([]Finding{}, r.Refusals...), r.Rewrites...) {
				got = append(got, want{f.Object.String(), f.Field, f.Step, f.Reason, f.Rewrite != nil})
			}
			require.Len(t, got, len(tt.want), "%v", got)
			for i := range tt.want {
				assert.Equal(t, tt.want[i].object, got[i].object)
				assert.Equal(t, tt.want[i].field, got[i].field)
				assert.Equal(t, tt.want[i].step, got[i].step)
				assert.Contains(t, got[i].reason, tt.want[i].reason)
				assert.Equal(t, tt.want[i].rewrite, got[i].rewrite)
			}
			assert.Equal(t, len(r.Refusals) == 0, r.Ready())
		})
	}
}

// A rewrite keeps the policy's meaning only when the Services it names
// are exactly those that reach its pods and a waypoint handles them.
func TestRewriteToTargetRefs(t *testing.T) {
	tests := []struct {
		name   string
		change func(*world)
		rules  []objects.AuthorizationRule
		action string
		want   *Rewrite
		why    string
	}{
		{"every Service selecting exactly the pods", func(w *world) {
			w.set.Services = append(w.set.Services, service("cart-admin", map[string]string{"app": "cart"}, nil))
		}, getOnly, "DENY", &Rewrite{Selector: map[string]string{"app": "cart"}, TargetRefs: []objects.PolicyTargetReference{{Kind: "Service", Name: "cart"}, {Kind: "Service", Name: "cart-admin"}}, Waypoints: []string{"shop/waypoint"}}, ""},
		{"a Service's own waypoint", func(w *world) {
			w.labels = map[string]string{LabelDataplaneMode: ModeAmbient}
			w.set.Gateways = append(w.set.Gateways, waypoint("cart-waypoint", metav1.ConditionTrue, map[string]string{LabelWaypointFor: "all"}))
			w.set.Services = []corev1.Service{service("cart", map[string]string{"app": "cart"}, map[string]string{LabelUseWaypoint: "cart-waypoint"})}
		}, getOnly, "", &Rewrite{Selector: map[string]string{"app": "cart"}, TargetRefs: []objects.PolicyTargetReference{{Kind: "Service", Name: "cart"}}, Waypoints: []string{"shop/cart-waypoint"}}, ""},
		{"no Service selects exactly the pods", func(w *world) {
			w.set.Services = []corev1.Service{service("cart", map[string]string{"app": "cart", "version": "v1"}, nil)}
		}, getOnly, "", nil, "no Service of the namespace selects exactly the workloads of spec.selector (app=cart)"},
		{"a broader Service reaches the pods", func(w *world) {
			w.set.Services = append(w.set.Services, service("all-v1", map[string]string{"version": "v1"}, nil))
		}, getOnly, "", nil, "Service all-v1 also reaches workloads it selects (selector version=v1)"},
		{"a headless Service", func(w *world) {
			s := service("cart", map[string]string{"app": "cart"}, nil)
			s.Spec.ClusterIP = corev1.ClusterIPNone
			w.set.Services = []corev1.Service{s}
		}, getOnly, "", nil, "Service cart is headless"},
		{"rules on ports", func(*world) {}, []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}, Ports: []string{"8080"}}}}}},
			"", nil, "it does not carry spec.rules[0].to[0].operation.ports to a waypoint"},
		{"a Service that opts out of the waypoint", func(w *world) {
			w.set.Services = []corev1.Service{service("cart", map[string]string{"app": "cart"}, map[string]string{LabelUseWaypoint: "none"})}
		}, getOnly, "", nil, "Service cart uses no waypoint after the move"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			w.useWaypoint("waypoint")
			tt.change(w)
			v := newView(w.set, Move{Namespace: shop, Labels: w.labels, RootNamespace: root})
			got, why := v.rewriteToTargetRefs(map[string]string{"app": "cart"}, tt.action, tt.rules)
			assert.Equal(t, tt.want, got)
			assert.True(t, strings.HasPrefix(why, tt.why), why)
		})
	}
}

func TestToSidecarDecisionTable(t *testing.T) {
	tests := []struct {
		requirement string
		set         *objects.Set
		want        []string
	}{
		{"policies attached by selector come back with the sidecars (holds)", &objects.Set{
			AuthorizationPolicies: []objects.AuthorizationPolicy{authz(shop, "get-only", objects.AuthorizationPolicySpec{Selector: selectApp("cart"), Rules: getOnly})},
		}, nil},
		{"policies attached with targetRefs stop being enforced (refuses)", &objects.Set{
			AuthorizationPolicies:  []objects.AuthorizationPolicy{authz(shop, "get-only", objects.AuthorizationPolicySpec{TargetRefs: toSvc, Rules: getOnly}), authz("web", "other", objects.AuthorizationPolicySpec{TargetRefs: toSvc})},
			RequestAuthentications: []objects.RequestAuthentication{{ObjectMeta: meta(shop, "jwt"), Spec: attachedSpec(nil, toWP)}},
		}, []string{"AuthorizationPolicy shop/get-only", "RequestAuthentication shop/jwt"}},
	}
	for _, tt := range tests {
		t.Run(tt.requirement, func(t *testing.T) {
			r := ToSidecar(tt.set, Move{Namespace: shop, RootNamespace: root})
			var got []string
			for _, f := range r.Refusals {
				got = append(got, f.Object.String())
				assert.Equal(t, StepRollback, f.Step)
				assert.Contains(t, f.Reason, "restore its selector-based form in Git first")
			}
			assert.Equal(t, tt.want, got)
			assert.Empty(t, r.Rewrites)
		})
	}
}

func TestFindingNamesObjectFileFieldAndStep(t *testing.T) {
	f := Finding{Object: Ref{Kind: "AuthorizationPolicy", Namespace: shop, Name: "get-only"}, Path: "apps/shop/policies.yaml",
		Field: "spec.rules[0].to[0].operation.methods", Reason: "why", Step: StepAuthorization}
	assert.Equal(t, "AuthorizationPolicy shop/get-only (apps/shop/policies.yaml) spec.rules[0].to[0].operation.methods: why "+
		"[Migrate policies: AuthorizationPolicy with L7 rules: https://istio.io/latest/docs/ambient/migrate/migrate-policies/#migrate-authorizationpolicy-for-l7-rules]", f.String())
	assert.Equal(t, f.String()+"; DaemonSet ztunnel: none [Install ambient components: https://istio.io/latest/docs/ambient/migrate/install-ambient-components/]",
		Describe([]Finding{f, {Object: Ref{Kind: "DaemonSet", Name: "ztunnel"}, Reason: "none", Step: StepInstall}}))
}
