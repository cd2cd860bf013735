package objects

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// proxyContainerName is the container Istio's injector adds; the name is
// Istio's, not kedge's choice.
const proxyContainerName = "istio-proxy"

// Pod is what kedge reads of a pod. Pods are the bulk of a cluster, and a
// corev1.Pod value alone is over a kilobyte before its maps and slices, so
// the Set holds this instead: identity, ownership, the labels and
// annotations injection decides on, where the sidecar runs, and the few
// status fields a rollout wave's health gate reads.
type Pod struct {
	Name      string
	Namespace string
	// Labels and Annotations may be shared with other pods (the replicas
	// of a workload): like every value of a Set, they are never written.
	Labels            map[string]string
	Annotations       map[string]string
	OwnerReferences   []metav1.OwnerReference
	CreationTimestamp metav1.Time
	DeletionTimestamp *metav1.Time
	// StartTime is status.startTime; zero before the kubelet started it.
	StartTime metav1.Time
	Phase     corev1.PodPhase
	// Ready is the status of the Ready condition ("" without one),
	// ReadySince its lastTransitionTime.
	Ready      corev1.ConditionStatus
	ReadySince metav1.Time
	// Proxy is the istio-proxy container the pod runs; nil without one.
	Proxy *PodProxy
	// ProxyRestarts is the istio-proxy container's restartCount.
	ProxyRestarts int32
	HostNetwork   bool
	// Waiting are the containers waiting to run, regular then init ones,
	// with their reasons; nil almost always.
	Waiting []ContainerWaiting
}

// PodProxy is the pod's istio-proxy container. Native says it runs as an
// init container with restartPolicy Always (a native sidecar) rather than
// as a regular container.
type PodProxy struct {
	Image  string
	Native bool
}

// ContainerWaiting is a container's state.waiting.
type ContainerWaiting struct {
	Container, Reason string
}

// Live tells a pod that is neither terminating nor finished.
func (p *Pod) Live() bool {
	return p.DeletionTimestamp == nil && p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed
}

// Controller returns the owner reference that manages the pod, nil when
// none does, as metav1.GetControllerOf reads it.
func (p *Pod) Controller() *metav1.OwnerReference {
	for i := range p.OwnerReferences {
		if ref := &p.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			return ref
		}
	}
	return nil
}

// PodOf returns what kedge reads of p. The result shares p's maps and
// owner references: a Set's values are never written.
func PodOf(p *corev1.Pod) Pod {
	out := Pod{
		Name:              p.Name,
		Namespace:         p.Namespace,
		Labels:            p.Labels,
		Annotations:       p.Annotations,
		OwnerReferences:   p.OwnerReferences,
		CreationTimestamp: p.CreationTimestamp,
		DeletionTimestamp: p.DeletionTimestamp,
		Phase:             p.Status.Phase,
		HostNetwork:       p.Spec.HostNetwork,
	}
	if p.Status.StartTime != nil {
		out.StartTime = *p.Status.StartTime
	}
	for _, c := range p.Spec.Containers {
		out.AddContainer(c.Name, c.Image, false, c.RestartPolicy)
	}
	for _, c := range p.Spec.InitContainers {
		out.AddContainer(c.Name, c.Image, true, c.RestartPolicy)
	}
	for _, c := range p.Status.Conditions {
		out.AddCondition(c.Type, c.Status, c.LastTransitionTime)
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, s := range statuses {
			if w := s.State.Waiting; w != nil {
				out.AddContainerStatus(s.Name, s.RestartCount, true, w.Reason)
			} else {
				out.AddContainerStatus(s.Name, s.RestartCount, false, "")
			}
		}
	}
	return out
}

// Pods converts pods with PodOf, for callers holding full pods (tests,
// generated clusters).
func Pods(pods ...corev1.Pod) []*Pod {
	if pods == nil {
		return nil
	}
	out := make([]*Pod, len(pods))
	for i := range pods {
		p := PodOf(&pods[i])
		out[i] = &p
	}
	return out
}

// AddContainer records one container of the pod's spec, init says of
// spec.initContainers. Only the istio-proxy container is kept: a regular
// one, or else an init container running as a native sidecar
// (restartPolicy Always). A decoder that reads no corev1.Pod calls it as
// PodOf does, so both keep the same.
func (p *Pod) AddContainer(name, image string, init bool, restartPolicy *corev1.ContainerRestartPolicy) {
	if name != proxyContainerName {
		return
	}
	switch {
	case !init && (p.Proxy == nil || p.Proxy.Native):
		p.Proxy = &PodProxy{Image: image}
	case init && p.Proxy == nil && isNativeSidecar(restartPolicy):
		p.Proxy = &PodProxy{Image: image, Native: true}
	}
}

// AddCondition records one of status.conditions; only Ready is kept.
func (p *Pod) AddCondition(typ corev1.PodConditionType, status corev1.ConditionStatus, since metav1.Time) {
	if typ == corev1.PodReady {
		p.Ready, p.ReadySince = status, since
	}
}

// AddContainerStatus records one container status, regular ones before
// init ones: the istio-proxy container's restarts, and whether the
// container waits and why.
func (p *Pod) AddContainerStatus(name string, restarts int32, waiting bool, reason string) {
	if name == proxyContainerName {
		p.ProxyRestarts = max(p.ProxyRestarts, restarts)
	}
	if waiting {
		p.Waiting = append(p.Waiting, ContainerWaiting{Container: name, Reason: reason})
	}
}

// isNativeSidecar tells an init container's restartPolicy that makes it
// run beside the regular containers.
func isNativeSidecar(policy *corev1.ContainerRestartPolicy) bool {
	return policy != nil && *policy == corev1.ContainerRestartPolicyAlways
}

// CoreV1 spells the pod as the API would, holding only what Pod holds, for
// writing it out: PodOf of the result equals p. The result shares p's maps.
func (p *Pod) CoreV1() corev1.Pod {
	out := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations,
			OwnerReferences: p.OwnerReferences, CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec:   corev1.PodSpec{HostNetwork: p.HostNetwork},
		Status: corev1.PodStatus{Phase: p.Phase},
	}
	if !p.StartTime.IsZero() {
		start := p.StartTime
		out.Status.StartTime = &start
	}
	if p.Ready != "" {
		out.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: p.Ready, LastTransitionTime: p.ReadySince}}
	}
	proxyStatuses := &out.Status.ContainerStatuses
	if p.Proxy != nil {
		proxy := corev1.Container{Name: proxyContainerName, Image: p.Proxy.Image}
		if p.Proxy.Native {
			always := corev1.ContainerRestartPolicyAlways
			proxy.RestartPolicy = &always
			out.Spec.InitContainers = []corev1.Container{proxy}
			proxyStatuses = &out.Status.InitContainerStatuses
		} else {
			out.Spec.Containers = []corev1.Container{proxy}
		}
	}
	// Only restarts are read of the proxy's status; a status that would
	// say nothing else is left out.
	if p.ProxyRestarts > 0 {
		*proxyStatuses = append(*proxyStatuses, corev1.ContainerStatus{Name: proxyContainerName, RestartCount: p.ProxyRestarts})
	}
	for _, w := range p.Waiting {
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: w.Container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason}},
		})
	}
	return out
}
