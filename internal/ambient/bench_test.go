package ambient

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// BenchmarkToAmbientFleet decides a move for every namespace of a fleet of
// 5,000 namespaces, 100,000 pods, 10,000 Services and 5,000 L7 policies,
// from one Cluster, as migrate.Select does.
func BenchmarkToAmbientFleet(b *testing.B) {
	set := newWorld().set
	set.Pods, set.Services, set.Gateways = nil, nil, nil
	var namespaces []string
	for n := range 5000 {
		ns := fmt.Sprintf("team-%04d", n)
		namespaces = append(namespaces, ns)
		for s := range 2 {
			app := fmt.Sprintf("app-%d", s)
			set.Services = append(set.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app}, ClusterIP: "10.0.0.1"}})
			for p := range 10 {
				set.Pods = append(set.Pods, &objects.Pod{Namespace: ns, Name: fmt.Sprintf("%s-%d", app, p), Labels: map[string]string{"app": app}, Phase: corev1.PodRunning})
			}
		}
		set.Gateways = append(set.Gateways, objects.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waypoint"}, Spec: objects.GatewaySpec{GatewayClassName: WaypointClass},
			Status: objects.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue}}}})
		set.AuthorizationPolicies = append(set.AuthorizationPolicies, authz(ns, "get-only", objects.AuthorizationPolicySpec{Selector: selectApp("app-0"), Rules: getOnly}))
	}
	labels := map[string]string{LabelDataplaneMode: ModeAmbient, LabelUseWaypoint: "waypoint"}
	for b.Loop() {
		c := NewCluster(set)
		for _, ns := range namespaces {
			if r := c.ToAmbient(Move{Namespace: ns, Labels: labels, RootNamespace: root}); len(r.Rewrites) != 1 {
				b.Fatalf("%s: %v", ns, r.Refusals)
			}
		}
	}
}
