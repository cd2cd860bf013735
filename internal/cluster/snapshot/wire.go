package snapshot

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/objects"
)

// Pods and ReplicaSets are the bulk of a snapshot, and kedge keeps a dozen
// of their fields. Decoding into these shapes instead of the full API types
// skips everything else without allocating it; what they keep is exactly
// what trim.Trimmer reads, so the Set equals the one a full decode gives.

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

// wirePodMeta is the pod metadata a Set keeps: no UID or resourceVersion,
// which only the informer's cache tracks pods by.
type wirePodMeta struct {
	Name              string                  `json:"name"`
	Namespace         string                  `json:"namespace"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
	Labels            map[string]string       `json:"labels"`
	Annotations       map[string]string       `json:"annotations"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
}

type wirePod struct {
	Metadata wirePodMeta `json:"metadata"`
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

type wireContainerStatus struct {
	Name         string `json:"name"`
	RestartCount int32  `json:"restartCount"`
	State        struct {
		Waiting *struct {
			Reason string `json:"reason"`
		} `json:"waiting"`
	} `json:"state"`
}

// decodePod reads a pod straight into what a Set holds, through the same
// objects.Pod methods objects.PodOf reads a corev1.Pod with.
func decodePod(raw []byte, tr *trim.Trimmer) (*objects.Pod, error) {
	var w wirePod
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	m := &w.Metadata
	pod := objects.Pod{
		Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		Phase: w.Status.Phase, HostNetwork: w.Spec.HostNetwork,
	}
	if w.Status.StartTime != nil {
		pod.StartTime = *w.Status.StartTime
	}
	for _, c := range w.Spec.Containers {
		pod.AddContainer(c.Name, c.Image, false, c.RestartPolicy)
	}
	for _, c := range w.Spec.InitContainers {
		pod.AddContainer(c.Name, c.Image, true, c.RestartPolicy)
	}
	for _, c := range w.Status.Conditions {
		pod.AddCondition(c.Type, c.Status, c.LastTransitionTime)
	}
	for _, statuses := range [][]wireContainerStatus{w.Status.ContainerStatuses, w.Status.InitContainerStatuses} {
		for _, s := range statuses {
			if waiting := s.State.Waiting; waiting != nil {
				pod.AddContainerStatus(s.Name, s.RestartCount, true, waiting.Reason)
			} else {
				pod.AddContainerStatus(s.Name, s.RestartCount, false, "")
			}
		}
	}
	interned := tr.InternPod(pod)
	return &interned, nil
}

type wireReplicaSet struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        wireMeta `json:"metadata"`
}

func decodeReplicaSet(raw []byte, tr *trim.Trimmer) (*objects.ReplicaSet, error) {
	var w wireReplicaSet
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	rs := appsv1.ReplicaSet{ObjectMeta: w.Metadata.objectMeta()}
	out := tr.ReplicaSet(&rs)
	out.TypeMeta = w.TypeMeta
	return &out, nil
}

// decodeNode reads a node as the cache keeps it.
func decodeNode(raw []byte, _ *trim.Trimmer) (corev1.Node, error) {
	var n corev1.Node
	if err := json.Unmarshal(raw, &n); err != nil {
		return corev1.Node{}, err
	}
	return *trim.Node(&n), nil
}
