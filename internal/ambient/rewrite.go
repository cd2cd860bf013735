package ambient

import (
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// Rewrite is how a policy attached by selector is carried over to ambient
// mode: its spec.selector is replaced by spec.targetRefs naming the
// Services whose waypoint enforces it, the guide's own example of an L7
// policy's migration (migrate-policies, "L7 policies").
type Rewrite struct {
	// Selector is the policy's spec.selector.matchLabels, which the edit
	// removes.
	Selector map[string]string `json:"selector"`
	// TargetRefs are the Services (group "", kind Service) it puts in its
	// place, sorted by name.
	TargetRefs []objects.PolicyTargetReference `json:"targetRefs"`
	// Waypoints are the waypoints those Services use after the move
	// (namespace/name), which enforce the policy from then on.
	Waypoints []string `json:"waypoints"`
}

func (rw *Rewrite) describe() string {
	names := make([]string, len(rw.TargetRefs))
	for i, t := range rw.TargetRefs {
		names[i] = t.Name
	}
	return "Service " + strings.Join(names, ", ") + " on waypoint " + strings.Join(rw.Waypoints, ", ")
}

// rewriteToTargetRefs returns the rewrite of a policy selecting pods by
// match, or why kedge does not make it. A sidecar enforces the policy on
// every connection to the pods; a waypoint enforces what is attached to a
// Service on the traffic addressed to that Service. The two agree when the
// Services named are exactly those that reach the pods (their selector is
// match, and no other Service reaches any of them), none is headless (its
// clients address pods, which a service waypoint does not handle), each
// uses a waypoint that carries service traffic after the move, and the
// rules read nothing a waypoint might read differently (ports and
// addresses). action is "" for a policy that has none.
func (v *view) rewriteToTargetRefs(match map[string]string, action string, rules []objects.AuthorizationRule) (*Rewrite, string) {
	switch action {
	case "", "ALLOW", "DENY":
	default:
		return nil, "it carries over ALLOW and DENY policies only: action " + action + " needs its provider at the waypoint, which kedge cannot check"
	}
	if field := unportableField(rules); field != "" {
		return nil, "it does not carry " + field + " to a waypoint, which may not read ports and addresses as the sidecar did"
	}
	var exact []*corev1.Service
	for _, s := range v.services {
		if len(s.Spec.Selector) > 0 && maps.Equal(s.Spec.Selector, match) {
			exact = append(exact, s)
		}
	}
	if len(exact) == 0 {
		return nil, "no Service of the namespace selects exactly the workloads of spec.selector (" + labelList(match) + "), and a waypoint enforces policies per Service"
	}
	for _, s := range v.servicesReaching(match, false) {
		if !containsService(exact, s) {
			return nil, "Service " + s.Name + " also reaches workloads it selects (selector " + labelList(s.Spec.Selector) + "), and traffic through it would no longer be checked"
		}
	}
	rw := &Rewrite{Selector: maps.Clone(match)}
	seen := map[string]bool{}
	for _, s := range exact {
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			return nil, "Service " + s.Name + " is headless: its clients address pods, which a service waypoint does not handle"
		}
		w := v.serviceWaypoint(s)
		if w.none() {
			return nil, "Service " + s.Name + " uses no waypoint after the move: name one in the migration policy's waypoint, or label the Service " + LabelUseWaypoint
		}
		if why := v.waypointProblem(w); why != "" {
			return nil, "Service " + s.Name + " uses " + why
		}
		rw.TargetRefs = append(rw.TargetRefs, objects.PolicyTargetReference{Kind: "Service", Name: s.Name})
		if key := w.namespace + "/" + w.name; !seen[key] {
			seen[key] = true
			rw.Waypoints = append(rw.Waypoints, key)
		}
	}
	sort.Slice(rw.TargetRefs, func(i, j int) bool { return rw.TargetRefs[i].Name < rw.TargetRefs[j].Name })
	sort.Strings(rw.Waypoints)
	return rw, ""
}

func containsService(list []*corev1.Service, s *corev1.Service) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// labelList writes labels as sorted key=value pairs.
func labelList(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}
