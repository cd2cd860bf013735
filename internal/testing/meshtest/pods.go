package meshtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Sidecar is one injection: the revision whose injector ran and the proxy
// image it put in.
type Sidecar struct {
	// Revision is "default" or a revision name, never a tag.
	Revision string
	Image    string
	// Native is the injector's ENABLE_NATIVE_SIDECARS; a pod's
	// sidecar.istio.io/nativeSidecar annotation overrides it.
	Native bool
	// Owner names the pod's workload to the proxy. When zero it is read
	// from the pod's controller reference, as the injector does.
	Owner Owner
}

// Owner is a workload as ISTIO_META_OWNER names it.
type Owner struct{ APIVersion, Kind, Name string }

// Values are the parts of istiod's chart values and mesh config that show in
// an injected pod. The zero value is a default install.
type Values struct {
	// ClusterID is global.multiCluster.clusterName; "" is "Kubernetes".
	ClusterID string
	// MeshID is global.meshID; "" is the trust domain, cluster.local.
	MeshID string
	// Network is global.network: ISTIO_META_NETWORK and the pod's
	// topology.istio.io/network label.
	Network string
	// ProxyConfigFromMesh writes the mesh config's defaultConfig (discovery
	// address, mesh ID, tracing) to PROXY_CONFIG instead of "{}".
	ProxyConfigFromMesh bool
	// ProxyRequests is global.proxy.resources.requests; nil is the chart's
	// 100m CPU and 128Mi.
	ProxyRequests corev1.ResourceList
	// StartupProbe is global.proxy.startupProbe.enabled; Inject gives
	// native sidecars the probe either way.
	StartupProbe bool
	// PrometheusMerge is meshConfig.enablePrometheusMerge: the application's
	// own scrape settings move to ISTIO_PROMETHEUS_ANNOTATIONS.
	PrometheusMerge bool
	// RewriteAppProbes is sidecarInjectorWebhook.rewriteAppHTTPProbe: the
	// application's HTTP probes go through the agent on port 15020.
	RewriteAppProbes bool
	// DrainOnStop gives native sidecars the preStop hook draining the proxy.
	DrainOnStop bool
	// IptablesInit runs istio-init as root with NET_ADMIN and NET_RAW, as it
	// needs to program iptables; otherwise it runs as the proxy user.
	IptablesInit bool
	// MountToken mounts the pod's service account token into the injected
	// containers too, as admission does when it runs after the injector.
	MountToken bool
	// IndentPortsAfterComma indents every entry of ISTIO_META_POD_PORTS
	// after its separating comma too, not only the first.
	IndentPortsAfterComma bool
	// CRLInStatus lists an istio-ca-crl volume in sidecar.istio.io/status
	// without adding the volume itself.
	CRLInStatus bool
}

// InjectPod injects a pod as a default install's sidecar template does.
func InjectPod(p *corev1.Pod, rev, image string) {
	Inject(p, Sidecar{Revision: rev, Image: image}, Values{})
}

// InjectPodNative injects istio-proxy as a native sidecar: an init
// container with restartPolicy Always.
func InjectPodNative(p *corev1.Pod, rev, image string) {
	Inject(p, Sidecar{Revision: rev, Image: image, Native: true}, Values{})
}

// Inject does to an admitted pod what the injector webhook of s.Revision
// does: the sidecar template, or the gateway template when the pod asks for
// it, with the containers, volumes, labels and annotations it writes.
func Inject(pod *corev1.Pod, s Sidecar, v Values) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	native := s.Native
	if set, ok := pod.Annotations["sidecar.istio.io/nativeSidecar"]; ok {
		native = set == "true"
	}
	if s.Owner == (Owner{}) {
		s.Owner = ownerOf(pod)
	}
	var apps []string
	for _, c := range pod.Spec.Containers {
		if c.Name != "istio-proxy" {
			apps = append(apps, c.Name)
		}
	}
	env := v.proxyEnv(pod, s, apps)
	var mounts []corev1.VolumeMount
	if token, ok := serviceAccountMount(pod); ok && v.MountToken {
		mounts = append(mounts, token)
	}
	status := sidecarStatus{Revision: s.Revision, Volumes: injectedVolumeNames(v.CRLInStatus)}
	if pod.Annotations["inject.istio.io/templates"] == "gateway" {
		fillGateway(pod, s.Image, env, mounts, apps)
		status.Containers = []string{"istio-proxy"}
	} else {
		v.addSidecar(pod, s.Image, env, mounts, native, &status)
		pod.Labels["security.istio.io/tlsMode"] = "istio"
		if len(apps) > 0 {
			setDefault(pod.Annotations, "kubectl.kubernetes.io/default-container", apps[0])
			setDefault(pod.Annotations, "kubectl.kubernetes.io/default-logs-container", apps[0])
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, injectedVolumes()...)

	setDefault(pod.Labels, "service.istio.io/canonical-name", cmp.Or(pod.Labels["app.kubernetes.io/name"], pod.Labels["app"], s.Owner.Name))
	setDefault(pod.Labels, "service.istio.io/canonical-revision", cmp.Or(pod.Labels["app.kubernetes.io/version"], pod.Labels["version"], "latest"))
	if v.Network != "" {
		pod.Labels["topology.istio.io/network"] = v.Network
	}
	pod.Annotations["istio.io/rev"] = s.Revision
	pod.Annotations["prometheus.io/path"] = "/stats/prometheus"
	pod.Annotations["prometheus.io/port"] = "15020"
	pod.Annotations["prometheus.io/scrape"] = "true"
	pod.Annotations["sidecar.istio.io/status"] = mustJSON(status)
}

// fillGateway merges the gateway template into the pod's own istio-proxy
// container (image "auto"), adding the container if it is missing; the
// template adds no init container.
func fillGateway(pod *corev1.Pod, image string, env []corev1.EnvVar, mounts []corev1.VolumeMount, apps []string) {
	if len(apps) == len(pod.Spec.Containers) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "istio-proxy"})
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name == "istio-proxy" {
			c.Image = image
			c.Args = proxyArgs("router")
			c.Env = append(c.Env, env...)
			c.ReadinessProbe = agentProbe(15, 4)
			c.VolumeMounts = append(append(proxyMounts(), mounts...), c.VolumeMounts...)
			defaultContainer(c)
		}
	}
}

// addSidecar adds istio-init and istio-proxy, the proxy as a container or
// as a native sidecar (an init container with restartPolicy Always).
func (v Values) addSidecar(pod *corev1.Pod, image string, env []corev1.EnvVar, mounts []corev1.VolumeMount, native bool, status *sidecarStatus) {
	proxy := v.proxyContainer(image, env, append(proxyMounts(), mounts...), native)
	init := v.initContainer(image, mounts)
	if native {
		pod.Spec.InitContainers = append([]corev1.Container{init, proxy}, pod.Spec.InitContainers...)
		status.InitContainers = []string{"istio-init", "istio-proxy"}
		return
	}
	pod.Spec.InitContainers = append([]corev1.Container{init}, pod.Spec.InitContainers...)
	pod.Spec.Containers = append(pod.Spec.Containers, proxy)
	status.InitContainers, status.Containers = []string{"istio-init"}, []string{"istio-proxy"}
}

// sidecarStatus is the sidecar.istio.io/status annotation: what the
// injector added, so that a later injection can take it out again.
type sidecarStatus struct {
	InitContainers   []string `json:"initContainers"`
	Containers       []string `json:"containers"`
	Volumes          []string `json:"volumes"`
	ImagePullSecrets []string `json:"imagePullSecrets"`
	Revision         string   `json:"revision"`
}

var cronJobName = regexp.MustCompile(`^(.+)-\d{8,10}$`)

// ownerOf names a pod's workload from its controller reference alone, as the
// injector does: a ReplicaSet by its Deployment or Rollout, a Job by its
// CronJob, and a pod without generateName by itself.
func ownerOf(pod *corev1.Pod) Owner {
	if pod.GenerateName == "" {
		return Owner{"v1", "Pod", pod.Name}
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		o := Owner{ref.APIVersion, ref.Kind, ref.Name}
		switch {
		case o.Kind == "ReplicaSet" && pod.Labels["pod-template-hash"] != "":
			o.Kind, o.Name = "Deployment", strings.TrimSuffix(o.Name, "-"+pod.Labels["pod-template-hash"])
		case o.Kind == "ReplicaSet" && pod.Labels["rollouts-pod-template-hash"] != "":
			o = Owner{"v1alpha1", "Rollout", strings.TrimSuffix(o.Name, "-"+pod.Labels["rollouts-pod-template-hash"])}
		case o.Kind == "Job":
			if m := cronJobName.FindStringSubmatch(o.Name); m != nil {
				o = Owner{"batch/v1", "CronJob", m[1]}
			}
		}
		return o
	}
	return Owner{"v1", "Pod", pod.Name}
}

func caAddress(rev string) string {
	if rev == "default" {
		return "istiod.istio-system.svc:15012"
	}
	return "istiod-" + rev + ".istio-system.svc:15012"
}

// proxyEnv is the istio-proxy environment the templates render.
func (v Values) proxyEnv(pod *corev1.Pod, s Sidecar, apps []string) []corev1.EnvVar {
	var ports []string
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			indent := "    "
			if len(ports) > 0 && !v.IndentPortsAfterComma {
				indent = ""
			}
			ports = append(ports, indent+mustJSON(p))
		}
	}
	podPorts := "[\n]"
	if len(ports) > 0 {
		podPorts = "[\n" + strings.Join(ports, "\n    ,") + "\n]"
	}
	meshID := cmp.Or(v.MeshID, "cluster.local")
	proxyConfig := "{}\n"
	if v.ProxyConfigFromMesh {
		proxyConfig = fmt.Sprintf("{\"discoveryAddress\":\"%s\",\"meshId\":\"%s\",\"tracing\":{}}\n", caAddress(s.Revision), meshID)
	}
	env := []corev1.EnvVar{
		{Name: "PILOT_CERT_PROVIDER", Value: "istiod"},
		{Name: "CA_ADDR", Value: caAddress(s.Revision)},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("INSTANCE_IP", "status.podIP"),
		fieldEnv("SERVICE_ACCOUNT", "spec.serviceAccountName"),
		fieldEnv("HOST_IP", "status.hostIP"),
		resourceEnv("ISTIO_CPU_LIMIT", "limits.cpu"),
		{Name: "PROXY_CONFIG", Value: proxyConfig},
		{Name: "ISTIO_META_POD_PORTS", Value: podPorts},
		{Name: "ISTIO_META_APP_CONTAINERS", Value: strings.Join(apps, ",")},
		resourceEnv("GOMEMLIMIT", "limits.memory"),
		resourceEnv("GOMAXPROCS", "limits.cpu"),
		{Name: "ISTIO_META_CLUSTER_ID", Value: cmp.Or(v.ClusterID, "Kubernetes")},
		fieldEnv("ISTIO_META_NODE_NAME", "spec.nodeName"),
		{Name: "ISTIO_META_INTERCEPTION_MODE", Value: "REDIRECT"},
	}
	if v.Network != "" {
		env = append(env, corev1.EnvVar{Name: "ISTIO_META_NETWORK", Value: v.Network})
	}
	env = append(env,
		corev1.EnvVar{Name: "ISTIO_META_WORKLOAD_NAME", Value: s.Owner.Name},
		corev1.EnvVar{Name: "ISTIO_META_OWNER", Value: fmt.Sprintf("kubernetes://apis/%s/namespaces/%s/%ss/%s",
			s.Owner.APIVersion, pod.Namespace, strings.ToLower(s.Owner.Kind), s.Owner.Name)},
		corev1.EnvVar{Name: "ISTIO_META_MESH_ID", Value: meshID},
		corev1.EnvVar{Name: "TRUST_DOMAIN", Value: "cluster.local"},
	)
	if scrape := pod.Annotations["prometheus.io/scrape"]; v.PrometheusMerge && scrape != "" {
		env = append(env, corev1.EnvVar{Name: "ISTIO_PROMETHEUS_ANNOTATIONS", Value: mustJSON(struct {
			Scrape string `json:"scrape"`
			Path   string `json:"path"`
			Port   string `json:"port"`
		}{scrape, pod.Annotations["prometheus.io/path"], pod.Annotations["prometheus.io/port"]})})
	}
	if v.RewriteAppProbes {
		if probers := rewriteAppProbes(pod); probers != "" {
			env = append(env, corev1.EnvVar{Name: "ISTIO_KUBE_APP_PROBERS", Value: probers})
		}
	}
	return env
}

// rewriteAppProbes points the application containers' HTTP readiness and
// liveness probes at the agent and returns what the agent must probe
// instead, as ISTIO_KUBE_APP_PROBERS holds it ("" when there is nothing).
func rewriteAppProbes(pod *corev1.Pod) string {
	type httpGet struct {
		Path   string           `json:"path"`
		Port   int              `json:"port"`
		Scheme corev1.URIScheme `json:"scheme"`
	}
	type prober struct {
		HTTPGet        httpGet `json:"httpGet"`
		TimeoutSeconds int32   `json:"timeoutSeconds"`
	}
	probers := map[string]prober{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for _, p := range []struct {
			probe *corev1.Probe
			path  string
		}{{c.ReadinessProbe, "readyz"}, {c.LivenessProbe, "livez"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				continue
			}
			get := p.probe.HTTPGet
			agentPath := "/app-health/" + c.Name + "/" + p.path
			probers[agentPath] = prober{httpGet{get.Path, get.Port.IntValue(), get.Scheme}, p.probe.TimeoutSeconds}
			get.Path, get.Port = agentPath, intstr.FromInt32(15020)
		}
	}
	if len(probers) == 0 {
		return ""
	}
	return mustJSON(probers)
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func resourceEnv(name, res string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res}}}
}

func proxyArgs(kind string) []string {
	return []string{"proxy", kind, "--domain", "$(POD_NAMESPACE).svc.cluster.local",
		"--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"}
}

// agentProbe asks the agent whether the proxy is ready.
func agentProbe(period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready", Port: intstr.FromInt32(15021)}},
		TimeoutSeconds: 3, PeriodSeconds: period, FailureThreshold: failures,
	}
}

func (v Values) resources() corev1.ResourceRequirements {
	requests := v.ProxyRequests
	if requests == nil {
		requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	}
	return corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: requests,
	}
}

func proxyUser() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		RunAsGroup: ptr.To[int64](1337), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1337),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func (v Values) proxyContainer(image string, env []corev1.EnvVar, mounts []corev1.VolumeMount, native bool) corev1.Container {
	proxy := corev1.Container{
		Name:            "istio-proxy",
		Image:           image,
		Args:            proxyArgs("sidecar"),
		Env:             env,
		Ports:           []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090}},
		ReadinessProbe:  agentProbe(15, 4),
		Resources:       v.resources(),
		SecurityContext: proxyUser(),
		VolumeMounts:    mounts,
	}
	if native || v.StartupProbe {
		proxy.StartupProbe = agentProbe(1, 600)
	}
	if native {
		proxy.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		if v.DrainOnStop {
			proxy.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
				Command: []string{"pilot-agent", "request", "--debug-port=15020", "POST", "drain"},
			}}}
		}
	}
	defaultContainer(&proxy)
	return proxy
}

func (v Values) initContainer(image string, mounts []corev1.VolumeMount) corev1.Container {
	security := proxyUser()
	if v.IptablesInit {
		security = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(false),
			RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false), RunAsUser: ptr.To[int64](0),
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}, Drop: []corev1.Capability{"ALL"}},
		}
	}
	init := corev1.Container{
		Name:  "istio-init",
		Image: image,
		Args: []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "",
			"-b", "*", "-d", "15090,15021,15020", "--log_output_level=default:info"},
		Resources:       v.resources(),
		SecurityContext: security,
		VolumeMounts:    mounts,
	}
	defaultContainer(&init)
	return init
}

func injectedVolumes() []corev1.Volume {
	emptyDir := func(name string, medium corev1.StorageMedium) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
	}
	field := func(path, field string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: path, FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: field}}
	}
	return []corev1.Volume{
		emptyDir("workload-socket", ""),
		emptyDir("credential-socket", ""),
		emptyDir("workload-certs", ""),
		emptyDir("istio-envoy", corev1.StorageMediumMemory),
		emptyDir("istio-data", ""),
		{Name: "istio-podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr.To[int32](420),
			Items:       []corev1.DownwardAPIVolumeFile{field("labels", "metadata.labels"), field("annotations", "metadata.annotations")},
		}}},
		{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](420),
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: "istio-ca", ExpirationSeconds: ptr.To[int64](43200), Path: "istio-token",
			}}},
		}}},
		{Name: "istiod-ca-cert", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "istio-ca-root-cert"}, DefaultMode: ptr.To[int32](420),
		}}},
	}
}

func injectedVolumeNames(crl bool) []string {
	var names []string
	for _, v := range injectedVolumes() {
		names = append(names, v.Name)
	}
	if crl {
		names = append(names, "istio-ca-crl")
	}
	return names
}

func proxyMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: "workload-socket", MountPath: "/var/run/secrets/workload-spiffe-uds"},
		{Name: "credential-socket", MountPath: "/var/run/secrets/credential-uds"},
		{Name: "workload-certs", MountPath: "/var/run/secrets/workload-spiffe-credentials"},
		{Name: "istiod-ca-cert", MountPath: "/var/run/secrets/istio"},
		{Name: "istio-data", MountPath: "/var/lib/istio/data"},
		{Name: "istio-envoy", MountPath: "/etc/istio/proxy"},
		{Name: "istio-token", MountPath: "/var/run/secrets/tokens"},
		{Name: "istio-podinfo", MountPath: "/etc/istio/pod"},
	}
}

// serviceAccountMount is the token mount admission gave the pod's
// containers.
func serviceAccountMount(pod *corev1.Pod) (corev1.VolumeMount, bool) {
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == serviceAccountPath {
				return m, true
			}
		}
	}
	return corev1.VolumeMount{}, false
}

func setDefault(m map[string]string, key, value string) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
