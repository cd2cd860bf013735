// Package demodata generates the demo cluster snapshot of prod-eu-1 from
// the demo GitOps repository and the story of what happened in the cluster.
//
// The snapshot must agree with the GitOps repository object for object
// (Flux labels, inventories, templates after kustomize's transforms) and
// with Istio's own behaviour (webhooks, injected containers, status
// annotations). Writing it by hand would let the two drift apart; deriving
// it makes the agreement a property of the generator, checked by a test
// that the committed files are what it produces.
package demodata

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/mesh/meshtest"
)

//go:embed sources/*.yaml
var sources embed.FS

// Generate renders the snapshot `kedge snapshot` would write for prod-eu-1
// from the repositories in demoDir (the platform one in gitops/, the
// teams' beside it): file path (relative to the snapshot directory) to
// content.
func Generate(demoDir string) (map[string][]byte, error) {
	gitopsDir := filepath.Join(demoDir, platformRepoDir)
	kustomizations, err := renderFlux(demoDir, "clusters/"+clusterName)
	if err != nil {
		return nil, err
	}
	c := &cluster{byNamespace: map[string]map[string][]any{}}
	c.addIstio()
	var workloads, teamWorkloads []object
	for _, ks := range kustomizations {
		for _, o := range ks.Applied {
			switch o["kind"] {
			case "Namespace":
				c.addNamespace(o)
			case "Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Rollout", "Pod":
				if ks.Source != "" {
					teamWorkloads = append(teamWorkloads, o)
				} else {
					workloads = append(workloads, o)
				}
			}
		}
	}
	extra, err := sourceObjects()
	if err != nil {
		return nil, err
	}
	// The teams' repositories joined the cluster last: their pods are
	// placed after everything else, so the pod IPs handed out before stay.
	workloads = append(append(workloads, extra...), teamWorkloads...)
	for _, ns := range []string{"default", "kube-node-lease", "kube-public", "kube-system", "flux-system", "argocd"} {
		c.addNamespace(object{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	used := map[string]bool{}
	for _, o := range workloads {
		key := fmt.Sprintf("%s/%s/%s", nestedString(o, "metadata", "namespace"), o["kind"], nestedString(o, "metadata", "name"))
		st, ok := stories[key]
		if !ok {
			return nil, fmt.Errorf("no story for workload %s", key)
		}
		used[key] = true
		if err := c.addWorkload(o, st); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	for key := range stories {
		if !used[key] {
			return nil, fmt.Errorf("story %s has no workload in Git or sources", key)
		}
	}
	if err := c.addFlux(kustomizations); err != nil {
		return nil, err
	}
	if err := c.addArgoApplications(gitopsDir); err != nil {
		return nil, err
	}
	return c.files()
}

// sourceObjects are the workloads that are not applied from Git: installed
// with the cluster, rendered by helm-controller, or applied by hand.
func sourceObjects() ([]object, error) {
	names, err := fs.Glob(sources, "sources/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []object
	for _, name := range names {
		data, err := sources.ReadFile(name)
		if err != nil {
			return nil, err
		}
		nodes, err := (&kio.ByteReader{Reader: strings.NewReader(string(data)), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, n := range nodes {
			m, err := n.Map()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if nestedString(m, "metadata", "annotations", lastAppliedAnnotation) == lastAppliedFromSource {
				if err := fillLastApplied(m); err != nil {
					return nil, err
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

const (
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	// lastAppliedFromSource in a source manifest asks for the annotation
	// `kubectl apply` would have written for that very manifest.
	lastAppliedFromSource = "from-source"
)

// fillLastApplied writes what `kubectl apply` records: the applied
// manifest, without the annotation itself.
func fillLastApplied(o object) error {
	var applied object
	data, _ := json.Marshal(o)
	if err := json.Unmarshal(data, &applied); err != nil {
		return err
	}
	ann := nestedMap(applied, "metadata", "annotations")
	delete(ann, lastAppliedAnnotation)
	if len(ann) == 0 {
		delete(nestedMap(applied, "metadata"), "annotations")
	}
	data, err := json.Marshal(applied)
	if err != nil {
		return err
	}
	nestedMap(o, "metadata", "annotations")[lastAppliedAnnotation] = string(data) + "\n"
	return nil
}

// cluster collects the snapshot's objects by namespace and resource.
type cluster struct {
	byNamespace     map[string]map[string][]any // namespace ("" for cluster scope) -> resource -> objects
	namespaceLabels map[string]map[string]string
	placer          placer
}

func (c *cluster) add(namespace, resource string, obj any) {
	if c.byNamespace[namespace] == nil {
		c.byNamespace[namespace] = map[string][]any{}
	}
	c.byNamespace[namespace][resource] = append(c.byNamespace[namespace][resource], obj)
}

func (c *cluster) addNamespace(o object) {
	name := nestedString(o, "metadata", "name")
	var manifest corev1.Namespace
	mustConvert(o, &manifest)
	created, ok := namespaceCreated[name]
	if !ok {
		panic("no creation time for namespace " + name)
	}
	ns := meshtest.Namespace(name, manifest.Labels)
	ns.ObjectMeta = storedMeta("Namespace", ns.ObjectMeta, created, 0)
	if c.namespaceLabels == nil {
		c.namespaceLabels = map[string]map[string]string{}
	}
	c.namespaceLabels[name] = ns.Labels
	c.add("", "namespaces", ns)
}

func mustConvert(o object, into any) {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, into); err != nil {
		panic(fmt.Sprintf("%s %s: %v", o["kind"], nestedString(o, "metadata", "name"), err))
	}
}

// storedMeta keeps what came from the manifest (name, namespace, labels,
// annotations) and adds what the API server keeps.
func storedMeta(kind string, m metav1.ObjectMeta, created time.Time, generation int64) metav1.ObjectMeta {
	out := objectMeta(kind, m.Namespace, m.Name, created, generation)
	out.Labels = m.Labels
	out.Annotations = m.Annotations
	return out
}

func withAnnotation(m map[string]string, key, value string) map[string]string {
	out := copyMap(m)
	out[key] = value
	return out
}

// templateAt is the workload's pod template as it was for one template
// revision: the applied one plus the restart annotation, if any.
func templateAt(t corev1.PodTemplateSpec, rev templateRevision) corev1.PodTemplateSpec {
	out := *t.DeepCopy()
	if !rev.RestartedAt.IsZero() {
		out.Annotations = withAnnotation(out.Annotations, "kubectl.kubernetes.io/restartedAt", rev.RestartedAt.Format(time.RFC3339))
	}
	return out
}

func (s story) current() templateRevision { return s.Templates[len(s.Templates)-1] }

func (s story) livePods() int {
	n := 0
	for _, p := range s.current().Pods {
		if !p.Terminating && !p.Succeeded {
			n++
		}
	}
	return n
}

func (c *cluster) addWorkload(o object, st story) error {
	switch o["kind"] {
	case "Deployment":
		return c.addDeployment(o, st)
	case "StatefulSet":
		return c.addStatefulSet(o, st)
	case "DaemonSet":
		return c.addDaemonSet(o, st)
	case "CronJob":
		return c.addCronJob(o, st)
	case "Job":
		return c.addJob(o, st)
	case "Rollout":
		return c.addRollout(o, st)
	case "Pod":
		return c.addBarePod(o, st)
	}
	return fmt.Errorf("unexpected kind %v", o["kind"])
}

func (c *cluster) addDeployment(o object, st story) error {
	var d appsv1.Deployment
	mustConvert(o, &d)
	meshtest.DefaultPodSpec(&d.Spec.Template.Spec)
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To(int32(st.livePods()))
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if d.Spec.Strategy.RollingUpdate == nil {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
	}
	if d.Spec.Strategy.RollingUpdate.MaxSurge == nil {
		d.Spec.Strategy.RollingUpdate.MaxSurge = intOrPercent("25%")
	}
	if d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil {
		d.Spec.Strategy.RollingUpdate.MaxUnavailable = intOrPercent("25%")
	}
	applied := d.Spec.Template
	d.Spec.Template = templateAt(applied, st.current())
	d.ObjectMeta = storedMeta("Deployment", d.ObjectMeta, st.Created, st.Revision+1)
	d.Annotations = withAnnotation(d.Annotations, "deployment.kubernetes.io/revision", fmt.Sprint(st.Revision))
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}

	var currentRS string
	for i, rev := range st.Templates {
		number := st.Revision - int64(len(st.Templates)-1-i)
		rs := c.replicaSet(d.Namespace, d.Name, d.Spec.Selector, templateAt(applied, rev), rev, number,
			i == len(st.Templates)-1, *d.Spec.Replicas,
			meshtest.ControllerRef("apps/v1", "Deployment", d.Name, string(d.UID)), "pod-template-hash", "deployment.kubernetes.io/")
		currentRS = rs
	}
	live := int32(st.livePods())
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
				LastUpdateTime: ts(lastPodStart(st).Add(8 * time.Second)), LastTransitionTime: ts(st.Created),
				Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", currentRS),
			},
		},
	}
	c.add(d.Namespace, "deployments", d)
	return nil
}

func lastPodStart(st story) time.Time {
	var last time.Time
	for _, p := range st.current().Pods {
		if p.Started.After(last) {
			last = p.Started
		}
	}
	return last
}

// replicaSet adds one ReplicaSet of a Deployment or Rollout, with its pods,
// and returns its name.
func (c *cluster) replicaSet(namespace, owner string, sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec,
	rev templateRevision, number int64, isCurrent bool, desired int32, ref metav1.OwnerReference, hashLabel, annotationPrefix string,
) string {
	hash := templateHash(tmpl)
	name := owner + "-" + hash
	tmpl.Labels = withAnnotation(tmpl.Labels, hashLabel, hash)
	created := firstPodStart(rev).Add(-2 * time.Second)
	if !rev.RestartedAt.IsZero() {
		created = rev.RestartedAt
	}
	replicas := int32(0)
	if isCurrent {
		replicas = desired
	}
	selector := sel.DeepCopy()
	selector.MatchLabels = withAnnotation(selector.MatchLabels, hashLabel, hash)
	rs := appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: objectMeta("ReplicaSet", namespace, name, created, 1),
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: selector,
			Template: tmpl,
		},
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
		podName := name + "-" + suffix(fmt.Sprintf("%s/%s/%d", namespace, name, i), 5)
		c.addPod(namespace, podName, name+"-", tmpl, p, -1,
			meshtest.ControllerRef("apps/v1", "ReplicaSet", name, string(rs.UID)))
		if !p.Terminating {
			running++
		}
	}
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: running, FullyLabeledReplicas: running, ReadyReplicas: running, AvailableReplicas: running,
		ObservedGeneration: rs.Generation,
	}
	if !isCurrent {
		rs.Status.Replicas, rs.Status.FullyLabeledReplicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = 0, 0, 0, 0
	}
	c.add(namespace, "replicasets", rs)
	return name
}

func firstPodStart(rev templateRevision) time.Time {
	first := rev.Pods[0].Started
	for _, p := range rev.Pods {
		if p.Started.Before(first) {
			first = p.Started
		}
	}
	return first
}

func (c *cluster) addStatefulSet(o object, st story) error {
	var s appsv1.StatefulSet
	mustConvert(o, &s)
	meshtest.DefaultPodSpec(&s.Spec.Template.Spec)
	if s.Spec.Replicas == nil {
		s.Spec.Replicas = ptr.To[int32](1)
	}
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
	s.ObjectMeta = storedMeta("StatefulSet", s.ObjectMeta, st.Created, st.Revision)
	s.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	revision := s.Name + "-" + templateHash(s.Spec.Template)
	for i, p := range rev.Pods {
		podName := fmt.Sprintf("%s-%d", s.Name, i)
		tmpl := *s.Spec.Template.DeepCopy()
		tmpl.Labels = copyMap(tmpl.Labels)
		tmpl.Labels["controller-revision-hash"] = revision
		tmpl.Labels["statefulset.kubernetes.io/pod-name"] = podName
		tmpl.Labels["apps.kubernetes.io/pod-index"] = fmt.Sprint(i)
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
		c.addPod(s.Namespace, podName, s.Name+"-", tmpl, p, i%len(nodes),
			meshtest.ControllerRef("apps/v1", "StatefulSet", s.Name, string(s.UID)))
	}
	live := int32(st.livePods())
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
	c.add(s.Namespace, "statefulsets", s)
	return nil
}

func (c *cluster) addDaemonSet(o object, st story) error {
	var d appsv1.DaemonSet
	mustConvert(o, &d)
	meshtest.DefaultPodSpec(&d.Spec.Template.Spec)
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	rev := st.current()
	if len(rev.Pods) != len(nodes) {
		return fmt.Errorf("a DaemonSet runs one pod per node: want %d pods, story has %d", len(nodes), len(rev.Pods))
	}
	d.Spec.Template = templateAt(d.Spec.Template, rev)
	d.ObjectMeta = storedMeta("DaemonSet", d.ObjectMeta, st.Created, st.Revision)
	d.Annotations = withAnnotation(d.Annotations, "deprecated.daemonset.template.generation", fmt.Sprint(st.Revision))
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}
	hash := templateHash(d.Spec.Template)
	for i, p := range rev.Pods {
		n := nodes[i]
		tmpl := *d.Spec.Template.DeepCopy()
		tmpl.Labels = copyMap(tmpl.Labels)
		tmpl.Labels["controller-revision-hash"] = hash
		tmpl.Labels["pod-template-generation"] = fmt.Sprint(st.Revision)
		tmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}},
			}}},
		}}
		for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
			tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
		}
		for _, key := range []string{"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"} {
			tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
		podName := d.Name + "-" + suffix(fmt.Sprintf("%s/%s/%d", d.Namespace, d.Name, i), 5)
		c.addPod(d.Namespace, podName, d.Name+"-", tmpl, p, i,
			meshtest.ControllerRef("apps/v1", "DaemonSet", d.Name, string(d.UID)))
	}
	n := int32(len(nodes))
	d.Status = appsv1.DaemonSetStatus{
		ObservedGeneration:     d.Generation,
		CurrentNumberScheduled: n,
		DesiredNumberScheduled: n,
		NumberAvailable:        n,
		NumberReady:            n,
		UpdatedNumberScheduled: n,
	}
	c.add(d.Namespace, "daemonsets", d)
	return nil
}

func (c *cluster) addCronJob(o object, st story) error {
	var cj batchv1.CronJob
	mustConvert(o, &cj)
	meshtest.DefaultPodSpec(&cj.Spec.JobTemplate.Spec.Template.Spec)
	if cj.Spec.ConcurrencyPolicy == "" {
		cj.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	cj.Spec.Suspend = ptr.To(false)
	cj.ObjectMeta = storedMeta("CronJob", cj.ObjectMeta, st.Created, 1)
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
	ref := meshtest.ControllerRef("batch/v1", "CronJob", cj.Name, string(cj.UID))
	uid := c.job(&job, st, st.Scheduled.Add(time.Second), &ref)
	cj.Status = batchv1.CronJobStatus{
		Active:             []corev1.ObjectReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobName, Namespace: cj.Namespace, UID: uid, ResourceVersion: resourceVersionFor("Job", cj.Namespace, jobName)}},
		LastScheduleTime:   ptr.To(ts(st.Scheduled)),
		LastSuccessfulTime: ptr.To(ts(st.Scheduled.Add(-24*time.Hour + 47*time.Minute + 12*time.Second))),
	}
	c.add(cj.Namespace, "cronjobs", cj)
	return nil
}

func (c *cluster) addJob(o object, st story) error {
	var job batchv1.Job
	mustConvert(o, &job)
	c.job(&job, st, st.Created, nil)
	return nil
}

// job stores a Job (defaulted as the API server does) with its pods and
// returns its uid.
func (c *cluster) job(job *batchv1.Job, st story, created time.Time, owner *metav1.OwnerReference) ktypes.UID {
	meshtest.DefaultPodSpec(&job.Spec.Template.Spec)
	meta := storedMeta("Job", job.ObjectMeta, created, 1)
	job.ObjectMeta = meta
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
	job.Labels = mergeLabels(job.Spec.Template.Labels, controllerLabels)
	if job.Spec.BackoffLimit == nil {
		job.Spec.BackoffLimit = ptr.To[int32](6)
	}
	job.Spec.Completions = ptr.To[int32](1)
	job.Spec.Parallelism = ptr.To[int32](1)
	job.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	job.Spec.ManualSelector = ptr.To(false)
	job.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
	job.Spec.Suspend = ptr.To(false)
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": string(job.UID)}}
	job.Spec.Template.Labels = mergeLabels(job.Spec.Template.Labels, controllerLabels)

	rev := st.current()
	started := rev.Pods[0].Started.Add(-2 * time.Second)
	job.Status = batchv1.JobStatus{StartTime: ptr.To(ts(started)), UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}, Terminating: ptr.To[int32](0)}
	for i, p := range rev.Pods {
		podName := job.Name + "-" + suffix(fmt.Sprintf("%s/%s/%d", job.Namespace, job.Name, i), 5)
		c.addPod(job.Namespace, podName, job.Name+"-", job.Spec.Template, p, -1,
			meshtest.ControllerRef("batch/v1", "Job", job.Name, string(job.UID)))
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
	c.add(job.Namespace, "jobs", *job)
	return job.UID
}

func mergeLabels(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func (c *cluster) addRollout(o object, st story) error {
	// A Rollout is a custom resource: the API server stores its template
	// as written, without pod defaults.
	var spec struct {
		Replicas *int32                 `json:"replicas"`
		Selector *metav1.LabelSelector  `json:"selector"`
		Template corev1.PodTemplateSpec `json:"template"`
	}
	mustConvert(nestedMap(o, "spec"), &spec)
	name, namespace := nestedString(o, "metadata", "name"), nestedString(o, "metadata", "namespace")
	meta := objectMeta("Rollout", namespace, name, st.Created, st.Revision)
	md := nestedMap(o, "metadata")
	md["uid"], md["resourceVersion"], md["generation"] = string(meta.UID), meta.ResourceVersion, meta.Generation
	md["creationTimestamp"] = st.Created.Format(time.RFC3339)
	ann := nestedMap(o, "metadata", "annotations")
	ann["rollout.argoproj.io/revision"] = fmt.Sprint(st.Revision)

	tmpl := *spec.Template.DeepCopy()
	meshtest.DefaultPodSpec(&tmpl.Spec)
	var rsName, hash string
	for i, rev := range st.Templates {
		number := st.Revision - int64(len(st.Templates)-1-i)
		rsName = c.replicaSet(namespace, name, spec.Selector, templateAt(tmpl, rev), rev, number,
			i == len(st.Templates)-1, *spec.Replicas,
			meshtest.ControllerRef("argoproj.io/v1alpha1", "Rollout", name, string(meta.UID)), "rollouts-pod-template-hash", "rollout.argoproj.io/")
		hash = strings.TrimPrefix(rsName, name+"-")
	}
	live := int64(st.livePods())
	settled := lastPodStart(st).Add(9 * time.Second)
	o["status"] = map[string]any{
		"HPAReplicas":        live,
		"availableReplicas":  live,
		"blueGreen":          map[string]any{},
		"canary":             map[string]any{},
		"currentPodHash":     hash,
		"currentStepHash":    suffix(name+"/steps", 10),
		"currentStepIndex":   int64(4),
		"observedGeneration": fmt.Sprint(st.Revision),
		"phase":              "Healthy",
		"readyReplicas":      live,
		"replicas":           live,
		"selector":           "app=" + name,
		"stableRS":           hash,
		"updatedReplicas":    live,
		"conditions": []any{
			rolloutCondition("Available", "AvailableReason", "Rollout has minimum availability", settled),
			rolloutCondition("Completed", "RolloutCompleted", fmt.Sprintf("Rollout completed update to revision %d (%s): Rollout completed update to revision %d", st.Revision, hash, st.Revision), settled),
			rolloutCondition("Healthy", "RolloutHealthy", "Rollout is healthy", settled),
		},
	}
	c.add(namespace, "rollouts", o)
	return nil
}

func rolloutCondition(typ, reason, message string, at time.Time) map[string]any {
	return map[string]any{
		"type": typ, "status": "True", "reason": reason, "message": message,
		"lastTransitionTime": at.Format(time.RFC3339), "lastUpdateTime": at.Format(time.RFC3339),
	}
}

func (c *cluster) addBarePod(o object, st story) error {
	var p corev1.Pod
	mustConvert(o, &p)
	meshtest.DefaultPodSpec(&p.Spec)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec}
	c.addPod(p.Namespace, p.Name, "", tmpl, st.current().Pods[0], -1, metav1.OwnerReference{})
	return nil
}

// addPod creates a pod from a template as the API server would: admission,
// then the injector webhook if the story says one injected it, then the
// kubelet's status.
func (c *cluster) addPod(namespace, name, generateName string, tmpl corev1.PodTemplateSpec, plan podPlan, nodeIndex int,
	owner metav1.OwnerReference,
) {
	at := c.placer.place(namespace+"/"+name, nodeIndex, plan.Started)
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: objectMeta("Pod", namespace, name, plan.Started.Add(-time.Second), 1),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	pod.GenerateName = generateName
	pod.Labels = copyMap(tmpl.Labels)
	pod.Annotations = copyMap(tmpl.Annotations)
	if owner.Name != "" {
		pod.OwnerReferences = []metav1.OwnerReference{owner}
	}
	meshtest.Admit(&pod, at.Node.Name, suffix(namespace+"/"+name+"/token", 5))
	if plan.Sidecar != nil {
		meshtest.Inject(&pod, meshtest.Sidecar{Revision: plan.Sidecar.Revision, Image: plan.Sidecar.image()}, meshValues)
	} else if c.namespaceLabels[namespace]["istio.io/dataplane-mode"] == "ambient" {
		pod.Annotations["ambient.istio.io/redirection"] = "enabled"
	}
	meshtest.DefaultPodSpec(&pod.Spec)
	if len(pod.Annotations) == 0 {
		pod.Annotations = nil
	}
	finishPod(&pod, at, plan.Succeeded)
	if plan.Terminating {
		pod.DeletionTimestamp = ptr.To(ts(snapshotTime.Add(-31 * time.Second)))
		pod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	}
	c.add(namespace, "pods", pod)
}

// addFlux stores the Flux objects with the status kustomize-controller and
// source-controller report: the last applied revision and each
// Kustomization's inventory.
func (c *cluster) addFlux(kustomizations []*fluxKustomization) error {
	created := namespaceCreated["flux-system"].Add(40 * time.Second)
	for _, ks := range kustomizations {
		for _, o := range ks.Applied {
			if o["kind"] == "GitRepository" {
				c.add("flux-system", "gitrepositories", fluxStatus(o, created, gitRepositoryStatus(o)))
			}
		}
	}
	for _, ks := range kustomizations {
		var entries []any
		ids := map[string]string{}
		for _, o := range ks.Applied {
			id, v := inventoryID(o)
			ids[id] = v
		}
		for _, id := range sortedKeys(ids) {
			entries = append(entries, map[string]any{"id": id, "v": ids[id]})
		}
		revision := revisionOf(ks.Source)
		c.add("flux-system", "kustomizations", fluxStatus(ks.Object, created, map[string]any{
			"conditions":            []any{readyCondition("ReconciliationSucceeded", "Applied revision: "+revision)},
			"inventory":             map[string]any{"entries": entries},
			"lastAppliedRevision":   revision,
			"lastAttemptedRevision": revision,
			"observedGeneration":    int64(1),
		}))
	}
	return nil
}

// revisionOf is the commit Flux last fetched from the repository at url
// ("" for the platform repository).
func revisionOf(url string) string {
	if team, ok := teamRepositories[url]; ok {
		return team.Revision
	}
	return gitRevision
}

// gitRepositoryStatus is what source-controller reports once it stored the
// artifact of the repository's last revision.
func gitRepositoryStatus(o object) map[string]any {
	name := nestedString(o, "metadata", "name")
	url := nestedString(o, "spec", "url")
	if name == "flux-system" {
		url = ""
	}
	revision := revisionOf(url)
	commit := revision[strings.LastIndex(revision, ":")+1:]
	artifact := "gitrepository/flux-system/" + name + "/" + commit + ".tar.gz"
	stored := "stored artifact for revision '" + revision + "'"
	return map[string]any{
		"artifact": map[string]any{
			"digest":         "sha256:" + hexDigest("artifact "+revision),
			"lastUpdateTime": "2025-03-13T08:52:17Z",
			"path":           artifact,
			"revision":       revision,
			"size":           int64(48213),
			"url":            "http://source-controller.flux-system.svc.cluster.local./" + artifact,
		},
		"conditions": []any{
			readyCondition("Succeeded", stored),
			map[string]any{"type": "ArtifactInStorage", "status": "True", "reason": "Succeeded", "message": stored, "lastTransitionTime": "2025-03-13T08:52:17Z", "observedGeneration": int64(1)},
		},
		"observedGeneration": int64(1),
	}
}

// argoApplicationsDir holds the Argo CD Applications of the repository;
// Argo CD, installed next to Flux, has them all synced.
const argoApplicationsDir = "argocd"

// addArgoApplications stores the Applications as the API server holds them,
// synced and healthy at the repository's revision.
func (c *cluster) addArgoApplications(gitopsDir string) error {
	files, err := filepath.Glob(filepath.Join(gitopsDir, argoApplicationsDir, "*.yaml"))
	if err != nil {
		return err
	}
	created := namespaceCreated["argocd"].Add(2 * time.Minute)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var app object
		if err := yaml.Unmarshal(data, &app); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		meta := objectMeta("Application", "argocd", nestedString(app, "metadata", "name"), created, 1)
		md := nestedMap(app, "metadata")
		md["uid"], md["resourceVersion"], md["generation"] = string(meta.UID), meta.ResourceVersion, meta.Generation
		md["creationTimestamp"] = created.Format(time.RFC3339)
		app["status"] = map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": strings.TrimPrefix(gitRevision, "main@sha1:")},
			"health": map[string]any{"status": "Healthy"},
		}
		c.add("argocd", "applications", app)
	}
	return nil
}

func readyCondition(reason, message string) map[string]any {
	return map[string]any{
		"type": "Ready", "status": "True", "reason": reason, "message": message,
		"lastTransitionTime": "2025-03-13T08:52:19Z", "observedGeneration": int64(1),
	}
}

func fluxStatus(o object, created time.Time, status map[string]any) object {
	name := nestedString(o, "metadata", "name")
	kind, _ := o["kind"].(string)
	meta := objectMeta(kind, "flux-system", name, created, 1)
	md := nestedMap(o, "metadata")
	md["uid"], md["resourceVersion"], md["generation"] = string(meta.UID), meta.ResourceVersion, meta.Generation
	md["creationTimestamp"] = created.Format(time.RFC3339)
	md["finalizers"] = []any{"finalizers.fluxcd.io"}
	o["status"] = status
	return o
}

// files lays the snapshot out the way `kubectl get -o yaml` output saved
// per namespace would look: one List per resource, the webhooks as JSON,
// and the Flux objects as a plain multi-document stream and a single
// object, so every format the snapshot reader accepts is used.
func (c *cluster) files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, ns := range sortedKeys(c.byNamespace) {
		dir := ns
		if dir == "" {
			dir = "cluster-scoped"
		}
		for _, res := range sortedKeys(c.byNamespace[ns]) {
			items, err := toMaps(c.byNamespace[ns][res])
			if err != nil {
				return nil, err
			}
			sort.SliceStable(items, func(i, j int) bool {
				return nestedString(items[i], "metadata", "name") < nestedString(items[j], "metadata", "name")
			})
			file := path.Join(dir, res+".yaml")
			var data []byte
			switch res {
			case "mutatingwebhookconfigurations":
				file = path.Join(dir, res+".json")
				data, err = json.MarshalIndent(list(items), "", "    ")
				data = append(data, '\n')
			case "kustomizations":
				data, err = multiDoc(items)
			case "gitrepositories":
				// One object per file, as `kubectl get gitrepository NAME
				// -o yaml` saves it; the bootstrap one keeps the plain name.
				for _, item := range items[1:] {
					more, err := yaml.Marshal(item)
					if err != nil {
						return nil, err
					}
					out[path.Join(dir, res+"-"+nestedString(item, "metadata", "name")+".yaml")] = more
				}
				data, err = yaml.Marshal(items[0])
			default:
				data, err = yaml.Marshal(list(items))
			}
			if err != nil {
				return nil, err
			}
			out[file] = data
		}
	}
	return out, nil
}

func list(items []object) object {
	return object{"apiVersion": "v1", "items": items, "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}
}

func multiDoc(items []object) ([]byte, error) {
	var b strings.Builder
	for _, it := range items {
		data, err := yaml.Marshal(it)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return []byte(b.String()), nil
}

func toMaps(objs []any) ([]object, error) {
	out := make([]object, 0, len(objs))
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var m object
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
