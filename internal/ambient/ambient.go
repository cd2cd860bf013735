// Package ambient decides whether a namespace can leave its sidecars for
// Istio's ambient mode now, and whether it can come back, following Istio's
// guide "Migrate from sidecar to ambient" (Istio 1.24+,
// https://istio.io/latest/docs/ambient/migrate/). It is pure: it reads an
// objects.Set and returns findings, each naming the object it read, the
// field, why, and the guide's step (Step). docs/ambient.md lists every rule
// with its upstream reference; the rules, in the guide's order:
//
//   - Install ambient components: the ztunnel DaemonSet runs on every node,
//     and istio-cni runs with ambient enabled (AMBIENT_ENABLED in its
//     istio-cni-config ConfigMap, which istio-cni's chart writes).
//   - What is not supported: a PeerAuthentication with mode DISABLE (at
//     namespace, workload or port level in the namespace, or mesh-wide in
//     the root namespace) is a hard blocker; ambient mode always uses mTLS.
//     A root-namespace PeerAuthentication with a selector is ignored by
//     Istio, and so here.
//   - Migrate policies: ztunnel enforces an AuthorizationPolicy attached by
//     selector (or to the whole namespace, or mesh-wide from the root
//     namespace) at L4 only; one with L7 rules (methods, paths, hosts,
//     headers, request principals, request.* conditions) or with action
//     CUSTOM or AUDIT becomes a DENY of all traffic to its pods once their
//     sidecars are gone. Such a policy must first attach to a waypoint with
//     targetRefs, whatever waypoints exist: a Programmed waypoint that
//     nothing uses enforces nothing. kedge carries an ALLOW or DENY policy
//     over itself (Rewrite) when the rewrite provably keeps its meaning; see
//     rewrite.go.
//   - Migrate policies: a policy attached with targetRefs (to a Service or
//     a waypoint Gateway) is enforced only by the waypoint its target uses
//     (istio.io/use-waypoint on the Service, else on its namespace; "none"
//     opts out), which must be a Programmed Gateway of class
//     istio-waypoint that handles service traffic (istio.io/waypoint-for
//     service or all; service when absent).
//   - Migrate policies: RequestAuthentication and WasmPlugin must attach to
//     a waypoint with targetRefs; an EnvoyFilter patching the namespace's
//     sidecars cannot be carried over (waypoints do not support them); a
//     VirtualService the sidecars apply needs an equivalent HTTPRoute (a
//     route with the host's Service as parent), since VirtualService support
//     in ambient is Alpha, and that Service must use a waypoint.
//   - Prevent waypoint bypass: behind a waypoint the destination ztunnel
//     sees the waypoint's identity, not the client's, so an L4 policy on
//     source identities or addresses stops matching the clients it was
//     written for; the guide's own bypass-prevention DENY policy, whose
//     notPrincipals name the waypoint, is the exception.
//   - Enable ambient mode, step 1: every waypoint the namespace or its
//     Services will use is a Programmed istio-waypoint Gateway before the
//     namespace is labelled.
//   - Rollback: each step is reversible; the way back removes
//     istio.io/dataplane-mode and istio.io/use-waypoint, restores the
//     injection label and restarts. Sidecars do not enforce policies
//     attached with targetRefs, so those must go back to a selector first.
package ambient

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// Labels and names ambient mode is built on, Istio's
// (https://istio.io/latest/docs/reference/config/labels/).
const (
	// LabelDataplaneMode=ambient puts a namespace's pods in the ambient mesh.
	LabelDataplaneMode = "istio.io/dataplane-mode"
	// ModeAmbient is LabelDataplaneMode's value.
	ModeAmbient = "ambient"
	// LabelUseWaypoint names the waypoint a namespace's, Service's or pod's
	// traffic goes through; "none" opts out of one set higher up.
	LabelUseWaypoint = "istio.io/use-waypoint"
	// LabelUseWaypointNamespace is the namespace of that waypoint when it
	// is not the object's own.
	LabelUseWaypointNamespace = "istio.io/use-waypoint-namespace"
	// LabelWaypointFor on a waypoint Gateway says which traffic it handles:
	// service (the default), workload, all or none.
	LabelWaypointFor = "istio.io/waypoint-for"
	// AnnotationRedirection=enabled is what the istio-cni node agent writes
	// on a pod once ztunnel captures its traffic.
	AnnotationRedirection = "ambient.istio.io/redirection"
	// WaypointClass is the GatewayClass of Istio's waypoints.
	WaypointClass = "istio-waypoint"
	// CNIConfigMap is the ConfigMap istio-cni's chart writes its settings
	// to, in the namespace it is installed in.
	CNIConfigMap = "istio-cni-config"

	ztunnelName = "ztunnel"
	// cniAmbientKey is the istio-cni chart's switch for ambient mode in
	// its ConfigMap.
	cniAmbientKey = "AMBIENT_ENABLED"
	noWaypoint    = "none"
)

// Step is the part of Istio's guide (or of the ambient documentation it
// points to) that a finding is about.
type Step struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

const guide = "https://istio.io/latest/docs/ambient/migrate/"

// The guide's steps findings point at.
var (
	StepInstall        = Step{"Install ambient components", guide + "install-ambient-components/"}
	StepNotSupported   = Step{"What is not supported", guide + "#what-is-not-supported"}
	StepAuthorization  = Step{"Migrate policies: AuthorizationPolicy with L7 rules", guide + "migrate-policies/#migrate-authorizationpolicy-for-l7-rules"}
	StepVirtualService = Step{"Migrate policies: VirtualService to HTTPRoute", guide + "migrate-policies/#migrate-virtualservice-to-httproute"}
	StepAttach         = Step{"Migrate policies: RequestAuthentication, EnvoyFilter and WasmPlugin", guide + "#resource-migration-overview"}
	StepBypass         = Step{"Migrate policies: prevent waypoint bypass", guide + "migrate-policies/#prevent-waypoint-bypass"}
	StepWaypoints      = Step{"Enable ambient mode, step 1: activate waypoints", guide + "enable-ambient-mode/#step-1-activate-waypoints"}
	StepRollback       = Step{"Enable ambient mode: rollback", guide + "enable-ambient-mode/#rollback"}
)

// Ref names one cluster object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Finding is one object the guide names that decides a namespace's move:
// a refusal, or a policy the move carries over (Rewrite set).
type Finding struct {
	Object Ref `json:"object"`
	// Path is the file in Git the object is written in; "" when kedge
	// found none (or read no repository).
	Path string `json:"path,omitempty"`
	// Field is what was read, as a path into the object.
	Field  string `json:"field"`
	Reason string `json:"reason"`
	Step   Step   `json:"step"`
	// Rewrite is how the pull request carries the policy over.
	Rewrite *Rewrite `json:"rewrite,omitempty"`
}

func (f Finding) String() string {
	where := f.Object.String()
	if f.Path != "" {
		where += " (" + f.Path + ")"
	}
	if f.Field != "" {
		where += " " + f.Field
	}
	return where + ": " + f.Reason + " [" + f.Step.Title + ": " + f.Step.URL + "]"
}

// Describe is the findings as one line each, joined by "; ".
func Describe(findings []Finding) string {
	parts := make([]string, len(findings))
	for i, f := range findings {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// Readiness is the decision for one namespace: Refusals keep it where it
// is; Rewrites are the policies its pull request carries over with it.
type Readiness struct {
	Refusals []Finding
	Rewrites []Finding
}

// Ready reports whether nothing refuses the move.
func (r Readiness) Ready() bool { return len(r.Refusals) == 0 }

// ClusterFindings are what keeps every namespace out of ambient mode now:
// ztunnel and istio-cni as the guide's first step installs them.
func ClusterFindings(set *objects.Set) []Finding {
	var out []Finding
	if f, ok := ztunnelFinding(set); !ok {
		out = append(out, f)
	}
	if f, ok := cniFinding(set); !ok {
		out = append(out, f)
	}
	return out
}

// ztunnelFinding checks the ztunnel DaemonSet: one, with a Ready pod on
// every node (status.numberReady against the Nodes listed).
func ztunnelFinding(set *objects.Set) (Finding, bool) {
	var found []Ref
	var ready, desired int32
	for _, d := range set.DaemonSets {
		if d.Name == ztunnelName || d.Labels["app"] == ztunnelName {
			found = append(found, Ref{Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name})
			ready, desired = d.Status.NumberReady, d.Status.DesiredNumberScheduled
		}
	}
	switch len(found) {
	case 0:
		return Finding{Object: Ref{Kind: "DaemonSet", Name: ztunnelName}, Step: StepInstall,
			Reason: "no ztunnel DaemonSet: ambient mode is not installed"}, false
	case 1:
	default:
		return Finding{Object: found[0], Step: StepInstall,
			Reason: fmt.Sprintf("several ztunnel DaemonSets (%s, %s)", found[0], found[1])}, false
	}
	nodes := int32(len(set.Nodes))
	if nodes == 0 {
		// A snapshot taken without Nodes: the DaemonSet's own count of the
		// nodes it should run on is all there is.
		nodes = max(desired, 1)
	}
	if ready < nodes || desired < nodes {
		return Finding{Object: found[0], Field: "status.numberReady", Step: StepInstall,
			Reason: fmt.Sprintf("ztunnel is ready on %d of %d nodes", ready, nodes)}, false
	}
	return Finding{}, true
}

// cniFinding checks the istio-cni ConfigMap for AMBIENT_ENABLED=true: the
// node agent only sets up ambient redirection when the chart enabled it.
func cniFinding(set *objects.Set) (Finding, bool) {
	var enabled, disabled []Ref
	var value string
	for i := range set.ConfigMaps {
		cm := &set.ConfigMaps[i]
		if cm.Name != CNIConfigMap {
			continue
		}
		ref := Ref{Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name}
		if v := cm.Data[cniAmbientKey]; v == "true" {
			enabled = append(enabled, ref)
		} else {
			disabled, value = append(disabled, ref), v
		}
	}
	switch {
	case len(enabled) > 0:
		return Finding{}, true
	case len(disabled) > 0:
		return Finding{Object: disabled[0], Field: "data." + cniAmbientKey, Step: StepInstall,
			Reason: fmt.Sprintf("istio-cni runs without ambient (%s=%q)", cniAmbientKey, value)}, false
	}
	return Finding{Object: Ref{Kind: "ConfigMap", Name: CNIConfigMap}, Step: StepInstall,
		Reason: "no istio-cni-config ConfigMap: istio-cni is not installed, or not in a namespace source.istioNamespaces lists"}, false
}

func programmed(conditions []metav1.Condition) bool {
	for _, c := range conditions {
		if c.Type == "Programmed" {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// Excluded tells a pod ambient mode leaves alone whatever its namespace
// says: one on the host's network, or one labelled
// istio.io/dataplane-mode=none.
func Excluded(p *objects.Pod) bool {
	return p.HostNetwork || p.Labels[LabelDataplaneMode] == "none"
}

// Captured tells whether ztunnel captures a pod: the istio-cni node agent
// annotated it, and it runs no sidecar.
func Captured(p *objects.Pod) bool {
	return p.Annotations[AnnotationRedirection] == "enabled" && p.Proxy == nil
}
