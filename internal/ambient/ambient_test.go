package ambient

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

func nodes(n int) []corev1.Node {
	out := make([]corev1.Node, n)
	for i := range out {
		out[i].Name = string(rune('a' + i))
	}
	return out
}

func ztunnel(desired, ready int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel"},
		Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, NumberReady: ready},
	}
}

func cni(ambient string) corev1.ConfigMap {
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "istio-cni-config"}, Data: map[string]string{}}
	if ambient != "" {
		cm.Data["AMBIENT_ENABLED"] = ambient
	}
	return cm
}

// Each row names the field its answer turns on.
func TestClusterProblems(t *testing.T) {
	tests := []struct {
		name       string
		field      string
		daemonSets []*appsv1.DaemonSet
		configMaps []corev1.ConfigMap
		want       []string
	}{
		{"ready", "DaemonSet ztunnel status.numberReady, ConfigMap istio-cni-config data.AMBIENT_ENABLED",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, []corev1.ConfigMap{cni("true")}, nil},
		{"no ztunnel", "DaemonSet ztunnel",
			nil, []corev1.ConfigMap{cni("true")}, []string{"no ztunnel DaemonSet: ambient mode is not installed"}},
		{"ztunnel not ready everywhere", "DaemonSet ztunnel status.numberReady",
			[]*appsv1.DaemonSet{ztunnel(3, 2)}, []corev1.ConfigMap{cni("true")}, []string{"ztunnel istio-system/ztunnel is ready on 2 of 3 nodes"}},
		{"ztunnel kept off a node", "DaemonSet ztunnel status.desiredNumberScheduled, Nodes",
			[]*appsv1.DaemonSet{ztunnel(2, 2)}, []corev1.ConfigMap{cni("true")}, []string{"ztunnel istio-system/ztunnel is ready on 2 of 3 nodes"}},
		{"istio-cni without ambient", "ConfigMap istio-cni-config data.AMBIENT_ENABLED",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, []corev1.ConfigMap{cni("false")}, []string{`istio-cni in kube-system runs without ambient (AMBIENT_ENABLED="false")`}},
		{"no istio-cni", "ConfigMap istio-cni-config",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, nil, []string{"no istio-cni-config ConfigMap: istio-cni is not installed (or not where kedge reads Istio's ConfigMaps)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := &objects.Set{Nodes: nodes(3), DaemonSets: tt.daemonSets, ConfigMaps: tt.configMaps}
			var got []string
			for _, p := range ClusterProblems(set) {
				got = append(got, p.Detail)
			}
			assert.Equal(t, tt.want, got, "reads %s", tt.field)
		})
	}
}

// Without a Node list (a snapshot that has none), the DaemonSet's own
// status.desiredNumberScheduled stands for the nodes.
func TestClusterProblemsWithoutNodes(t *testing.T) {
	ready := &objects.Set{DaemonSets: []*appsv1.DaemonSet{ztunnel(2, 2)}, ConfigMaps: []corev1.ConfigMap{cni("true")}}
	assert.Empty(t, ClusterProblems(ready))
	partly := &objects.Set{DaemonSets: []*appsv1.DaemonSet{ztunnel(2, 1)}, ConfigMaps: []corev1.ConfigMap{cni("true")}}
	assert.Equal(t, []Problem{{Field: "DaemonSet ztunnel status.numberReady, Nodes", Detail: "ztunnel istio-system/ztunnel is ready on 1 of 2 nodes"}}, ClusterProblems(partly))
	nowhere := &objects.Set{DaemonSets: []*appsv1.DaemonSet{ztunnel(0, 0)}, ConfigMaps: []corev1.ConfigMap{cni("true")}}
	assert.Len(t, ClusterProblems(nowhere), 1, "scheduled on no node")
}

func policy(name string, rule objects.AuthorizationRule) objects.AuthorizationPolicy {
	return objects.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: objects.AuthorizationPolicySpec{Rules: []objects.AuthorizationRule{rule}}}
}

func waypoint(class string, status metav1.ConditionStatus) objects.Gateway {
	g := objects.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "waypoint"}, Spec: objects.GatewaySpec{GatewayClassName: class}}
	if status != "" {
		g.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}, {Type: "Programmed", Status: status}}
	}
	return g
}

func TestNamespaceProblems(t *testing.T) {
	l4 := policy("l4", objects.AuthorizationRule{
		From: []objects.RuleFrom{{}},
		To:   []objects.RuleTo{{}},
		When: []objects.RuleCondition{{Key: "source.namespace"}},
	})
	methods := policy("methods", objects.AuthorizationRule{To: []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}}}}})
	const need = "AuthorizationPolicies with L7 rules need a waypoint, and namespace shop has no Programmed istio-waypoint Gateway: "
	tests := []struct {
		name     string
		field    string
		policies []objects.AuthorizationPolicy
		gateways []objects.Gateway
		want     string
	}{
		{"no policies", "AuthorizationPolicy", nil, nil, ""},
		{"L4 rules only", "rules[].when[].key source.namespace", []objects.AuthorizationPolicy{l4}, nil, ""},
		{"methods", "rules[].to[].operation.methods", []objects.AuthorizationPolicy{methods}, nil, need + "methods (to.operation.methods)"},
		{"paths", "rules[].to[].operation.notPaths",
			[]objects.AuthorizationPolicy{policy("paths", objects.AuthorizationRule{To: []objects.RuleTo{{Operation: objects.RuleOperation{NotPaths: []string{"/admin"}}}}})}, nil, need + "paths (to.operation.paths)"},
		{"headers", "rules[].when[].key request.headers[...]",
			[]objects.AuthorizationPolicy{policy("headers", objects.AuthorizationRule{When: []objects.RuleCondition{{Key: "request.headers[x-user]"}}})}, nil, need + "headers (when request.headers[x-user])"},
		{"JWT principals", "rules[].from[].source.requestPrincipals",
			[]objects.AuthorizationPolicy{policy("jwt", objects.AuthorizationRule{From: []objects.RuleFrom{{Source: objects.RuleSource{RequestPrincipals: []string{"*"}}}}})}, nil, need + "jwt (from.source.requestPrincipals)"},
		{"programmed waypoint", "Gateway spec.gatewayClassName, status.conditions[Programmed]",
			[]objects.AuthorizationPolicy{methods}, []objects.Gateway{waypoint("istio-waypoint", metav1.ConditionTrue)}, ""},
		{"waypoint not programmed", "Gateway status.conditions[Programmed]",
			[]objects.AuthorizationPolicy{methods}, []objects.Gateway{waypoint("istio-waypoint", metav1.ConditionFalse)}, need + "methods (to.operation.methods)"},
		{"waypoint without status", "Gateway status.conditions",
			[]objects.AuthorizationPolicy{methods}, []objects.Gateway{waypoint("istio-waypoint", "")}, need + "methods (to.operation.methods)"},
		{"another gateway class", "Gateway spec.gatewayClassName",
			[]objects.AuthorizationPolicy{methods}, []objects.Gateway{waypoint("istio", metav1.ConditionTrue)}, need + "methods (to.operation.methods)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := &objects.Set{AuthorizationPolicies: tt.policies, Gateways: tt.gateways}
			got := ""
			for _, p := range NamespaceProblems(set, "shop") {
				got = p.Detail
			}
			assert.Equal(t, tt.want, got, "reads %s", tt.field)
		})
	}
}

func TestCaptured(t *testing.T) {
	pod := func(annotation string, sidecar bool) *objects.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if annotation != "" {
			p.Annotations[AnnotationRedirection] = annotation
		}
		p.Spec.Containers = []corev1.Container{{Name: "app"}}
		if sidecar {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "istio-proxy"})
		}
		trimmed := objects.PodOf(&p)
		return &trimmed
	}
	assert.True(t, Captured(pod("enabled", false)), "annotated by istio-cni, no sidecar")
	assert.False(t, Captured(pod("", false)), "not captured yet")
	assert.False(t, Captured(pod("disabled", false)))
	assert.False(t, Captured(pod("enabled", true)), "still runs its sidecar")
}

func TestExcluded(t *testing.T) {
	assert.False(t, Excluded(&objects.Pod{}))
	assert.True(t, Excluded(&objects.Pod{HostNetwork: true}), "spec.hostNetwork")
	assert.True(t, Excluded(&objects.Pod{Labels: map[string]string{"istio.io/dataplane-mode": "none"}}), "label istio.io/dataplane-mode=none")
}
