package mesh

import corev1 "k8s.io/api/core/v1"

// RunningProxy returns the image of the pod's Istio proxy: the istio-proxy
// container, or the istio-proxy init container when it runs as a native
// sidecar (restartPolicy Always). ok is false for a pod without a sidecar.
func RunningProxy(p *corev1.Pod) (image string, ok bool) {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == ProxyContainerName {
			return p.Spec.Containers[i].Image, true
		}
	}
	for i := range p.Spec.InitContainers {
		ic := &p.Spec.InitContainers[i]
		if ic.Name == ProxyContainerName && ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return ic.Image, true
		}
	}
	return "", false
}
