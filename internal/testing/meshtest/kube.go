package meshtest

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	maps.Copy(all, labels)
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

// DefaultPodSpec fills in what the API server's defaulting adds to every
// pod template, so templates look as they read back from the cluster.
func DefaultPodSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](30)
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
	for i := range s.Volumes {
		v := &s.Volumes[i]
		if v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil {
			v.ConfigMap.DefaultMode = ptr.To[int32](420)
		}
		if v.Secret != nil && v.Secret.DefaultMode == nil {
			v.Secret.DefaultMode = ptr.To[int32](420)
		}
		if v.Projected != nil && v.Projected.DefaultMode == nil {
			v.Projected.DefaultMode = ptr.To[int32](420)
		}
		if v.DownwardAPI != nil && v.DownwardAPI.DefaultMode == nil {
			v.DownwardAPI.DefaultMode = ptr.To[int32](420)
		}
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if !strings.Contains(c.Image[strings.LastIndex(c.Image, "/")+1:], ":") || strings.HasSuffix(c.Image, ":latest") {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for _, e := range c.Env {
		if r := e.ValueFrom; r != nil && r.FieldRef != nil && r.FieldRef.APIVersion == "" {
			r.FieldRef.APIVersion = "v1"
		}
		if r := e.ValueFrom; r != nil && r.ResourceFieldRef != nil && r.ResourceFieldRef.Divisor.IsZero() {
			r.ResourceFieldRef.Divisor = resource.MustParse("0")
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.HTTPGet != nil && p.HTTPGet.Scheme == "" {
		p.HTTPGet.Scheme = corev1.URISchemeHTTP
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
}
