package synth

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// Where the GitOps controllers live, and the names they go by.
const (
	fluxNamespace = "flux-system"
	fluxSource    = "flux-system"
	argoNamespace = "argocd"
	appRegistry   = "registry.example.com"
	nodesInFleet  = 400
)

func apiVersionOf(kind string) string {
	if kind == kindRollout {
		return "argoproj.io/v1alpha1"
	}
	return "apps/v1"
}

// clusterBuilder turns the model into API objects: it writes the
// workloads as they were applied and lets meshtest.Cluster make of them
// what the cluster's controllers would.
type clusterBuilder struct {
	m    *model
	set  *objects.Set
	kube *meshtest.Cluster
	rng  *rand.Rand
}

func buildCluster(m *model) (*objects.Set, []corev1.Pod, []appsv1.ReplicaSet) {
	b := &clusterBuilder{m: m, set: &objects.Set{}, rng: rand.New(rand.NewPCG(m.spec.Seed, 0x706f6473)), kube: &meshtest.Cluster{
		Name: m.spec.Cluster, Nodes: fleetNodes(), Values: fleetValues, Now: fleetEpoch,
	}}
	installIstio(b.set)
	for _, name := range []string{"kube-system", "kube-public", "kube-node-lease", "default", "istio-system", fluxNamespace, argoNamespace} {
		b.set.Namespaces = append(b.set.Namespaces, b.kube.Namespace(name, nil, fleetEpoch.Add(-500*24*time.Hour)))
	}
	b.set.GitRepositories = append(b.set.GitRepositories, objects.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "GitRepository"},
		ObjectMeta: metav1.ObjectMeta{Name: fluxSource, Namespace: fluxNamespace},
		Spec:       objects.GitRepositorySpec{URL: m.spec.RepoURL, Ref: &objects.GitRepositoryRef{Branch: "main"}},
	})
	for i := range m.namespaces {
		b.namespace(&m.namespaces[i])
	}
	b.kube.Objects.AddTo(b.set)
	return b.set, b.kube.Objects.Pods, b.kube.Objects.ReplicaSets
}

// fleetNodes are the fleet's workers, each handing out pod addresses from
// a range large enough for every pod the fleet could place on it.
func fleetNodes() []meshtest.Node {
	nodes := make([]meshtest.Node, nodesInFleet)
	for i := range nodes {
		nodes[i] = meshtest.Node{
			Name:    fmt.Sprintf("worker-%03d", i),
			IP:      fmt.Sprintf("10.0.%d.%d", i/200, 1+i%200),
			PodCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(64 + i/4), byte(i % 4 * 64), 0}), 18),
		}
	}
	return nodes
}

func (b *clusterBuilder) namespace(ns *namespaceModel) {
	labels := ns.profile.labels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["team"] = teamOf(ns.name)
	b.set.Namespaces = append(b.set.Namespaces, b.kube.Namespace(ns.name, labels, ns.created))
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
	if i := strings.LastIndexByte(namespace, '-'); i >= 0 {
		return namespace[:i]
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

// workload applies one workload: Deployments and Rollouts keep the
// ReplicaSet of the template as first applied beside the current one, whose
// pods a `kubectl rollout restart` started.
func (b *clusterBuilder) workload(ns *namespaceModel, w *workloadModel) {
	created := ns.created.Add(time.Duration(b.rng.IntN(24*60)) * time.Minute)
	restarted := created.Add(time.Duration(b.rng.IntN(30*24*60)) * time.Minute)
	pods := meshtest.PodsFrom(w.pods, restarted.Add(3*time.Second), ns.profile.sidecarOf(ns.drifted, ns.native))
	st := meshtest.Story{Created: created, Revision: int64(w.version), Templates: []meshtest.Template{{Pods: pods}}}
	if w.kind == kindDeployment || w.kind == kindRollout {
		st.Templates = []meshtest.Template{{}, {RestartedAt: restarted, Pods: pods}}
	}
	// The workload as the repository writes it, with what the GitOps tool
	// adds when it applies it.
	doc := []byte(workloadDoc(w, ns.name))
	labels, annotations := b.trackingMeta(ns, w)
	switch w.kind {
	case kindDeployment:
		b.kube.Deployment(applied[appsv1.Deployment](doc, labels, annotations), st)
	case kindStatefulSet:
		b.kube.StatefulSet(applied[appsv1.StatefulSet](doc, labels, annotations), st)
	case kindDaemonSet:
		b.kube.DaemonSet(applied[appsv1.DaemonSet](doc, labels, annotations), st)
	case kindRollout:
		r := applied[objects.Rollout](doc, labels, annotations)
		r.ObjectMeta = b.kube.Stored("Rollout", r.ObjectMeta, st.Created, st.Revision)
		b.kube.RolloutReplicaSets(r.ObjectMeta, int32(w.pods), &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name}}, r.Spec.Template, st)
		b.set.Rollouts = append(b.set.Rollouts, &r)
	}
}

// applied is a workload of the repository as the GitOps tool applies it,
// with its tracking metadata.
func applied[T any, P interface {
	*T
	SetLabels(map[string]string)
	SetAnnotations(map[string]string)
}](doc []byte, labels, annotations map[string]string) T {
	var obj T
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		panic(fmt.Sprintf("a generated manifest does not parse: %v", err))
	}
	P(&obj).SetLabels(labels)
	P(&obj).SetAnnotations(annotations)
	return obj
}
