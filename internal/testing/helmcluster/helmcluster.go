// Package helmcluster builds, for tests, a cluster after an Istio upgrade in
// which Flux helm-controller installed the drifted workloads: namespaces
// moved from revision 1-24-0 to 1-25-0, and Deployments labelled as Helm
// releases of a HelmRelease that still run the 1.24 proxy.
package helmcluster

import (
	"net/netip"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
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

// installed is when the releases were installed, before the upgrade.
var installed = time.Date(2025, time.March, 1, 9, 0, 0, 0, time.UTC)

// New returns the mesh of both revisions and, for each release, its
// namespace (labelled for 1-25-0) and its Deployment with one pod injected
// by 1-24-0.
func New(releases ...Release) *objects.Set {
	set := &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", OldProxy), meshtest.IstiodRevision("1-25-0", NewProxy)).AddTo(set)
	kube := &meshtest.Cluster{Name: "helm", Nodes: []meshtest.Node{{Name: "node-1", IP: "10.0.0.1", PodCIDR: netip.MustParsePrefix("10.1.0.0/16")}}}
	namespaces := map[string]bool{}
	for _, r := range releases {
		if !namespaces[r.Namespace] {
			namespaces[r.Namespace] = true
			set.Namespaces = append(set.Namespaces, meshtest.Namespace(r.Namespace, map[string]string{"istio.io/rev": "1-25-0"}))
		}
		selector := map[string]string{"app.kubernetes.io/name": r.Deployment}
		kube.Deployment(appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Name: r.Deployment, Namespace: r.Namespace,
				Labels: map[string]string{
					"app.kubernetes.io/name":           r.Deployment,
					"app.kubernetes.io/managed-by":     "Helm",
					"helm.toolkit.fluxcd.io/name":      r.ReleaseName,
					"helm.toolkit.fluxcd.io/namespace": r.ReleaseNamespace,
				},
				Annotations: map[string]string{"meta.helm.sh/release-name": r.ReleaseName, "meta.helm.sh/release-namespace": r.Namespace},
			},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.0"}}},
			}},
		}, meshtest.Story{Created: installed, Revision: 1, Templates: []meshtest.Template{{
			Pods: meshtest.PodsFrom(1, installed.Add(time.Minute), &meshtest.Sidecar{Revision: "1-24-0", Image: OldProxy}),
		}}})
	}
	kube.Objects.AddTo(set)
	return set
}
