package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster"
)

// cycles is the service's kedge_cycles_total for one trigger and result.
func (c *composed) cycles(trigger, result string) float64 {
	families, err := c.svc.metrics.Registry().Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != "kedge_cycles_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["trigger"] == trigger && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

var errConnectionRefused = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

// finishedCycle waits for the next cycle and for the service to record it
// as the nth cycle of its trigger with that result.
func (c *composed) finishedCycle(t *testing.T, trigger, result string, nth float64) {
	t.Helper()
	c.cycle(t)
	require.Eventually(t, func() bool { return c.cycles(trigger, result) == nth }, hangGuard, time.Millisecond,
		"the cycle was not recorded as %s:\n%s", result, c.logs.String())
}

func TestAPermissionTakenAwayWhileRunningMakesTheServiceUnreadyAndItsCyclesStale(t *testing.T) {
	source := &fakeSource{}
	c := runComposed(t, source, &fakeGitHub{})
	c.finishedCycle(t, "start", "success", 1)
	require.Empty(t, c.failing())

	listRS := cluster.Permission{Verb: "list", Group: "apps", Resource: "replicasets", GrantedBy: cluster.ReadRBAC}
	source.revoke(listRS)
	c.waitingOnClock(t)
	c.clock.Step(time.Minute)
	const named = "list replicasets.apps cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)"
	require.Eventually(t, func() bool { return strings.Contains(c.failing(), named) }, hangGuard, time.Millisecond, "/readyz names the permission")
	assert.Contains(t, c.failing(), "permissions: the cluster credentials lack permissions kedge needs:\n  "+named)
	assert.Contains(t, c.logs.String(), `msg="missing permission: kedge's cluster caches cannot refresh and its cycles are stale until it is granted" permission="`+named+`"`,
		"the startup check's words and the permission")

	source.change("Namespace shop labels changed")
	c.finishedCycle(t, "mesh", "stale", 1)
	assert.Contains(t, c.logs.String(), `msg="cycle finished on stale cluster caches"`)
	assert.Zero(t, c.cycles("mesh", "success"))
	// Several rechecks and cycles later the permission is still logged once.
	c.clock.Step(time.Minute)
	source.change("Namespace shop labels changed")
	c.finishedCycle(t, "mesh", "stale", 2)
	assert.Equal(t, 1, strings.Count(c.logs.String(), "missing permission"))

	source.grant()
	c.clock.Step(time.Minute)
	require.Eventually(t, func() bool { return c.failing() == "" }, hangGuard, time.Millisecond, "ready again without a restart")
	assert.Contains(t, c.logs.String(), "the missing permissions were granted")
	source.change("Namespace shop labels changed")
	c.finishedCycle(t, "mesh", "success", 1)
}

func TestCachesThatCannotRefreshMakeTheServiceUnreadyAndItsCyclesStale(t *testing.T) {
	source := &fakeSource{}
	c := runComposed(t, source, &fakeGitHub{})
	c.finishedCycle(t, "start", "success", 1)

	stale := &cluster.StaleError{Caches: []cluster.StaleCache{{
		Resource: "pods cluster-wide", Since: epoch, Err: errConnectionRefused,
	}}}
	source.setStale(stale)
	require.Eventually(t, func() bool {
		return strings.Contains(c.failing(), "informers: the cluster caches cannot refresh: pods cluster-wide: failing since")
	},
		hangGuard, time.Millisecond, "/readyz says which cache and why")
	assert.Contains(t, c.logs.String(), "the cluster caches cannot refresh: cycles are stale until they do")
	source.change("Namespace shop labels changed")
	c.finishedCycle(t, "mesh", "stale", 1)

	source.setStale(nil)
	require.Eventually(t, func() bool { return c.failing() == "" }, hangGuard, time.Millisecond, "ready once the caches refresh")
	assert.Contains(t, c.logs.String(), "the cluster caches refresh again")
	source.change("Namespace shop labels changed")
	c.finishedCycle(t, "mesh", "success", 1)
}
