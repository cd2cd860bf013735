package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

// TestLiveStaleUntilAForbiddenListIsAllowed: a user may read everything
// but ReplicaSets. Their cache is stale at once, forbidden, and the live
// source tells its user; granted the permission, the informer's next list
// succeeds and the cache refreshes without a restart.
func TestLiveStaleUntilAForbiddenListIsAllowed(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	admin, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	readAll := rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}
	withoutReplicaSets := []rbacv1.PolicyRule{
		{APIGroups: []string{"", "batch", "admissionregistration.k8s.io", "argoproj.io", "kustomize.toolkit.fluxcd.io",
			"source.toolkit.fluxcd.io", "networking.istio.io", "security.istio.io", "gateway.networking.k8s.io", "flagger.app"},
			Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch"}},
	}
	role, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: withoutReplicaSets}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "reader"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	reader := rest.CopyConfig(cfg)
	reader.Impersonate = rest.ImpersonationConfig{UserName: "reader"}

	live, err := cluster.NewLive(cluster.LiveOptions{Config: reader})
	require.NoError(t, err)
	changed := make(chan struct{}, 64)
	live.OnHealthChange(func() { changed <- struct{}{} })
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, live.Start(runCtx))

	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no failing cache reported")
	}
	err = live.Stale(time.Hour, time.Now())
	var stale *cluster.StaleError
	require.ErrorAs(t, err, &stale, "a forbidden list is stale at once, whatever the bound")
	assert.True(t, stale.Forbidden())
	require.Len(t, stale.Caches, 1, "%v", err)
	assert.Equal(t, "replicasets.apps cluster-wide", stale.Caches[0].Resource)
	assert.Contains(t, err.Error(), "forbidden")

	role.Rules = append(role.Rules, readAll)
	_, err = admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	granted := time.Now()
	require.Eventually(t, func() bool { return live.Stale(time.Hour, time.Now()) == nil }, time.Minute, 50*time.Millisecond,
		"the cache refreshes once the list is allowed")
	t.Logf("replicasets cache refreshing %s after the grant", time.Since(granted).Round(100*time.Millisecond))
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Second)
	defer syncCancel()
	require.NoError(t, live.WaitForSync(syncCtx))
}
