package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// cyclesWith reads the replica's kedge_cycles_total of one result, all
// triggers.
func (r *replica) cyclesWith(t *testing.T, result string) float64 {
	t.Helper()
	families, err := r.metrics.Registry().Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != "kedge_cycles_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// A permission taken from deploy/'s ClusterRole while kedge runs: /readyz
// names it in the startup check's words, the cycles that read the caches
// it kept fresh end stale, not successful; once the informers' watches
// break (an API server restart) their caches are named as forbidden too.
// Given the permission back, kedge is ready again and its cycles succeed,
// without a restart.
func TestPermissionTakenAwayWhileRunning(t *testing.T) {
	plane := restartableControlPlane(t)
	admin, err := kubernetes.NewForConfig(plane.Config)
	require.NoError(t, err)
	ctx := t.Context()
	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{
		kube: identity{asServiceAccount: true}.restConfigFor(plane.Config), permissionRecheck: 500 * time.Millisecond,
	})
	eventually(t, time.Minute, func() bool { return r.recorder.finished() == 1 && r.isReady() }, "the start cycle, ready")
	require.Equal(t, 1.0, r.cyclesWith(t, "success"))

	role, err := admin.RbacV1().ClusterRoles().Get(ctx, "kedge", metav1.GetOptions{})
	require.NoError(t, err)
	deployed := role.DeepCopy().Rules
	for i := range role.Rules {
		role.Rules[i].Resources = slices.DeleteFunc(role.Rules[i].Resources, func(r string) bool { return r == "replicasets" })
	}
	_, err = admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	removed := time.Now()

	const (
		list  = "list replicasets.apps cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)"
		watch = "watch replicasets.apps cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)"
	)
	failing := func() string { _, f := r.ready.Ready(); return strings.Join(f, "\n") }
	eventually(t, 10*time.Second, func() bool { return strings.Contains(failing(), watch) }, "/readyz names the permission")
	t.Logf("unready %s after the rule was removed", time.Since(removed).Round(10*time.Millisecond))
	assert.Contains(t, failing(), "permissions: the cluster credentials lack permissions kedge needs:\n  "+list+"\n  "+watch)
	for _, p := range []string{list, watch} {
		assert.True(t, slices.ContainsFunc(strings.Split(r.logs.String(), "\n"), func(line string) bool {
			return strings.Contains(line, `"msg":"missing permission: kedge's cluster caches cannot refresh and its cycles are stale until it is granted"`) &&
				strings.Contains(line, fmt.Sprintf(`"permission":%q`, p))
		}), "logged as at startup: missing permission, %s", p)
	}

	touch := func(value string) {
		patch := `{"metadata":{"labels":{"istio-injection":"enabled","kedge-test/touched":"` + value + `"}}}`
		_, err := admin.CoreV1().Namespaces().Patch(ctx, "shop", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	touch("1")
	eventually(t, time.Minute, func() bool { return r.cyclesWith(t, "stale") == 1 }, "the next cycle ends stale")
	assert.Equal(t, 1.0, r.cyclesWith(t, "success"), "and not successful")
	assert.Contains(t, r.logs.String(), `"msg":"cycle finished on stale cluster caches"`)

	// The watches outlive the permission until they end; when they are
	// re-established, the API server refuses them.
	plane.RestartAPIServer(t, time.Second)
	eventually(t, time.Minute, func() bool {
		return strings.Contains(failing(), "informers: the cluster caches cannot refresh: replicasets.apps cluster-wide: forbidden since")
	}, "/readyz names the cache that cannot refresh")
	assert.NotContains(t, failing(), "pods cluster-wide", "only the cache that lost its permission")

	role, err = admin.RbacV1().ClusterRoles().Get(ctx, "kedge", metav1.GetOptions{})
	require.NoError(t, err)
	role.Rules = deployed
	_, err = admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	granted := time.Now()
	eventually(t, 2*time.Minute, r.isReady, "ready again without a restart")
	t.Logf("ready %s after the rule was restored", time.Since(granted).Round(10*time.Millisecond))
	logs := r.logs.String()
	assert.Contains(t, logs, "the missing permissions were granted")
	assert.Contains(t, logs, "the cluster caches refresh again")
	assert.Equal(t, 1, strings.Count(logs, `"permission":"`+list+`"`), "logged once")

	successes := r.cyclesWith(t, "success")
	touch("2")
	eventually(t, time.Minute, func() bool { return r.cyclesWith(t, "success") == successes+1 }, "the next cycle succeeds")
}
