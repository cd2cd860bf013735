package mesh

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// RunningProxy returns the image of the pod's Istio proxy: the istio-proxy
// container, or the istio-proxy init container when it runs as a native
// sidecar (restartPolicy Always). ok is false for a pod without a sidecar.
func RunningProxy(p *objects.Pod) (image string, ok bool) {
	if p.Proxy == nil {
		return "", false
	}
	return p.Proxy.Image, true
}

// ownProxyImage is the image of the istio-proxy container a pod spec
// defines before injection, looked up where the injector looks for it
// (pkg/kube/inject/webhook.go reapplyOverwrittenContainers: containers,
// then, for a native sidecar, init containers; a pod holding the name in
// both is invalid). "auto" and an empty image leave the injected image
// alone.
func ownProxyImage(spec *corev1.PodSpec) string {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if list[i].Name == ProxyContainerName {
				return userImage(list[i].Image)
			}
		}
	}
	return ""
}

// overriddenProxyImage reads the istio-proxy image from an injected pod's
// overrides annotation; the injector writes it without "auto". An
// unreadable annotation is treated as absent.
func overriddenProxyImage(annotation string) string {
	if annotation == "" {
		return ""
	}
	var overrides struct {
		Containers     []corev1.Container `json:"containers"`
		InitContainers []corev1.Container `json:"initContainers"`
	}
	if err := json.Unmarshal([]byte(annotation), &overrides); err != nil {
		return ""
	}
	return ownProxyImage(&corev1.PodSpec{Containers: overrides.Containers, InitContainers: overrides.InitContainers})
}

func userImage(image string) string {
	if image == autoImage {
		return ""
	}
	return image
}
