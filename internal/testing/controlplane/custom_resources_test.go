package controlplane_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

// customObjects are Argo and Flux resources as their controllers leave
// them: with status and spec fields kedge does not read.
const customObjects = `
- apiVersion: argoproj.io/v1alpha1
  kind: Rollout
  metadata: {name: checkout, namespace: shop}
  spec:
    replicas: 4
    strategy: {canary: {steps: [{setWeight: 20}]}}
    template:
      metadata:
        labels: {app: checkout}
        annotations: {kedge.io/restartedAt: rev-1-24-0}
      spec:
        containers: [{name: checkout, image: registry.example.com/checkout:1.2.3}]
  status: {phase: Healthy, stableRS: 6f7d8c9b5}
- apiVersion: argoproj.io/v1alpha1
  kind: Rollout
  metadata: {name: search, namespace: shop}
  spec:
    workloadRef: {apiVersion: apps/v1, kind: Deployment, name: search}
- apiVersion: argoproj.io/v1alpha1
  kind: Application
  metadata: {name: shop, namespace: argocd}
  spec:
    project: default
    source: {repoURL: "https://github.com/example/fleet", path: apps/shop, targetRevision: main}
    destination: {server: "https://kubernetes.default.svc", namespace: shop}
    syncPolicy: {automated: {prune: true}}
  status: {sync: {status: Synced}}
- apiVersion: kustomize.toolkit.fluxcd.io/v1
  kind: Kustomization
  metadata: {name: shop, namespace: flux-system}
  spec:
    interval: 10m
    path: ./apps/shop
    prune: true
    targetNamespace: shop
    sourceRef: {kind: GitRepository, name: fleet}
  status: {lastAppliedRevision: "main@sha1:0123"}
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: GitRepository
  metadata: {name: fleet, namespace: flux-system}
  spec:
    interval: 1m
    url: https://github.com/example/fleet
    ref: {branch: main}
  status: {artifact: {revision: "main@sha1:0123"}}
- apiVersion: networking.istio.io/v1beta1
  kind: ProxyConfig
  metadata: {name: mesh-wide, namespace: istio-system}
  spec:
    concurrency: 2
    image: {imageType: distroless}
- apiVersion: networking.istio.io/v1beta1
  kind: ProxyConfig
  metadata: {name: cart-debug, namespace: shop, labels: {istio.io/rev: 1-24-0}}
  spec:
    selector: {matchLabels: {app: cart}}
    environmentVariables: {ISTIO_META_DNS_CAPTURE: "true"}
    image: {imageType: debug}
- apiVersion: flagger.app/v1beta1
  kind: Canary
  metadata: {name: podinfo, namespace: shop}
  spec:
    targetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
    service: {port: 9898}
    analysis: {interval: 1m, threshold: 10, maxWeight: 50, stepWeight: 5}
  status: {phase: Succeeded, canaryWeight: 0}
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: OCIRepository
  metadata: {name: podinfo, namespace: flux-system}
  spec:
    interval: 10m
    url: oci://ghcr.io/stefanprodan/charts/podinfo
    ref: {semver: ">=6.0.0"}
  status: {artifact: {revision: "6.7.1@sha256:0123"}}
- apiVersion: argoproj.io/v1alpha1
  kind: AppProject
  metadata: {name: default, namespace: argocd}
  spec:
    sourceRepos: ["https://github.com/example/*", "!https://github.com/example/private"]
    destinations: [{namespace: "*", server: "*"}]
    clusterResourceWhitelist: [{group: "*", kind: "*"}]
`

func TestLiveReadsCustomResourcesWhenServed(t *testing.T) {
	cfg := controlplane.ControlPlane(t, "testdata/crds")
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := t.Context()
	for _, ns := range []string{"shop", "argocd", "flux-system", "istio-system"} {
		_, err := client.CoreV1().Namespaces().Create(ctx, namespace(ns, nil), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var items []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(customObjects), &items))
	for _, item := range items {
		u := &unstructured.Unstructured{Object: item}
		_, err := dyn.Resource(resourceFor(u.GroupVersionKind())).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	live := startLive(t, cfg, cluster.LiveOptions{})
	set := live.Set()

	require.Len(t, set.Rollouts, 2)
	checkout := set.Rollouts[0]
	assert.Equal(t, metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"}, checkout.TypeMeta)
	assert.Equal(t, "checkout", checkout.Name)
	assert.Empty(t, checkout.ManagedFields)
	assert.Equal(t, "rev-1-24-0", checkout.Spec.Template.Annotations["kedge.io/restartedAt"])
	assert.Empty(t, checkout.Spec.Template.Spec.Containers, "a template keeps only an istio-proxy container it defines")
	assert.Equal(t, &objects.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "search"}, set.Rollouts[1].Spec.WorkloadRef)

	require.Len(t, set.Applications, 1)
	assert.Equal(t, &objects.ApplicationSource{RepoURL: "https://github.com/example/fleet", Path: "apps/shop", TargetRevision: "main"}, set.Applications[0].Spec.Source)
	assert.Equal(t, objects.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "shop"}, set.Applications[0].Spec.Destination)

	assert.Equal(t, "default", set.Applications[0].Spec.Project)

	require.Len(t, set.OCIRepositories, 1)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "OCIRepository"}, set.OCIRepositories[0].TypeMeta)
	assert.Equal(t, objects.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts/podinfo"}, set.OCIRepositories[0].Spec)
	require.Len(t, set.AppProjects, 1)
	assert.Equal(t, objects.AppProjectSpec{SourceRepos: []string{"https://github.com/example/*", "!https://github.com/example/private"}}, set.AppProjects[0].Spec)

	require.Len(t, set.Kustomizations, 1)
	assert.Equal(t, objects.KustomizationSpec{
		Path: "./apps/shop", TargetNamespace: "shop", SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: "fleet"},
	}, set.Kustomizations[0].Spec)

	require.Len(t, set.GitRepositories, 1)
	assert.Equal(t, objects.GitRepositorySpec{URL: "https://github.com/example/fleet", Ref: &objects.GitRepositoryRef{Branch: "main"}}, set.GitRepositories[0].Spec)

	require.Len(t, set.ProxyConfigs, 2)
	assert.Equal(t, "mesh-wide", set.ProxyConfigs[0].Name)
	assert.Equal(t, objects.ProxyConfigSpec{Image: &objects.ProxyImage{ImageType: "distroless"}}, set.ProxyConfigs[0].Spec)
	assert.Equal(t, map[string]string{"istio.io/rev": "1-24-0"}, set.ProxyConfigs[1].Labels)
	assert.Equal(t, objects.ProxyConfigSpec{
		Selector: &objects.WorkloadSelector{MatchLabels: map[string]string{"app": "cart"}},
		Image:    &objects.ProxyImage{ImageType: "debug"},
	}, set.ProxyConfigs[1].Spec)

	require.Len(t, set.Canaries, 1)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "flagger.app/v1beta1", Kind: "Canary"}, set.Canaries[0].TypeMeta)
	assert.Equal(t, objects.CanarySpec{TargetRef: objects.CanaryTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"}}, set.Canaries[0].Spec)
	// The start-up permission check asks for every served kind it reads.
	perms, permErr := live.Permissions()
	require.NoError(t, permErr)
	for _, verb := range []string{"list", "watch"} {
		assert.Contains(t, perms, cluster.Permission{Verb: verb, Group: "flagger.app", Resource: "canaries", GrantedBy: cluster.ReadRBAC})
		assert.Contains(t, perms, cluster.Permission{Verb: verb, Group: "source.toolkit.fluxcd.io", Resource: "ocirepositories", GrantedBy: cluster.ReadRBAC})
		assert.Contains(t, perms, cluster.Permission{Verb: verb, Group: "argoproj.io", Resource: "appprojects", GrantedBy: cluster.ReadRBAC})
	}

	// Watches keep running: a resource created after the first sync shows
	// up, and a ProxyConfig counts as a mesh change.
	got := &reasons{}
	live.OnMeshChange(got.add)
	proxyConfig := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.istio.io/v1beta1", "kind": "ProxyConfig",
		"metadata": map[string]any{"name": "all-debug", "namespace": "shop"},
		"spec":     map[string]any{"image": map[string]any{"imageType": "debug"}},
	}}
	_, err := dyn.Resource(resourceFor(proxyConfig.GroupVersionKind())).Namespace("shop").Create(ctx, proxyConfig, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return got.count() > 0 }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{"ProxyConfig shop/all-debug added"}, got.take())
	late := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "platform", "namespace": "flux-system"},
		"spec":     map[string]any{"url": "https://github.com/example/platform"},
	}}
	_, err = dyn.Resource(resourceFor(late.GroupVersionKind())).Namespace("flux-system").Create(ctx, late, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(live.Set().GitRepositories) == 2 }, 10*time.Second, 20*time.Millisecond)

	dir := t.TempDir()
	set = live.Set()
	require.NoError(t, snapshot.Write(set, dir))
	read, err := snapshot.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, set, read)
}

func resourceFor(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	plural := map[string]string{
		"Rollout": "rollouts", "Application": "applications",
		"Kustomization": "kustomizations", "GitRepository": "gitrepositories",
		"ProxyConfig": "proxyconfigs", "Canary": "canaries", "OCIRepository": "ocirepositories", "AppProject": "appprojects",
	}[gvk.Kind]
	return gvk.GroupVersion().WithResource(plural)
}
