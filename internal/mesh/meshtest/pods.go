package meshtest

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// SidecarStatus is the sidecar.istio.io/status annotation the injector
// writes for a pod injected by rev ("default" for the unnamed revision).
func SidecarStatus(rev string, native bool) string {
	status := struct {
		InitContainers   []string `json:"initContainers"`
		Containers       []string `json:"containers"`
		Volumes          []string `json:"volumes"`
		ImagePullSecrets []string `json:"imagePullSecrets"`
		Revision         string   `json:"revision"`
	}{
		InitContainers: []string{"istio-init"},
		Containers:     []string{"istio-proxy"},
		Volumes: []string{
			"workload-socket", "credential-socket", "workload-certs", "istio-envoy",
			"istio-data", "istio-podinfo", "istio-token", "istiod-ca-cert", "istio-ca-crl",
		},
		Revision: rev,
	}
	if native {
		status.InitContainers = []string{"istio-init", "istio-proxy"}
		status.Containers = nil
	}
	out, err := json.Marshal(status)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// InjectPod changes a pod the way the sidecar injection template does:
// istio-init and istio-proxy containers, the status and revision
// annotations, and the telemetry labels.
func InjectPod(p *corev1.Pod, rev, image string) {
	inject(p, rev, image, false)
}

// InjectPodNative injects istio-proxy as a native sidecar: an init
// container with restartPolicy Always.
func InjectPodNative(p *corev1.Pod, rev, image string) {
	inject(p, rev, image, true)
}

func inject(p *corev1.Pod, rev, image string, native bool) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Annotations["sidecar.istio.io/status"] = SidecarStatus(rev, native)
	p.Annotations["istio.io/rev"] = rev
	p.Annotations["kubectl.kubernetes.io/default-container"] = firstContainerName(p)
	p.Annotations["prometheus.io/scrape"] = "true"
	p.Annotations["prometheus.io/port"] = "15020"
	p.Annotations["prometheus.io/path"] = "/stats/prometheus"
	p.Labels["security.istio.io/tlsMode"] = "istio"
	if _, ok := p.Labels["service.istio.io/canonical-name"]; !ok {
		p.Labels["service.istio.io/canonical-name"] = p.Name
	}
	p.Labels["service.istio.io/canonical-revision"] = "latest"

	initContainer := corev1.Container{
		Name:  "istio-init",
		Image: image,
		Args:  []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337"},
	}
	proxy := corev1.Container{
		Name:  "istio-proxy",
		Image: image,
		Args:  []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"},
		Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
	}
	if native {
		always := corev1.ContainerRestartPolicyAlways
		proxy.RestartPolicy = &always
		p.Spec.InitContainers = append([]corev1.Container{initContainer, proxy}, p.Spec.InitContainers...)
		return
	}
	p.Spec.InitContainers = append([]corev1.Container{initContainer}, p.Spec.InitContainers...)
	p.Spec.Containers = append(p.Spec.Containers, proxy)
}

func firstContainerName(p *corev1.Pod) string {
	if len(p.Spec.Containers) > 0 {
		return p.Spec.Containers[0].Name
	}
	return ""
}
