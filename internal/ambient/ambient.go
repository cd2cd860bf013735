// Package ambient tells whether a namespace can leave its sidecars for
// Istio's ambient mode now, following Istio's migration guide
// (https://istio.io/latest/docs/ambient/migrate/): ztunnel and the ambient
// istio-cni node agent must run on every node, and a namespace whose
// AuthorizationPolicies need the HTTP request (L7) needs a waypoint that is
// ready before its pods lose the sidecars that enforce them. It is pure: it
// reads an objects.Set.
package ambient

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// Labels and names ambient mode is built on, Istio's.
const (
	// LabelDataplaneMode=ambient puts a namespace's pods in the ambient mesh.
	LabelDataplaneMode = "istio.io/dataplane-mode"
	// ModeAmbient is LabelDataplaneMode's value.
	ModeAmbient = "ambient"
	// LabelUseWaypoint names the waypoint a namespace's traffic goes through.
	LabelUseWaypoint = "istio.io/use-waypoint"
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
)

// Problem is one reason the cluster or a namespace is not ready. Field
// names what was read.
type Problem struct {
	Field  string
	Detail string
}

func (p Problem) String() string { return p.Detail }

// ClusterProblems are what keeps every namespace out of ambient mode now.
func ClusterProblems(set *objects.Set) []Problem {
	var out []Problem
	if p, ok := ztunnelProblem(set); !ok {
		out = append(out, p)
	}
	if p, ok := cniProblem(set); !ok {
		out = append(out, p)
	}
	return out
}

// ztunnelProblem checks the ztunnel DaemonSet: one, with a Ready pod on
// every node (status.numberReady against the Nodes listed).
func ztunnelProblem(set *objects.Set) (Problem, bool) {
	var ds *appsv1.DaemonSet
	for _, d := range set.DaemonSets {
		if d.Name == ztunnelName || d.Labels["app"] == ztunnelName {
			if ds != nil {
				return Problem{Field: "DaemonSet ztunnel", Detail: "several ztunnel DaemonSets (" + ds.Namespace + "/" + ds.Name + ", " + d.Namespace + "/" + d.Name + ")"}, false
			}
			ds = d
		}
	}
	if ds == nil {
		return Problem{Field: "DaemonSet ztunnel", Detail: "no ztunnel DaemonSet: ambient mode is not installed"}, false
	}
	nodes := int32(len(set.Nodes))
	if nodes == 0 {
		// A snapshot taken without Nodes: the DaemonSet's own count of the
		// nodes it should run on is all there is.
		nodes = max(ds.Status.DesiredNumberScheduled, 1)
	}
	if ds.Status.NumberReady < nodes || ds.Status.DesiredNumberScheduled < nodes {
		return Problem{Field: "DaemonSet ztunnel status.numberReady, Nodes", Detail: fmt.Sprintf("ztunnel %s/%s is ready on %d of %d nodes", ds.Namespace, ds.Name, ds.Status.NumberReady, nodes)}, false
	}
	return Problem{}, true
}

// cniProblem checks the istio-cni ConfigMap for AMBIENT_ENABLED=true: the
// node agent only sets up ambient redirection when the chart enabled it.
func cniProblem(set *objects.Set) (Problem, bool) {
	var cm *corev1.ConfigMap
	for i := range set.ConfigMaps {
		if set.ConfigMaps[i].Name == CNIConfigMap {
			cm = &set.ConfigMaps[i]
		}
	}
	if cm == nil {
		return Problem{Field: "ConfigMap istio-cni-config", Detail: "no istio-cni-config ConfigMap: istio-cni is not installed (or not where kedge reads Istio's ConfigMaps)"}, false
	}
	if v := cm.Data[cniAmbientKey]; v != "true" {
		return Problem{Field: "ConfigMap istio-cni-config data.AMBIENT_ENABLED", Detail: fmt.Sprintf("istio-cni in %s runs without ambient (AMBIENT_ENABLED=%q)", cm.Namespace, v)}, false
	}
	return Problem{}, true
}

// NamespaceProblems are what keeps one namespace out of ambient mode: L7
// authorization rules with no Programmed waypoint to enforce them. ztunnel
// enforces L4 rules only; without a waypoint an L7 rule would deny.
func NamespaceProblems(set *objects.Set, namespace string) []Problem {
	var l7 []string
	for _, ap := range set.AuthorizationPolicies {
		if ap.Namespace != namespace {
			continue
		}
		if field := l7Field(ap.Spec); field != "" {
			l7 = append(l7, ap.Name+" ("+field+")")
		}
	}
	if len(l7) == 0 || hasProgrammedWaypoint(set, namespace) {
		return nil
	}
	sort.Strings(l7)
	return []Problem{{
		Field:  "AuthorizationPolicy rules, Gateway istio-waypoint status.conditions[Programmed]",
		Detail: "AuthorizationPolicies with L7 rules need a waypoint, and namespace " + namespace + " has no Programmed istio-waypoint Gateway: " + strings.Join(l7, ", "),
	}}
}

// l7Field names the first field of a policy only a waypoint can enforce:
// what is read from the HTTP request (hosts, methods, paths, request
// principals, request.* conditions such as headers). "" when it is L4.
func l7Field(spec objects.AuthorizationPolicySpec) string {
	for _, r := range spec.Rules {
		for _, to := range r.To {
			op := to.Operation
			switch {
			case len(op.Methods)+len(op.NotMethods) > 0:
				return "to.operation.methods"
			case len(op.Paths)+len(op.NotPaths) > 0:
				return "to.operation.paths"
			case len(op.Hosts)+len(op.NotHosts) > 0:
				return "to.operation.hosts"
			}
		}
		for _, from := range r.From {
			if len(from.Source.RequestPrincipals)+len(from.Source.NotRequestPrincipals) > 0 {
				return "from.source.requestPrincipals"
			}
		}
		for _, w := range r.When {
			if strings.HasPrefix(w.Key, "request.") {
				return "when " + w.Key
			}
		}
	}
	return ""
}

// WaypointProblems are why the namespace cannot be pointed at the waypoint
// name (istio.io/use-waypoint): it must be an istio-waypoint Gateway of the
// namespace that is Programmed, or the namespace's traffic would go to a
// waypoint that is not there.
func WaypointProblems(set *objects.Set, namespace, name string) []Problem {
	for _, g := range set.Gateways {
		if g.Namespace == namespace && g.Name == name && g.Spec.GatewayClassName == WaypointClass && programmed(g.Status.Conditions) {
			return nil
		}
	}
	return []Problem{{
		Field:  "Gateway " + name + " spec.gatewayClassName, status.conditions[Programmed]",
		Detail: "waypoint " + namespace + "/" + name + " is not a Programmed istio-waypoint Gateway: create it before the namespace uses it",
	}}
}

func hasProgrammedWaypoint(set *objects.Set, namespace string) bool {
	for _, g := range set.Gateways {
		if g.Namespace == namespace && g.Spec.GatewayClassName == WaypointClass && programmed(g.Status.Conditions) {
			return true
		}
	}
	return false
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
