package objects

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Istio and Gateway API objects below are the ones Istio's guide to
// moving from sidecars to ambient mode names
// (https://istio.io/latest/docs/ambient/migrate/). Each declares only the
// fields that decide whether a namespace can leave its sidecars; field
// names and JSON spellings are those of the Istio API
// (https://istio.io/latest/docs/reference/config/) and of the Gateway API
// (https://gateway-api.sigs.k8s.io/reference/spec/).

// PolicyTargetReference is one entry of an Istio policy's targetRefs (or
// its older single targetRef): the Gateway, GatewayClass, Service or
// ServiceEntry the policy attaches to instead of selecting pods.
type PolicyTargetReference struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// AuthorizationPolicy is the part of an Istio security.istio.io
// AuthorizationPolicy kedge reads: what it attaches to, its action and its
// rules, to tell which enforcement point (ztunnel or a waypoint) enforces
// it once the sidecars are gone.
type AuthorizationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AuthorizationPolicySpec `json:"spec,omitempty"`
}

// AuthorizationPolicySpec: at most one of Selector and TargetRefs (or the
// older TargetRef) is set; with neither the policy covers its namespace,
// or the whole mesh in the root namespace. An empty Action is ALLOW.
type AuthorizationPolicySpec struct {
	Selector   *WorkloadSelector       `json:"selector,omitempty"`
	TargetRef  *PolicyTargetReference  `json:"targetRef,omitempty"`
	TargetRefs []PolicyTargetReference `json:"targetRefs,omitempty"`
	Action     string                  `json:"action,omitempty"`
	Rules      []AuthorizationRule     `json:"rules,omitempty"`
}

// Targets is TargetRefs, or the single TargetRef of older policies.
func (s AuthorizationPolicySpec) Targets() []PolicyTargetReference {
	return targets(s.TargetRef, s.TargetRefs)
}

func targets(one *PolicyTargetReference, many []PolicyTargetReference) []PolicyTargetReference {
	if len(many) == 0 && one != nil {
		return []PolicyTargetReference{*one}
	}
	return many
}

// AuthorizationRule is one rule: sources, operations and conditions.
type AuthorizationRule struct {
	From []RuleFrom      `json:"from,omitempty"`
	To   []RuleTo        `json:"to,omitempty"`
	When []RuleCondition `json:"when,omitempty"`
}

// RuleFrom is a rule's source.
type RuleFrom struct {
	Source RuleSource `json:"source,omitempty"`
}

// RuleSource: requestPrincipals come from a JWT, so from the HTTP request;
// the others are read from the connection.
type RuleSource struct {
	Principals           []string `json:"principals,omitempty"`
	NotPrincipals        []string `json:"notPrincipals,omitempty"`
	RequestPrincipals    []string `json:"requestPrincipals,omitempty"`
	NotRequestPrincipals []string `json:"notRequestPrincipals,omitempty"`
	Namespaces           []string `json:"namespaces,omitempty"`
	NotNamespaces        []string `json:"notNamespaces,omitempty"`
	IPBlocks             []string `json:"ipBlocks,omitempty"`
	NotIPBlocks          []string `json:"notIpBlocks,omitempty"`
	RemoteIPBlocks       []string `json:"remoteIpBlocks,omitempty"`
	NotRemoteIPBlocks    []string `json:"notRemoteIpBlocks,omitempty"`
}

// RuleTo is a rule's operation.
type RuleTo struct {
	Operation RuleOperation `json:"operation,omitempty"`
}

// RuleOperation: ports are read from the connection, the rest from the
// HTTP request.
type RuleOperation struct {
	Hosts      []string `json:"hosts,omitempty"`
	NotHosts   []string `json:"notHosts,omitempty"`
	Ports      []string `json:"ports,omitempty"`
	NotPorts   []string `json:"notPorts,omitempty"`
	Methods    []string `json:"methods,omitempty"`
	NotMethods []string `json:"notMethods,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	NotPaths   []string `json:"notPaths,omitempty"`
}

// RuleCondition is a when: condition; its key names the attribute.
type RuleCondition struct {
	Key       string   `json:"key,omitempty"`
	Values    []string `json:"values,omitempty"`
	NotValues []string `json:"notValues,omitempty"`
}

// Gateway is the part of a gateway.networking.k8s.io Gateway kedge reads:
// its class (istio-waypoint for a waypoint), its labels
// (istio.io/waypoint-for) and whether it is Programmed.
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GatewaySpec   `json:"spec,omitempty"`
	Status            GatewayStatus `json:"status,omitempty"`
}

// GatewaySpec names the Gateway's class.
type GatewaySpec struct {
	GatewayClassName string `json:"gatewayClassName,omitempty"`
}

// GatewayStatus holds the Gateway's conditions.
type GatewayStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PeerAuthentication is the part of an Istio security.istio.io
// PeerAuthentication kedge reads: the mTLS modes it sets, for the workloads
// its selector picks (all of its namespace without one, all of the mesh in
// the root namespace).
type PeerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PeerAuthenticationSpec `json:"spec,omitempty"`
}

// PeerAuthenticationSpec: PortLevelMtls is keyed by port number.
type PeerAuthenticationSpec struct {
	Selector      *WorkloadSelector    `json:"selector,omitempty"`
	Mtls          *MutualTLS           `json:"mtls,omitempty"`
	PortLevelMtls map[string]MutualTLS `json:"portLevelMtls,omitempty"`
}

// MutualTLS holds a mode: UNSET, DISABLE, PERMISSIVE or STRICT.
type MutualTLS struct {
	Mode string `json:"mode,omitempty"`
}

// RequestAuthentication is the part of an Istio security.istio.io
// RequestAuthentication kedge reads: what it attaches to. Its JWT rules
// need the HTTP request, which only a sidecar or a waypoint sees.
type RequestAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AttachedPolicySpec `json:"spec,omitempty"`
}

// WasmPlugin is the part of an Istio extensions.istio.io WasmPlugin kedge
// reads: what it attaches to. It runs inside an Envoy proxy, a sidecar or
// a waypoint.
type WasmPlugin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AttachedPolicySpec `json:"spec,omitempty"`
}

// AttachedPolicySpec is how RequestAuthentication and WasmPlugin attach:
// by selector, by targetRefs, or (neither) to the whole namespace.
type AttachedPolicySpec struct {
	Selector   *WorkloadSelector       `json:"selector,omitempty"`
	TargetRef  *PolicyTargetReference  `json:"targetRef,omitempty"`
	TargetRefs []PolicyTargetReference `json:"targetRefs,omitempty"`
}

// Targets is TargetRefs, or the single TargetRef of older policies.
func (s AttachedPolicySpec) Targets() []PolicyTargetReference {
	return targets(s.TargetRef, s.TargetRefs)
}

// EnvoyFilter is the part of an Istio networking.istio.io EnvoyFilter kedge
// reads: which proxies it patches.
type EnvoyFilter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              EnvoyFilterSpec `json:"spec,omitempty"`
}

// EnvoyFilterSpec: WorkloadSelector (labels, not matchLabels) or
// TargetRefs pick the proxies; neither patches every proxy of the
// namespace, or of the mesh in the root namespace.
type EnvoyFilterSpec struct {
	WorkloadSelector *EnvoyFilterWorkloadSelector `json:"workloadSelector,omitempty"`
	TargetRefs       []PolicyTargetReference      `json:"targetRefs,omitempty"`
	ConfigPatches    []EnvoyConfigPatch           `json:"configPatches,omitempty"`
}

// EnvoyFilterWorkloadSelector picks pods by their labels.
type EnvoyFilterWorkloadSelector struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// EnvoyConfigPatch is one patch; its match context says which traffic of
// which proxies it changes (SIDECAR_INBOUND, SIDECAR_OUTBOUND, GATEWAY, or
// ANY when empty).
type EnvoyConfigPatch struct {
	ApplyTo string           `json:"applyTo,omitempty"`
	Match   *EnvoyPatchMatch `json:"match,omitempty"`
}

// EnvoyPatchMatch holds the patch's context.
type EnvoyPatchMatch struct {
	Context string `json:"context,omitempty"`
}

// VirtualService is the part of an Istio networking.istio.io
// VirtualService kedge reads: the hosts it routes and whether sidecars
// apply it (gateways empty, or naming "mesh").
type VirtualService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualServiceSpec `json:"spec,omitempty"`
}

// VirtualServiceSpec lists hosts and gateways.
type VirtualServiceSpec struct {
	Hosts    []string `json:"hosts,omitempty"`
	Gateways []string `json:"gateways,omitempty"`
}

// HTTPRoute is the part of a gateway.networking.k8s.io HTTPRoute kedge
// reads: its parents, a Service among them for the routes a waypoint
// applies.
type HTTPRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HTTPRouteSpec `json:"spec,omitempty"`
}

// HTTPRouteSpec lists the route's parents.
type HTTPRouteSpec struct {
	ParentRefs []ParentReference `json:"parentRefs,omitempty"`
}

// ParentReference: Group and Kind are pointers because the Gateway API
// defaults them when absent (gateway.networking.k8s.io, Gateway), and an
// explicit empty group is the core group of a Service.
type ParentReference struct {
	Group     *string `json:"group,omitempty"`
	Kind      *string `json:"kind,omitempty"`
	Name      string  `json:"name,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
}
