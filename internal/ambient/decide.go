package ambient

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// Move is one namespace's move as the decision reads it.
type Move struct {
	Namespace string
	// Labels are the namespace's labels once it has moved: for a move to
	// ambient mode with istio.io/dataplane-mode (and istio.io/use-waypoint
	// when the policy names a waypoint).
	Labels map[string]string
	// RootNamespace is the mesh's root namespace (meshConfig.rootNamespace),
	// whose policies without a selector apply to every namespace.
	RootNamespace string
}

// Cluster is a cluster's objects read once for deciding many namespaces:
// pods, Services, waypoints and the objects the guide names, by namespace
// (a VirtualService also under each namespace whose Service it routes), in
// namespace/name order, so that findings come out in the same order
// whatever order the source listed them in.
type Cluster struct {
	set                    *objects.Set
	pods                   map[string][]*objects.Pod
	services               map[string][]*corev1.Service
	gateways               map[waypointRef]*objects.Gateway
	findings               []Finding
	peerAuthentications    map[string][]*objects.PeerAuthentication
	authorizationPolicies  map[string][]*objects.AuthorizationPolicy
	requestAuthentications map[string][]*objects.RequestAuthentication
	wasmPlugins            map[string][]*objects.WasmPlugin
	envoyFilters           map[string][]*objects.EnvoyFilter
	virtualServices        map[string][]*objects.VirtualService
	httpRoutes             []*objects.HTTPRoute
}

// NewCluster indexes set; set is not changed.
func NewCluster(set *objects.Set) *Cluster {
	c := &Cluster{
		set: set, pods: map[string][]*objects.Pod{}, services: map[string][]*corev1.Service{}, gateways: map[waypointRef]*objects.Gateway{},
		findings:               ClusterFindings(set),
		peerAuthentications:    byNamespace(sorted(set.PeerAuthentications)),
		authorizationPolicies:  byNamespace(sorted(set.AuthorizationPolicies)),
		requestAuthentications: byNamespace(sorted(set.RequestAuthentications)),
		wasmPlugins:            byNamespace(sorted(set.WasmPlugins)),
		envoyFilters:           byNamespace(sorted(set.EnvoyFilters)),
		virtualServices:        map[string][]*objects.VirtualService{},
		httpRoutes:             sorted(set.HTTPRoutes),
	}
	for _, p := range set.Pods {
		if p.Live() {
			c.pods[p.Namespace] = append(c.pods[p.Namespace], p)
		}
	}
	for i := range set.Services {
		s := &set.Services[i]
		c.services[s.Namespace] = append(c.services[s.Namespace], s)
	}
	for i := range set.Gateways {
		g := &set.Gateways[i]
		c.gateways[waypointRef{namespace: g.Namespace, name: g.Name}] = g
	}
	for _, vs := range sorted(set.VirtualServices) {
		seen := map[string]bool{vs.Namespace: true}
		c.virtualServices[vs.Namespace] = append(c.virtualServices[vs.Namespace], vs)
		for _, host := range vs.Spec.Hosts {
			if parts := strings.Split(host, "."); len(parts) > 1 && !seen[parts[1]] {
				seen[parts[1]] = true
				c.virtualServices[parts[1]] = append(c.virtualServices[parts[1]], vs)
			}
		}
	}
	return c
}

// byNamespace groups objects already in namespace/name order.
func byNamespace[P namedObject](items []P) map[string][]P {
	out := map[string][]P{}
	for _, o := range items {
		out[o.GetNamespace()] = append(out[o.GetNamespace()], o)
	}
	return out
}

// concerning are the objects of the namespace and of the root namespace,
// in namespace/name order: the only ones that can apply to it.
func concerning[P namedObject](by map[string][]P, v *view) []P {
	if v.root == "" || v.root == v.namespace {
		return by[v.namespace]
	}
	out := append(slices.Clone(by[v.namespace]), by[v.root]...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// ToAmbient is NewCluster(set).ToAmbient(mv).
func ToAmbient(set *objects.Set, mv Move) Readiness { return NewCluster(set).ToAmbient(mv) }

// ToSidecar is NewCluster(set).ToSidecar(mv).
func ToSidecar(set *objects.Set, mv Move) Readiness { return NewCluster(set).ToSidecar(mv) }

// ToAmbient decides whether the namespace may leave its sidecars now: the
// guide's rows in its order (see the package documentation), each
// refusing the move or, for a policy kedge can carry over, rewriting it in
// the same pull request.
func (c *Cluster) ToAmbient(mv Move) Readiness {
	v := c.view(mv)
	var r Readiness
	r.Refusals = append(r.Refusals, c.findings...)
	r.Refusals = append(r.Refusals, v.waypointLabels()...)
	for _, pa := range concerning(c.peerAuthentications, v) {
		r.Refusals = append(r.Refusals, v.peerAuthentication(pa)...)
	}
	for _, ap := range concerning(c.authorizationPolicies, v) {
		r.add(v.authorizationPolicy(ap))
	}
	for _, ra := range concerning(c.requestAuthentications, v) {
		r.add(v.attachedPolicy("RequestAuthentication", &ra.ObjectMeta, ra.Spec, true))
	}
	for _, wp := range concerning(c.wasmPlugins, v) {
		r.add(v.attachedPolicy("WasmPlugin", &wp.ObjectMeta, wp.Spec, false))
	}
	for _, ef := range concerning(c.envoyFilters, v) {
		r.Refusals = append(r.Refusals, v.envoyFilter(ef)...)
	}
	for _, vs := range c.virtualServices[v.namespace] {
		r.Refusals = append(r.Refusals, v.virtualService(vs)...)
	}
	return r
}

// ToSidecar decides whether a namespace in ambient mode may go back to its
// sidecars (the guide's rollback): sidecars do not enforce what is attached
// to a waypoint with targetRefs, so every such policy of the namespace must
// first go back to a selector in Git.
func (c *Cluster) ToSidecar(mv Move) Readiness {
	var r Readiness
	refuse := func(kind string, meta namedObject, targets []objects.PolicyTargetReference) {
		if meta.GetNamespace() != mv.Namespace || len(targets) == 0 {
			return
		}
		r.Refusals = append(r.Refusals, Finding{
			Object: Ref{Kind: kind, Namespace: meta.GetNamespace(), Name: meta.GetName()}, Field: "spec.targetRefs", Step: StepRollback,
			Reason: "sidecars do not apply a " + kind + " attached with targetRefs, so it would stop being enforced once the namespace leaves ambient mode; " +
				"restore its selector-based form in Git first",
		})
	}
	for _, ap := range c.authorizationPolicies[mv.Namespace] {
		refuse("AuthorizationPolicy", ap, ap.Spec.Targets())
	}
	for _, ra := range c.requestAuthentications[mv.Namespace] {
		refuse("RequestAuthentication", ra, ra.Spec.Targets())
	}
	for _, wp := range c.wasmPlugins[mv.Namespace] {
		refuse("WasmPlugin", wp, wp.Spec.Targets())
	}
	for _, ef := range c.envoyFilters[mv.Namespace] {
		refuse("EnvoyFilter", ef, ef.Spec.TargetRefs)
	}
	return r
}

// add files a finding as a refusal, or as a rewrite the move carries.
func (r *Readiness) add(fs []Finding) {
	for _, f := range fs {
		if f.Rewrite != nil {
			r.Rewrites = append(r.Rewrites, f)
		} else {
			r.Refusals = append(r.Refusals, f)
		}
	}
}

type namedObject interface {
	GetNamespace() string
	GetName() string
}

// sorted points at each object, by namespace and name: findings come out
// in the same order whatever order the source listed them in.
func sorted[T any, P interface {
	*T
	namedObject
}](items []T) []P {
	out := make([]P, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// scope is where a policy without targetRefs applies, as the namespace
// moving sees it.
type scope struct {
	match map[string]string
	// whole: every pod of the namespace (no selector, in the namespace or
	// in the root namespace).
	whole bool
	// meshWide: written in the root namespace.
	meshWide bool
}

func (s scope) String() string {
	switch {
	case s.meshWide && s.whole:
		return "every workload of the mesh"
	case s.meshWide:
		return "the workloads of every namespace it selects, this namespace's among them"
	case s.whole:
		return "every workload of the namespace"
	}
	return "the workloads it selects"
}

// scopeOf is where an object of namespace ns with the given selector
// applies; false when it does not reach the namespace. Root-namespace
// objects with a selector reach it only when a pod of it matches now.
func (v *view) scopeOf(ns string, match map[string]string) (scope, bool) {
	s := scope{match: match, whole: len(match) == 0}
	switch {
	case ns == v.namespace:
		return s, true
	case ns == v.root && v.root != "":
		s.meshWide = true
		return s, s.whole || len(v.selectedPods(match)) > 0
	}
	return s, false
}

func matchLabels(sel *objects.WorkloadSelector) map[string]string {
	if sel == nil {
		return nil
	}
	return sel.MatchLabels
}

// waypointLabels are the waypoints the namespace and its Services will
// use, each of which must carry service traffic before the namespace is
// labelled (the guide's step 1 activates waypoints first).
func (v *view) waypointLabels() []Finding {
	var out []Finding
	field := "metadata.labels[" + LabelUseWaypoint + "]"
	if w := v.namespaceWaypoint(); !w.none() {
		if why := v.waypointProblem(w); why != "" {
			out = append(out, Finding{Object: Ref{Kind: "Namespace", Name: v.namespace}, Field: field, Step: StepWaypoints,
				Reason: why + ": the namespace's traffic would be sent to a waypoint that cannot take it"})
		}
	}
	for _, s := range v.services {
		if w, set := useWaypoint(s.Labels, s.Namespace); set && !w.none() {
			if why := v.waypointProblem(w); why != "" {
				out = append(out, Finding{Object: Ref{Kind: "Service", Namespace: s.Namespace, Name: s.Name}, Field: field, Step: StepWaypoints,
					Reason: why + ": the Service's traffic would be sent to a waypoint that cannot take it once its pods are in ambient mode"})
			}
		}
	}
	return out
}

func (v *view) peerAuthentication(pa *objects.PeerAuthentication) []Finding {
	if pa.Namespace == v.root && pa.Namespace != v.namespace && pa.Spec.Selector != nil {
		// Istio ignores a root-namespace PeerAuthentication with a selector.
		return nil
	}
	sc, ok := v.scopeOf(pa.Namespace, matchLabels(pa.Spec.Selector))
	if !ok {
		return nil
	}
	ref := Ref{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}
	const why = "mode DISABLE is not supported in ambient mode, where ztunnel always uses mTLS, and is a hard blocker; remove the policy or change its mode first"
	var out []Finding
	if pa.Spec.Mtls != nil && pa.Spec.Mtls.Mode == "DISABLE" {
		out = append(out, Finding{Object: ref, Field: "spec.mtls.mode", Step: StepNotSupported,
			Reason: "disables mTLS for " + sc.String() + "; " + why})
	}
	ports := make([]string, 0, len(pa.Spec.PortLevelMtls))
	for port, m := range pa.Spec.PortLevelMtls {
		if m.Mode == "DISABLE" {
			ports = append(ports, port)
		}
	}
	sort.Strings(ports)
	for _, port := range ports {
		out = append(out, Finding{Object: ref, Field: "spec.portLevelMtls[" + port + "].mode", Step: StepNotSupported,
			Reason: "disables mTLS on port " + port + " of " + sc.String() + "; " + why})
	}
	return out
}

func (v *view) authorizationPolicy(ap *objects.AuthorizationPolicy) []Finding {
	ref := Ref{Kind: "AuthorizationPolicy", Namespace: ap.Namespace, Name: ap.Name}
	if targets := ap.Spec.Targets(); len(targets) > 0 {
		if ap.Namespace != v.namespace {
			return nil
		}
		return v.attached(ref, targets, StepAuthorization)
	}
	sc, ok := v.scopeOf(ap.Namespace, matchLabels(ap.Spec.Selector))
	if !ok {
		return nil
	}
	action := ap.Spec.Action
	if action == "" {
		action = "ALLOW"
	}
	field, needs := l7Field(ap.Spec.Rules), ""
	switch {
	case field != "":
		needs = "its rule on " + field + " needs the HTTP request, which ztunnel does not read"
	case action == "CUSTOM" || action == "AUDIT":
		field, needs = "spec.action", "action "+action+" is enforced by a waypoint only"
	}
	if needs != "" {
		reason := "attached to " + sc.String() + " without targetRefs, it is enforced by ztunnel once the sidecars are gone, and " + needs +
			", so it would deny all traffic to those workloads. Attach it to a waypoint with targetRefs first"
		if !sc.meshWide && !sc.whole {
			rw, why := v.rewriteToTargetRefs(ap.Spec.Selector.MatchLabels, action, ap.Spec.Rules)
			if rw != nil {
				return []Finding{{Object: ref, Field: "spec.selector", Step: StepAuthorization, Rewrite: rw,
					Reason: "carried over: " + needs + ", so the pull request attaches it to " + rw.describe() + " with targetRefs instead of its selector"}}
			}
			reason += " (kedge does not carry it over: " + why + ")"
		}
		return []Finding{{Object: ref, Field: field, Step: StepAuthorization, Reason: reason}}
	}
	w := v.waypointInPath(sc.match, sc.whole)
	if w.none() || bypassPrevention(ap, w) {
		return nil
	}
	if field := identityField(ap.Spec.Rules); field != "" {
		behind := "traffic to " + sc.String() + " goes through waypoint " + w.namespace + "/" + w.name + " after the move, and behind a waypoint ztunnel sees the waypoint's identity and address, not the client's"
		reason := behind + ": this " + action + " rule would no longer match the clients it was written for. Attach it to the waypoint with targetRefs first"
		if !sc.meshWide && !sc.whole {
			rw, why := v.rewriteToTargetRefs(ap.Spec.Selector.MatchLabels, action, ap.Spec.Rules)
			if rw != nil {
				return []Finding{{Object: ref, Field: "spec.selector", Step: StepBypass, Rewrite: rw,
					Reason: "carried over: " + behind + ", so the pull request attaches it to " + rw.describe() + " with targetRefs instead of its selector"}}
			}
			reason += " (kedge does not carry it over: " + why + ")"
		}
		return []Finding{{Object: ref, Field: field, Step: StepBypass, Reason: reason}}
	}
	return nil
}

// attached checks the targets of a policy attached with targetRefs: a
// waypoint enforces it only for the traffic it carries, so each Service it
// names must use a waypoint, and each waypoint it names must be used.
func (v *view) attached(ref Ref, targets []objects.PolicyTargetReference, step Step) []Finding {
	var out []Finding
	for i, t := range targets {
		field := fmt.Sprintf("spec.targetRefs[%d]", i)
		if t.Namespace != "" && t.Namespace != v.namespace {
			continue
		}
		switch {
		case t.Kind == "Service" && (t.Group == "" || t.Group == "core"):
			s := v.service(t.Name)
			if s == nil {
				out = append(out, Finding{Object: ref, Field: field, Step: step,
					Reason: "names Service " + t.Name + ", which the namespace does not have: the policy enforces nothing"})
				continue
			}
			w := v.serviceWaypoint(s)
			if w.none() {
				out = append(out, Finding{Object: ref, Field: field, Step: step,
					Reason: "Service " + t.Name + " uses no waypoint after the move (no " + LabelUseWaypoint + " on it or on the namespace), and only the waypoint a Service uses enforces what is attached to it: the policy would enforce nothing"})
			} else if why := v.waypointProblem(w); why != "" {
				out = append(out, Finding{Object: ref, Field: field, Step: step, Reason: "Service " + t.Name + " uses " + why})
			}
		case t.Kind == "Gateway" && t.Group == "gateway.networking.k8s.io":
			w := waypointRef{namespace: v.namespace, name: t.Name}
			if why := v.waypointProblem(w); why != "" {
				out = append(out, Finding{Object: ref, Field: field, Step: step, Reason: why})
			} else if len(v.usedBy(w)) == 0 {
				out = append(out, Finding{Object: ref, Field: field, Step: step,
					Reason: "nothing uses waypoint " + w.namespace + "/" + w.name + " after the move (" + LabelUseWaypoint + " on the namespace or one of its Services), so the policy attached to it would enforce nothing"})
			}
		}
	}
	return out
}

// attachedPolicy is RequestAuthentication and WasmPlugin: both need the
// HTTP request, so both must attach to a waypoint with targetRefs.
func (v *view) attachedPolicy(kind string, meta namedObject, spec objects.AttachedPolicySpec, carry bool) []Finding {
	ref := Ref{Kind: kind, Namespace: meta.GetNamespace(), Name: meta.GetName()}
	if targets := spec.Targets(); len(targets) > 0 {
		if ref.Namespace != v.namespace {
			return nil
		}
		return v.attached(ref, targets, StepAttach)
	}
	sc, ok := v.scopeOf(ref.Namespace, matchLabels(spec.Selector))
	if !ok {
		return nil
	}
	runs := "validates JWTs in the sidecars of " + sc.String()
	if kind == "WasmPlugin" {
		runs = "runs in the sidecars of " + sc.String()
	}
	reason := runs + ", and ztunnel does not read HTTP requests: it must attach to a waypoint with targetRefs first"
	if !sc.meshWide && !sc.whole {
		if !carry {
			reason += " (kedge carries over AuthorizationPolicies and RequestAuthentications only)"
		} else if rw, why := v.rewriteToTargetRefs(spec.Selector.MatchLabels, "", nil); rw != nil {
			return []Finding{{Object: ref, Field: "spec.selector", Step: StepAttach, Rewrite: rw,
				Reason: "carried over: it " + runs + ", so the pull request attaches it to " + rw.describe() + " with targetRefs instead of its selector"}}
		} else {
			reason += " (kedge does not carry it over: " + why + ")"
		}
	}
	return []Finding{{Object: ref, Field: "spec.selector", Step: StepAttach, Reason: reason}}
}

func (v *view) envoyFilter(ef *objects.EnvoyFilter) []Finding {
	if len(ef.Spec.TargetRefs) > 0 || gatewayOnly(ef.Spec.ConfigPatches) {
		return nil
	}
	var match map[string]string
	if ef.Spec.WorkloadSelector != nil {
		match = ef.Spec.WorkloadSelector.Labels
	}
	sc, ok := v.scopeOf(ef.Namespace, match)
	if !ok {
		return nil
	}
	return []Finding{{Object: Ref{Kind: "EnvoyFilter", Namespace: ef.Namespace, Name: ef.Name}, Field: "spec.workloadSelector", Step: StepAttach,
		Reason: "patches the sidecars of " + sc.String() + ", which the move removes, and EnvoyFilters are not supported on waypoints: what it configures cannot be carried over"}}
}

// gatewayOnly tells an EnvoyFilter whose every patch is for gateways:
// sidecars leaving changes nothing it does.
func gatewayOnly(patches []objects.EnvoyConfigPatch) bool {
	if len(patches) == 0 {
		return false
	}
	for _, p := range patches {
		if p.Match == nil || p.Match.Context != "GATEWAY" {
			return false
		}
	}
	return true
}

// virtualService: one the sidecars apply (no gateways, or "mesh" among
// them) that is the namespace's, or routes a Service of it, needs an
// HTTPRoute for each Service host, applied by the waypoint that Service
// uses.
func (v *view) virtualService(vs *objects.VirtualService) []Finding {
	if len(vs.Spec.Gateways) > 0 && !slices.Contains(vs.Spec.Gateways, "mesh") {
		return nil
	}
	ref := Ref{Kind: "VirtualService", Namespace: vs.Namespace, Name: vs.Name}
	own := vs.Namespace == v.namespace
	var out []Finding
	for i, host := range vs.Spec.Hosts {
		field := fmt.Sprintf("spec.hosts[%d]", i)
		ns, name, ok := v.hostService(host, vs.Namespace)
		if !ok {
			if own {
				out = append(out, Finding{Object: ref, Field: field, Step: StepVirtualService,
					Reason: "routes " + host + ", which names no Service of the cluster, so no HTTPRoute can stand for it, and VirtualService support in ambient mode is Alpha"})
			}
			continue
		}
		if !own && ns != v.namespace {
			continue
		}
		route := v.httpRouteFor(ns, name)
		if route == "" {
			out = append(out, Finding{Object: ref, Field: field, Step: StepVirtualService,
				Reason: "routes Service " + ns + "/" + name + " and no HTTPRoute has that Service as its parent: VirtualService support in ambient mode is Alpha, so migrate it to an HTTPRoute first"})
			continue
		}
		if why := v.routeWaypoint(ns, name); why != "" {
			out = append(out, Finding{Object: ref, Field: field, Step: StepVirtualService,
				Reason: "HTTPRoute " + route + " stands for it, but " + why})
		}
	}
	return out
}

// hostService resolves a VirtualService host to a Service: a short name in
// the VirtualService's namespace, or name.namespace[.svc[.domain]].
func (v *view) hostService(host, vsNamespace string) (ns, name string, ok bool) {
	if strings.Contains(host, "*") {
		return "", "", false
	}
	parts := strings.Split(host, ".")
	switch {
	case len(parts) == 1:
		ns, name = vsNamespace, parts[0]
	case len(parts) == 2 || parts[2] == "svc":
		ns, name = parts[1], parts[0]
	default:
		return "", "", false
	}
	for _, s := range v.cluster.services[ns] {
		if s.Name == name {
			return ns, name, true
		}
	}
	return "", "", false
}

// httpRouteFor names an HTTPRoute with the Service as a parent, "" when
// there is none.
func (v *view) httpRouteFor(ns, name string) string {
	for _, r := range v.cluster.httpRoutes {
		for _, p := range r.Spec.ParentRefs {
			group, kind, pns := "gateway.networking.k8s.io", "Gateway", r.Namespace
			if p.Group != nil {
				group = *p.Group
			}
			if p.Kind != nil {
				kind = *p.Kind
			}
			if p.Namespace != nil {
				pns = *p.Namespace
			}
			if (group == "" || group == "core") && kind == "Service" && p.Name == name && pns == ns {
				return r.Namespace + "/" + r.Name
			}
		}
	}
	return ""
}

// routeWaypoint says why the waypoint of a routed Service cannot apply its
// HTTPRoute, "" when it can. The moving namespace's Services are seen with
// its labels after the move; another namespace's as they are.
func (v *view) routeWaypoint(ns, name string) string {
	var w waypointRef
	if ns == v.namespace {
		w = v.serviceWaypoint(v.service(name))
	} else {
		for _, s := range v.cluster.services[ns] {
			if s.Name == name {
				own, set := useWaypoint(s.Labels, ns)
				if !set {
					own, _ = useWaypoint(v.namespaceLabels(ns), ns)
				}
				w = own
			}
		}
	}
	if w.none() {
		return "Service " + ns + "/" + name + " uses no waypoint, and in ambient mode only a waypoint applies HTTPRoutes"
	}
	if why := v.waypointProblem(w); why != "" {
		return "Service " + ns + "/" + name + " uses " + why
	}
	return ""
}

func (v *view) namespaceLabels(ns string) map[string]string {
	for i := range v.set.Namespaces {
		if v.set.Namespaces[i].Name == ns {
			return v.set.Namespaces[i].Labels
		}
	}
	return nil
}
