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
	// Ready is the Ready condition's status, ReadySince its
	// lastTransitionTime: a rollout wave's health gate reads them.
	Ready      corev1.ConditionStatus
	ReadySince metav1.Time
	// Stuck is the first container waiting for a reason that does not
	// clear on its own (see waves.StuckReason); nil almost always.
	Stuck *trimmedWaiting
}

// trimmedWaiting is a container's state.waiting.
type trimmedWaiting struct {
	Container, Reason string
}

// trimmedProxy is the istio-proxy container. Native says it runs as an init
// container with restartPolicy Always rather than as a regular container.
type trimmedProxy struct {
	Image    string
	Native   bool
	Restarts int32
}

var _ runtime.Object = &trimmedPod{}

func (p *trimmedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (p *trimmedPod) DeepCopyObject() runtime.Object {
	out := &trimmedPod{Phase: p.Phase, HostNetwork: p.HostNetwork, Ready: p.Ready}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.StartTime.DeepCopyInto(&out.StartTime)
	p.ReadySince.DeepCopyInto(&out.ReadySince)
	if p.Proxy != nil {
		proxy := *p.Proxy
		out.Proxy = &proxy
	}
	if p.Stuck != nil {
		stuck := *p.Stuck
		out.Stuck = &stuck
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
	if p.Ready != "" {
		out.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: p.Ready, LastTransitionTime: p.ReadySince}}
	}
	if p.Proxy != nil {
		proxy := corev1.Container{Name: proxyContainerName, Image: p.Proxy.Image}
		// Only restarts are read of the proxy's status; a status that
		// would say nothing else is left out.
		var statuses []corev1.ContainerStatus
		if p.Proxy.Restarts > 0 {
			statuses = []corev1.ContainerStatus{{Name: proxyContainerName, RestartCount: p.Proxy.Restarts}}
		}
		if p.Proxy.Native {
			always := corev1.ContainerRestartPolicyAlways
			proxy.RestartPolicy = &always
			out.Spec.InitContainers = []corev1.Container{proxy}
			out.Status.InitContainerStatuses = statuses
		} else {
			out.Spec.Containers = []corev1.Container{proxy}
			out.Status.ContainerStatuses = statuses
		}
	}
	if p.Stuck != nil {
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: p.Stuck.Container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: p.Stuck.Reason}},
		})
	}
	return out
}
