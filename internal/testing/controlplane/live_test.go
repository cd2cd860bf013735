package controlplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

// names lists a set's objects as "Kind namespace/name", the shape cases
// state what they expect in.
func names(set *objects.Set) []string {
	var out []string
	add := func(kind string, m metav1.Object) {
		out = append(out, kind+" "+m.GetNamespace()+"/"+m.GetName())
	}
	for i := range set.Namespaces {
		add("Namespace", &set.Namespaces[i])
	}
	for _, p := range set.Pods {
		out = append(out, "Pod "+p.Namespace+"/"+p.Name)
	}
	for i := range set.ConfigMaps {
		add("ConfigMap", &set.ConfigMaps[i])
	}
	addAll(add, "ReplicaSet", set.ReplicaSets)
	addAll(add, "Deployment", set.Deployments)
	addAll(add, "StatefulSet", set.StatefulSets)
	addAll(add, "DaemonSet", set.DaemonSets)
	addAll(add, "Job", set.Jobs)
	addAll(add, "CronJob", set.CronJobs)
	for i := range set.MutatingWebhookConfigurations {
		add("MutatingWebhookConfiguration", &set.MutatingWebhookConfigurations[i])
	}
	addAll(add, "Rollout", set.Rollouts)
	for i := range set.Applications {
		add("Application", &set.Applications[i])
	}
	for i := range set.Kustomizations {
		add("Kustomization", &set.Kustomizations[i])
	}
	for i := range set.GitRepositories {
		add("GitRepository", &set.GitRepositories[i])
	}
	return out
}

// addAll names each of objs, of one kind.
func addAll[P metav1.Object](add func(string, metav1.Object), kind string, objs []P) {
	for _, o := range objs {
		add(kind, o)
	}
}

// seededObjects is what every live source sees of seedCluster's objects,
// besides ConfigMaps, which depend on the options.
var seededObjects = []string{
	"Namespace /batch", "Namespace /billing", "Namespace /default", "Namespace /istio-canary",
	"Namespace /istio-system", "Namespace /kube-node-lease", "Namespace /kube-public", "Namespace /kube-system",
	"Namespace /shop",
	"Pod batch/nightly-29000000-5kq9z", "Pod batch/node-agent-7rj2k", "Pod billing/payments-0",
	"Pod shop/cart-7d9c8b6f5d-q8w4n", "Pod shop/cart-7d9c8b6f5d-x2kqp", "Pod shop/debug",
	"ReplicaSet shop/cart-7d9c8b6f5d",
	"Deployment shop/cart",
	"StatefulSet billing/payments",
	"DaemonSet batch/node-agent",
	"Job batch/nightly-29000000",
	"CronJob batch/nightly",
	"MutatingWebhookConfiguration /istio-sidecar-injector-1-24-0", "MutatingWebhookConfiguration /widgets-defaulter",
}

func TestLiveReadsTrimmedObjects(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	seed := seedCluster(ctx, t, client)
	require.NotEmpty(t, seed.cartPod.ManagedFields, "the API server records managed fields; the cache must not")

	cases := []struct {
		name            string
		istioNamespaces []string
		wantConfigMaps  []string
	}{
		{
			name:           "injector ConfigMaps found by label in every namespace",
			wantConfigMaps: []string{"ConfigMap istio-canary/istio-sidecar-injector-1-25-0", "ConfigMap istio-system/istio-sidecar-injector-1-24-0"},
		},
		{
			name:            "injector ConfigMaps by label or name in the named namespaces",
			istioNamespaces: []string{"istio-system"},
			wantConfigMaps:  []string{"ConfigMap istio-system/istio-sidecar-injector", "ConfigMap istio-system/istio-sidecar-injector-1-24-0"},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			live := startLive(t, cfg, cluster.LiveOptions{IstioNamespaces: tc.istioNamespaces})
			require.ErrorContains(t, live.Start(t.Context()), "already started")
			set := live.Set()

			want := append(append([]string{}, seededObjects...), tc.wantConfigMaps...)
			assert.ElementsMatch(t, want, names(set))
			// No CRDs are served here: the custom kinds are skipped, not
			// an error.
			assert.Nil(t, set.Rollouts)
			assert.Nil(t, set.Kustomizations)
			assertTrimmed(t, set, seed)

			dir := t.TempDir()
			require.NoError(t, snapshot.Write(set, dir))
			read, err := snapshot.Read(dir)
			require.NoError(t, err)
			assert.Equal(t, set, read, "a written snapshot reads back as the live set")

			// A Set shares its maps with the caches, which a cycle may read
			// while the informers go on: a change in the cluster replaces
			// the cached object and never reaches a Set already handed out.
			label := fmt.Sprintf("seen-by-case-%d", i)
			patch := []byte(`{"metadata":{"labels":{"` + label + `":"yes"}}}`)
			_, err = client.CoreV1().Pods("shop").Patch(ctx, "debug", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err)
			_, err = client.CoreV1().Namespaces().Patch(ctx, "shop", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				again := live.Set()
				return podLabels(again, "shop", "debug")[label] == "yes" && namespaceLabels(again, "shop")[label] == "yes"
			}, 30*time.Second, 10*time.Millisecond, "the caches see the change")
			assert.NotContains(t, podLabels(set, "shop", "debug"), label)
			assert.NotContains(t, namespaceLabels(set, "shop"), label)
		})
	}
}

func assertTrimmed(t *testing.T, set *objects.Set, seed seeded) {
	t.Helper()
	cart := findPod(t, set, "shop", "cart-7d9c8b6f5d-x2kqp")
	assert.Equal(t, map[string]string{"app": "cart", "security.istio.io/tlsMode": "istio"}, cart.Labels)
	assert.Equal(t, map[string]string{
		"istio.io/rev":            "1-24-0",
		"kedge.io/restartedAt":    "rev-1-24-0",
		"sidecar.istio.io/status": seed.cartPod.Annotations["sidecar.istio.io/status"],
	}, cart.Annotations)
	assert.Equal(t, seed.cartPod.OwnerReferences, cart.OwnerReferences)
	assert.Equal(t, &objects.PodProxy{Image: proxyImage124, Native: true}, cart.Proxy)
	assert.Equal(t, corev1.PodRunning, cart.Phase)
	assert.True(t, seed.cartPod.Status.StartTime.Equal(&cart.StartTime))
	assert.Equal(t, seed.cartPod.CreationTimestamp, cart.CreationTimestamp)

	payments := findPod(t, set, "billing", "payments-0")
	assert.Equal(t, &objects.PodProxy{Image: proxyImage123}, payments.Proxy)

	agent := findPod(t, set, "batch", "node-agent-7rj2k")
	assert.True(t, agent.HostNetwork)
	assert.Nil(t, agent.Proxy)
	assert.Equal(t, map[string]string{"kedge.io/restartedAt": "rev-1-24-0"}, agent.Annotations)

	require.Len(t, set.ReplicaSets, 1)
	rs := set.ReplicaSets[0]
	assert.Equal(t, "Deployment", rs.OwnerReferences[0].Kind)
	assert.Empty(t, rs.Labels, "a ReplicaSet a controller owns keeps no labels")
	assert.Empty(t, rs.Annotations)

	require.Len(t, set.Deployments, 1)
	assert.NotContains(t, set.Deployments[0].Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	assert.Equal(t, "cart", set.Deployments[0].Spec.Template.Labels["app"])
	assert.Empty(t, set.Deployments[0].Spec.Template.Spec.Containers, "a template keeps only an istio-proxy container it defines")

	for _, mwc := range set.MutatingWebhookConfigurations {
		assert.Empty(t, mwc.ManagedFields)
		for _, w := range mwc.Webhooks {
			assert.Empty(t, w.ClientConfig.CABundle)
		}
	}
	for _, ns := range set.Namespaces {
		assert.Empty(t, ns.ManagedFields, ns.Name)
	}
}

func findPod(t *testing.T, set *objects.Set, ns, name string) *objects.Pod {
	t.Helper()
	for _, p := range set.Pods {
		if p.Namespace == ns && p.Name == name {
			return p
		}
	}
	t.Fatalf("pod %s/%s not in the set", ns, name)
	return nil
}

func TestLiveWaitForSyncSaysWhyCachesDoNotFill(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	// A user with no RBAC grants: every list is forbidden.
	restricted := rest.CopyConfig(cfg)
	restricted.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}

	live, err := cluster.NewLive(cluster.LiveOptions{Config: restricted})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	require.NoError(t, live.Start(ctx))
	syncCtx, syncCancel := context.WithTimeout(ctx, 3*time.Second)
	defer syncCancel()
	err = live.WaitForSync(syncCtx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "forbidden")
	assert.Contains(t, err.Error(), "pods")
}

// TestLiveVersionCountsChanges: once the caches are full, the version
// moves when an object is added or changed, and Set then holds the change.
func TestLiveVersionCountsChanges(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	live := startLive(t, cfg, cluster.LiveOptions{})
	changes := []struct {
		name   string
		change func() error
		holds  func(*objects.Set) bool
	}{
		{"a namespace added", func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, namespace("versioned", map[string]string{"istio.io/rev": "1-24-0"}), metav1.CreateOptions{})
			return err
		}, func(set *objects.Set) bool { return labelOf(set, "versioned") == "1-24-0" }},
		{"its label changed", func() error {
			ns, err := client.CoreV1().Namespaces().Get(ctx, "versioned", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ns.Labels["istio.io/rev"] = "1-25-0"
			_, err = client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
			return err
		}, func(set *objects.Set) bool { return labelOf(set, "versioned") == "1-25-0" }},
	}
	for _, c := range changes {
		before := live.Version()
		require.NoError(t, c.change(), c.name)
		assert.Eventually(t, func() bool { return live.Version() != before && c.holds(live.Set()) }, 30*time.Second, 10*time.Millisecond, c.name)
	}
}

func podPhase(set *objects.Set, namespace, name string) corev1.PodPhase {
	for _, p := range set.Pods {
		if p.Namespace == namespace && p.Name == name {
			return p.Phase
		}
	}
	return ""
}

func labelOf(set *objects.Set, name string) string {
	for _, ns := range set.Namespaces {
		if ns.Name == name {
			return ns.Labels["istio.io/rev"]
		}
	}
	return ""
}

func podLabels(set *objects.Set, namespace, name string) map[string]string {
	for _, p := range set.Pods {
		if p.Namespace == namespace && p.Name == name {
			return p.Labels
		}
	}
	return nil
}

func namespaceLabels(set *objects.Set, name string) map[string]string {
	for _, ns := range set.Namespaces {
		if ns.Name == name {
			return ns.Labels
		}
	}
	return nil
}

// TestLiveSetSharesWhatDidNotChange: a Set shares the last Set's copy of
// every informer that has not changed since, and copies again the one
// that has, so a namespace label change does not copy every pod.
func TestLiveSetSharesWhatDidNotChange(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	live := startLive(t, cfg, cluster.LiveOptions{})
	_, err := client.CoreV1().Namespaces().Create(ctx, namespace("shared", map[string]string{"istio.io/rev": "1-24-0"}), metav1.CreateOptions{})
	require.NoError(t, err)
	createPod(ctx, t, client, injectedPod("shared", "cart-1", "cart", nil, nativeSidecar, "docker.io/istio/proxyv2:1.24.0"), time.Now())
	// The pod is created, then reported running: once the caches hold its
	// last state and have counted every event, Sets stop copying.
	var first *objects.Set
	require.Eventually(t, func() bool {
		first = live.Set()
		again := live.Set()
		return podPhase(first, "shared", "cart-1") == corev1.PodRunning &&
			unsafe.SliceData(first.Pods) == unsafe.SliceData(again.Pods) &&
			unsafe.SliceData(first.Namespaces) == unsafe.SliceData(again.Namespaces)
	}, 30*time.Second, 10*time.Millisecond, "nothing changed: the pods and namespaces are shared")
	assert.Equal(t, len(first.Pods), cap(first.Pods), "a shared copy is clipped: appending to it copies")

	ns, err := client.CoreV1().Namespaces().Get(ctx, "shared", metav1.GetOptions{})
	require.NoError(t, err)
	ns.Labels["istio.io/rev"] = "1-25-0"
	_, err = client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	var relabelled *objects.Set
	require.Eventually(t, func() bool {
		relabelled = live.Set()
		return labelOf(relabelled, "shared") == "1-25-0"
	}, 30*time.Second, 10*time.Millisecond)
	assert.Same(t, unsafe.SliceData(first.Pods), unsafe.SliceData(relabelled.Pods), "only a namespace changed: the pods are shared")
	assert.Equal(t, "1-24-0", labelOf(first, "shared"), "the Set handed out before keeps its copy")

	createPod(ctx, t, client, injectedPod("shared", "cart-2", "cart", nil, nativeSidecar, "docker.io/istio/proxyv2:1.24.0"), time.Now())
	var grown *objects.Set
	require.Eventually(t, func() bool {
		grown = live.Set()
		return podLabels(grown, "shared", "cart-2") != nil
	}, 30*time.Second, 10*time.Millisecond)
	assert.NotSame(t, unsafe.SliceData(first.Pods), unsafe.SliceData(grown.Pods), "a pod was added: the pods are copied again")
	assert.Nil(t, podLabels(first, "shared", "cart-2"))
	assert.Same(t, unsafe.SliceData(relabelled.Namespaces), unsafe.SliceData(grown.Namespaces))
}
