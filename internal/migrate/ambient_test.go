package migrate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/ambient"
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

// Each row names what the decision reads. internal/ambient's decision
// table has a row per requirement of Istio's guide; these check that a
// migration takes its decision, labels and findings from it.
func TestSelectToAmbient(t *testing.T) {
	web := namespace("web", map[string]string{"istio.io/rev": "1-23-2", "team": "web"})
	legacy := namespace("legacy", map[string]string{"istio-injection": "enabled"})
	l7 := objects.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "get-only"}, Spec: objects.AuthorizationPolicySpec{
		Selector: &objects.WorkloadSelector{MatchLabels: map[string]string{"app": "api"}},
		Rules:    []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}}}}}},
	}}
	api := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "api"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}}}
	waypoint := objects.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "waypoint"}, Spec: objects.GatewaySpec{GatewayClassName: "istio-waypoint"},
		Status: objects.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue}}}}
	ambientLabels := map[string]string{"istio.io/dataplane-mode": "ambient"}
	withWaypoint := map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}
	tests := []struct {
		name     string
		field    string
		ready    bool
		extra    func(*objects.Set)
		policies []Policy
		want     []drift.Migration
		// refused are the objects Ambient lists.
		refused []string
	}{
		{"ready: the revision label goes", "Namespace labels istio.io/rev", true, nil,
			[]Policy{{From: "1-23-2", To: "ambient"}},
			[]drift.Migration{toAmbient("web", "1-23-2", []string{"istio.io/rev"}, ambientLabels)}, nil},
		{"ready: istio-injection goes", "Namespace labels istio-injection", true, nil,
			[]Policy{{From: "default", To: "ambient"}},
			[]drift.Migration{toAmbient("legacy", "default", []string{"istio-injection"}, ambientLabels)}, nil},
		{"with a waypoint", "migrations[].waypoint, Gateway waypoint status.conditions[Programmed]", true,
			func(s *objects.Set) { s.Gateways = []objects.Gateway{waypoint} },
			[]Policy{{From: "1-23-2", To: "ambient", Waypoint: "waypoint"}},
			[]drift.Migration{toAmbient("web", "1-23-2", []string{"istio.io/rev"}, withWaypoint)}, nil},
		{"waypoint not there yet", "migrations[].waypoint, no Gateway", true, nil,
			[]Policy{{From: "1-23-2", To: "ambient", Waypoint: "waypoint"}},
			nil, []string{"Namespace web"}},
		{"no ztunnel", "DaemonSet ztunnel", false, nil,
			[]Policy{{From: "1-23-2", To: "ambient"}},
			nil, []string{"DaemonSet ztunnel", "ConfigMap istio-cni-config"}},
		{"L7 policy by selector without a waypoint", "AuthorizationPolicy spec.selector, spec.rules[].to[].operation.methods", true,
			func(s *objects.Set) {
				s.AuthorizationPolicies = []objects.AuthorizationPolicy{l7}
				s.Services = []corev1.Service{api}
			},
			[]Policy{{From: "1-23-2", To: "ambient"}},
			nil, []string{"AuthorizationPolicy web/get-only"}},
		{"L7 policy by selector while a Programmed waypoint nothing uses exists", "AuthorizationPolicy spec.selector, Gateway status.conditions[Programmed]", true,
			func(s *objects.Set) {
				s.AuthorizationPolicies = []objects.AuthorizationPolicy{l7}
				s.Services = []corev1.Service{api}
				s.Gateways = []objects.Gateway{waypoint}
			},
			[]Policy{{From: "1-23-2", To: "ambient"}},
			nil, []string{"AuthorizationPolicy web/get-only"}},
		{"L7 policy by selector carried over to the namespace's waypoint", "AuthorizationPolicy spec.selector, Service api spec.selector, migrations[].waypoint", true,
			func(s *objects.Set) {
				s.AuthorizationPolicies = []objects.AuthorizationPolicy{l7}
				s.Services = []corev1.Service{api}
				s.Gateways = []objects.Gateway{waypoint}
			},
			[]Policy{{From: "1-23-2", To: "ambient", Waypoint: "waypoint"}},
			[]drift.Migration{carrying(toAmbient("web", "1-23-2", []string{"istio.io/rev"}, withWaypoint), "AuthorizationPolicy web/get-only")}, nil},
		{"opted out", "the policy's optOutLabel", true,
			func(s *objects.Set) {
				s.Namespaces[0].Labels = map[string]string{"istio.io/rev": "1-23-2", "stay": "true"}
			},
			[]Policy{{From: "1-23-2", To: "ambient", OptOutLabel: "stay"}},
			[]drift.Migration{block(moving("web", "1-23-2", "ambient", ""), drift.BlockOptedOut, "label stay=true")}, nil},
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
			got := Select(set, model, tt.policies, Scope{})
			if tt.refused == nil {
				for i := range got {
					for j := range got[i].Carried {
						got[i].Carried[j] = ambient.Finding{Object: got[i].Carried[j].Object}
					}
				}
				assert.Equal(t, tt.want, got, "reads %s", tt.field)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, drift.BlockAmbientNotReady, got[0].Blocked, "reads %s", tt.field)
			assert.Equal(t, ambient.Describe(got[0].Ambient), got[0].Detail)
			assert.Nil(t, got[0].RemoveLabels, "a blocked move changes no label")
			var refused []string
			for _, f := range got[0].Ambient {
				refused = append(refused, f.Object.String())
			}
			assert.Equal(t, tt.refused, refused)
		})
	}
}

func carrying(m drift.Migration, objects ...string) drift.Migration {
	for _, o := range objects {
		kind, name, _ := strings.Cut(o, " ")
		ns, n, _ := strings.Cut(name, "/")
		m.Carried = append(m.Carried, ambient.Finding{Object: ambient.Ref{Kind: kind, Namespace: ns, Name: n}})
	}
	return m
}

// The way back: from: ambient (or the forward policy's to: turned into
// sidecar) selects the namespaces in ambient mode, takes the ambient
// labels off and puts istio.io/rev back.
func TestSelectBackToSidecars(t *testing.T) {
	inAmbient := namespace("web", map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint", "team": "web"})
	sidecars := namespace("legacy", map[string]string{"istio.io/rev": "1-23-2"})
	back := drift.Migration{Namespace: "web", From: "ambient", To: "prod", Revision: "1-24-0",
		RemoveLabels: []string{"istio.io/dataplane-mode", "istio.io/use-waypoint"}, Workloads: []drift.MigrationWorkload{}}
	tests := []struct {
		name     string
		policies []Policy
		extra    func(*objects.Set)
		want     []drift.Migration
	}{
		{"from: ambient", []Policy{{From: "ambient", To: "prod"}}, nil, []drift.Migration{back}},
		{"to: sidecar", []Policy{{From: "prod", To: "sidecar"}}, nil, []drift.Migration{back}},
		{"a policy attached to the waypoint", []Policy{{From: "ambient", To: "prod"}}, func(s *objects.Set) {
			s.AuthorizationPolicies = []objects.AuthorizationPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "get-only"},
				Spec: objects.AuthorizationPolicySpec{TargetRefs: []objects.PolicyTargetReference{{Kind: "Service", Name: "api"}}}}}
		}, []drift.Migration{func() drift.Migration {
			m := block(back, drift.BlockSidecarNotReady, "")
			m.RemoveLabels = nil
			m.Ambient = ambient.ToSidecar(&objects.Set{AuthorizationPolicies: []objects.AuthorizationPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "get-only"},
				Spec: objects.AuthorizationPolicySpec{TargetRefs: []objects.PolicyTargetReference{{Kind: "Service", Name: "api"}}}}}}, ambient.Move{Namespace: "web"}).Refusals
			m.Detail = ambient.Describe(m.Ambient)
			return m
		}()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, model := world(canaryMesh(), inAmbient, sidecars)
			if tt.extra != nil {
				tt.extra(set)
			}
			require.NoError(t, Validate(model, tt.policies))
			assert.Equal(t, tt.want, Select(set, model, tt.policies, Scope{}))
		})
	}

	_, model := world(canaryMesh())
	var policyErr *PolicyError
	require.ErrorAs(t, Validate(model, []Policy{{Key: "migrations[0]", From: "ambient", To: "sidecar"}}), &policyErr)
	assert.Equal(t, "migrations[0].from", policyErr.Key)
	require.ErrorAs(t, Validate(model, []Policy{{Key: "migrations[0]", From: "1-99-0", To: "sidecar"}}), &policyErr)
	assert.Equal(t, "migrations[0].from", policyErr.Key)
}

// The way back restarts every workload of the namespace onto the target
// revision: with istio.io/rev back, its webhook injects the new pods.
func TestBackToSidecarsRestartsOntoTheRevision(t *testing.T) {
	set, model := world(canaryMesh(), namespace("web", map[string]string{"istio.io/dataplane-mode": "ambient"}))
	addInjectedDeployment(set, "web", "api", "1-24-0", image124)
	for i, p := range set.Pods {
		bare := *p
		bare.Proxy, bare.Annotations = nil, map[string]string{"ambient.istio.io/redirection": "enabled"}
		set.Pods[i] = &bare
	}
	migrations := Select(set, model, []Policy{{From: "ambient", To: "1-24-0"}}, Scope{})
	require.Len(t, migrations, 1)
	require.Empty(t, migrations[0].Blocked, migrations[0].Detail)
	moved := Relabel(set, migrations)
	assert.Equal(t, map[string]string{"istio.io/rev": "1-24-0"}, moved.Namespaces[0].Labels)
	plan := drift.Compute(moved, model, drift.Options{})
	require.Len(t, plan.Workloads, 1)
	assert.Equal(t, []drift.Reason{drift.ReasonMissingSidecar}, plan.Workloads[0].Reasons)
	assert.Equal(t, drift.Desired{Revision: "1-24-0", Image: image124}, plan.Workloads[0].Desired)
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
