package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh/meshtest"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
)

const (
	oldProxy = "docker.io/istio/proxyv2:1.24.0"
	newProxy = "docker.io/istio/proxyv2:1.25.0"
)

// helmCluster is a cluster whose namespace ns moved to revision 1-25-0 while the
// Deployment podinfo in namespace ns, installed by the Flux HelmRelease
// release (in namespace releaseNS), still runs the 1.24 proxy.
func helmCluster(ns, releaseNS, release string) *objects.Set {
	set := &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", oldProxy), meshtest.IstiodRevision("1-25-0", newProxy)).AddTo(set)
	set.Namespaces = append(set.Namespaces, meshtest.Namespace(ns, map[string]string{"istio.io/rev": "1-25-0"}))
	labels := map[string]string{
		"app.kubernetes.io/name":           "podinfo",
		"app.kubernetes.io/managed-by":     "Helm",
		"helm.toolkit.fluxcd.io/name":      release,
		"helm.toolkit.fluxcd.io/namespace": releaseNS,
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "podinfo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "podinfo", Image: "ghcr.io/stefanprodan/podinfo:6.7.0"}}},
	}
	set.Deployments = append(set.Deployments, appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns, UID: "deploy-uid", Labels: labels,
			Annotations: map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns}},
		Spec: appsv1.DeploymentSpec{Template: template},
	})
	set.ReplicaSets = append(set.ReplicaSets, appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-7d9f", Namespace: ns, UID: "rs-uid",
			OwnerReferences: []metav1.OwnerReference{meshtest.ControllerRef("apps/v1", "Deployment", "podinfo", "deploy-uid")}},
		Spec: appsv1.ReplicaSetSpec{Template: template},
	})
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-7d9f-x1", Namespace: ns, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{meshtest.ControllerRef("apps/v1", "ReplicaSet", "podinfo-7d9f", "rs-uid")}},
		Spec:   *template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	meshtest.InjectPod(&pod, "1-24-0", oldProxy)
	set.Pods = append(set.Pods, pod)
	return set
}

// TestBuildRestartsHelmReleases: a workload rendered by a Flux HelmRelease
// is found through the release's file and restarted by a post-renderer
// patch; what kedge cannot edit stays helm, saying why.
func TestBuildRestartsHelmReleases(t *testing.T) {
	tests := []struct {
		name, repo, ns, releaseNS string
		want                      drift.Manifest
		files                     []string
		applier                   string
	}{
		{
			name: "release in the repository", repo: "helm-release", ns: "podinfo", releaseNS: "podinfo",
			want:    drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease podinfo/podinfo"},
			files:   []string{"apps/podinfo/release.yaml"},
			applier: "Flux helm-controller (upgrading HelmRelease podinfo/podinfo)",
		},
		{
			name: "release in a base two overlays share", repo: "helm-shared-base", ns: "team-a", releaseNS: "team-a",
			want:    drift.Manifest{Status: drift.ManifestFound, Path: "base/podinfo/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease team-a/podinfo"},
			files:   []string{"overlays/team-a/kedge-helm-podinfo.yaml", "overlays/team-a/kustomization.yaml"},
			applier: "Flux helm-controller (upgrading HelmRelease team-a/podinfo)",
		},
		{
			name: "already restarted for the target", repo: "helm-rerun", ns: "podinfo", releaseNS: "podinfo",
			want:    drift.Manifest{Status: drift.ManifestFound, Path: "apps/podinfo/release.yaml", Edit: drift.EditAlreadyBumped, Detail: "HelmRelease podinfo/podinfo"},
			applier: "Flux helm-controller (upgrading HelmRelease podinfo/podinfo)",
		},
		{
			name: "release not in the repository", repo: "helm-release", ns: "podinfo", releaseNS: "flux-system",
			want: drift.Manifest{Status: drift.ManifestHelm,
				Detail: "HelmRelease flux-system/podinfo renders it and is not in the repository (no HelmRelease flux-system/podinfo in the indexed paths)"},
			applier: "Flux helm-controller (upgrading HelmRelease flux-system/podinfo)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := plan.Build(helmCluster(tt.ns, tt.releaseNS, "podinfo"), plan.Options{RepoRoot: "../../testdata/manifest/" + tt.repo + "/repo"})
			require.NoError(t, err)
			require.Len(t, res.Plan.Workloads, 1)
			w := res.Plan.Workloads[0]
			assert.Equal(t, drift.Desired{Revision: "1-25-0", Image: newProxy}, w.Desired)
			assert.Equal(t, tt.want, w.Manifest)
			var files []string
			for _, e := range res.Edits.Namespaces[tt.ns] {
				files = append(files, e.Path)
			}
			assert.Equal(t, tt.files, files)
			assert.Equal(t, tt.applier, res.Namespaces[tt.ns].Applier)
		})
	}
}
