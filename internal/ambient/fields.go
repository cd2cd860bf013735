package ambient

import (
	"fmt"
	"strings"

	"github.com/kedge-io/kedge/internal/objects"
)

// Authorization attributes by where they are read, after Istio's
// "Authorization Policy Conditions" reference
// (https://istio.io/latest/docs/reference/config/security/conditions/):
// those marked "HTTP only" need the request, which ztunnel does not parse;
// the "HTTP and TCP" ones are read from the connection. remote.ip (and
// remoteIpBlocks) is "HTTP and TCP" there but comes from X-Forwarded-For
// or the PROXY protocol; kedge counts it with the L7 attributes, which can
// only refuse more, and any key the reference does not list likewise.
var (
	// l4Conditions are the when: keys ztunnel reads.
	l4Conditions = map[string]bool{
		"source.ip": true, "source.namespace": true, "source.principal": true,
		"destination.ip": true, "destination.port": true,
	}
	// identityConditions read who or where the connection comes from:
	// behind a waypoint, the waypoint.
	identityConditions = map[string]bool{
		"source.ip": true, "source.namespace": true, "source.principal": true,
	}
	// waypointConditions are the keys kedge carries to a waypoint: the
	// request's and the client's identity, which a waypoint reads as the
	// sidecar did. Addresses and ports are left out: kedge cannot prove a
	// waypoint sees the same ones.
	waypointConditions = map[string]bool{"source.namespace": true, "source.principal": true}
)

// l7Field is the first field of a policy's rules only a proxy that parses
// HTTP can enforce, "" when every rule is L4.
func l7Field(rules []objects.AuthorizationRule) string {
	for i, r := range rules {
		for j, to := range r.To {
			op := to.Operation
			at := fmt.Sprintf("spec.rules[%d].to[%d].operation.", i, j)
			switch {
			case len(op.Methods) > 0:
				return at + "methods"
			case len(op.NotMethods) > 0:
				return at + "notMethods"
			case len(op.Paths) > 0:
				return at + "paths"
			case len(op.NotPaths) > 0:
				return at + "notPaths"
			case len(op.Hosts) > 0:
				return at + "hosts"
			case len(op.NotHosts) > 0:
				return at + "notHosts"
			}
		}
		for j, from := range r.From {
			at := fmt.Sprintf("spec.rules[%d].from[%d].source.", i, j)
			switch {
			case len(from.Source.RequestPrincipals) > 0:
				return at + "requestPrincipals"
			case len(from.Source.NotRequestPrincipals) > 0:
				return at + "notRequestPrincipals"
			case len(from.Source.RemoteIPBlocks) > 0:
				return at + "remoteIpBlocks"
			case len(from.Source.NotRemoteIPBlocks) > 0:
				return at + "notRemoteIpBlocks"
			}
		}
		for j, w := range r.When {
			if !l4Conditions[w.Key] {
				return fmt.Sprintf("spec.rules[%d].when[%d].key %s", i, j, w.Key)
			}
		}
	}
	return ""
}

// firstSourceField is the path of the first of the named source fields
// that a rule's from clauses set, in clause order and then in the order
// named; "" when none does.
func firstSourceField(rule int, from []objects.RuleFrom, names ...string) string {
	for j, f := range from {
		s := f.Source
		values := map[string][]string{
			"principals": s.Principals, "notPrincipals": s.NotPrincipals,
			"requestPrincipals": s.RequestPrincipals, "notRequestPrincipals": s.NotRequestPrincipals,
			"namespaces": s.Namespaces, "notNamespaces": s.NotNamespaces,
			"ipBlocks": s.IPBlocks, "notIpBlocks": s.NotIPBlocks,
			"remoteIpBlocks": s.RemoteIPBlocks, "notRemoteIpBlocks": s.NotRemoteIPBlocks,
		}
		for _, name := range names {
			if len(values[name]) > 0 {
				return fmt.Sprintf("spec.rules[%d].from[%d].source.%s", rule, j, name)
			}
		}
	}
	return ""
}

// identityField is the first field of a policy's rules that reads the
// source's identity or address, "" when none does.
func identityField(rules []objects.AuthorizationRule) string {
	for i, r := range rules {
		if f := firstSourceField(i, r.From, "principals", "notPrincipals", "namespaces", "notNamespaces", "ipBlocks", "notIpBlocks"); f != "" {
			return f
		}
		for j, w := range r.When {
			if identityConditions[w.Key] {
				return fmt.Sprintf("spec.rules[%d].when[%d].key %s", i, j, w.Key)
			}
		}
	}
	return ""
}

// bypassPrevention tells the guide's "prevent waypoint bypass" policy: a
// DENY whose every rule is from sources whose notPrincipals name the
// waypoint's service account, so that everything but the waypoint is
// denied, which is what ztunnel behind a waypoint is meant to enforce.
// Istio deploys a waypoint under a service account of the Gateway's name.
func bypassPrevention(ap *objects.AuthorizationPolicy, w waypointRef) bool {
	if ap.Spec.Action != "DENY" || len(ap.Spec.Rules) == 0 || w.none() {
		return false
	}
	account := "/ns/" + w.namespace + "/sa/" + w.name
	for _, r := range ap.Spec.Rules {
		if len(r.To) > 0 || len(r.When) > 0 || len(r.From) == 0 {
			return false
		}
		for _, from := range r.From {
			s := from.Source
			if len(s.Principals)+len(s.Namespaces)+len(s.NotNamespaces)+len(s.IPBlocks)+len(s.NotIPBlocks)+len(s.RemoteIPBlocks)+
				len(s.NotRemoteIPBlocks)+len(s.RequestPrincipals)+len(s.NotRequestPrincipals) > 0 {
				return false
			}
			named := false
			for _, p := range s.NotPrincipals {
				named = named || strings.HasSuffix(p, account)
			}
			if !named {
				return false
			}
		}
	}
	return true
}

// unportableField is the first field of a policy's rules kedge does not
// carry to a waypoint, "" when all can go: ports and addresses, which a
// waypoint may read differently from the sidecar.
func unportableField(rules []objects.AuthorizationRule) string {
	for i, r := range rules {
		for j, to := range r.To {
			at := fmt.Sprintf("spec.rules[%d].to[%d].operation.", i, j)
			if len(to.Operation.Ports) > 0 {
				return at + "ports"
			}
			if len(to.Operation.NotPorts) > 0 {
				return at + "notPorts"
			}
		}
		if f := firstSourceField(i, r.From, "ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks"); f != "" {
			return f
		}
		for j, w := range r.When {
			if l4Conditions[w.Key] && !waypointConditions[w.Key] {
				return fmt.Sprintf("spec.rules[%d].when[%d].key %s", i, j, w.Key)
			}
		}
	}
	return ""
}
