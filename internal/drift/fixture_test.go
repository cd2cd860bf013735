package drift_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	image123 = "docker.io/istio/proxyv2:1.23.2"
	image124 = "docker.io/istio/proxyv2:1.24.1"
	image125 = "docker.io/istio/proxyv2:1.25.0"
)

var startOfDay = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// cluster accumulates objects shaped like what the API server returns:
// owner references with UIDs, controller flags, hash labels.
type cluster struct {
	installs []meshtest.Install
	set      objects.Set
	uids     int
}

// standardMesh: the default revision upgraded in place to 1.24.1, a
// canary revision 1-25-0 and a tag stable pointing at it.
func standardMesh() []meshtest.Install {
	return []meshtest.Install{
		meshtest.IstiodRevision("default", image124),
		meshtest.IstiodRevision("1-25-0", image125),
		meshtest.RevisionTag("stable", "1-25-0"),
	}
}

func newCluster() *cluster { return &cluster{installs: standardMesh()} }

func (c *cluster) compute(opts drift.Options) drift.Plan {
	in := meshtest.Merge(c.installs...)
	set := c.set
	in.AddTo(&set)
	m := mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps, set.ProxyConfigs...)
	return drift.Compute(&set, m, opts)
}

func (c *cluster) uid() types.UID {
	c.uids++
	return types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", c.uids))
}

func (c *cluster) namespace(name string, labels map[string]string, annotations ...map[string]string) {
	lbls := map[string]string{"kubernetes.io/metadata.name": name}
	maps.Copy(lbls, labels)
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, UID: c.uid()}}
	if len(annotations) > 0 {
		ns.Annotations = annotations[0]
	}
	c.set.Namespaces = append(c.set.Namespaces, ns)
}

// tmpl is the part of a pod template the tests vary.
type tmpl struct {
	labels      map[string]string
	annotations map[string]string
	hostNetwork bool
	// ownProxy, when set, is the image of an istio-proxy container the
	// template defines itself.
	ownProxy string
}

func (t tmpl) spec(app string) corev1.PodTemplateSpec {
	lbls := map[string]string{"app": app}
	maps.Copy(lbls, t.labels)
	spec := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: lbls, Annotations: maps.Clone(t.annotations)},
		Spec: corev1.PodSpec{
			HostNetwork: t.hostNetwork,
			Containers:  []corev1.Container{{Name: app, Image: "registry.example.com/" + app + ":1.0"}},
		},
	}
	if t.ownProxy != "" {
		spec.Spec.Containers = append(spec.Spec.Containers, corev1.Container{Name: "istio-proxy", Image: t.ownProxy})
	}
	return spec
}

// owned is what a pod needs from its controller.
type owned struct {
	ref      *metav1.OwnerReference
	template corev1.PodTemplateSpec
	hash     map[string]string
}

func controllerRef(apiVersion, kind, name string, uid types.UID) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

func meta(ns, name string, uid types.UID, owner *metav1.OwnerReference) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, CreationTimestamp: metav1.NewTime(startOfDay.Add(-24 * time.Hour))}
	if owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return m
}

const podHash = "7d9f8b6c5"

func (c *cluster) replicaSet(ns, owner string, ownerRef *metav1.OwnerReference, spec corev1.PodTemplateSpec, hashLabel string) owned {
	rs := objects.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: meta(ns, owner+"-"+podHash, c.uid(), ownerRef),
	}
	c.set.ReplicaSets = append(c.set.ReplicaSets, &rs)
	return owned{
		ref:      controllerRef("apps/v1", "ReplicaSet", rs.Name, rs.UID),
		template: spec,
		hash:     map[string]string{hashLabel: podHash},
	}
}

func (c *cluster) deployment(ns, name string, t tmpl, annotations ...map[string]string) owned {
	d := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec:       appsv1.DeploymentSpec{Template: t.spec(name)},
	}
	d.Labels = map[string]string{"app": name, "kustomize.toolkit.fluxcd.io/name": "apps"}
	if len(annotations) > 0 {
		d.Annotations = annotations[0]
	}
	c.set.Deployments = append(c.set.Deployments, &d)
	return c.replicaSet(ns, name, controllerRef("apps/v1", "Deployment", name, d.UID), d.Spec.Template, "pod-template-hash")
}

func (c *cluster) statefulSet(ns, name string, t tmpl) owned {
	s := appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec:       appsv1.StatefulSetSpec{Template: t.spec(name)},
	}
	c.set.StatefulSets = append(c.set.StatefulSets, &s)
	return owned{ref: controllerRef("apps/v1", "StatefulSet", name, s.UID), template: s.Spec.Template,
		hash: map[string]string{"controller-revision-hash": name + "-6b8d4f7c9"}}
}

func (c *cluster) daemonSet(ns, name string, t tmpl) owned {
	d := appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec:       appsv1.DaemonSetSpec{Template: t.spec(name)},
	}
	c.set.DaemonSets = append(c.set.DaemonSets, &d)
	return owned{ref: controllerRef("apps/v1", "DaemonSet", name, d.UID), template: d.Spec.Template,
		hash: map[string]string{"controller-revision-hash": "5c6d7f8b9"}}
}

func (c *cluster) rollout(ns, name string, t tmpl) owned {
	r := objects.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec:       objects.RolloutSpec{Template: t.spec(name)},
	}
	c.set.Rollouts = append(c.set.Rollouts, &r)
	return c.replicaSet(ns, name, controllerRef("argoproj.io/v1alpha1", "Rollout", name, r.UID), r.Spec.Template, "rollouts-pod-template-hash")
}

// rolloutWithWorkloadRef is a Rollout taking its template from a Deployment
// scaled to zero, as Argo Rollouts' migration path does.
func (c *cluster) rolloutWithWorkloadRef(ns, name, deployment string, t tmpl) owned {
	d := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(ns, deployment, c.uid(), nil),
		Spec:       appsv1.DeploymentSpec{Template: t.spec(name)},
	}
	c.set.Deployments = append(c.set.Deployments, &d)
	r := objects.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec: objects.RolloutSpec{WorkloadRef: &objects.WorkloadRef{
			APIVersion: "apps/v1", Kind: "Deployment", Name: deployment,
		}},
	}
	c.set.Rollouts = append(c.set.Rollouts, &r)
	return c.replicaSet(ns, name, controllerRef("argoproj.io/v1alpha1", "Rollout", name, r.UID), d.Spec.Template, "rollouts-pod-template-hash")
}

// ownedWorkload gives the last workload created the owner references an operator
// writes on it.
func (c *cluster) ownedWorkload(kind string, refs ...metav1.OwnerReference) {
	switch kind {
	case "Deployment":
		c.set.Deployments[len(c.set.Deployments)-1].OwnerReferences = refs
	case "StatefulSet":
		c.set.StatefulSets[len(c.set.StatefulSets)-1].OwnerReferences = refs
	case "DaemonSet":
		c.set.DaemonSets[len(c.set.DaemonSets)-1].OwnerReferences = refs
	case "Rollout":
		c.set.Rollouts[len(c.set.Rollouts)-1].OwnerReferences = refs
	}
}

// onDelete sets updateStrategy OnDelete on the last StatefulSet or
// DaemonSet created.
func (c *cluster) onDelete(kind string) {
	switch kind {
	case "StatefulSet":
		c.set.StatefulSets[len(c.set.StatefulSets)-1].Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	case "DaemonSet":
		c.set.DaemonSets[len(c.set.DaemonSets)-1].Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	}
}

// operatorRef is an owner reference as an operator writes it, with or
// without the controller flag.
func (c *cluster) operatorRef(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: c.uid()}
	if controller {
		yes := true
		ref.Controller, ref.BlockOwnerDeletion = &yes, &yes
	}
	return ref
}

// flaggerCanary is a Flagger Canary of the Deployment target (created
// before), with the primary Flagger runs it in: a Deployment named
// <target>-primary, controlled by the Canary, whose template is the last one
// promoted (primaryTemplate) with the selector label Flagger rewrites. The
// target is scaled to zero between analyses, so its own pods come and go.
func (c *cluster) flaggerCanary(ns, name, target string, primaryTemplate tmpl) owned {
	cd := objects.Canary{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flagger.app/v1beta1", Kind: "Canary"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec:       objects.CanarySpec{TargetRef: objects.CanaryTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: target}},
	}
	c.set.Canaries = append(c.set.Canaries, cd)
	spec := primaryTemplate.spec(target + "-primary")
	spec.Annotations = maps.Clone(spec.Annotations)
	if spec.Annotations == nil {
		spec.Annotations = map[string]string{}
	}
	spec.Annotations["flagger-id"] = "5a9c3d1e-8f2b-4c7d-9e6a-0b1c2d3e4f5a"
	primary := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(ns, target+"-primary", c.uid(), controllerRef("flagger.app/v1beta1", "Canary", name, cd.UID)),
		Spec:       appsv1.DeploymentSpec{Template: spec},
	}
	primary.Labels = map[string]string{"app": target + "-primary"}
	c.set.Deployments = append(c.set.Deployments, &primary)
	return c.replicaSet(ns, primary.Name, controllerRef("apps/v1", "Deployment", primary.Name, primary.UID), spec, "pod-template-hash")
}

// bareReplicaSet is a ReplicaSet created on its own: no owner, and no hash
// label on its pods. Sources keep ReplicaSets trimmed, so its template is
// dropped here as well.
func (c *cluster) bareReplicaSet(ns, name string, t tmpl) owned {
	spec := t.spec(name)
	rs := objects.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
	}
	c.set.ReplicaSets = append(c.set.ReplicaSets, &rs)
	return owned{ref: controllerRef("apps/v1", "ReplicaSet", name, rs.UID), template: spec}
}

// ownedByReplicaSetOf is a ReplicaSet managed by a controller kedge does not
// know, such as an operator's own kind.
func (c *cluster) ownedByReplicaSetOf(ns, name string, top *metav1.OwnerReference, t tmpl) owned {
	spec := t.spec(name)
	rs := objects.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: meta(ns, name+"-"+podHash, c.uid(), top),
	}
	c.set.ReplicaSets = append(c.set.ReplicaSets, &rs)
	return owned{ref: controllerRef("apps/v1", "ReplicaSet", rs.Name, rs.UID), template: spec}
}

// ownedBy is a pod controller kedge does not read at all.
func (c *cluster) ownedBy(apiVersion, kind, name string, t tmpl) owned {
	return owned{ref: controllerRef(apiVersion, kind, name, c.uid()), template: t.spec(name)}
}

func (c *cluster) cronJob(ns, name string, t tmpl) owned {
	cj := batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: meta(ns, name, c.uid(), nil),
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: t.spec(name)},
		}},
	}
	c.set.CronJobs = append(c.set.CronJobs, &cj)
	return c.job(ns, name+"-29000000", controllerRef("batch/v1", "CronJob", name, cj.UID), cj.Spec.JobTemplate.Spec.Template)
}

func (c *cluster) job(ns, name string, owner *metav1.OwnerReference, spec corev1.PodTemplateSpec) owned {
	j := batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta(ns, name, c.uid(), owner),
		Spec:       batchv1.JobSpec{Template: spec},
	}
	c.set.Jobs = append(c.set.Jobs, &j)
	return owned{ref: controllerRef("batch/v1", "Job", name, j.UID), template: spec,
		hash: map[string]string{"batch.kubernetes.io/job-name": name}}
}

type podOption func(*corev1.Pod)

// injected runs the pod through injection with image as the outcome; a
// template's own istio-proxy container is merged into the injected one, so
// the pod holds one.
func injected(rev, image string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers = slices.DeleteFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "istio-proxy" })
		meshtest.InjectPod(p, rev, image)
	}
}

func native(rev, image string) podOption {
	return func(p *corev1.Pod) { meshtest.InjectPodNative(p, rev, image) }
}

func phase(ph corev1.PodPhase) podOption {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func terminating() podOption {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(startOfDay)
		p.DeletionTimestamp = &t
	}
}

func startedDaysAgo(days int) podOption {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(startOfDay.Add(-time.Duration(days) * 24 * time.Hour))
		p.Status.StartTime = &t
	}
}

func withPodLabels(labels map[string]string) podOption {
	return func(p *corev1.Pod) { maps.Copy(p.Labels, labels) }
}

// pod creates a pod from its controller's template; o may be nil for a
// bare pod.
func (c *cluster) pod(ns, name string, o *owned, opts ...podOption) {
	p := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		Status:   corev1.PodStatus{Phase: corev1.PodRunning},
	}
	var owner *metav1.OwnerReference
	spec := tmpl{}.spec(name)
	if o != nil {
		owner = o.ref
		spec = *o.template.DeepCopy()
	}
	p.ObjectMeta = meta(ns, name, c.uid(), owner)
	p.Labels = spec.Labels
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if o != nil {
		maps.Copy(p.Labels, o.hash)
	}
	p.Annotations = spec.Annotations
	p.Spec = spec.Spec
	p.Spec.NodeName = "node-1"
	for _, opt := range opts {
		opt(&p)
	}
	c.set.Pods = append(c.set.Pods, objects.Pods(p)...)
}

// pods creates n pods name-0 … name-(n-1).
func (c *cluster) pods(ns, name string, n int, o *owned, opts ...podOption) {
	for i := range n {
		c.pod(ns, fmt.Sprintf("%s-%d", name, i), o, opts...)
	}
}
