package demodata

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// Everything that looks random in a real cluster (uids, hashes, pod name
// suffixes, IPs) is derived from the object's identity, so regenerating the
// snapshot gives the same bytes.

var uidNamespace = uuid.MustParse("6f1e4d2a-0c7b-4e59-9a3d-5b8f2c1e7a60")

func uidFor(kind, namespace, name string) string {
	return uuid.NewSHA1(uidNamespace, []byte(clusterName+"/"+kind+"/"+namespace+"/"+name)).String()
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// resourceVersionFor spreads resource versions over a plausible range of a
// long-lived etcd.
func resourceVersionFor(kind, namespace, name string) string {
	return fmt.Sprint(48_000_000 + fnv32(kind+"/"+namespace+"/"+name)%3_000_000)
}

// suffix is a pod-name-like suffix: n characters of the alphabet the API
// server's generateName uses.
func suffix(seed string, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := sha256.Sum256([]byte(seed))
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[int(h[i])%len(alphabet)]
	}
	return string(out)
}

// templateHash is the pod-template-hash / controller-revision-hash of a pod
// template, in the same alphabet and length range the controllers use.
func templateHash(t corev1.PodTemplateSpec) string {
	data, _ := json.Marshal(t)
	return rand.SafeEncodeString(fmt.Sprint(fnv32(string(data))))
}

func hexDigest(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])
}

func imageID(image string) string {
	repo := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo = image[:i]
	}
	return repo + "@sha256:" + hexDigest("image "+image)
}

func ts(t time.Time) metav1.Time { return metav1.NewTime(t) }

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// node is a worker node of the demo cluster.
type node struct {
	Name   string
	IP     string
	Subnet string // first three octets of the pod CIDR on this node
}

var nodes = []node{
	{Name: "ip-10-40-11-87.eu-west-1.compute.internal", IP: "10.40.11.87", Subnet: "10.40.12"},
	{Name: "ip-10-40-45-203.eu-west-1.compute.internal", IP: "10.40.45.203", Subnet: "10.40.46"},
	{Name: "ip-10-40-78-14.eu-west-1.compute.internal", IP: "10.40.78.14", Subnet: "10.40.79"},
}

// objectMeta is the metadata the API server keeps for a stored object.
func objectMeta(kind, namespace, name string, created time.Time, generation int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         namespace,
		UID:               ktypes.UID(uidFor(kind, namespace, name)),
		ResourceVersion:   resourceVersionFor(kind, namespace, name),
		Generation:        generation,
		CreationTimestamp: ts(created),
	}
}

// podPlacement is where and when a pod runs.
type podPlacement struct {
	Node    node
	IP      string
	Started time.Time
}

// placer hands out nodes and pod IPs.
type placer struct {
	used map[string]int
}

func (p *placer) place(podKey string, nodeIndex int, started time.Time) podPlacement {
	if p.used == nil {
		p.used = map[string]int{}
	}
	if nodeIndex < 0 {
		nodeIndex = int(fnv32(podKey) % uint32(len(nodes)))
	}
	n := nodes[nodeIndex]
	p.used[n.Name]++
	return podPlacement{Node: n, IP: fmt.Sprintf("%s.%d", n.Subnet, 10+p.used[n.Name]*3), Started: started}
}

// finishPod writes the status the kubelet reports for a pod that started at
// at.Started and is running (or, with succeeded, has completed).
func finishPod(pod *corev1.Pod, at podPlacement, succeeded bool) {
	start := at.Started
	ready := start.Add(6 * time.Second)
	condStatus := corev1.ConditionTrue
	if succeeded {
		condStatus = corev1.ConditionFalse
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus, when time.Time, reason string) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: ts(when), Reason: reason}
	}
	completedReason := ""
	if succeeded {
		completedReason = "PodCompleted"
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers", condStatus, start.Add(2*time.Second), ""),
			cond(corev1.PodInitialized, corev1.ConditionTrue, start.Add(3*time.Second), completedReason),
			cond(corev1.PodReady, condStatus, ready, completedReason),
			cond(corev1.ContainersReady, condStatus, ready, completedReason),
			cond(corev1.PodScheduled, corev1.ConditionTrue, start, ""),
		},
		HostIP:    at.Node.IP,
		HostIPs:   []corev1.HostIP{{IP: at.Node.IP}},
		PodIP:     at.IP,
		PodIPs:    []corev1.PodIP{{IP: at.IP}},
		StartTime: ptr.To(ts(start)),
		QOSClass:  qosClass(pod.Spec),
	}
	if succeeded {
		pod.Status.Phase = corev1.PodSucceeded
	}
	finished := start.Add(4 * time.Minute)
	containerStatus := func(c corev1.Container, init bool) corev1.ContainerStatus {
		st := corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     imageID(c.Image),
			ContainerID: "containerd://" + hexDigest(string(pod.UID)+"/"+c.Name),
			Ready:       !succeeded,
			Started:     ptr.To(!succeeded),
		}
		runsToCompletion := init && c.RestartPolicy == nil
		switch {
		case runsToCompletion:
			st.Ready = false
			st.Started = ptr.To(false)
			st.State.Terminated = &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", ContainerID: st.ContainerID,
				StartedAt: ts(start.Add(2 * time.Second)), FinishedAt: ts(start.Add(2 * time.Second)),
			}
		case succeeded:
			st.State.Terminated = &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", ContainerID: st.ContainerID,
				StartedAt: ts(start.Add(3 * time.Second)), FinishedAt: ts(finished),
			}
		default:
			st.State.Running = &corev1.ContainerStateRunning{StartedAt: ts(start.Add(3 * time.Second))}
		}
		return st
	}
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, containerStatus(c, true))
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, containerStatus(c, false))
	}
}

func qosClass(s corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range append(append([]corev1.Container{}, s.InitContainers...), s.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, ok := c.Resources.Limits[r]
			if !ok {
				guaranteed = false
				continue
			}
			if q, ok := c.Resources.Requests[r]; ok && q.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

func intOrPercent(s string) *intstr.IntOrString {
	v := intstr.FromString(s)
	return &v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
