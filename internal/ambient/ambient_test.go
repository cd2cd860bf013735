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

func cni(namespace, ambient string) corev1.ConfigMap {
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "istio-cni-config"}, Data: map[string]string{}}
	if ambient != "" {
		cm.Data["AMBIENT_ENABLED"] = ambient
	}
	return cm
}

func reasons(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Reason)
	}
	return out
}

// Each row names the field its answer turns on.
func TestClusterFindings(t *testing.T) {
	tests := []struct {
		name       string
		field      string
		daemonSets []*appsv1.DaemonSet
		configMaps []corev1.ConfigMap
		want       []string
	}{
		{"ready", "DaemonSet ztunnel status.numberReady, ConfigMap istio-cni-config data.AMBIENT_ENABLED",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, []corev1.ConfigMap{cni("istio-system", "true")}, nil},
		{"istio-cni in kube-system", "ConfigMap kube-system/istio-cni-config",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, []corev1.ConfigMap{cni("kube-system", "true")}, nil},
		{"no ztunnel", "DaemonSet ztunnel",
			nil, []corev1.ConfigMap{cni("istio-system", "true")}, []string{"no ztunnel DaemonSet: ambient mode is not installed"}},
		{"ztunnel not ready everywhere", "DaemonSet ztunnel status.numberReady",
			[]*appsv1.DaemonSet{ztunnel(3, 2)}, []corev1.ConfigMap{cni("istio-system", "true")}, []string{"ztunnel is ready on 2 of 3 nodes"}},
		{"ztunnel kept off a node", "DaemonSet ztunnel status.desiredNumberScheduled, Nodes",
			[]*appsv1.DaemonSet{ztunnel(2, 2)}, []corev1.ConfigMap{cni("istio-system", "true")}, []string{"ztunnel is ready on 2 of 3 nodes"}},
		{"istio-cni without ambient", "ConfigMap istio-cni-config data.AMBIENT_ENABLED",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, []corev1.ConfigMap{cni("kube-system", "false")}, []string{`istio-cni runs without ambient (AMBIENT_ENABLED="false")`}},
		{"no istio-cni", "ConfigMap istio-cni-config",
			[]*appsv1.DaemonSet{ztunnel(3, 3)}, nil, []string{"no istio-cni-config ConfigMap: istio-cni is not installed, or not in a namespace source.istioNamespaces lists"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := &objects.Set{Nodes: nodes(3), DaemonSets: tt.daemonSets, ConfigMaps: tt.configMaps}
			got := ClusterFindings(set)
			assert.Equal(t, tt.want, reasons(got), "reads %s", tt.field)
			for _, f := range got {
				assert.Equal(t, StepInstall, f.Step)
			}
		})
	}
}

// Without a Node list (a snapshot that has none), the DaemonSet's own
// status.desiredNumberScheduled stands for the nodes.
func TestClusterFindingsWithoutNodes(t *testing.T) {
	ready := &objects.Set{DaemonSets: []*appsv1.DaemonSet{ztunnel(2, 2)}, ConfigMaps: []corev1.ConfigMap{cni("istio-system", "true")}}
	assert.Empty(t, ClusterFindings(ready))
	partly := &objects.Set{DaemonSets: []*appsv1.DaemonSet{ztunnel(2, 1)}, ConfigMaps: []corev1.ConfigMap{cni("istio-system", "true")}}
	assert.Equal(t, []Finding{{Object: Ref{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}, Field: "status.numberReady", Step: StepInstall,
		Reason: "ztunnel is ready on 1 of 2 nodes"}}, ClusterFindings(partly))
	nowhere := &objects.Set{DaemonSets: []*appsv1.DaemonSet{ztunnel(0, 0)}, ConfigMaps: []corev1.ConfigMap{cni("istio-system", "true")}}
	assert.Len(t, ClusterFindings(nowhere), 1, "scheduled on no node")
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
