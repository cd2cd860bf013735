package meshtest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// TestInject checks what the injector writes into a pod: where istio-proxy
// goes, what the status annotation lists, and how the proxy names the
// workload.
func TestInject(t *testing.T) {
	rsPod := func(annotations map[string]string, containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "web-5d8f7-abcde", GenerateName: "web-5d8f7-", Namespace: "shop",
			Labels:      map[string]string{"app": "web", "pod-template-hash": "5d8f7"},
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7", Controller: ptr.To(true),
			}},
		}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "app:1"})
		}
		meshtest.Admit(p, "node-1", "x1y2z")
		return p
	}
	tests := []struct {
		name           string
		pod            *corev1.Pod
		sidecar        meshtest.Sidecar
		values         meshtest.Values
		wantInit       []string
		wantContainers []string
		wantStatus     string
		wantOwner      string
		wantProxyMount int
	}{
		{
			name: "classic sidecar", pod: rsPod(nil, "web"), sidecar: meshtest.Sidecar{Revision: "1-25-0", Image: image},
			wantInit: []string{"istio-init"}, wantContainers: []string{"web", "istio-proxy"},
			wantStatus: `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"1-25-0"}`,
			wantOwner:  "kubernetes://apis/apps/v1/namespaces/shop/deployments/web", wantProxyMount: 8,
		},
		{
			name: "native sidecar asked for by the pod", pod: rsPod(map[string]string{"sidecar.istio.io/nativeSidecar": "true"}, "web"),
			sidecar: meshtest.Sidecar{Revision: "default", Image: image}, values: meshtest.Values{MountToken: true, CRLInStatus: true},
			wantInit: []string{"istio-init", "istio-proxy"}, wantContainers: []string{"web"},
			wantStatus: `{"initContainers":["istio-init","istio-proxy"],"containers":null,"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert","istio-ca-crl"],"imagePullSecrets":null,"revision":"default"}`,
			wantOwner:  "kubernetes://apis/apps/v1/namespaces/shop/deployments/web", wantProxyMount: 9,
		},
		{
			name: "gateway template fills the pod's istio-proxy", pod: rsPod(map[string]string{"inject.istio.io/templates": "gateway"}, "istio-proxy"),
			sidecar:  meshtest.Sidecar{Revision: "default", Image: image, Owner: meshtest.Owner{APIVersion: "apps/v1", Kind: "Deployment", Name: "ingress"}},
			wantInit: nil, wantContainers: []string{"istio-proxy"},
			wantStatus: `{"initContainers":null,"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`,
			wantOwner:  "kubernetes://apis/apps/v1/namespaces/shop/deployments/ingress", wantProxyMount: 9,
		},
		{
			name: "gateway template adds istio-proxy when the pod has none", pod: rsPod(map[string]string{"inject.istio.io/templates": "gateway"}, "web"),
			sidecar: meshtest.Sidecar{Revision: "default", Image: image}, wantContainers: []string{"web", "istio-proxy"},
			wantStatus: `{"initContainers":null,"containers":["istio-proxy"],"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`,
			wantOwner:  "kubernetes://apis/apps/v1/namespaces/shop/deployments/web", wantProxyMount: 8,
		},
	}
	names := func(cs []corev1.Container) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meshtest.Inject(tt.pod, tt.sidecar, tt.values)
			assert.Equal(t, tt.wantInit, names(tt.pod.Spec.InitContainers))
			assert.Equal(t, tt.wantContainers, names(tt.pod.Spec.Containers))
			assert.JSONEq(t, tt.wantStatus, tt.pod.Annotations["sidecar.istio.io/status"])
			assert.Equal(t, tt.sidecar.Revision, tt.pod.Annotations["istio.io/rev"])

			var proxy corev1.Container
			for _, c := range append(tt.pod.Spec.InitContainers, tt.pod.Spec.Containers...) {
				if c.Name == "istio-proxy" {
					proxy = c
				}
			}
			require.Equal(t, image, proxy.Image)
			assert.Len(t, proxy.VolumeMounts, tt.wantProxyMount)
			env := map[string]string{}
			for _, e := range proxy.Env {
				env[e.Name] = e.Value
			}
			assert.Equal(t, tt.wantOwner, env["ISTIO_META_OWNER"])
		})
	}
}

// TestInjectRewritesAppProbes: with rewriteAppHTTPProbe the agent probes
// the application, and the proxy is told what to probe.
func TestInjectRewritesAppProbes(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:           "db",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}}, TimeoutSeconds: 2},
	}}}}
	meshtest.Inject(pod, meshtest.Sidecar{Revision: "default", Image: image}, meshtest.Values{RewriteAppProbes: true})

	get := pod.Spec.Containers[0].ReadinessProbe.HTTPGet
	assert.Equal(t, "/app-health/db/readyz", get.Path)
	assert.Equal(t, 15020, get.Port.IntValue())
	var probers map[string]any
	for _, e := range pod.Spec.Containers[1].Env {
		if e.Name == "ISTIO_KUBE_APP_PROBERS" {
			require.NoError(t, json.Unmarshal([]byte(e.Value), &probers))
		}
	}
	assert.Equal(t, map[string]any{"/app-health/db/readyz": map[string]any{
		"httpGet": map[string]any{"path": "/ready", "port": float64(8080), "scheme": "HTTP"}, "timeoutSeconds": float64(2),
	}}, probers)
}
