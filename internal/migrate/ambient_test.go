package migrate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// ambientReady adds what ambient mode needs cluster-wide: ztunnel Ready on
// the one node, istio-cni with ambient enabled.
func ambientReady(set *objects.Set) {
	set.Nodes = []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}}
	set.DaemonSets = append(set.DaemonSets, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel"},
		Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberReady: 1},
	})
	set.ConfigMaps = append(set.ConfigMaps, corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istio-cni-config", Labels: map[string]string{"istio.io/rev": "default"}},
		Data:       map[string]string{"AMBIENT_ENABLED": "true"},
	})
}

func toAmbient(ns, from string, remove []string, set map[string]string) drift.Migration {
	m := moving(ns, from, "ambient", "")
	m.RemoveLabels, m.SetLabels = remove, set
	return m
}

// Each row names what the decision reads.
func TestSelectToAmbient(t *testing.T) {
	web := namespace("web", map[string]string{"istio.io/rev": "1-23-2", "team": "web"})
	legacy := namespace("legacy", map[string]string{"istio-injection": "enabled"})
	l7 := objects.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "get-only"}, Spec: objects.AuthorizationPolicySpec{
		Rules: []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}}}}}},
	}}
	waypoint := objects.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "waypoint"}, Spec: objects.GatewaySpec{GatewayClassName: "istio-waypoint"},
		Status: objects.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue}}}}
	ambientLabels := map[string]string{"istio.io/dataplane-mode": "ambient"}
	tests := []struct {
		name     string
		field    string
		ready    bool
		extra    func(*objects.Set)
		policies []Policy
		want     []drift.Migration
	}{
		{"ready: the revision label goes", "Namespace labels istio.io/rev", true, nil,
			[]Policy{{From: "1-23-2", To: "ambient"}},
			[]drift.Migration{toAmbient("web", "1-23-2", []string{"istio.io/rev"}, ambientLabels)}},
		{"ready: istio-injection goes", "Namespace labels istio-injection", true, nil,
			[]Policy{{From: "default", To: "ambient"}},
			[]drift.Migration{toAmbient("legacy", "default", []string{"istio-injection"}, ambientLabels)}},
		{"with a waypoint", "migrations[].waypoint, Gateway waypoint status.conditions[Programmed]", true,
			func(s *objects.Set) { s.Gateways = []objects.Gateway{waypoint} },
			[]Policy{{From: "1-23-2", To: "ambient", Waypoint: "waypoint"}},
			[]drift.Migration{toAmbient("web", "1-23-2", []string{"istio.io/rev"}, map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"})}},
		{"waypoint not there yet", "migrations[].waypoint, no Gateway", true, nil,
			[]Policy{{From: "1-23-2", To: "ambient", Waypoint: "waypoint"}},
			[]drift.Migration{block(moving("web", "1-23-2", "ambient", ""), drift.BlockAmbientNotReady,
				"waypoint web/waypoint is not a Programmed istio-waypoint Gateway: create it before the namespace uses it")}},
		{"no ztunnel", "DaemonSet ztunnel", false, nil,
			[]Policy{{From: "1-23-2", To: "ambient"}},
			[]drift.Migration{block(moving("web", "1-23-2", "ambient", ""), drift.BlockAmbientNotReady,
				"no ztunnel DaemonSet: ambient mode is not installed; no istio-cni-config ConfigMap: istio-cni is not installed (or not where kedge reads Istio's ConfigMaps)")}},
		{"L7 policy without a waypoint", "AuthorizationPolicy rules[].to[].operation.methods, no Gateway", true,
			func(s *objects.Set) { s.AuthorizationPolicies = []objects.AuthorizationPolicy{l7} },
			[]Policy{{From: "1-23-2", To: "ambient"}},
			[]drift.Migration{block(moving("web", "1-23-2", "ambient", ""), drift.BlockAmbientNotReady,
				"AuthorizationPolicies with L7 rules need a waypoint, and namespace web has no Programmed istio-waypoint Gateway: get-only (to.operation.methods)")}},
		{"L7 policy with a Programmed waypoint", "Gateway status.conditions[Programmed]", true,
			func(s *objects.Set) {
				s.AuthorizationPolicies = []objects.AuthorizationPolicy{l7}
				s.Gateways = []objects.Gateway{waypoint}
			},
			[]Policy{{From: "1-23-2", To: "ambient", Waypoint: "waypoint"}},
			[]drift.Migration{toAmbient("web", "1-23-2", []string{"istio.io/rev"}, map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"})}},
		{"opted out", "the policy's optOutLabel", true,
			func(s *objects.Set) {
				s.Namespaces[0].Labels = map[string]string{"istio.io/rev": "1-23-2", "stay": "true"}
			},
			[]Policy{{From: "1-23-2", To: "ambient", OptOutLabel: "stay"}},
			[]drift.Migration{block(moving("web", "1-23-2", "ambient", ""), drift.BlockOptedOut, "label stay=true")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, model := world(canaryMesh(), web, legacy)
			set.Namespaces = append([]corev1.Namespace(nil), set.Namespaces...)
			if tt.ready {
				ambientReady(set)
			}
			if tt.extra != nil {
				tt.extra(set)
			}
			require.NoError(t, Validate(model, tt.policies))
			assert.Equal(t, tt.want, Select(set, model, tt.policies, Scope{}), "reads %s", tt.field)
		})
	}
}

// The plan of a namespace moving to ambient restarts its sidecar pods onto
// none: with the injection labels gone no injector answers it.
func TestAmbientDriftRemovesSidecars(t *testing.T) {
	set, model := world(canaryMesh(), namespace("web", map[string]string{"istio.io/rev": "1-23-2"}))
	ambientReady(set)
	addInjectedDeployment(set, "web", "api", "1-23-2", image123)
	migrations := Select(set, model, []Policy{{From: "1-23-2", To: "ambient"}}, Scope{})
	require.Len(t, migrations, 1)
	require.Empty(t, migrations[0].Blocked, migrations[0].Detail)

	moved := Relabel(set, migrations)
	assert.Equal(t, map[string]string{"istio.io/dataplane-mode": "ambient"}, moved.Namespaces[0].Labels)
	plan := drift.Compute(moved, model, drift.Options{})
	require.Len(t, plan.Workloads, 1)
	assert.Equal(t, []drift.Reason{drift.ReasonUnwantedSidecar}, plan.Workloads[0].Reasons)
	assert.Equal(t, drift.Desired{}, plan.Workloads[0].Desired)
}
