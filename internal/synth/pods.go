package synth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/mesh/meshtest"
)

// pod is one running pod as the API server serves it (without managed
// fields, as kubectl shows it): the template's containers, what the
// injector added, the service account volume and a full status.
func (b *clusterBuilder) pod(ns *namespaceModel, w *workloadModel, template corev1.PodTemplateSpec, owner metav1.OwnerReference, name string, extraLabels map[string]string, created time.Time) corev1.Pod {
	sc := ns.profile.sidecarOf(ns.drifted, ns.native)
	started := created.Add(time.Duration(b.rng.IntN(30*24*60)) * time.Minute)
	node := fmt.Sprintf("worker-%03d", b.rng.IntN(nodesInFleet))
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+b.rng.IntN(64), b.rng.IntN(256), 1+b.rng.IntN(254))
	hostIP := fmt.Sprintf("10.0.%d.%d", b.rng.IntN(2), 1+b.rng.IntN(254))
	tokenSuffix := randomString(b.rng, hashAlphabet, 5)

	p := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         ns.name,
			UID:               types.UID(randomUID(b.rng)),
			ResourceVersion:   fmt.Sprint(1000000 + b.rng.IntN(9000000)),
			CreationTimestamp: metav1.NewTime(started),
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
			OwnerReferences:   []metav1.OwnerReference{owner},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if owner.Kind == "ReplicaSet" {
		p.GenerateName = owner.Name + "-"
	}
	if w.kind == kindDaemonSet {
		p.GenerateName = w.name + "-"
	}
	for k, v := range template.Labels {
		p.Labels[k] = v
	}
	for k, v := range extraLabels {
		p.Labels[k] = v
	}
	if w.kind == kindStatefulSet {
		p.Labels["statefulset.kubernetes.io/pod-name"] = name
		p.Spec.Hostname, p.Spec.Subdomain = name, w.name
	}
	for k, v := range template.Annotations {
		p.Annotations[k] = v
	}
	meshtest.Admit(&p, node, tokenSuffix)
	if sc != nil {
		sc.Owner = meshtest.Owner{APIVersion: apiVersionOf(w.kind), Kind: w.kind, Name: w.name}
		meshtest.Inject(&p, *sc, fleetValues)
	}
	p.Status = podStatus(&p, started, podIP, hostIP, b.rng.Uint64())
	return p
}

// podStatus is a running, ready pod's status with a status for every
// container.
func podStatus(p *corev1.Pod, started time.Time, podIP, hostIP string, seed uint64) corev1.PodStatus {
	start := metav1.NewTime(started)
	ready := metav1.NewTime(started.Add(9 * time.Second))
	status := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: &start,
		QOSClass:  corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: start},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: start},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: ready},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: start},
		},
	}
	for i, c := range p.Spec.InitContainers {
		st := containerStatus(c, started, seed+uint64(i))
		if c.RestartPolicy == nil {
			st.Ready, st.Started = true, ptr.To(false)
			st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: start, ContainerID: st.ContainerID,
			}}
		}
		status.InitContainerStatuses = append(status.InitContainerStatuses, st)
	}
	for i, c := range p.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, containerStatus(c, started, seed+uint64(100+i)))
	}
	return status
}

// digestOf stands in for the registry digest of an image: the same for
// every pod running it.
func digestOf(image string) string {
	sum := sha256.Sum256([]byte(image))
	return hex.EncodeToString(sum[:])
}

func containerStatus(c corev1.Container, started time.Time, seed uint64) corev1.ContainerStatus {
	id := fmt.Sprintf("containerd://%016x%016x%016x%016x", seed, seed*0x9e3779b97f4a7c15, seed^0xdeadbeefcafe, seed*31)
	return corev1.ContainerStatus{
		Name:         c.Name,
		Image:        c.Image,
		ImageID:      c.Image + "@sha256:" + digestOf(c.Image),
		ContainerID:  id,
		Ready:        true,
		Started:      ptr.To(true),
		RestartCount: 0,
		State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started.Add(2 * time.Second))}},
	}
}
