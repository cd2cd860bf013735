package objects_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/objects"
)

const (
	image124 = "docker.io/istio/proxyv2:1.24.0"
	image125 = "docker.io/istio/proxyv2:1.25.0"
)

var (
	started = metav1.NewTime(time.Date(2026, 3, 1, 8, 0, 5, 0, time.UTC))
	always  = ptr.To(corev1.ContainerRestartPolicyAlways)
)

func TestPodOf(t *testing.T) {
	tests := []struct {
		name string
		pod  corev1.Pod
		want objects.Pod
	}{
		{
			name: "a regular istio-proxy container",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Image: "shop/cart:1"}, {Name: "istio-proxy", Image: image124},
			}}},
			want: objects.Pod{Proxy: &objects.PodProxy{Image: image124}},
		},
		{
			name: "a native sidecar",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "istio-init"}, {Name: "istio-proxy", Image: image124, RestartPolicy: always}},
				Containers:     []corev1.Container{{Name: "app"}},
			}},
			want: objects.Pod{Proxy: &objects.PodProxy{Image: image124, Native: true}},
		},
		{
			name: "an istio-proxy init container that runs to completion is no sidecar",
			pod:  corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "istio-proxy", Image: image124}}}},
			want: objects.Pod{},
		},
		{
			name: "a regular container wins over a native sidecar of the same name",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "istio-proxy", Image: image125, RestartPolicy: always}},
				Containers:     []corev1.Container{{Name: "istio-proxy", Image: image124}},
			}},
			want: objects.Pod{Proxy: &objects.PodProxy{Image: image124}},
		},
		{
			name: "status: Ready, the proxy's restarts in either list, waiting containers in order",
			pod: corev1.Pod{Status: corev1.PodStatus{
				Phase: corev1.PodRunning, StartTime: &started,
				Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: started},
				},
				ContainerStatuses: []corev1.ContainerStatus{
					{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
					{Name: "istio-proxy", RestartCount: 2},
				},
				InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "istio-proxy", RestartCount: 3},
					{Name: "migrate", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}},
				},
			}},
			want: objects.Pod{
				Phase: corev1.PodRunning, StartTime: started, Ready: corev1.ConditionFalse, ReadySince: started, ProxyRestarts: 3,
				Waiting: []objects.ContainerWaiting{{Container: "app", Reason: "CrashLoopBackOff"}, {Container: "migrate", Reason: "PodInitializing"}},
			},
		},
		{
			name: "metadata",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Name: "cart-1", Namespace: "shop", UID: "u1", ResourceVersion: "7", CreationTimestamp: started,
				Labels: map[string]string{"app": "cart"}, Annotations: map[string]string{"istio.io/rev": "1-24-0"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cart-5d"}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			}, Spec: corev1.PodSpec{HostNetwork: true, NodeName: "worker-1"}},
			want: objects.Pod{
				Name: "cart-1", Namespace: "shop", CreationTimestamp: started, HostNetwork: true,
				Labels: map[string]string{"app": "cart"}, Annotations: map[string]string{"istio.io/rev": "1-24-0"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cart-5d"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := objects.PodOf(&tt.pod)
			assert.Equal(t, tt.want, got)
			written := got.CoreV1()
			assert.Equal(t, got, objects.PodOf(&written), "the pod CoreV1 spells reads back the same")
		})
	}
}

func TestPodLiveAndController(t *testing.T) {
	yes, no := true, false
	deleted := metav1.Now()
	tests := []struct {
		name       string
		pod        objects.Pod
		live       bool
		controller string
	}{
		{name: "running, owned", live: true, controller: "cart-5d", pod: objects.Pod{Phase: corev1.PodRunning, OwnerReferences: []metav1.OwnerReference{
			{Name: "other", Controller: &no}, {Name: "cart-5d", Controller: &yes},
		}}},
		{name: "pending, an owner that is no controller", live: true, pod: objects.Pod{Phase: corev1.PodPending, OwnerReferences: []metav1.OwnerReference{{Name: "other"}}}},
		{name: "succeeded", pod: objects.Pod{Phase: corev1.PodSucceeded}},
		{name: "failed", pod: objects.Pod{Phase: corev1.PodFailed}},
		{name: "terminating", pod: objects.Pod{Phase: corev1.PodRunning, DeletionTimestamp: &deleted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.live, tt.pod.Live())
			if tt.controller == "" {
				assert.Nil(t, tt.pod.Controller())
			} else {
				assert.Equal(t, tt.controller, tt.pod.Controller().Name)
			}
		})
	}
}
