package cluster

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pods and ReplicaSets are the bulk of a snapshot, and kedge keeps a dozen
// of their fields. Decoding into these shapes instead of the full API types
// skips everything else without allocating it; what they keep is exactly
// what the trimmer reads, so the Set equals the one a full decode gives.

// wireMeta is the object metadata the pod and ReplicaSet caches keep.
type wireMeta struct {
	Name              string                  `json:"name"`
	Namespace         string                  `json:"namespace"`
	UID               types.UID               `json:"uid"`
	ResourceVersion   string                  `json:"resourceVersion"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
	Labels            map[string]string       `json:"labels"`
	Annotations       map[string]string       `json:"annotations"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
}

func (m *wireMeta) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences,
	}
}

type wireContainer struct {
	Name          string                         `json:"name"`
	Image         string                         `json:"image"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
}

func containers(in []wireContainer) []corev1.Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, RestartPolicy: c.RestartPolicy}
	}
	return out
}

type wirePod struct {
	Metadata wireMeta `json:"metadata"`
	Spec     struct {
		HostNetwork    bool            `json:"hostNetwork"`
		Containers     []wireContainer `json:"containers"`
		InitContainers []wireContainer `json:"initContainers"`
	} `json:"spec"`
	Status struct {
		Phase                 corev1.PodPhase       `json:"phase"`
		StartTime             *metav1.Time          `json:"startTime"`
		Conditions            []wireCondition       `json:"conditions"`
		ContainerStatuses     []wireContainerStatus `json:"containerStatuses"`
		InitContainerStatuses []wireContainerStatus `json:"initContainerStatuses"`
	} `json:"status"`
}

type wireCondition struct {
	Type               corev1.PodConditionType `json:"type"`
	Status             corev1.ConditionStatus  `json:"status"`
	LastTransitionTime metav1.Time             `json:"lastTransitionTime"`
}

func conditions(in []wireCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(in))
	for _, c := range in {
		out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
	}
	return out
}

type wireContainerStatus struct {
	Name         string `json:"name"`
	RestartCount int32  `json:"restartCount"`
	State        struct {
		Waiting *struct {
			Reason string `json:"reason"`
		} `json:"waiting"`
	} `json:"state"`
}

func containerStatuses(in []wireContainerStatus) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(in))
	for _, s := range in {
		cs := corev1.ContainerStatus{Name: s.Name, RestartCount: s.RestartCount}
		if s.State.Waiting != nil {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: s.State.Waiting.Reason}
		}
		out = append(out, cs)
	}
	return out
}

func decodePod(raw []byte, trim *trimmer) (corev1.Pod, error) {
	var w wirePod
	if err := json.Unmarshal(raw, &w); err != nil {
		return corev1.Pod{}, err
	}
	pod := corev1.Pod{
		ObjectMeta: w.Metadata.objectMeta(),
		Spec: corev1.PodSpec{
			HostNetwork:    w.Spec.HostNetwork,
			Containers:     containers(w.Spec.Containers),
			InitContainers: containers(w.Spec.InitContainers),
		},
		Status: corev1.PodStatus{
			Phase: w.Status.Phase, StartTime: w.Status.StartTime, Conditions: conditions(w.Status.Conditions),
			ContainerStatuses:     containerStatuses(w.Status.ContainerStatuses),
			InitContainerStatuses: containerStatuses(w.Status.InitContainerStatuses),
		},
	}
	return trim.trimPod(&pod).moved(), nil
}

type wireReplicaSet struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        wireMeta `json:"metadata"`
}

func decodeReplicaSet(raw []byte, trim *trimmer) (appsv1.ReplicaSet, error) {
	var w wireReplicaSet
	if err := json.Unmarshal(raw, &w); err != nil {
		return appsv1.ReplicaSet{}, err
	}
	rs := appsv1.ReplicaSet{ObjectMeta: w.Metadata.objectMeta()}
	out := trim.trimReplicaSet(&rs)
	out.TypeMeta = w.TypeMeta
	return *out, nil
}
