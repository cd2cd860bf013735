package synth

import (
	"fmt"
	"math/rand/v2"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/mesh/meshtest"
	"github.com/kedge-io/kedge/internal/objects"
)

// Where the GitOps controllers live, and the names they go by.
const (
	fluxNamespace     = "flux-system"
	fluxSource        = "flux-system"
	argoNamespace     = "argocd"
	revisionAnno      = "deployment.kubernetes.io/revision"
	podTemplateHash   = "pod-template-hash"
	rolloutHashLabel  = "rollouts-pod-template-hash"
	controllerHash    = "controller-revision-hash"
	appRegistry       = "registry.example.com"
	nodesInFleet      = 400
	oldReplicaSetsPer = 1
)

func apiVersionOf(kind string) string {
	if kind == kindRollout {
		return "argoproj.io/v1alpha1"
	}
	return "apps/v1"
}

// clusterBuilder turns the model into API objects.
type clusterBuilder struct {
	m   *model
	set *objects.Set
	// pods and replicaSetsFull are the set's pods and ReplicaSets in
	// full, as the API server serves them.
	pods            []corev1.Pod
	replicaSetsFull []appsv1.ReplicaSet
	rng             *rand.Rand
}

func buildCluster(m *model) (*objects.Set, []corev1.Pod, []appsv1.ReplicaSet) {
	b := &clusterBuilder{m: m, set: &objects.Set{}, rng: rand.New(rand.NewPCG(m.spec.Seed, 0x706f6473))}
	installIstio(b.set)
	for _, name := range []string{"kube-system", "kube-public", "kube-node-lease", "default", "istio-system", fluxNamespace, argoNamespace} {
		b.set.Namespaces = append(b.set.Namespaces, namespaceObject(name, nil, fleetEpoch.Add(-500*24*time.Hour)))
	}
	b.set.GitRepositories = append(b.set.GitRepositories, objects.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "GitRepository"},
		ObjectMeta: metav1.ObjectMeta{Name: fluxSource, Namespace: fluxNamespace},
		Spec:       objects.GitRepositorySpec{URL: m.spec.RepoURL, Ref: &objects.GitRepositoryRef{Branch: "main"}},
	})
	for i := range m.namespaces {
		b.namespace(&m.namespaces[i])
	}
	b.set.Pods = objects.Pods(b.pods...)
	for i := range b.replicaSetsFull {
		b.set.ReplicaSets = append(b.set.ReplicaSets, objects.ReplicaSetOf(&b.replicaSetsFull[i]))
	}
	return b.set, b.pods, b.replicaSetsFull
}

func namespaceObject(name string, labels map[string]string, created time.Time) corev1.Namespace {
	ns := meshtest.Namespace(name, labels)
	ns.CreationTimestamp = metav1.NewTime(created)
	return ns
}

func (b *clusterBuilder) namespace(ns *namespaceModel) {
	labels := ns.profile.labels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["team"] = teamOf(ns.name)
	b.set.Namespaces = append(b.set.Namespaces, namespaceObject(ns.name, labels, ns.created))
	switch ns.gitops {
	case gitopsFlux:
		b.set.Kustomizations = append(b.set.Kustomizations, objects.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.name, Namespace: fluxNamespace},
			Spec: objects.KustomizationSpec{
				Path:      "./" + overlayDir(ns.name),
				SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: fluxSource},
			},
		})
	case gitopsArgo:
		b.set.Applications = append(b.set.Applications, objects.Application{
			TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.name, Namespace: argoNamespace},
			Spec: objects.ApplicationSpec{
				Source:      &objects.ApplicationSource{RepoURL: b.m.spec.RepoURL, Path: argoDir(ns.name), TargetRevision: "main"},
				Destination: objects.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: ns.name},
			},
		})
	}
	for i := range ns.workloads {
		b.workload(ns, &ns.workloads[i])
	}
}

func teamOf(namespace string) string {
	for i := len(namespace) - 1; i >= 0; i-- {
		if namespace[i] == '-' {
			return namespace[:i]
		}
	}
	return namespace
}

// trackingMeta is what the GitOps tool stamps on the objects it applies.
func (b *clusterBuilder) trackingMeta(ns *namespaceModel, w *workloadModel) (labels, annotations map[string]string) {
	labels = map[string]string{
		"app.kubernetes.io/name":    w.name,
		"app.kubernetes.io/part-of": teamOf(ns.name),
	}
	annotations = map[string]string{}
	switch ns.gitops {
	case gitopsFlux:
		meshtest.FluxLabels(labels, fluxNamespace, ns.name)
	case gitopsArgo:
		annotations[meshtest.ArgoTrackingAnnotation] = meshtest.ArgoTrackingID(ns.name, apiVersionOf(w.kind), w.kind, ns.name, w.name)
	}
	return labels, annotations
}

// podTemplate is the workload's template as the repository writes it
// (after kustomize), with the defaults the API server fills in.
func podTemplate(ns *namespaceModel, w *workloadModel) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": w.name, "version": fmt.Sprintf("v%d", w.version)},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
		},
		Spec: corev1.PodSpec{ServiceAccountName: w.name, Containers: []corev1.Container{appContainer(ns, w)}},
	}
	meshtest.DefaultPodSpec(&t.Spec)
	return t
}

func appContainer(ns *namespaceModel, w *workloadModel) corev1.Container {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}}}
	}
	return corev1.Container{
		Name:  w.name,
		Image: repoImage(w),
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
		Env: []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-agent." + ns.name + ".svc:4317"},
			{Name: "POD_NAME", ValueFrom: field("metadata.name")},
			{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		ReadinessProbe: probe("/ready"),
		LivenessProbe:  probe("/healthz"),
	}
}

func (b *clusterBuilder) workload(ns *namespaceModel, w *workloadModel) {
	labels, annotations := b.trackingMeta(ns, w)
	created := ns.created.Add(time.Duration(b.rng.IntN(24*60)) * time.Minute)
	meta := metav1.ObjectMeta{
		Name: w.name, Namespace: ns.name, UID: types.UID(w.uid), Labels: labels, Annotations: annotations,
		CreationTimestamp: metav1.NewTime(created), Generation: int64(w.version),
		ResourceVersion: fmt.Sprint(100000 + b.rng.IntN(900000)),
	}
	template := podTemplate(ns, w)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name}}
	replicas := int32(w.pods)
	top := meshtest.ControllerRef(apiVersionOf(w.kind), w.kind, w.name, w.uid)
	podOwner := top
	podLabels := map[string]string{}
	switch w.kind {
	case kindDeployment:
		meta.Annotations[revisionAnno] = fmt.Sprint(w.version)
		b.set.Deployments = append(b.set.Deployments, appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas, Selector: selector, Template: template,
				Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			},
			Status: appsv1.DeploymentStatus{
				ObservedGeneration: int64(w.version), Replicas: replicas, UpdatedReplicas: replicas,
				ReadyReplicas: replicas, AvailableReplicas: replicas,
			},
		})
		podOwner = b.replicaSets(ns, w, top, template, podTemplateHash, created)
		podLabels[podTemplateHash] = w.hash
	case kindRollout:
		b.set.Rollouts = append(b.set.Rollouts, objects.Rollout{
			TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
			ObjectMeta: meta,
			Spec:       objects.RolloutSpec{Template: template},
		})
		podOwner = b.replicaSets(ns, w, top, template, rolloutHashLabel, created)
		podLabels[rolloutHashLabel] = w.hash
	case kindStatefulSet:
		b.set.StatefulSets = append(b.set.StatefulSets, appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{
				Replicas: &replicas, Selector: selector, Template: template, ServiceName: w.name,
				PodManagementPolicy: appsv1.OrderedReadyPodManagement,
				UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			},
			Status: appsv1.StatefulSetStatus{
				ObservedGeneration: int64(w.version), Replicas: replicas, ReadyReplicas: replicas,
				CurrentReplicas: replicas, UpdatedReplicas: replicas,
				CurrentRevision: w.name + "-" + w.hash, UpdateRevision: w.name + "-" + w.hash,
			},
		})
		podLabels[controllerHash] = w.name + "-" + w.hash
	case kindDaemonSet:
		b.set.DaemonSets = append(b.set.DaemonSets, appsv1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
			ObjectMeta: meta,
			Spec: appsv1.DaemonSetSpec{
				Selector: selector, Template: template,
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			},
			Status: appsv1.DaemonSetStatus{
				CurrentNumberScheduled: replicas, DesiredNumberScheduled: replicas, NumberReady: replicas,
				NumberAvailable: replicas, UpdatedNumberScheduled: replicas, ObservedGeneration: int64(w.version),
			},
		})
		podLabels[controllerHash] = w.hash
		podLabels["pod-template-generation"] = fmt.Sprint(w.version)
	}
	taken := make(map[string]bool, w.pods)
	for i := range w.pods {
		name := b.podName(w, i)
		for taken[name] {
			name = b.podName(w, i)
		}
		taken[name] = true
		b.pods = append(b.pods, b.pod(ns, w, template, podOwner, name, podLabels, created))
	}
}

// replicaSets adds the current ReplicaSet and an older, scaled-down one,
// and returns the reference the pods carry.
func (b *clusterBuilder) replicaSets(ns *namespaceModel, w *workloadModel, top metav1.OwnerReference, template corev1.PodTemplateSpec, hashLabel string, created time.Time) metav1.OwnerReference {
	var current metav1.OwnerReference
	for i := 0; i <= oldReplicaSetsPer; i++ {
		hash, replicas := w.hash, int32(w.pods)
		if i > 0 {
			hash, replicas = randomString(b.rng, hashAlphabet, 10), 0
		}
		uid := randomUID(b.rng)
		tmpl := *template.DeepCopy()
		tmpl.Labels[hashLabel] = hash
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name, hashLabel: hash}}
		b.replicaSetsFull = append(b.replicaSetsFull, appsv1.ReplicaSet{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{
				Name: w.name + "-" + hash, Namespace: ns.name, UID: types.UID(uid),
				Labels:            map[string]string{"app": w.name, hashLabel: hash},
				Annotations:       map[string]string{revisionAnno: fmt.Sprint(w.version - i)},
				OwnerReferences:   []metav1.OwnerReference{top},
				CreationTimestamp: metav1.NewTime(created.Add(-time.Duration(i) * 72 * time.Hour)),
				Generation:        1,
			},
			Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: selector, Template: tmpl},
			Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas, ObservedGeneration: 1},
		})
		if i == 0 {
			current = meshtest.ControllerRef("apps/v1", "ReplicaSet", w.name+"-"+hash, uid)
		}
	}
	return current
}

func (b *clusterBuilder) podName(w *workloadModel, i int) string {
	switch w.kind {
	case kindStatefulSet:
		return fmt.Sprintf("%s-%d", w.name, i)
	case kindDaemonSet:
		return w.name + "-" + randomString(b.rng, hashAlphabet, 5)
	default:
		return w.name + "-" + w.hash + "-" + randomString(b.rng, hashAlphabet, 5)
	}
}
