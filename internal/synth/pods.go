package synth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	tokenVolume := "kube-api-access-" + randomString(b.rng, hashAlphabet, 5)

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
	p.Spec.NodeName = node
	p.Spec.ServiceAccountName = w.name
	p.Spec.DeprecatedServiceAccount = w.name
	p.Spec.Priority = ptr.To[int32](0)
	p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	p.Spec.EnableServiceLinks = ptr.To(true)
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	p.Spec.Volumes = append(p.Spec.Volumes, serviceAccountVolume(tokenVolume))
	mount := corev1.VolumeMount{Name: tokenVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts, mount)
	}
	if sc.present {
		inject(&p, ns, w, sc, mount)
	}
	p.Status = podStatus(&p, started, podIP, hostIP, b.rng.Uint64())
	return p
}

func serviceAccountVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](420),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// inject adds what Istio's sidecar injection template adds: the
// annotations and labels, istio-init, istio-proxy (classic or native), its
// volumes, and the probe rewrite.
func inject(p *corev1.Pod, ns *namespaceModel, w *workloadModel, sc sidecar, mount corev1.VolumeMount) {
	p.Annotations["sidecar.istio.io/status"] = meshtest.SidecarStatus(sc.revision, sc.native)
	p.Annotations["istio.io/rev"] = sc.revision
	p.Annotations["kubectl.kubernetes.io/default-container"] = w.name
	p.Annotations["kubectl.kubernetes.io/default-logs-container"] = w.name
	p.Annotations["prometheus.io/path"] = "/stats/prometheus"
	p.Annotations["prometheus.io/port"] = "15020"
	p.Labels["security.istio.io/tlsMode"] = "istio"
	p.Labels["service.istio.io/canonical-name"] = w.name
	p.Labels["service.istio.io/canonical-revision"] = p.Labels["version"]

	istiod := "istiod"
	if sc.revision != defaultRevision {
		istiod += "-" + sc.revision
	}
	proxyResources := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40Mi")},
	}
	security := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		RunAsGroup: ptr.To[int64](1337), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1337),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	limit := func(res string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res, Divisor: resource.MustParse("0")}}
	}
	initC := corev1.Container{
		Name:  "istio-init",
		Image: sc.image,
		Args: []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "",
			"-b", "*", "-d", "15090,15021,15020", "--log_output_level=default:info"},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Resources:                proxyResources,
		SecurityContext:          security,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		VolumeMounts:             []corev1.VolumeMount{mount},
	}
	proxy := corev1.Container{
		Name:  "istio-proxy",
		Image: sc.image,
		Args: []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local",
			"--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"},
		Env: []corev1.EnvVar{
			{Name: "PILOT_CERT_PROVIDER", Value: "istiod"},
			{Name: "CA_ADDR", Value: istiod + ".istio-system.svc:15012"},
			{Name: "POD_NAME", ValueFrom: field("metadata.name")},
			{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "INSTANCE_IP", ValueFrom: field("status.podIP")},
			{Name: "SERVICE_ACCOUNT", ValueFrom: field("spec.serviceAccountName")},
			{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
			{Name: "ISTIO_CPU_LIMIT", ValueFrom: limit("limits.cpu")},
			{Name: "PROXY_CONFIG", Value: "{}\n"},
			{Name: "ISTIO_META_POD_PORTS", Value: "[\n    {\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}\n    ,{\"name\":\"metrics\",\"containerPort\":9090,\"protocol\":\"TCP\"}\n]"},
			{Name: "ISTIO_META_APP_CONTAINERS", Value: w.name},
			{Name: "GOMEMLIMIT", ValueFrom: limit("limits.memory")},
			{Name: "GOMAXPROCS", ValueFrom: limit("limits.cpu")},
			{Name: "ISTIO_META_CLUSTER_ID", Value: "Kubernetes"},
			{Name: "ISTIO_META_NODE_NAME", ValueFrom: field("spec.nodeName")},
			{Name: "ISTIO_META_INTERCEPTION_MODE", Value: "REDIRECT"},
			{Name: "ISTIO_META_WORKLOAD_NAME", Value: w.name},
			{Name: "ISTIO_META_OWNER", Value: fmt.Sprintf("kubernetes://apis/%s/namespaces/%s/%ss/%s", apiVersionOf(w.kind), ns.name, lower(w.kind), w.name)},
			{Name: "ISTIO_META_MESH_ID", Value: "cluster.local"},
			{Name: "TRUST_DOMAIN", Value: "cluster.local"},
			{Name: "ISTIO_KUBE_APP_PROBERS", Value: fmt.Sprintf(`{"/app-health/%[1]s/livez":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1},"/app-health/%[1]s/readyz":{"httpGet":{"path":"/ready","port":8080,"scheme":"HTTP"},"timeoutSeconds":1}}`, w.name)},
		},
		ImagePullPolicy: corev1.PullIfNotPresent,
		Ports:           []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready", Port: intstr.FromInt32(15021), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 3, PeriodSeconds: 15, SuccessThreshold: 1, FailureThreshold: 4,
		},
		Resources:       proxyResources,
		SecurityContext: security,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "workload-socket", MountPath: "/var/run/secrets/workload-spiffe-uds"},
			{Name: "credential-socket", MountPath: "/var/run/secrets/credential-uds"},
			{Name: "workload-certs", MountPath: "/var/run/secrets/workload-spiffe-credentials"},
			{Name: "istiod-ca-cert", MountPath: "/var/run/secrets/istio"},
			{Name: "istio-data", MountPath: "/var/lib/istio/data"},
			{Name: "istio-envoy", MountPath: "/etc/istio/proxy"},
			{Name: "istio-token", MountPath: "/var/run/secrets/tokens"},
			{Name: "istio-podinfo", MountPath: "/etc/istio/pod"},
			mount,
		},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	// The injector rewrites the application's HTTP probes to the agent.
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
			c.ReadinessProbe.HTTPGet.Path = "/app-health/" + c.Name + "/readyz"
			c.ReadinessProbe.HTTPGet.Port = intstr.FromInt32(15020)
		}
		if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil {
			c.LivenessProbe.HTTPGet.Path = "/app-health/" + c.Name + "/livez"
			c.LivenessProbe.HTTPGet.Port = intstr.FromInt32(15020)
		}
	}
	if sc.native {
		proxy.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		proxy.StartupProbe = &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready", Port: intstr.FromInt32(15021), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 3, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 600,
		}
		p.Spec.InitContainers = append([]corev1.Container{initC, proxy}, p.Spec.InitContainers...)
	} else {
		p.Spec.InitContainers = append([]corev1.Container{initC}, p.Spec.InitContainers...)
		p.Spec.Containers = append(p.Spec.Containers, proxy)
	}
	p.Spec.Volumes = append(p.Spec.Volumes,
		corev1.Volume{Name: "workload-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "credential-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "workload-certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "istio-envoy", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		corev1.Volume{Name: "istio-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "istio-podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr.To[int32](420),
			Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
				{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations"}},
			},
		}}},
		corev1.Volume{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](420),
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: "istio-ca", ExpirationSeconds: ptr.To[int64](43200), Path: "istio-token",
			}}},
		}}},
		corev1.Volume{Name: "istiod-ca-cert", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "istio-ca-root-cert"}, DefaultMode: ptr.To[int32](420),
		}}},
	)
}

func lower(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
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
