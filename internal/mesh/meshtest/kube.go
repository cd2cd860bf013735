package meshtest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// What the GitOps controllers write on the objects they apply.
const (
	// FluxNameLabel and FluxNamespaceLabel name the Flux Kustomization
	// that applied an object.
	FluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	FluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	// ArgoTrackingAnnotation holds the Argo CD Application that applied an
	// object, with annotation tracking.
	ArgoTrackingAnnotation = "argocd.argoproj.io/tracking-id"
)

// FluxLabels labels an object as applied by the Flux Kustomization
// namespace/name.
func FluxLabels(labels map[string]string, namespace, name string) {
	labels[FluxNameLabel] = name
	labels[FluxNamespaceLabel] = namespace
}

// ArgoTrackingID is the tracking id Argo CD writes on an object it applies
// for the Application app: <app>:<group>/<kind>:<namespace>/<name>.
func ArgoTrackingID(app, apiVersion, kind, namespace, name string) string {
	group, _, named := strings.Cut(apiVersion, "/")
	if !named {
		group = "" // the core group
	}
	return fmt.Sprintf("%s:%s/%s:%s/%s", app, group, kind, namespace, name)
}

// Namespace is a namespace as the API server holds it: labelled with its
// own name, with the kubernetes finalizer, active.
func Namespace(name string, labels map[string]string) corev1.Namespace {
	all := map[string]string{"kubernetes.io/metadata.name": name}
	for k, v := range labels {
		all[k] = v
	}
	return corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

// ControllerRef is the owner reference a controller puts on what it creates.
func ControllerRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

const serviceAccountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// Admit does to a new pod what the API server's admission does before any
// webhook runs: the service account token volume kube-api-access-<suffix>
// mounted into every container, the default tolerations, the scheduling
// fields, and the node the pod is bound to.
func Admit(pod *corev1.Pod, node, tokenSuffix string) {
	s := &pod.Spec
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = "default"
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	token := "kube-api-access-" + tokenSuffix
	s.Volumes = append(s.Volumes, corev1.Volume{Name: token, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](420),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
	mount := corev1.VolumeMount{Name: token, MountPath: serviceAccountPath, ReadOnly: true}
	for _, containers := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range containers {
			containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
		}
	}
	s.Tolerations = append(s.Tolerations,
		corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	)
	s.EnableServiceLinks = ptr.To(true)
	s.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	s.Priority = ptr.To[int32](0)
	s.NodeName = node
}
