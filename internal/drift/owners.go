package drift

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

const (
	apiVersionApps   = "apps/v1"
	apiVersionBatch  = "batch/v1"
	apiVersionArgo   = "argoproj.io/v1alpha1"
	argoGroup        = "argoproj.io"
	flaggerGroup     = "flagger.app"
	kindReplicaSet   = "ReplicaSet"
	labelPodHash     = "pod-template-hash"
	labelRolloutHash = "rollouts-pod-template-hash"
	// primarySuffix ends the name of the workload Flagger runs a Canary's
	// target in (docs/design.md, "What runs the pods").
	primarySuffix = "-primary"
)

// owner is the top-level object a pod belongs to, shared by all its pods.
type owner struct {
	namespace  string
	kind       string
	name       string
	apiVersion string
	// labels and annotations are the owner object's; nil when it is not in
	// the set.
	labels      map[string]string
	annotations map[string]string
	// template is the pod template new pods are made from; nil when
	// unknown, and each pod then stands in for it.
	template *corev1.PodTemplateSpec
	// runKind is the kind of the workload that runs the pods (a Canary's
	// primary, the Rollout of a workloadRef, an operator's StatefulSet),
	// which the configured kinds select; "" when it is kind.
	runKind string
	// via carries a change of the owner's template to the pods, when
	// another controller runs them.
	via *Via
	// operates is, for an owner that is an operator's resource, the
	// workload it owns and how: the message names both.
	operates *operated
	// onDelete is set for a StatefulSet or DaemonSet whose pods a template
	// change does not replace.
	onDelete bool

	// decision is the mesh's answer for template, computed on first use.
	decided  bool
	decision mesh.Decision
}

// operated is a workload whose top-level owner is another controller's
// resource, with its owner references as the API server holds them.
type operated struct {
	kind, name string
	refs       []metav1.OwnerReference
	// unmapped says why a Flagger Canary's primary could not be mapped to
	// the Canary's target.
	unmapped string
}

// filterKind is the kind Options.Kinds is matched against.
func (o *owner) filterKind() string {
	if o.runKind != "" {
		return o.runKind
	}
	return o.kind
}

type objectKey struct {
	namespace string
	name      string
}

func keyOf(m *metav1.ObjectMeta) objectKey { return objectKey{m.Namespace, m.Name} }

// byKey maps objects by namespace and name.
func byKey[P interface {
	GetNamespace() string
	GetName() string
}](objs []P) map[objectKey]P {
	out := make(map[objectKey]P, len(objs))
	for _, o := range objs {
		out[objectKey{o.GetNamespace(), o.GetName()}] = o
	}
	return out
}

// index finds owners by namespace and name; a UID recorded on both sides
// must agree, so a recreated object is not mistaken for the old one.
type index struct {
	replicaSets  map[objectKey]*objects.ReplicaSet
	deployments  map[objectKey]*appsv1.Deployment
	statefulSets map[objectKey]*appsv1.StatefulSet
	daemonSets   map[objectKey]*appsv1.DaemonSet
	jobs         map[objectKey]*batchv1.Job
	cronJobs     map[objectKey]*batchv1.CronJob
	rollouts     map[objectKey]*objects.Rollout
	canaries     map[objectKey]*objects.Canary
	namespaces   map[string]*corev1.Namespace

	// owners caches resolution per (namespace, controller reference).
	owners map[ownerRefKey]*owner
}

type ownerRefKey struct {
	namespace string
	kind      string
	name      string
	uid       types.UID
}

func newIndex(set *objects.Set) *index {
	ix := &index{
		replicaSets:  byKey(set.ReplicaSets),
		deployments:  byKey(set.Deployments),
		statefulSets: byKey(set.StatefulSets),
		daemonSets:   byKey(set.DaemonSets),
		jobs:         byKey(set.Jobs),
		cronJobs:     byKey(set.CronJobs),
		rollouts:     byKey(set.Rollouts),
		canaries:     byKey(objects.Copies(set.Canaries)),
		namespaces:   make(map[string]*corev1.Namespace, len(set.Namespaces)),
		owners:       map[ownerRefKey]*owner{},
	}
	for i := range set.Namespaces {
		ix.namespaces[set.Namespaces[i].Name] = &set.Namespaces[i]
	}
	return ix
}

// lookup returns the object if present and, when both sides record a UID,
// the same incarnation.
func lookup[T any](m map[objectKey]*T, meta func(*T) *metav1.ObjectMeta, ns string, ref *metav1.OwnerReference) *T {
	obj, ok := m[objectKey{ns, ref.Name}]
	if !ok {
		return nil
	}
	if uid := meta(obj).UID; uid != "" && ref.UID != "" && uid != ref.UID {
		return nil
	}
	return obj
}

// controllerRef is the managing owner; objects written without the
// controller flag fall back to their first owner.
func controllerRef(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	if len(refs) > 0 {
		return &refs[0]
	}
	return nil
}

func groupOf(apiVersion string) string {
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// ownerOf resolves the pod's top-level owner. Pods without a controller get
// their own owner of kind Pod.
func (ix *index) ownerOf(p *objects.Pod) *owner {
	ref := controllerRef(p.OwnerReferences)
	if ref == nil {
		return &owner{
			namespace: p.Namespace, kind: KindPod, name: p.Name, apiVersion: "v1",
			labels: p.Labels, annotations: p.Annotations,
		}
	}
	k := ownerRefKey{p.Namespace, ref.Kind, ref.Name, ref.UID}
	if o, ok := ix.owners[k]; ok {
		return o
	}
	o := ix.resolve(p, ref)
	ix.owners[k] = o
	return o
}

func (ix *index) resolve(p *objects.Pod, ref *metav1.OwnerReference) *owner {
	ns := p.Namespace
	switch {
	case ref.Kind == kindReplicaSet && groupOf(ref.APIVersion) == "apps":
		rs := lookup(ix.replicaSets, func(r *objects.ReplicaSet) *metav1.ObjectMeta { return &r.ObjectMeta }, ns, ref)
		if rs == nil {
			return ix.ownerOfMissingReplicaSet(p, ref)
		}
		rsRef := controllerRef(rs.OwnerReferences)
		if rsRef == nil {
			// No template: sources keep ReplicaSets trimmed to their
			// identity, so each pod stands in for the template it was
			// made from.
			return &owner{
				namespace: ns, kind: kindReplicaSet, name: rs.Name, apiVersion: apiVersionApps,
				labels: rs.Labels, annotations: rs.Annotations,
			}
		}
		return ix.resolveTop(ns, rsRef)
	case ref.Kind == KindJob && groupOf(ref.APIVersion) == "batch":
		job := lookup(ix.jobs, func(j *batchv1.Job) *metav1.ObjectMeta { return &j.ObjectMeta }, ns, ref)
		if job == nil {
			return &owner{namespace: ns, kind: KindJob, name: ref.Name, apiVersion: ref.APIVersion}
		}
		if jobRef := controllerRef(job.OwnerReferences); jobRef != nil && jobRef.Kind == KindCronJob {
			return ix.resolveTop(ns, jobRef)
		}
		return &owner{
			namespace: ns, kind: KindJob, name: job.Name, apiVersion: apiVersionBatch,
			labels: job.Labels, annotations: job.Annotations, template: &job.Spec.Template,
		}
	default:
		return ix.resolveTop(ns, ref)
	}
}

// resolveTop turns a reference to a top-level owner into an owner, with or
// without the object. A workload's own owner references are followed: the
// workload is then another controller's to write.
func (ix *index) resolveTop(ns string, ref *metav1.OwnerReference) *owner {
	o := &owner{namespace: ns, kind: ref.Kind, name: ref.Name, apiVersion: ref.APIVersion}
	var meta *metav1.ObjectMeta
	group := groupOf(ref.APIVersion)
	switch {
	case ref.Kind == KindDeployment && group == "apps":
		if d := lookup(ix.deployments, func(d *appsv1.Deployment) *metav1.ObjectMeta { return &d.ObjectMeta }, ns, ref); d != nil {
			meta = &d.ObjectMeta
			o.fill(meta, apiVersionApps, &d.Spec.Template)
		}
	case ref.Kind == KindStatefulSet && group == "apps":
		if s := lookup(ix.statefulSets, func(s *appsv1.StatefulSet) *metav1.ObjectMeta { return &s.ObjectMeta }, ns, ref); s != nil {
			meta = &s.ObjectMeta
			o.fill(meta, apiVersionApps, &s.Spec.Template)
			o.onDelete = s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
		}
	case ref.Kind == KindDaemonSet && group == "apps":
		if d := lookup(ix.daemonSets, func(d *appsv1.DaemonSet) *metav1.ObjectMeta { return &d.ObjectMeta }, ns, ref); d != nil {
			meta = &d.ObjectMeta
			o.fill(meta, apiVersionApps, &d.Spec.Template)
			o.onDelete = d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
		}
	case ref.Kind == KindRollout && group == argoGroup:
		if r := lookup(ix.rollouts, func(r *objects.Rollout) *metav1.ObjectMeta { return &r.ObjectMeta }, ns, ref); r != nil {
			o.fill(&r.ObjectMeta, apiVersionArgo, ix.rolloutTemplate(r))
			if managed := ix.managedBy(o, r.OwnerReferences); managed != o {
				return managed
			}
			if d := ix.referencedDeployment(r); d != nil {
				return rolloutOfDeployment(o, r, d)
			}
			return o
		}
	case ref.Kind == KindCronJob && group == "batch":
		if c := lookup(ix.cronJobs, func(c *batchv1.CronJob) *metav1.ObjectMeta { return &c.ObjectMeta }, ns, ref); c != nil {
			o.fill(&c.ObjectMeta, apiVersionBatch, &c.Spec.JobTemplate.Spec.Template)
		}
	}
	if meta == nil {
		return o
	}
	return ix.managedBy(o, meta.OwnerReferences)
}

func (o *owner) fill(meta *metav1.ObjectMeta, apiVersion string, template *corev1.PodTemplateSpec) {
	o.labels = meta.Labels
	o.annotations = meta.Annotations
	o.apiVersion = apiVersion
	o.template = template
}

// managedBy follows a workload's owner references, with or without the
// controller flag (an operator may set either; docs/design.md, "What runs
// the pods"), to the controller that writes its pod template. A Flagger Canary's primary belongs to the
// Canary's target, whose template Flagger promotes to it; any other owner is
// an operator's resource, which kedge cannot restart through Git.
func (ix *index) managedBy(o *owner, refs []metav1.OwnerReference) *owner {
	top := controllerRef(refs)
	if top == nil {
		return o
	}
	target, unmapped := ix.canaryTarget(o, top)
	if target != nil {
		return target
	}
	return &owner{
		namespace: o.namespace, kind: top.Kind, name: top.Name, apiVersion: top.APIVersion,
		labels: o.labels, annotations: o.annotations, template: o.template,
		runKind:  o.filterKind(),
		operates: &operated{kind: o.kind, name: o.name, refs: refs, unmapped: unmapped},
	}
}

// canaryTarget is the target workload of the Flagger Canary ref when o is
// the primary Flagger runs it in: a workload of the target's kind named
// <targetRef.name>-primary, controlled by the Canary. Its pods are judged by
// their own template (the last one promoted) and restarted through the
// target's, which Git holds. Without it, unmapped says why for a workload
// a Canary controls, and is "" for any other.
func (ix *index) canaryTarget(o *owner, ref *metav1.OwnerReference) (target *owner, unmapped string) {
	if ref.Kind != KindCanary || groupOf(ref.APIVersion) != flaggerGroup {
		return nil, ""
	}
	c := lookup(ix.canaries, func(c *objects.Canary) *metav1.ObjectMeta { return &c.ObjectMeta }, o.namespace, ref)
	if c == nil {
		return nil, "which kedge did not read"
	}
	t := c.Spec.TargetRef
	if t.Kind != o.kind || groupOf(t.APIVersion) != "apps" || t.Name+primarySuffix != o.name {
		return nil, fmt.Sprintf("whose target is %s %s, not the workload %s is the primary of", t.Kind, t.Name, o.name)
	}
	var meta *metav1.ObjectMeta
	switch t.Kind {
	case KindDeployment:
		if d, ok := ix.deployments[objectKey{o.namespace, t.Name}]; ok {
			meta = &d.ObjectMeta
		}
	case KindDaemonSet:
		if d, ok := ix.daemonSets[objectKey{o.namespace, t.Name}]; ok {
			meta = &d.ObjectMeta
		}
	}
	if meta == nil {
		return nil, fmt.Sprintf("whose target %s %s kedge did not read", t.Kind, t.Name)
	}
	return &owner{
		namespace: o.namespace, kind: t.Kind, name: t.Name, apiVersion: apiVersionApps,
		labels: meta.Labels, annotations: meta.Annotations, template: o.template,
		runKind: o.kind,
		via:     &Via{Kind: KindCanary, Name: c.Name, APIVersion: ref.APIVersion, Primary: o.name},
	}, ""
}

// rolloutTemplate is the Rollout's own template, or with spec.workloadRef
// the referenced Deployment's.
func (ix *index) rolloutTemplate(r *objects.Rollout) *corev1.PodTemplateSpec {
	if r.Spec.WorkloadRef == nil {
		return &r.Spec.Template
	}
	if d := ix.referencedDeployment(r); d != nil {
		return &d.Spec.Template
	}
	return nil
}

// referencedDeployment is the Deployment a Rollout's spec.workloadRef takes
// its template from, when read.
func (ix *index) referencedDeployment(r *objects.Rollout) *appsv1.Deployment {
	ref := r.Spec.WorkloadRef
	if ref == nil || (ref.Kind != "" && ref.Kind != KindDeployment) {
		return nil
	}
	return ix.deployments[objectKey{r.Namespace, ref.Name}]
}

// rolloutOfDeployment makes the Deployment a Rollout references the owner
// of the Rollout's pods: Argo Rollouts rolls a change of the Deployment's
// template out in the Rollout's pods (docs/design.md, "What runs the
// pods"), so the restart is the Deployment's, edited in Git like any other.
func rolloutOfDeployment(rollout *owner, r *objects.Rollout, d *appsv1.Deployment) *owner {
	o := &owner{namespace: rollout.namespace, kind: KindDeployment, name: d.Name, runKind: KindRollout,
		via: &Via{Kind: KindRollout, Name: r.Name, APIVersion: apiVersionArgo}}
	o.fill(&d.ObjectMeta, apiVersionApps, &d.Spec.Template)
	return o
}

// ownerOfMissingReplicaSet names the owner of a ReplicaSet absent from the
// set. Deployments and Rollouts name their ReplicaSets <owner>-<hash> and
// stamp the hash on the pods, so the owner is recoverable; otherwise the
// ReplicaSet itself is reported.
func (ix *index) ownerOfMissingReplicaSet(p *objects.Pod, ref *metav1.OwnerReference) *owner {
	for _, c := range []struct {
		label, kind, apiVersion string
	}{
		{labelRolloutHash, KindRollout, apiVersionArgo},
		{labelPodHash, KindDeployment, apiVersionApps},
	} {
		hash := p.Labels[c.label]
		if hash == "" {
			continue
		}
		name, ok := strings.CutSuffix(ref.Name, "-"+hash)
		if !ok || name == "" {
			continue
		}
		return ix.resolveTop(p.Namespace, &metav1.OwnerReference{APIVersion: c.apiVersion, Kind: c.kind, Name: name})
	}
	return &owner{namespace: p.Namespace, kind: ref.Kind, name: ref.Name, apiVersion: ref.APIVersion}
}
