// Package trim keeps of each object read from a cluster only what kedge
// reads of it. A cluster of a hundred thousand pods is mostly fields no
// part of kedge looks at (resources, probes, environment, status, managed
// fields), and the pods of one workload repeat their labels, owners and
// proxy: trimmed and shared, the informer caches of such a cluster fit in
// memory. The live source's informers run Transform on every object before
// it enters a cache, and the snapshot reader applies the same trims to the
// objects it decodes, so a snapshot reads exactly like the cluster it was
// taken from. Nothing here does I/O.
package trim

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// Names kedge reads on pods and injector objects. They are Istio's, not
// kedge's choice (docs/design.md, "Istio injection").
const (
	annotationSidecarStatus      = "sidecar.istio.io/status"
	annotationProxyImage         = "sidecar.istio.io/proxyImage"
	annotationProxyImageType     = "sidecar.istio.io/proxyImageType"
	annotationProxyConfig        = "proxy.istio.io/config"
	annotationProxyOverrides     = "proxy.istio.io/overrides"
	annotationAmbientRedirection = "ambient.istio.io/redirection"
	labelSidecarInject           = "sidecar.istio.io/inject"
	labelIstioRev                = "istio.io/rev"

	injectorConfigMapPrefix = "istio-sidecar-injector"
	injectorWebhookSuffix   = "sidecar-injector.istio.io"

	kedgeAnnotationPrefix = "kedge.io/"

	// lastAppliedAnnotation holds a full copy of the object as last
	// applied by kubectl: often the biggest part of an object, and never
	// read by kedge.
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// podAnnotationsKept are the only pod annotations kedge reads: a pod whose
// workload is unknown stands in for its template, and these decide what the
// injector gives it. Pods are the bulk of a cluster, so everything else is
// dropped from the cache.
var podAnnotationsKept = map[string]bool{
	annotationSidecarStatus:  true,
	labelIstioRev:            true,
	labelSidecarInject:       true,
	annotationProxyImage:     true,
	annotationProxyImageType: true,
	annotationProxyConfig:    true,
	annotationProxyOverrides: true,
	// Written by istio-cni on a pod ztunnel captures: how kedge follows an
	// ambient migration.
	annotationAmbientRedirection: true,
}

// Trimmer is the transform every informer runs before an object reaches
// its cache. Its methods must be idempotent: client-go may hand them objects
// they have already trimmed.
type Trimmer struct {
	strings *interner
	maps    *mapInterner
	// proxies are shared by the pods running the same proxy image.
	proxies *sharedTable[*objects.PodProxy]
	// owners are shared by the pods of one owner.
	owners *sharedTable[[]metav1.OwnerReference]
}

func New() *Trimmer {
	return &Trimmer{
		strings: newInterner(maxInternedStrings), maps: newMapInterner(maxInternedMaps),
		proxies: &sharedTable[*objects.PodProxy]{limit: maxInternedMaps, table: map[string]*objects.PodProxy{}},
		owners:  &sharedTable[[]metav1.OwnerReference]{limit: maxInternedMaps, table: map[string][]metav1.OwnerReference{}},
	}
}

func (t *Trimmer) Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return t.Pod(o), nil
	case *CachedPod:
		return o, nil
	case *appsv1.ReplicaSet:
		return &CachedReplicaSet{ReplicaSet: t.ReplicaSet(o)}, nil
	case *CachedReplicaSet:
		return o, nil
	case *corev1.Node:
		return Node(o), nil
	case *corev1.Service:
		Service(o)
		return o, nil
	case *corev1.Namespace:
		trimMeta(&o.ObjectMeta)
		t.internLabels(&o.ObjectMeta)
		// Finalizers and conditions say nothing about injection.
		o.Spec = corev1.NamespaceSpec{}
		o.Status.Conditions = nil
		return o, nil
	case *corev1.ConfigMap:
		trimMeta(&o.ObjectMeta)
		if !IsIstioConfigMap(o) {
			// Kept in the cache only so the informer can track it; its
			// content is never read.
			o.Data, o.BinaryData = nil, nil
		}
		return o, nil
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		trimMeta(&o.ObjectMeta)
		for i := range o.Webhooks {
			// Istio rotates the CA bundle on its own; it is large and
			// has no bearing on which revision injects.
			o.Webhooks[i].ClientConfig.CABundle = nil
		}
		return o, nil
	case *appsv1.Deployment:
		Deployment(o)
		t.internLabels(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		return withKind(o, appsv1.SchemeGroupVersion.WithKind("Deployment")), nil
	case *appsv1.StatefulSet:
		StatefulSet(o)
		t.internLabels(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		return withKind(o, appsv1.SchemeGroupVersion.WithKind("StatefulSet")), nil
	case *appsv1.DaemonSet:
		DaemonSet(o)
		t.internLabels(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		return withKind(o, appsv1.SchemeGroupVersion.WithKind("DaemonSet")), nil
	case *batchv1.Job:
		Job(o)
		t.internLabels(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		return withKind(o, batchv1.SchemeGroupVersion.WithKind("Job")), nil
	case *batchv1.CronJob:
		CronJob(o)
		t.internLabels(&o.ObjectMeta, &o.Spec.JobTemplate.ObjectMeta, &o.Spec.JobTemplate.Spec.Template.ObjectMeta)
		return withKind(o, batchv1.SchemeGroupVersion.WithKind("CronJob")), nil
	case *unstructured.Unstructured:
		return DecodeCustom(o)
	}
	// Tombstones (cache.DeletedFinalStateUnknown) and anything else pass
	// through: their objects were trimmed when they entered the cache.
	return obj, nil
}

// withKind gives a cached workload the apiVersion and kind a snapshot file
// has (typed clients strip them): a Set points at the cached object itself.
func withKind[P interface{ SetGroupVersionKind(schema.GroupVersionKind) }](o P, gvk schema.GroupVersionKind) P {
	o.SetGroupVersionKind(gvk)
	return o
}

// The workloads keep their identity, their replica counts and status (the
// rollout gate reads them), their pod template as Template leaves it,
// and the type of a StatefulSet's or DaemonSet's update strategy: with
// OnDelete, a template change restarts no pod.
func Deployment(o *appsv1.Deployment) {
	trimMeta(&o.ObjectMeta)
	o.Spec = appsv1.DeploymentSpec{Replicas: o.Spec.Replicas, Template: Template(o.Spec.Template)}
	o.Status.Conditions = nil
}

func StatefulSet(o *appsv1.StatefulSet) {
	trimMeta(&o.ObjectMeta)
	o.Spec = appsv1.StatefulSetSpec{
		Replicas: o.Spec.Replicas, Template: Template(o.Spec.Template),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: o.Spec.UpdateStrategy.Type},
	}
	o.Status.Conditions = nil
}

func DaemonSet(o *appsv1.DaemonSet) {
	trimMeta(&o.ObjectMeta)
	o.Spec = appsv1.DaemonSetSpec{
		Template:       Template(o.Spec.Template),
		UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: o.Spec.UpdateStrategy.Type},
	}
	o.Status.Conditions = nil
}

func Job(o *batchv1.Job) {
	trimMeta(&o.ObjectMeta)
	o.Spec = batchv1.JobSpec{Template: Template(o.Spec.Template)}
	o.Status = batchv1.JobStatus{}
}

func CronJob(o *batchv1.CronJob) {
	trimMeta(&o.ObjectMeta)
	o.Spec = batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{
		ObjectMeta: o.Spec.JobTemplate.ObjectMeta,
		Spec:       batchv1.JobSpec{Template: Template(o.Spec.JobTemplate.Spec.Template)},
	}}
	o.Status = batchv1.CronJobStatus{}
}

// Service keeps what tells which pods a Service reaches and whether it
// uses a waypoint (its istio.io/use-waypoint label): labels, selector,
// type and cluster IP (None for a headless Service).
func Service(o *corev1.Service) {
	trimMeta(&o.ObjectMeta)
	o.Spec = corev1.ServiceSpec{Selector: o.Spec.Selector, ClusterIP: o.Spec.ClusterIP, Type: o.Spec.Type}
	o.Status = corev1.ServiceStatus{}
}

// Template keeps of a pod template what the injection decision reads
// (mesh.TemplateOf): its labels and annotations, hostNetwork, and the
// istio-proxy container a template may define to override the injected
// one's image. Resources, probes, environment and volumes are most of a
// workload's size and say nothing about injection.
func Template(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations},
		Spec: corev1.PodSpec{
			HostNetwork:    t.Spec.HostNetwork,
			Containers:     proxyContainers(t.Spec.Containers),
			InitContainers: proxyContainers(t.Spec.InitContainers),
		},
	}
}

func proxyContainers(in []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range in {
		if c.Name == mesh.ProxyContainerName {
			out = append(out, corev1.Container{Name: c.Name, Image: c.Image})
		}
	}
	return out
}

// trimMeta drops what no part of kedge reads and what would double an
// object's size in memory.
func trimMeta(meta *metav1.ObjectMeta) {
	meta.ManagedFields = nil
	if _, ok := meta.Annotations[lastAppliedAnnotation]; ok {
		delete(meta.Annotations, lastAppliedAnnotation)
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
	}
}

// Pod keeps only what kedge reads of a pod (objects.PodOf), with the
// identity the cache tracks it by.
func (t *Trimmer) Pod(in *corev1.Pod) *CachedPod {
	p := &CachedPod{Pod: t.InternPod(objects.PodOf(in))}
	var uid string
	p.Name, uid, p.resourceVersion = identity(in.Name, string(in.UID), in.ResourceVersion)
	p.uid = types.UID(uid)
	return p
}

// identity copies an object's name, UID and resourceVersion into one
// allocation of their own. Decoded, each is a string among the dozens the
// decoder allocates per object and drops; kept there, each would hold in
// use the span it shares with them.
func identity(name, uid, resourceVersion string) (string, string, string) {
	all := name + uid + resourceVersion
	return all[:len(name)], all[len(name) : len(name)+len(uid)], all[len(name)+len(uid):]
}

// InternPod drops the annotations kedge does not read and shares what
// repeats across the pods of a workload (labels, the injection status, the
// proxy, the owner) with the other pods. p's own maps and slices are left
// as they are.
func (t *Trimmer) InternPod(p objects.Pod) objects.Pod {
	p.Namespace = t.strings.get(p.Namespace)
	p.Phase = corev1.PodPhase(t.strings.get(string(p.Phase)))
	p.Ready = corev1.ConditionStatus(t.strings.get(string(p.Ready)))
	p.Labels = t.internMap(p.Labels, nil)
	p.Annotations = t.internMap(p.Annotations, keepPodAnnotation)
	p.OwnerReferences = t.internOwners(p.OwnerReferences)
	if p.Proxy != nil {
		proxy := objects.PodProxy{Image: t.strings.get(p.Proxy.Image), Native: p.Proxy.Native}
		p.Proxy = t.proxies.share(proxyKey(proxy), &proxy)
	}
	if len(p.Waiting) > 0 {
		waiting := make([]objects.ContainerWaiting, len(p.Waiting))
		for i, w := range p.Waiting {
			waiting[i] = objects.ContainerWaiting{Container: t.strings.get(w.Container), Reason: t.strings.get(w.Reason)}
		}
		p.Waiting = waiting
	}
	return p
}

func proxyKey(p objects.PodProxy) string {
	if p.Native {
		return "native " + p.Image
	}
	return "container " + p.Image
}

// internMap returns the entries of in accepted by keep (all when nil) as
// a map shared with every object whose entries are the same (the replicas
// of a workload), its keys and values shared with the rest of the cache.
// The map is built only for entries not seen before: building one per pod
// to find it was already there would leave a map of garbage per pod among
// the maps the cache keeps. Nothing downstream writes into an object it
// was handed, so one map can serve them all.
func (t *Trimmer) internMap(in map[string]string, keep func(string) bool) map[string]string {
	key, n := mapKey(in, keep)
	if n == 0 {
		return nil
	}
	return t.maps.shareBuilt(key, func() map[string]string { return t.internEntries(in, keep) })
}

// internEntries copies the entries of in accepted by keep (all when nil)
// into a map of its own sized for them, sharing keys and values with the
// rest of the cache.
func (t *Trimmer) internEntries(in map[string]string, keep func(string) bool) map[string]string {
	n := 0
	for k := range in {
		if keep == nil || keep(k) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for k, v := range in {
		if keep == nil || keep(k) {
			out[t.strings.get(k)] = t.strings.get(v)
		}
	}
	return out
}

// internLabels gives an object's labels and annotations strings shared
// with the rest of the cache: their keys, and values such as namespace and
// application names, repeat across the workloads of a fleet. Label maps
// stay the object's own, as they name it; equal annotation maps (a
// Deployment's revision, a template's scrape settings) are one map.
func (t *Trimmer) internLabels(metas ...*metav1.ObjectMeta) {
	for _, m := range metas {
		m.Labels = t.internEntries(m.Labels, nil)
		m.Annotations = t.internMap(m.Annotations, nil)
	}
}

// internOwners shares one owner list among the pods that have the same
// owners (the replicas of a ReplicaSet), and their strings with the rest of
// the cache.
func (t *Trimmer) internOwners(in []metav1.OwnerReference) []metav1.OwnerReference {
	if len(in) == 0 {
		return nil
	}
	out := make([]metav1.OwnerReference, len(in))
	key := make([]byte, 0, 128*len(in))
	for i, ref := range in {
		out[i] = metav1.OwnerReference{
			APIVersion:         t.strings.get(ref.APIVersion),
			Kind:               t.strings.get(ref.Kind),
			Name:               t.strings.get(ref.Name),
			UID:                types.UID(t.strings.get(string(ref.UID))),
			Controller:         sharedFlag(ref.Controller),
			BlockOwnerDeletion: sharedFlag(ref.BlockOwnerDeletion),
		}
		key = appendSpelled(key, ref.APIVersion, ref.Kind, ref.Name, string(ref.UID), flagKey(ref.Controller), flagKey(ref.BlockOwnerDeletion))
	}
	return t.owners.share(string(key), out)
}

// The two values an owner reference's flags take, shared by every pod
// instead of a pointer into each decoded pod.
var (
	flagTrue, flagFalse = true, false
)

func sharedFlag(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &flagTrue
	default:
		return &flagFalse
	}
}

func flagKey(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "t"
	default:
		return "f"
	}
}

func keepPodAnnotation(key string) bool {
	return podAnnotationsKept[key] || strings.HasPrefix(key, kedgeAnnotationPrefix)
}

// Node keeps the node's identity: kedge only counts nodes, to tell
// whether ztunnel runs on each.
func Node(in *corev1.Node) *corev1.Node {
	return &corev1.Node{
		TypeMeta: in.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: in.Name, UID: in.UID, ResourceVersion: in.ResourceVersion,
			CreationTimestamp: in.CreationTimestamp, DeletionTimestamp: in.DeletionTimestamp,
		},
	}
}

// ReplicaSet keeps identity and ownership: a ReplicaSet is only the
// link from a pod to its Deployment (or Rollout). Its labels are kept only
// when no controller owns it: drift then reads them as the labels of the
// workload its pods belong to. A fleet has a ReplicaSet or more per
// Deployment, each with labels of its own (its pod-template-hash), that no
// part of kedge reads.
func (t *Trimmer) ReplicaSet(in *appsv1.ReplicaSet) objects.ReplicaSet {
	name, uid, resourceVersion := identity(in.Name, string(in.UID), in.ResourceVersion)
	rs := objects.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         t.strings.get(in.Namespace),
			UID:               types.UID(uid),
			ResourceVersion:   resourceVersion,
			CreationTimestamp: in.CreationTimestamp,
			DeletionTimestamp: in.DeletionTimestamp,
			OwnerReferences:   t.internOwners(in.OwnerReferences),
		},
	}
	if metav1.GetControllerOfNoCopy(in) == nil {
		rs.Labels = t.internMap(in.Labels, nil)
	}
	return rs
}

// CachedReplicaSet is what the ReplicaSet cache holds: the ReplicaSet as a
// Set holds it. An appsv1.ReplicaSet is four times its size even trimmed,
// its empty pod template included, and a fleet has one or more per
// Deployment.
type CachedReplicaSet struct {
	objects.ReplicaSet
}

func (r *CachedReplicaSet) DeepCopyObject() runtime.Object {
	out := &CachedReplicaSet{}
	out.TypeMeta = r.TypeMeta
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// IsInjectorConfigMap tells the ConfigMaps Istio's injector reads from the
// other ConfigMaps of an Istio namespace.
func IsInjectorConfigMap(cm *corev1.ConfigMap) bool {
	if _, ok := cm.Labels[labelIstioRev]; ok {
		return true
	}
	return strings.HasPrefix(cm.Name, injectorConfigMapPrefix)
}

// IsIstioConfigMap tells the ConfigMaps kedge reads: the injector's and
// istio-cni's, which says whether ambient mode is enabled.
func IsIstioConfigMap(cm *corev1.ConfigMap) bool {
	return IsInjectorConfigMap(cm) || cm.Name == ambient.CNIConfigMap
}

// IsInjectorWebhookConfiguration tells an Istio injector (revision or tag)
// from any other mutating webhook configuration.
func IsInjectorWebhookConfiguration(mwc *admissionregistrationv1.MutatingWebhookConfiguration) bool {
	for _, w := range mwc.Webhooks {
		if strings.HasSuffix(w.Name, injectorWebhookSuffix) {
			return true
		}
	}
	return false
}

// DecodeCustom decodes a custom resource into the matching objects type,
// which declares only the fields kedge reads: fields the CRD adds later
// cannot grow the cache. Other kinds stay as they came.
func DecodeCustom(u *unstructured.Unstructured) (runtime.Object, error) {
	var typed runtime.Object
	switch u.GetKind() {
	case "Rollout":
		typed = &objects.Rollout{}
	case "Application":
		typed = &objects.Application{}
	case "Kustomization":
		typed = &objects.Kustomization{}
	case "GitRepository":
		typed = &objects.GitRepository{}
	case "HelmRepository":
		typed = &objects.HelmRepository{}
	case "OCIRepository":
		typed = &objects.OCIRepository{}
	case "AppProject":
		typed = &objects.AppProject{}
	case "ProxyConfig":
		typed = &objects.ProxyConfig{}
	case "AuthorizationPolicy":
		typed = &objects.AuthorizationPolicy{}
	case "Gateway":
		typed = &objects.Gateway{}
	case "Canary":
		typed = &objects.Canary{}
	case "PeerAuthentication":
		typed = &objects.PeerAuthentication{}
	case "RequestAuthentication":
		typed = &objects.RequestAuthentication{}
	case "EnvoyFilter":
		typed = &objects.EnvoyFilter{}
	case "WasmPlugin":
		typed = &objects.WasmPlugin{}
	case "VirtualService":
		typed = &objects.VirtualService{}
	case "HTTPRoute":
		typed = &objects.HTTPRoute{}
	default:
		return u, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, err
	}
	trimMeta(typedMeta(typed))
	if r, ok := typed.(*objects.Rollout); ok {
		r.Spec.Template = Template(r.Spec.Template)
	}
	return typed, nil
}

func typedMeta(typed any) *metav1.ObjectMeta {
	switch t := typed.(type) {
	case *objects.Rollout:
		return &t.ObjectMeta
	case *objects.Application:
		return &t.ObjectMeta
	case *objects.Kustomization:
		return &t.ObjectMeta
	case *objects.GitRepository:
		return &t.ObjectMeta
	case *objects.HelmRepository:
		return &t.ObjectMeta
	case *objects.OCIRepository:
		return &t.ObjectMeta
	case *objects.AppProject:
		return &t.ObjectMeta
	case *objects.ProxyConfig:
		return &t.ObjectMeta
	case *objects.AuthorizationPolicy:
		return &t.ObjectMeta
	case *objects.Gateway:
		return &t.ObjectMeta
	case *objects.Canary:
		return &t.ObjectMeta
	case *objects.PeerAuthentication:
		return &t.ObjectMeta
	case *objects.RequestAuthentication:
		return &t.ObjectMeta
	case *objects.EnvoyFilter:
		return &t.ObjectMeta
	case *objects.WasmPlugin:
		return &t.ObjectMeta
	case *objects.VirtualService:
		return &t.ObjectMeta
	case *objects.HTTPRoute:
		return &t.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}
