package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// trimmedPod is what the pod cache holds for one pod: the metadata kedge
// reads and the few spec and status fields that decide drift. It is turned
// back into a corev1.Pod only when a Set is taken.
type trimmedPod struct {
	metav1.ObjectMeta
	Phase       corev1.PodPhase
	HostNetwork bool
	StartTime   metav1.Time
	Proxy       *trimmedProxy
}

// trimmedProxy is the istio-proxy container. Native says it runs as an init
// container with restartPolicy Always rather than as a regular container.
type trimmedProxy struct {
	Image  string
	Native bool
}

var _ runtime.Object = &trimmedPod{}

func (p *trimmedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (p *trimmedPod) DeepCopyObject() runtime.Object {
	out := &trimmedPod{Phase: p.Phase, HostNetwork: p.HostNetwork}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.StartTime.DeepCopyInto(&out.StartTime)
	if p.Proxy != nil {
		proxy := *p.Proxy
		out.Proxy = &proxy
	}
	return out
}

// pod returns the pod as a Set holds it; it shares nothing with the cache.
func (p *trimmedPod) pod() corev1.Pod {
	copied := *p
	p.ObjectMeta.DeepCopyInto(&copied.ObjectMeta)
	return copied.moved()
}

// moved returns the pod as a Set holds it, sharing p's maps and slices: for
// a trimmed pod that nothing else holds, as a snapshot's are.
func (p *trimmedPod) moved() corev1.Pod {
	out := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: p.ObjectMeta,
		Spec:       corev1.PodSpec{HostNetwork: p.HostNetwork},
		Status:     corev1.PodStatus{Phase: p.Phase},
	}
	if !p.StartTime.IsZero() {
		start := p.StartTime
		out.Status.StartTime = &start
	}
	if p.Proxy != nil {
		proxy := corev1.Container{Name: proxyContainerName, Image: p.Proxy.Image}
		if p.Proxy.Native {
			always := corev1.ContainerRestartPolicyAlways
			proxy.RestartPolicy = &always
			out.Spec.InitContainers = []corev1.Container{proxy}
		} else {
			out.Spec.Containers = []corev1.Container{proxy}
		}
	}
	return out
}
