package dashboard

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// namespaceRow is the namespaces table's row of ns in a rendered dashboard.
func namespaceRow(t *testing.T, issue, ns string) string {
	t.Helper()
	for _, line := range strings.Split(issue, "\n") {
		if strings.HasPrefix(line, "| "+ns+" | ") {
			return line
		}
	}
	require.Failf(t, "no row", "namespace %s has no row in:\n%s", ns, issue)
	return ""
}

func TestNamespaceStatusNamesTheWaveItBlocks(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	blocked := rolloutWaves().dashboard

	tests := []struct {
		name        string
		rollouts    []waves.Rollout
		state       prstate.PRState
		want        string
		notContains string
	}{
		{name: "rolled out and blocking", rollouts: blocked.Rollouts, state: prstate.PRRolledOut,
			want:        "| merged and rolled out, but unhealthy; **blocks** rollout wave 2 (non-critical): StatefulSet db (istio-proxy of pod db-0 restarted 4 times (max 1)) |",
			notContains: "| merged and rolled out |"},
		{name: "rolling out and blocking", rollouts: blocked.Rollouts, state: prstate.PRMergedRollingOut,
			want: "| merged, rolling out; **blocks** rollout wave 2 (non-critical): StatefulSet db (istio-proxy of pod db-0 restarted 4 times (max 1)) |"},
		{name: "rolled out, nothing blocked", rollouts: nil, state: prstate.PRRolledOut,
			want: "| merged and rolled out |", notContains: "blocks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := blocked
			d.Rollouts = tc.rollouts
			d.Namespaces = []NamespaceStatus{{Namespace: "orders", State: tc.state, PRNumber: 7, PRURL: pullURL(7)}}
			issue, err := r.DashboardIssue(d)
			require.NoError(t, err)
			row := namespaceRow(t, issue, "orders")
			assert.True(t, strings.HasSuffix(row, tc.want), row)
			if tc.notContains != "" {
				assert.NotContains(t, row, tc.notContains)
			}
		})
	}
}

// A namespace whose PR rolled out has no drifted workload: the headline
// does not count it as drifting.
func TestHeadlineCountsOnlyDriftingNamespaces(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	d := rolloutWaves().dashboard
	issue, err := r.DashboardIssue(d)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(issue, "**1 workload** in **1 namespace** of cluster **prod-eu-1**"), issue)
	assert.Contains(t, issue, "Pull requests: 1 open · 1 rolled out.")

	d.Namespaces = []NamespaceStatus{{Namespace: "orders", State: prstate.PRRolledOut, PRNumber: 7, PRURL: pullURL(7)}}
	issue, err = r.DashboardIssue(d)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(issue, "**No drift.** Every sidecar in cluster **prod-eu-1**"), issue)
	assert.Contains(t, issue, "Pull requests: 1 rolled out.")
}
