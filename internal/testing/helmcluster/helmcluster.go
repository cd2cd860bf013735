// Package helmcluster builds, for tests, a cluster after an Istio upgrade in
// which Flux helm-controller installed the drifted workloads: namespaces
// moved from revision 1-24-0 to 1-25-0, and Deployments labelled as Helm
// releases of a HelmRelease that still run the 1.24 proxy.
package helmcluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/mesh/meshtest"
	"github.com/kedge-io/kedge/internal/objects"
)

// The proxies before and after the upgrade.
const (
	OldProxy = "docker.io/istio/proxyv2:1.24.0"
	NewProxy = "docker.io/istio/proxyv2:1.25.0"
)

// Release is one Deployment a HelmRelease installed.
type Release struct {
	// Namespace is where the Deployment runs.
	Namespace string
	// ReleaseNamespace and ReleaseName name the HelmRelease, as
	// helm-controller's labels on what it installs do.
	ReleaseNamespace, ReleaseName string
	Deployment                    string
}

// New returns the mesh of both revisions and, for each release, its
// namespace (labelled for 1-25-0) and its Deployment with one pod injected
// by 1-24-0.
func New(releases ...Release) *objects.Set {
	set := &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", OldProxy), meshtest.IstiodRevision("1-25-0", NewProxy)).AddTo(set)
	namespaces := map[string]bool{}
	for i, r := range releases {
		if !namespaces[r.Namespace] {
			namespaces[r.Namespace] = true
			set.Namespaces = append(set.Namespaces, meshtest.Namespace(r.Namespace, map[string]string{"istio.io/rev": "1-25-0"}))
		}
		add(set, r, string(rune('a'+i)))
	}
	return set
}

func add(set *objects.Set, r Release, id string) {
	selector := map[string]string{"app.kubernetes.io/name": r.Deployment}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: selector},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.0"}}},
	}
	deployUID, rsUID := "deploy-"+id, "rs-"+id
	set.Deployments = append(set.Deployments, appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: r.Deployment, Namespace: r.Namespace, UID: types.UID("uid-" + deployUID),
			Labels: map[string]string{
				"app.kubernetes.io/name":           r.Deployment,
				"app.kubernetes.io/managed-by":     "Helm",
				"helm.toolkit.fluxcd.io/name":      r.ReleaseName,
				"helm.toolkit.fluxcd.io/namespace": r.ReleaseNamespace,
			},
			Annotations: map[string]string{"meta.helm.sh/release-name": r.ReleaseName, "meta.helm.sh/release-namespace": r.Namespace},
		},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template},
	})
	set.ReplicaSets = append(set.ReplicaSets, objects.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Deployment + "-7d9f", Namespace: r.Namespace, UID: types.UID("uid-" + rsUID),
			OwnerReferences: []metav1.OwnerReference{meshtest.ControllerRef("apps/v1", "Deployment", r.Deployment, "uid-"+deployUID)}},
	})
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Deployment + "-7d9f-x1", Namespace: r.Namespace, Labels: selector,
			OwnerReferences: []metav1.OwnerReference{meshtest.ControllerRef("apps/v1", "ReplicaSet", r.Deployment+"-7d9f", "uid-"+rsUID)}},
		Spec:   *template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	meshtest.InjectPod(&pod, "1-24-0", OldProxy)
	set.Pods = append(set.Pods, objects.PodOf(&pod))
}
