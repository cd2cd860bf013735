package trim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSamePodIgnoresWhatKedgeDoesNotRead: the kubelet rewrites a pod's
// status for much kedge drops when it trims the pod; such an update leaves
// the Set as it was, and any change to what kedge reads does not.
func TestSamePodIgnoresWhatKedgeDoesNotRead(t *testing.T) {
	trimmed := func(mutate func(*corev1.Pod)) *CachedPod {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "p1", ResourceVersion: "10", Labels: map[string]string{"app": "web"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		mutate(pod)
		return New().Pod(pod)
	}
	base := trimmed(func(*corev1.Pod) {})
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		same   bool
	}{
		{"a new resourceVersion and pod IP only", func(p *corev1.Pod) { p.ResourceVersion = "11"; p.Status.PodIP = "10.0.0.2" }, true},
		{"a new label", func(p *corev1.Pod) {
			p.ResourceVersion = "11"
			p.Labels = map[string]string{"app": "web", "tier": "front"}
		}, false},
		{"no longer ready", func(p *corev1.Pod) {
			p.ResourceVersion = "11"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		}, false},
		{"another pod under the same name", func(p *corev1.Pod) { p.UID = "p2" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.same, SamePod(base, trimmed(tt.mutate)))
		})
	}
	assert.False(t, SamePod(base, "shop"), "not a pod")
}
