package meshtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/objects"
)

// Cluster replays what a cluster makes of applied workloads: the API
// server's defaults and stored metadata, the controllers' ReplicaSets,
// Jobs and pods, admission, the injector and the kubelet's status. Every
// fixture with workloads (the demo snapshot, the synthetic fleets) is built
// by it, so they all agree on what a cluster holds.
//
// Everything that looks random in a real cluster (uids, hashes, pod name
// suffixes, IPs) is derived from the object's identity and the cluster's
// name, so building the same workloads again gives the same bytes.
type Cluster struct {
	// Name goes into every uid, so two clusters never share one.
	Name string
	// Nodes are where pods are placed: a DaemonSet's i-th pod and a
	// StatefulSet's i-th replica on the i-th node, other pods by a hash of
	// their name.
	Nodes []Node
	// Values are the injectors' settings, for pods a story gives a sidecar.
	Values Values
	// Now is when the cluster is looked at: terminating pods were deleted
	// shortly before.
	Now time.Time

	// Objects is what the cluster holds, in the order it was built.
	Objects Workloads

	podsOn map[string]int
	// namespaceLabels are the labels of the namespaces pods run in: pods
	// without a sidecar in an ambient namespace are redirected.
	namespaceLabels map[string]map[string]string
}

// Workloads are the objects Cluster builds.
type Workloads struct {
	Deployments  []appsv1.Deployment
	ReplicaSets  []appsv1.ReplicaSet
	StatefulSets []appsv1.StatefulSet
	DaemonSets   []appsv1.DaemonSet
	CronJobs     []batchv1.CronJob
	Jobs         []batchv1.Job
	Pods         []corev1.Pod
}

// AddTo appends the objects to a set, pods and ReplicaSets as far as a set
// keeps them.
func (w Workloads) AddTo(set *objects.Set) {
	set.Deployments = append(set.Deployments, objects.Copies(w.Deployments)...)
	set.StatefulSets = append(set.StatefulSets, objects.Copies(w.StatefulSets)...)
	set.DaemonSets = append(set.DaemonSets, objects.Copies(w.DaemonSets)...)
	set.CronJobs = append(set.CronJobs, objects.Copies(w.CronJobs)...)
	set.Jobs = append(set.Jobs, objects.Copies(w.Jobs)...)
	for i := range w.ReplicaSets {
		rs := objects.ReplicaSetOf(&w.ReplicaSets[i])
		set.ReplicaSets = append(set.ReplicaSets, &rs)
	}
	set.Pods = append(set.Pods, objects.Pods(w.Pods...)...)
}

// Node is a worker node.
type Node struct {
	Name string
	IP   string
	// PodCIDR is the range the node hands its pods addresses from.
	PodCIDR netip.Prefix
}

// Story is what happened to one workload: when it was created, how many
// template revisions it went through, and the pods it has now.
type Story struct {
	Created  time.Time
	Revision int64 // number of the newest template revision
	// Templates are the revisions that still have ReplicaSets, oldest
	// first; the last one is the current template. Only Deployments and
	// Rollouts keep more than one.
	Templates []Template
	// Scheduled is when a CronJob's running Job was scheduled.
	Scheduled time.Time
}

// Template is one pod template a workload has had (a ReplicaSet, a
// controller revision) and the pods still running from it.
type Template struct {
	// RestartedAt is the kubectl.kubernetes.io/restartedAt annotation
	// `kubectl rollout restart` put on the template; zero if none.
	RestartedAt time.Time
	Pods        []PodPlan
}

// PodPlan is one live pod of a workload.
type PodPlan struct {
	Started     time.Time
	Sidecar     *Sidecar // nil: created without a sidecar
	Terminating bool     // deletionTimestamp set, still running
	Succeeded   bool
}

// PodsFrom plans n pods started 41 seconds apart from first.
func PodsFrom(n int, first time.Time, sidecar *Sidecar) []PodPlan {
	out := make([]PodPlan, n)
	for i := range out {
		out[i] = PodPlan{Started: first.Add(time.Duration(i) * 41 * time.Second), Sidecar: sidecar}
	}
	return out
}

func (s Story) current() Template { return s.Templates[len(s.Templates)-1] }

// LivePods is how many of the current pods run: not terminating, not
// completed.
func (s Story) LivePods() int {
	n := 0
	for _, p := range s.current().Pods {
		if !p.Terminating && !p.Succeeded {
			n++
		}
	}
	return n
}

// LastPodStart is when the newest current pod started.
func (s Story) LastPodStart() time.Time {
	var last time.Time
	for _, p := range s.current().Pods {
		if p.Started.After(last) {
			last = p.Started
		}
	}
	return last
}

var uidNamespace = uuid.MustParse("6f1e4d2a-0c7b-4e59-9a3d-5b8f2c1e7a60")

func (c *Cluster) uidFor(kind, namespace, name string) string {
	return uuid.NewSHA1(uidNamespace, []byte(c.Name+"/"+kind+"/"+namespace+"/"+name)).String()
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// ResourceVersionFor spreads resource versions over a plausible range of a
// long-lived etcd.
func ResourceVersionFor(kind, namespace, name string) string {
	return fmt.Sprint(48_000_000 + fnv32(kind+"/"+namespace+"/"+name)%3_000_000)
}

// Suffix is a generated-name-like suffix of n characters in the alphabet
// the API server's generateName uses (no vowels, so no words).
func Suffix(seed string, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := sha256.Sum256([]byte(seed))
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[int(h[i])%len(alphabet)]
	}
	return string(out)
}

// templateHash is the pod-template-hash / controller-revision-hash of a pod
// template, in the same alphabet and length range the controllers use.
func templateHash(t corev1.PodTemplateSpec) string {
	data, _ := json.Marshal(t)
	return rand.SafeEncodeString(fmt.Sprint(fnv32(string(data))))
}

// HexDigest stands in for a sha256 digest of something named by seed.
func HexDigest(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:])
}

func imageID(image string) string {
	repo := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo = image[:i]
	}
	return repo + "@sha256:" + HexDigest("image "+image)
}

func ts(t time.Time) metav1.Time { return metav1.NewTime(t) }

// Meta is the metadata the API server keeps for a stored object.
func (c *Cluster) Meta(kind, namespace, name string, created time.Time, generation int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         namespace,
		UID:               types.UID(c.uidFor(kind, namespace, name)),
		ResourceVersion:   ResourceVersionFor(kind, namespace, name),
		Generation:        generation,
		CreationTimestamp: ts(created),
	}
}

// Stored keeps what came from the manifest (name, namespace, labels,
// annotations) and adds what the API server keeps.
func (c *Cluster) Stored(kind string, m metav1.ObjectMeta, created time.Time, generation int64) metav1.ObjectMeta {
	out := c.Meta(kind, m.Namespace, m.Name, created, generation)
	out.Labels = m.Labels
	out.Annotations = m.Annotations
	return out
}

// Namespace stores a namespace made at created and keeps its labels for
// the pods placed in it.
func (c *Cluster) Namespace(name string, labels map[string]string, created time.Time) corev1.Namespace {
	ns := Namespace(name, labels)
	ns.ObjectMeta = c.Stored("Namespace", ns.ObjectMeta, created, 0)
	if c.namespaceLabels == nil {
		c.namespaceLabels = map[string]map[string]string{}
	}
	c.namespaceLabels[name] = ns.Labels
	return ns
}

// orDefault sets an optional field the manifest left out.
func orDefault[T any](field **T, value T) {
	if *field == nil {
		*field = &value
	}
}

func with(m map[string]string, key, value string) map[string]string {
	out := copyMap(m)
	out[key] = value
	return out
}

// copyMap is never nil: admission and the injector write into it.
func copyMap(m map[string]string) map[string]string { return merged(m) }

func merged(all ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range all {
		maps.Copy(out, m)
	}
	return out
}

// templateAt is the workload's pod template as it was for one template
// revision: the applied one plus the restart annotation, if any.
func templateAt(t corev1.PodTemplateSpec, rev Template) corev1.PodTemplateSpec {
	out := *t.DeepCopy()
	if !rev.RestartedAt.IsZero() {
		out.Annotations = with(out.Annotations, "kubectl.kubernetes.io/restartedAt", rev.RestartedAt.Format(time.RFC3339))
	}
	return out
}

// Deployment stores an applied Deployment, defaulted, with a ReplicaSet per
// template revision of the story and their pods.
func (c *Cluster) Deployment(d appsv1.Deployment, st Story) {
	DefaultPodSpec(&d.Spec.Template.Spec)
	orDefault(&d.Spec.Replicas, int32(st.LivePods()))
	orDefault(&d.Spec.RevisionHistoryLimit, 10)
	orDefault(&d.Spec.ProgressDeadlineSeconds, 600)
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	orDefault(&d.Spec.Strategy.RollingUpdate, appsv1.RollingUpdateDeployment{})
	orDefault(&d.Spec.Strategy.RollingUpdate.MaxSurge, intstr.FromString("25%"))
	orDefault(&d.Spec.Strategy.RollingUpdate.MaxUnavailable, intstr.FromString("25%"))
	d.ObjectMeta = c.Stored("Deployment", d.ObjectMeta, st.Created, st.Revision+1)
	d.Annotations = with(d.Annotations, "deployment.kubernetes.io/revision", fmt.Sprint(st.Revision))
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	owner := ControllerRef("apps/v1", "Deployment", d.Name, string(d.UID))
	currentRS := c.replicaSets(d.ObjectMeta, d.Spec.Selector, d.Spec.Template, st, *d.Spec.Replicas, owner, "pod-template-hash", "deployment.kubernetes.io/")
	d.Spec.Template = templateAt(d.Spec.Template, st.current())
	live := int32(st.LivePods())
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           live,
		UpdatedReplicas:    live,
		ReadyReplicas:      live,
		AvailableReplicas:  live,
		Conditions: []appsv1.DeploymentCondition{
			{
				Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
				LastUpdateTime: ts(st.Created.Add(40 * time.Second)), LastTransitionTime: ts(st.Created.Add(40 * time.Second)),
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
			},
			{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
				LastUpdateTime: ts(st.LastPodStart().Add(8 * time.Second)), LastTransitionTime: ts(st.Created),
				Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", currentRS),
			},
		},
	}
	c.Objects.Deployments = append(c.Objects.Deployments, d)
}

// RolloutReplicaSets stores the ReplicaSets an Argo Rollout with this
// metadata, as the API server stored it, keeps for the story, with their
// pods, and returns the current one's hash. A Rollout is a custom resource:
// the caller stores it as written.
func (c *Cluster) RolloutReplicaSets(meta metav1.ObjectMeta, replicas int32, selector *metav1.LabelSelector, template corev1.PodTemplateSpec, st Story) string {
	tmpl := *template.DeepCopy()
	DefaultPodSpec(&tmpl.Spec)
	owner := ControllerRef("argoproj.io/v1alpha1", "Rollout", meta.Name, string(meta.UID))
	name := c.replicaSets(meta, selector, tmpl, st, replicas, owner, "rollouts-pod-template-hash", "rollout.argoproj.io/")
	return name[len(meta.Name)+1:]
}

// replicaSets stores one ReplicaSet per template revision, the last one
// scaled to desired and the others to zero, and returns the current one's
// name. A ReplicaSet was created when its template was restarted, else just
// before its first pod, else with the workload.
func (c *Cluster) replicaSets(owner metav1.ObjectMeta, sel *metav1.LabelSelector, applied corev1.PodTemplateSpec, st Story,
	desired int32, ref metav1.OwnerReference, hashLabel, annotationPrefix string,
) string {
	var name string
	for i, rev := range st.Templates {
		number := st.Revision - int64(len(st.Templates)-1-i)
		created := rev.RestartedAt
		switch {
		case !created.IsZero():
		case len(rev.Pods) > 0:
			created = firstPodStart(rev).Add(-2 * time.Second)
		default:
			created = st.Created
		}
		name = c.replicaSet(owner, sel, templateAt(applied, rev), rev, number, created, i == len(st.Templates)-1, desired, ref, hashLabel, annotationPrefix)
	}
	return name
}

func (c *Cluster) replicaSet(owner metav1.ObjectMeta, sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec,
	rev Template, number int64, created time.Time, isCurrent bool, desired int32, ref metav1.OwnerReference, hashLabel, annotationPrefix string,
) string {
	hash := templateHash(tmpl)
	name := owner.Name + "-" + hash
	tmpl.Labels = with(tmpl.Labels, hashLabel, hash)
	replicas := int32(0)
	if isCurrent {
		replicas = desired
	}
	selector := sel.DeepCopy()
	selector.MatchLabels = with(selector.MatchLabels, hashLabel, hash)
	rs := appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: c.Meta("ReplicaSet", owner.Namespace, name, created, 1),
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: selector, Template: tmpl},
	}
	if !isCurrent {
		rs.Generation = 2
	}
	rs.Labels = copyMap(tmpl.Labels)
	rs.Annotations = map[string]string{
		annotationPrefix + "desired-replicas": fmt.Sprint(desired),
		annotationPrefix + "revision":         fmt.Sprint(number),
	}
	if annotationPrefix == "deployment.kubernetes.io/" {
		rs.Annotations[annotationPrefix+"max-replicas"] = fmt.Sprint(desired + (desired+3)/4)
	}
	rs.OwnerReferences = []metav1.OwnerReference{ref}
	running := int32(0)
	for i, p := range rev.Pods {
		podName := name + "-" + Suffix(fmt.Sprintf("%s/%s/%d", owner.Namespace, name, i), 5)
		c.pod(owner.Namespace, podName, name+"-", tmpl, p, -1, ControllerRef("apps/v1", "ReplicaSet", name, string(rs.UID)))
		if !p.Terminating {
			running++
		}
	}
	if isCurrent {
		rs.Status = appsv1.ReplicaSetStatus{Replicas: running, FullyLabeledReplicas: running, ReadyReplicas: running, AvailableReplicas: running}
	}
	rs.Status.ObservedGeneration = rs.Generation
	c.Objects.ReplicaSets = append(c.Objects.ReplicaSets, rs)
	return name
}

// firstPodStart is the revision's earliest pod start.
func firstPodStart(rev Template) time.Time {
	return slices.MinFunc(rev.Pods, func(a, b PodPlan) int { return a.Started.Compare(b.Started) }).Started
}

// StatefulSet stores an applied StatefulSet, defaulted, with its ordered
// pods, the i-th on the i-th node.
func (c *Cluster) StatefulSet(s appsv1.StatefulSet, st Story) {
	DefaultPodSpec(&s.Spec.Template.Spec)
	orDefault(&s.Spec.Replicas, 1)
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
	}
	s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	for i := range s.Spec.VolumeClaimTemplates {
		pvc := &s.Spec.VolumeClaimTemplates[i]
		pvc.APIVersion, pvc.Kind = "v1", "PersistentVolumeClaim"
		pvc.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		pvc.Status.Phase = corev1.ClaimPending
	}
	rev := st.current()
	s.Spec.Template = templateAt(s.Spec.Template, rev)
	s.ObjectMeta = c.Stored("StatefulSet", s.ObjectMeta, st.Created, st.Revision)
	s.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	revision := s.Name + "-" + templateHash(s.Spec.Template)
	for i, p := range rev.Pods {
		podName := fmt.Sprintf("%s-%d", s.Name, i)
		tmpl := *s.Spec.Template.DeepCopy()
		tmpl.Labels = merged(tmpl.Labels, map[string]string{
			"controller-revision-hash":           revision,
			"statefulset.kubernetes.io/pod-name": podName,
			"apps.kubernetes.io/pod-index":       fmt.Sprint(i),
		})
		tmpl.Spec.Hostname = podName
		tmpl.Spec.Subdomain = s.Spec.ServiceName
		for _, claim := range s.Spec.VolumeClaimTemplates {
			tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{
				Name: claim.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: claim.Name + "-" + podName,
				}},
			})
		}
		c.pod(s.Namespace, podName, s.Name+"-", tmpl, p, i%len(c.Nodes), ControllerRef("apps/v1", "StatefulSet", s.Name, string(s.UID)))
	}
	live := int32(st.LivePods())
	s.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: s.Generation,
		Replicas:           live,
		ReadyReplicas:      live,
		CurrentReplicas:    live,
		UpdatedReplicas:    live,
		AvailableReplicas:  live,
		CurrentRevision:    revision,
		UpdateRevision:     revision,
		CollisionCount:     ptr.To[int32](0),
	}
	c.Objects.StatefulSets = append(c.Objects.StatefulSets, s)
}

// DaemonSet stores an applied DaemonSet, defaulted, with the story's pods
// pinned to the nodes in turn, the i-th pod to the i-th node.
func (c *Cluster) DaemonSet(d appsv1.DaemonSet, st Story) {
	DefaultPodSpec(&d.Spec.Template.Spec)
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	rev := st.current()
	d.Spec.Template = templateAt(d.Spec.Template, rev)
	d.ObjectMeta = c.Stored("DaemonSet", d.ObjectMeta, st.Created, st.Revision)
	d.Annotations = with(d.Annotations, "deprecated.daemonset.template.generation", fmt.Sprint(st.Revision))
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}
	hash := templateHash(d.Spec.Template)
	for i, p := range rev.Pods {
		tmpl := *d.Spec.Template.DeepCopy()
		tmpl.Labels = merged(tmpl.Labels, map[string]string{"controller-revision-hash": hash, "pod-template-generation": fmt.Sprint(st.Revision)})
		tmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{c.Nodes[i%len(c.Nodes)].Name}}},
			}}},
		}}
		for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
			tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
		}
		for _, key := range []string{"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"} {
			tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
		podName := d.Name + "-" + Suffix(fmt.Sprintf("%s/%s/%d", d.Namespace, d.Name, i), 5)
		c.pod(d.Namespace, podName, d.Name+"-", tmpl, p, i%len(c.Nodes), ControllerRef("apps/v1", "DaemonSet", d.Name, string(d.UID)))
	}
	n := int32(len(rev.Pods))
	d.Status = appsv1.DaemonSetStatus{
		ObservedGeneration:     d.Generation,
		CurrentNumberScheduled: n,
		DesiredNumberScheduled: n,
		NumberAvailable:        n,
		NumberReady:            n,
		UpdatedNumberScheduled: n,
	}
	c.Objects.DaemonSets = append(c.Objects.DaemonSets, d)
}

// CronJob stores an applied CronJob, defaulted, with the Job it scheduled
// at st.Scheduled still active.
func (c *Cluster) CronJob(cj batchv1.CronJob, st Story) {
	DefaultPodSpec(&cj.Spec.JobTemplate.Spec.Template.Spec)
	if cj.Spec.ConcurrencyPolicy == "" {
		cj.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	cj.Spec.Suspend = ptr.To(false)
	cj.ObjectMeta = c.Stored("CronJob", cj.ObjectMeta, st.Created, 1)
	cj.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}

	jobName := fmt.Sprintf("%s-%d", cj.Name, st.Scheduled.Unix()/60)
	job := batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName, Namespace: cj.Namespace,
			Labels:      cj.Spec.JobTemplate.Labels,
			Annotations: map[string]string{"batch.kubernetes.io/cronjob-scheduled-timestamp": st.Scheduled.Format(time.RFC3339)},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	ref := ControllerRef("batch/v1", "CronJob", cj.Name, string(cj.UID))
	uid := c.job(job, st, st.Scheduled.Add(time.Second), &ref)
	cj.Status = batchv1.CronJobStatus{
		Active:             []corev1.ObjectReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobName, Namespace: cj.Namespace, UID: uid, ResourceVersion: ResourceVersionFor("Job", cj.Namespace, jobName)}},
		LastScheduleTime:   ptr.To(ts(st.Scheduled)),
		LastSuccessfulTime: ptr.To(ts(st.Scheduled.Add(-24*time.Hour + 47*time.Minute + 12*time.Second))),
	}
	c.Objects.CronJobs = append(c.Objects.CronJobs, cj)
}

// Job stores an applied Job with its pods.
func (c *Cluster) Job(job batchv1.Job, st Story) { c.job(job, st, st.Created, nil) }

// job stores a Job (defaulted as the API server does) with its pods and
// returns its uid.
func (c *Cluster) job(job batchv1.Job, st Story, created time.Time, owner *metav1.OwnerReference) types.UID {
	DefaultPodSpec(&job.Spec.Template.Spec)
	job.ObjectMeta = c.Stored("Job", job.ObjectMeta, created, 1)
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	if owner != nil {
		job.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	controllerLabels := map[string]string{
		"batch.kubernetes.io/controller-uid": string(job.UID),
		"batch.kubernetes.io/job-name":       job.Name,
		"controller-uid":                     string(job.UID),
		"job-name":                           job.Name,
	}
	job.Labels = merged(job.Spec.Template.Labels, controllerLabels)
	orDefault(&job.Spec.BackoffLimit, 6)
	job.Spec.Completions = ptr.To[int32](1)
	job.Spec.Parallelism = ptr.To[int32](1)
	job.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	job.Spec.ManualSelector = ptr.To(false)
	job.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
	job.Spec.Suspend = ptr.To(false)
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": string(job.UID)}}
	job.Spec.Template.Labels = merged(job.Spec.Template.Labels, controllerLabels)

	rev := st.current()
	started := rev.Pods[0].Started.Add(-2 * time.Second)
	job.Status = batchv1.JobStatus{StartTime: ptr.To(ts(started)), UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}, Terminating: ptr.To[int32](0)}
	for i, p := range rev.Pods {
		podName := job.Name + "-" + Suffix(fmt.Sprintf("%s/%s/%d", job.Namespace, job.Name, i), 5)
		c.pod(job.Namespace, podName, job.Name+"-", job.Spec.Template, p, -1, ControllerRef("batch/v1", "Job", job.Name, string(job.UID)))
		if p.Succeeded {
			done := p.Started.Add(4*time.Minute + 2*time.Second)
			job.Status.Succeeded++
			job.Status.CompletionTime = ptr.To(ts(done))
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: ts(done), LastTransitionTime: ts(done)},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: ts(done), LastTransitionTime: ts(done)},
			}
		} else {
			job.Status.Active++
			job.Status.Ready = ptr.To(job.Status.Active)
		}
	}
	if job.Status.Ready == nil {
		job.Status.Ready = ptr.To[int32](0)
	}
	c.Objects.Jobs = append(c.Objects.Jobs, job)
	return job.UID
}

// BarePod stores a pod applied as it is, with no controller.
func (c *Cluster) BarePod(p corev1.Pod, st Story) {
	DefaultPodSpec(&p.Spec)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec}
	c.pod(p.Namespace, p.Name, "", tmpl, st.current().Pods[0], -1, metav1.OwnerReference{})
}

// pod creates a pod from a template as the API server would: admission,
// then the injector webhook if the plan says one injected it, then the
// kubelet's status. nodeIndex < 0 places it by a hash of its name.
func (c *Cluster) pod(namespace, name, generateName string, tmpl corev1.PodTemplateSpec, plan PodPlan, nodeIndex int, owner metav1.OwnerReference) {
	node, ip := c.place(namespace+"/"+name, nodeIndex)
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: c.Meta("Pod", namespace, name, plan.Started.Add(-time.Second), 1),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	pod.GenerateName = generateName
	pod.Labels = copyMap(tmpl.Labels)
	pod.Annotations = copyMap(tmpl.Annotations)
	if owner.Name != "" {
		pod.OwnerReferences = []metav1.OwnerReference{owner}
	}
	Admit(&pod, node.Name, Suffix(namespace+"/"+name+"/token", 5))
	if plan.Sidecar != nil {
		Inject(&pod, *plan.Sidecar, c.Values)
	} else if c.namespaceLabels[namespace]["istio.io/dataplane-mode"] == "ambient" {
		pod.Annotations["ambient.istio.io/redirection"] = "enabled"
	}
	DefaultPodSpec(&pod.Spec)
	if len(pod.Annotations) == 0 {
		pod.Annotations = nil
	}
	pod.Status = podStatus(pod, node.IP, ip, plan.Started, plan.Succeeded)
	if plan.Terminating {
		pod.DeletionTimestamp = ptr.To(ts(c.Now.Add(-31 * time.Second)))
		pod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	}
	c.Objects.Pods = append(c.Objects.Pods, pod)
}

// place picks a pod's node and hands it the node's next pod address.
func (c *Cluster) place(podKey string, nodeIndex int) (Node, string) {
	if c.podsOn == nil {
		c.podsOn = map[string]int{}
	}
	if nodeIndex < 0 {
		nodeIndex = int(fnv32(podKey) % uint32(len(c.Nodes)))
	}
	n := c.Nodes[nodeIndex]
	c.podsOn[n.Name]++
	a := n.PodCIDR.Addr().As4()
	at := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) + uint32(10+c.podsOn[n.Name]*3)
	return n, netip.AddrFrom4([4]byte{byte(at >> 24), byte(at >> 16), byte(at >> 8), byte(at)}).String()
}

// podStatus is the status the kubelet reports for a pod that started at
// start and is running (or, with succeeded, has completed).
func podStatus(pod corev1.Pod, hostIP, podIP string, start time.Time, succeeded bool) corev1.PodStatus {
	ready := start.Add(6 * time.Second)
	condStatus, completedReason, phase := corev1.ConditionTrue, "", corev1.PodRunning
	if succeeded {
		condStatus, completedReason, phase = corev1.ConditionFalse, "PodCompleted", corev1.PodSucceeded
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus, when time.Time, reason string) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: ts(when), Reason: reason}
	}
	status := corev1.PodStatus{
		Phase: phase,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers", condStatus, start.Add(2*time.Second), ""),
			cond(corev1.PodInitialized, corev1.ConditionTrue, start.Add(3*time.Second), completedReason),
			cond(corev1.PodReady, condStatus, ready, completedReason),
			cond(corev1.ContainersReady, condStatus, ready, completedReason),
			cond(corev1.PodScheduled, corev1.ConditionTrue, start, ""),
		},
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: ptr.To(ts(start)),
		QOSClass:  qosClass(pod.Spec),
	}
	for _, ctr := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, containerStatus(pod, ctr, true, start, succeeded))
	}
	for _, ctr := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, containerStatus(pod, ctr, false, start, succeeded))
	}
	return status
}

func containerStatus(pod corev1.Pod, c corev1.Container, init bool, start time.Time, succeeded bool) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     imageID(c.Image),
		ContainerID: "containerd://" + HexDigest(string(pod.UID)+"/"+c.Name),
		Ready:       !succeeded,
		Started:     ptr.To(!succeeded),
	}
	runsToCompletion := init && c.RestartPolicy == nil
	switch {
	case runsToCompletion:
		st.Ready = false
		st.Started = ptr.To(false)
		st.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", ContainerID: st.ContainerID,
			StartedAt: ts(start.Add(2 * time.Second)), FinishedAt: ts(start.Add(2 * time.Second)),
		}
	case succeeded:
		st.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", ContainerID: st.ContainerID,
			StartedAt: ts(start.Add(3 * time.Second)), FinishedAt: ts(start.Add(4 * time.Minute)),
		}
	default:
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: ts(start.Add(3 * time.Second))}
	}
	return st
}

func qosClass(s corev1.PodSpec) corev1.PodQOSClass {
	requested, guaranteed := false, true
	for _, c := range append(append([]corev1.Container{}, s.InitContainers...), s.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			requested = true
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, ok := c.Resources.Limits[r]
			if !ok {
				guaranteed = false
				continue
			}
			if q, ok := c.Resources.Requests[r]; ok && q.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !requested:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}
