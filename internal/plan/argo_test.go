package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	manifestFixtures = "../../testdata/manifest"
	fleetURL         = "https://github.com/example-org/fleet"
	proxy124         = "docker.io/istio/proxyv2:1.24.0"
	proxy125         = "docker.io/istio/proxyv2:1.25.0"
)

// argoWorkload is a workload an Argo CD Application applied, running a
// sidecar of the revision before the namespace's.
type argoWorkload struct {
	namespace, kind, name, app string
	// labelTracking marks it with the instance label instead of the
	// tracking-id annotation.
	labelTracking bool
}

// want is a workload's expected manifest status, edit and path.
type want struct{ status, edit, path string }

// TestArgoDirectorySourcesEndToEnd plans the Argo CD fixture repositories
// from a cluster running their workloads: each drifted workload is located
// in the one file its Application applies and edited there.
func TestArgoDirectorySourcesEndToEnd(t *testing.T) {
	tests := []struct {
		name string
		repo string
		// applications is the directory of the checkout holding the
		// cluster's Applications; "" for a cluster that shows none.
		applications string
		workloads    []argoWorkload
		want         map[string]want
	}{
		{
			name: "recurse false does not see a sub-directory's copy", repo: "argo-directory-recurse", applications: "argocd",
			workloads: []argoWorkload{{"web", "Deployment", "web", "web", false}, {"jobs", "Deployment", "worker", "jobs", false}},
			want: map[string]want{
				"web/web":     {"found", "in-place", "apps/web/deployment.yaml"},
				"jobs/worker": {"found", "in-place", "apps/jobs/workers/worker.yaml"},
			},
		},
		{
			name: "exclude removes the stale duplicate", repo: "argo-directory-exclude", applications: "argocd",
			workloads: []argoWorkload{{"api", "Deployment", "api", "api", false}, {"api", "Deployment", "worker", "api", false}},
			want: map[string]want{
				"api/api":    {"found", "in-place", "apps/api/api.yaml"},
				"api/worker": {"found", "in-place", "apps/api/jobs/worker.yaml"},
			},
		},
		{
			name: "include picks one file of a directory of variants", repo: "argo-directory-include", applications: "argocd",
			workloads: []argoWorkload{
				{"bookinfo", "Deployment", "reviews-v1", "bookinfo", false},
				{"bookinfo", "Deployment", "details-v2", "bookinfo-v2", false},
				{"bookinfo-psa", "Deployment", "reviews-v1", "bookinfo-psa", false},
			},
			want: map[string]want{
				"bookinfo/reviews-v1":     {"found", "in-place", "samples/bookinfo/platform/kube/bookinfo.yaml"},
				"bookinfo/details-v2":     {"found", "in-place", "samples/bookinfo/platform/kube/bookinfo-details-v2.yaml"},
				"bookinfo-psa/reviews-v1": {"found", "in-place", "samples/bookinfo/platform/kube/bookinfo-psa.yaml"},
			},
		},
		{
			name: "each source of an Application is read with its own settings", repo: "argo-multi-source", applications: "argocd",
			workloads: []argoWorkload{
				{"shop", "Deployment", "web", "shop", false},
				{"shop", "Deployment", "cart", "shop", false},
				{"shop", "StatefulSet", "queue", "shop", false},
			},
			want: map[string]want{
				"shop/web":   {"found", "in-place", "shop/base/web.yaml"},
				"shop/cart":  {"found", "in-place", "shop/extras/cart.yaml"},
				"shop/queue": {"found", "in-place", "shop/jobs/nightly/queue.yaml"},
			},
		},
		{
			name: "without the cluster's Applications those of the repository are read", repo: "argo-repo-applications",
			workloads: []argoWorkload{
				{"payments", "Deployment", "api", "payments", false},
				{"ledger", "StatefulSet", "ledger", "ledger", true},
			},
			want: map[string]want{
				"payments/api":  {"found", "in-place", "apps/payments/api.yaml"},
				"ledger/ledger": {"found", "in-place", "apps/ledger/statefulset.yaml"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := filepath.Join(manifestFixtures, tt.repo, "repo")
			set := argoCluster(t, tt.workloads)
			if tt.applications != "" {
				snap, err := snapshot.Read(filepath.Join(repo, tt.applications))
				require.NoError(t, err)
				set.Applications = snap.Applications
			}
			res, err := plan.Build(set, plan.Options{RepoRoot: repo, RepoURLs: []string{fleetURL}})
			require.NoError(t, err)
			got := map[string]want{}
			for _, w := range res.Plan.Workloads {
				got[w.Namespace+"/"+w.Name] = want{w.Manifest.Status, w.Manifest.Edit, w.Manifest.Path}
			}
			assert.Equal(t, tt.want, got)
			edited := map[string]bool{}
			for _, f := range res.Edits.All() {
				edited[f.Path] = true
			}
			for id, w := range tt.want {
				assert.True(t, edited[w.path], "%s: %s is not edited", id, w.path)
			}
		})
	}
}

// TestRepositoryApplicationsDoNotOverrideTheCluster: a cluster that shows
// Applications is read alone, even when the repository holds others (for
// other clusters, or not yet synced).
func TestRepositoryApplicationsDoNotOverrideTheCluster(t *testing.T) {
	repo := filepath.Join(manifestFixtures, "argo-repo-applications", "repo")
	set := argoCluster(t, []argoWorkload{{"payments", "Deployment", "api", "payments", false}})
	// The cluster's payments Application applies the directory as a whole.
	set.Applications = []objects.Application{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "payments"},
		Spec: objects.ApplicationSpec{
			Source:      &objects.ApplicationSource{RepoURL: fleetURL, Path: "apps/payments"},
			Destination: objects.ApplicationDestination{Namespace: "payments"},
		},
	}}
	res, err := plan.Build(set, plan.Options{RepoRoot: repo, RepoURLs: []string{fleetURL}})
	require.NoError(t, err)
	require.Len(t, res.Plan.Workloads, 1)
	m := res.Plan.Workloads[0].Manifest
	assert.Equal(t, drift.ManifestAmbiguous, m.Status)
	assert.Equal(t, []string{"apps/payments/api.yaml", "apps/payments/canary.yaml"}, m.Candidates)
}

// argoCluster is a mesh whose namespaces moved to revision 1-25-0 while
// the workloads still run 1-24-0's sidecar, each tracked by its
// Application.
func argoCluster(t *testing.T, workloads []argoWorkload) *objects.Set {
	t.Helper()
	set := &objects.Set{}
	meshtest.Merge(meshtest.IstiodRevision("1-24-0", proxy124), meshtest.IstiodRevision("1-25-0", proxy125)).AddTo(set)
	namespaces := map[string]bool{}
	for _, w := range workloads {
		if !namespaces[w.namespace] {
			namespaces[w.namespace] = true
			set.Namespaces = append(set.Namespaces, meshtest.Namespace(w.namespace, map[string]string{"istio.io/rev": "1-25-0"}))
		}
		addArgoWorkload(set, w)
	}
	return set
}

func addArgoWorkload(set *objects.Set, w argoWorkload) {
	ctrl := true
	meta := metav1.ObjectMeta{Name: w.name, Namespace: w.namespace, UID: types.UID(w.kind + "-" + w.namespace + "-" + w.name)}
	if w.labelTracking {
		meta.Labels = map[string]string{"app.kubernetes.io/instance": w.app}
	} else {
		meta.Annotations = map[string]string{meshtest.ArgoTrackingAnnotation: meshtest.ArgoTrackingID(w.app, "apps/v1", w.kind, w.namespace, w.name)}
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: w.kind, Name: w.name, UID: meta.UID, Controller: &ctrl}
	switch w.kind {
	case "Deployment":
		set.Deployments = append(set.Deployments, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta})
		rs := objects.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: w.name + "-1", Namespace: w.namespace,
			UID: types.UID("rs-" + w.namespace + "-" + w.name), OwnerReferences: []metav1.OwnerReference{owner}}}
		set.ReplicaSets = append(set.ReplicaSets, &rs)
		owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &ctrl}
	case "StatefulSet":
		set.StatefulSets = append(set.StatefulSets, &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta})
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.name + "-0", Namespace: w.namespace, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/" + w.name}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	meshtest.InjectPod(&pod, "1-24-0", proxy124)
	set.Pods = append(set.Pods, objects.Pods(pod)...)
}

// TestArgoKustomizeOverridesEndToEnd plans the fixtures whose Applications
// carry a kustomize block: live names and namespaces are matched through
// it, and a root several Applications deploy gets the restart in the
// Application source's kustomize.patches, the Application file written.
func TestArgoKustomizeOverridesEndToEnd(t *testing.T) {
	tests := []struct {
		name      string
		repo      string
		workloads []argoWorkload
		want      map[string]want
		// written are the files the edits write.
		written []string
	}{
		{
			name: "namePrefix, nameSuffix and namespace rename", repo: "argo-kustomize-names",
			workloads: []argoWorkload{
				{"shop", "Deployment", "prod-cart", "cart", false},
				{"shop", "Deployment", "api-v2", "api", false},
				{"payments", "StatefulSet", "ledger", "ledger", false},
				{"tools", "Deployment", "probe", "probe", false},
			},
			want: map[string]want{
				"shop/prod-cart":  {"found", "in-place", "apps/cart/deployment.yaml"},
				"shop/api-v2":     {"found", "in-place", "apps/api/api.yaml"},
				"payments/ledger": {"found", "in-place", "apps/ledger/statefulset.yaml"},
				"tools/probe":     {"not-found", "", ""},
			},
			written: []string{"apps/api/api.yaml", "apps/cart/deployment.yaml", "apps/ledger/statefulset.yaml"},
		},
		{
			name: "a shared root is patched in each Application", repo: "argo-kustomize-patches",
			workloads: []argoWorkload{
				{"team-a", "Deployment", "podinfo", "podinfo-a", false},
				{"team-b", "Deployment", "podinfo", "podinfo-b", false},
				{"team-c", "Deployment", "podinfo", "podinfo-c", false},
			},
			want: map[string]want{
				"team-a/podinfo": {"found", "overlay-patch", "apps/podinfo/deployment.yaml"},
				"team-b/podinfo": {"found", "overlay-patch", "apps/podinfo/deployment.yaml"},
				"team-c/podinfo": {"found", "overlay-patch", "apps/podinfo/deployment.yaml"},
			},
			written: []string{"argocd/podinfo-a.yaml", "argocd/podinfo-b.yaml", "argocd/podinfo-c.yaml"},
		},
		{
			name: "the patch goes in the source that renames", repo: "argo-kustomize-multi-source",
			workloads: []argoWorkload{{"web", "Deployment", "blue-web", "web-blue", false}},
			want: map[string]want{
				"web/blue-web": {"found", "overlay-patch", "apps/web/web.yaml"},
			},
			written: []string{"argocd/web.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := filepath.Join(manifestFixtures, tt.repo, "repo")
			set := argoCluster(t, tt.workloads)
			snap, err := snapshot.Read(filepath.Join(repo, "argocd"))
			require.NoError(t, err)
			set.Applications = snap.Applications
			res, err := plan.Build(set, plan.Options{RepoRoot: repo, RepoURLs: []string{fleetURL}})
			require.NoError(t, err)
			got := map[string]want{}
			for _, w := range res.Plan.Workloads {
				got[w.Namespace+"/"+w.Name] = want{w.Manifest.Status, w.Manifest.Edit, w.Manifest.Path}
			}
			assert.Equal(t, tt.want, got)
			var written []string
			for _, f := range res.Edits.All() {
				written = append(written, f.Path)
			}
			assert.ElementsMatch(t, tt.written, written)
			assert.Empty(t, res.Edits.Refused)
		})
	}
}
