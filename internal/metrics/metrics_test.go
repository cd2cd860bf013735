package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

func workload(ns, name string, drifted int, reasons ...drift.Reason) drift.Workload {
	return drift.Workload{Namespace: ns, Kind: "Deployment", Name: name, Reasons: reasons, Pods: drift.PodCount{Total: drifted + 1, Drifted: drifted}}
}

func TestObserveCycleExposesTheLastPlan(t *testing.T) {
	first := &reconcile.Report{
		Plan: drift.Plan{
			Workloads: []drift.Workload{
				workload("shop", "cart", 3, drift.ReasonProxyImage, drift.ReasonRevision),
				workload("shop", "frontend", 2, drift.ReasonProxyImage),
				workload("payments", "api", 4, drift.ReasonRevision),
			},
			Skipped: []drift.Skipped{{Namespace: "shop", Kind: "Pod", Name: "debug", Reason: drift.SkipNoOwner}},
		},
		Outcomes: []reconcile.Outcome{
			{Namespace: "orders"},
			{Namespace: "payments", State: prstate.PROpen, PR: 2},
			{Namespace: "search", State: prstate.PRRolledOut, PR: 3},
			{Namespace: "shop", State: prstate.PROpen, PR: 1},
		},
		// A shared base refused for both namespaces whose workloads it
		// defines is one file.
		Refused: []dashboard.RefusedFile{
			{Namespace: "shop", Path: "apps/shop/odd.yaml", Reason: "anchors"},
			{Namespace: "shop", Path: "apps/base/shared.yaml", Reason: "anchors"},
			{Namespace: "payments", Path: "apps/base/shared.yaml", Reason: "anchors"},
		},
		Mismatch: dashboard.Mismatch{Configured: "example-org/gitops", Foreign: []dashboard.ForeignRepository{
			{Repository: "github.com/example-org/platform", Namespaces: []string{"orders", "search"}},
		}},
	}
	// The next cycle: payments fixed, shop's frontend too.
	second := &reconcile.Report{
		Plan: drift.Plan{Workloads: []drift.Workload{workload("shop", "cart", 1, drift.ReasonRevision)}},
		Outcomes: []reconcile.Outcome{
			{Namespace: "payments", State: prstate.PRMergedRollingOut, PR: 2},
			{Namespace: "shop", State: prstate.PROpen, PR: 1},
		},
	}
	cases := []struct {
		name    string
		reports []*reconcile.Report
		want    string
	}{
		{
			name:    "drift, skips, pull requests and refused files of one cycle",
			reports: []*reconcile.Report{first},
			want: `
# HELP kedge_drifted_pods Drifted pods in the last plan, by namespace and the drift reasons of their workload, comma-separated (each pod counts once).
# TYPE kedge_drifted_pods gauge
kedge_drifted_pods{namespace="payments",reasons="revision"} 4
kedge_drifted_pods{namespace="shop",reasons="proxy-image"} 2
kedge_drifted_pods{namespace="shop",reasons="proxy-image,revision"} 3
# HELP kedge_drifted_workloads Workloads with drifted pods in the last plan, by namespace and drift reason (a workload counts once per reason).
# TYPE kedge_drifted_workloads gauge
kedge_drifted_workloads{namespace="payments",reason="revision"} 1
kedge_drifted_workloads{namespace="shop",reason="proxy-image"} 2
kedge_drifted_workloads{namespace="shop",reason="revision"} 1
# HELP kedge_pull_requests Namespaces by the state of their kedge pull request after the last cycle; a namespace applied from several repositories has a pull request, and counts, in each.
# TYPE kedge_pull_requests gauge
kedge_pull_requests{state="open"} 2
kedge_pull_requests{state="rolled-out"} 1
# HELP kedge_refused_files Manifest files kedge found but would not edit safely, in the last cycle (a file counts once, however many namespaces it defines workloads of).
# TYPE kedge_refused_files gauge
kedge_refused_files 2
# HELP kedge_repository_mismatch Namespaces whose drifted workloads the cluster applies from another repository than the configured one, by that repository, in the last cycle.
# TYPE kedge_repository_mismatch gauge
kedge_repository_mismatch{repository="github.com/example-org/platform"} 2
# HELP kedge_skipped_workloads Drifted workloads, and drifted pods without an owner, that kedge will not restart in the last plan, by namespace and skip reason.
# TYPE kedge_skipped_workloads gauge
kedge_skipped_workloads{namespace="shop",reason="no-owner"} 1
`,
		},
		{
			name:    "what stopped drifting disappears",
			reports: []*reconcile.Report{first, second},
			want: `
# HELP kedge_drifted_pods Drifted pods in the last plan, by namespace and the drift reasons of their workload, comma-separated (each pod counts once).
# TYPE kedge_drifted_pods gauge
kedge_drifted_pods{namespace="shop",reasons="revision"} 1
# HELP kedge_drifted_workloads Workloads with drifted pods in the last plan, by namespace and drift reason (a workload counts once per reason).
# TYPE kedge_drifted_workloads gauge
kedge_drifted_workloads{namespace="shop",reason="revision"} 1
# HELP kedge_pull_requests Namespaces by the state of their kedge pull request after the last cycle; a namespace applied from several repositories has a pull request, and counts, in each.
# TYPE kedge_pull_requests gauge
kedge_pull_requests{state="merged-rolling-out"} 1
kedge_pull_requests{state="open"} 1
# HELP kedge_refused_files Manifest files kedge found but would not edit safely, in the last cycle (a file counts once, however many namespaces it defines workloads of).
# TYPE kedge_refused_files gauge
kedge_refused_files 0
`,
		},
		{
			name:    "a cycle that failed before planning leaves the last plan standing",
			reports: []*reconcile.Report{second, nil},
			want: `
# HELP kedge_drifted_pods Drifted pods in the last plan, by namespace and the drift reasons of their workload, comma-separated (each pod counts once).
# TYPE kedge_drifted_pods gauge
kedge_drifted_pods{namespace="shop",reasons="revision"} 1
# HELP kedge_drifted_workloads Workloads with drifted pods in the last plan, by namespace and drift reason (a workload counts once per reason).
# TYPE kedge_drifted_workloads gauge
kedge_drifted_workloads{namespace="shop",reason="revision"} 1
# HELP kedge_pull_requests Namespaces by the state of their kedge pull request after the last cycle; a namespace applied from several repositories has a pull request, and counts, in each.
# TYPE kedge_pull_requests gauge
kedge_pull_requests{state="merged-rolling-out"} 1
kedge_pull_requests{state="open"} 1
# HELP kedge_refused_files Manifest files kedge found but would not edit safely, in the last cycle (a file counts once, however many namespaces it defines workloads of).
# TYPE kedge_refused_files gauge
kedge_refused_files 0
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(nil)
			for _, r := range tc.reports {
				var err error
				if r == nil {
					err = errors.New("read cluster: connection refused")
				}
				m.ObserveCycle("mesh", r, err, time.Second, time.Now())
			}
			require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(tc.want),
				"kedge_drifted_pods", "kedge_drifted_workloads", "kedge_pull_requests", "kedge_refused_files", "kedge_skipped_workloads",
				"kedge_repository_mismatch"))
		})
	}
}

func TestObserveCycleCountsResults(t *testing.T) {
	m := metrics.New(nil)
	end := time.Unix(1_750_000_000, 0)
	m.ObserveCycle("start", &reconcile.Report{}, nil, 2*time.Second, end)
	m.ObserveCycle("mesh", &reconcile.Report{}, fmt.Errorf("namespace shop: %w", errors.New("422")), time.Second, end.Add(time.Minute))
	m.ObserveCycle("mesh", nil, fmt.Errorf("open repository: %w", context.Canceled), time.Second, end.Add(2*time.Minute))
	// A cycle that read caches that could not refresh is no success.
	m.ObserveCycle("resync", &reconcile.Report{}, fmt.Errorf("%w: %w", cluster.ErrStale, errors.New("replicasets.apps cluster-wide: forbidden")), time.Second, end.Add(3*time.Minute))

	want := `
# HELP kedge_cycles_total Reconcile cycles run, by what started them (start, mesh, resync) and result (success; stale: it read cluster caches that could not refresh; error; aborted).
# TYPE kedge_cycles_total counter
kedge_cycles_total{result="aborted",trigger="mesh"} 1
kedge_cycles_total{result="error",trigger="mesh"} 1
kedge_cycles_total{result="stale",trigger="resync"} 1
kedge_cycles_total{result="success",trigger="start"} 1
# HELP kedge_last_successful_cycle_timestamp_seconds When the last successful cycle (no error, not stale) ended, as a Unix time.
# TYPE kedge_last_successful_cycle_timestamp_seconds gauge
kedge_last_successful_cycle_timestamp_seconds 1.75e+09
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"kedge_cycles_total", "kedge_last_successful_cycle_timestamp_seconds"))
	assert.Equal(t, 4, testutil.CollectAndCount(m.Registry(), "kedge_cycle_duration_seconds"), "one histogram per result")
}

func TestGitHubMetricsFollowTheClient(t *testing.T) {
	const token = "ghp_metricsTestToken000000000000000000"
	gh := ghemu.New(t, ghemu.Options{Owner: "example-org", Repo: "gitops", Tokens: map[string]string{token: "kedge-bot"}, RateLimit: 5000})
	client, err := forge.New(t.Context(), forge.Config{APIURL: gh.URL + "/", Owner: "example-org", Repo: "gitops", Token: token})
	require.NoError(t, err)
	m := metrics.New(client.Stats)

	// Before GitHub has answered, the limit is unknown and not made up.
	assert.Zero(t, testutil.CollectAndCount(m.Registry(), "kedge_github_rate_limit_remaining"))

	for range 3 {
		_, err := client.DefaultBranch(t.Context())
		require.NoError(t, err)
	}
	stats := client.Stats()
	want := fmt.Sprintf(`
# HELP kedge_github_rate_limit GitHub's primary rate limit per window, as of the last answer that carried it.
# TYPE kedge_github_rate_limit gauge
kedge_github_rate_limit 5000
# HELP kedge_github_rate_limit_remaining Requests left in GitHub's primary rate limit window, as of the last answer that carried it.
# TYPE kedge_github_rate_limit_remaining gauge
kedge_github_rate_limit_remaining %d
# HELP kedge_github_requests_total HTTP requests sent to GitHub by method, retries and token mints included; answers from the ETag cache count as the 304 they were.
# TYPE kedge_github_requests_total counter
kedge_github_requests_total{method="GET"} 3
# HELP kedge_github_not_modified_total Conditional requests GitHub answered 304 Not Modified (free of rate limit).
# TYPE kedge_github_not_modified_total counter
kedge_github_not_modified_total %d
`, stats.RateRemaining, stats.NotModified)
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"kedge_github_rate_limit", "kedge_github_rate_limit_remaining", "kedge_github_requests_total", "kedge_github_not_modified_total"))
	assert.Less(t, stats.RateRemaining, 5000)
	assert.Equal(t, 1, testutil.CollectAndCount(m.Registry(), "kedge_github_rate_limit_reset_timestamp_seconds"))
}

func TestObservePushCountsEachPush(t *testing.T) {
	m := metrics.New(nil)
	m.ObservePush(1500*time.Millisecond, nil)
	m.ObservePush(500*time.Millisecond, nil)
	m.ObservePush(4*time.Second, errors.New("remote rejected"))
	// Cycles carry no push of their own: a cycle is not a push.
	m.ObserveCycle("mesh", &reconcile.Report{Pushes: 2}, nil, 3*time.Second, time.Now())
	m.ObserveCycle("mesh", nil, fmt.Errorf("cycle: %w", &reconcile.PushError{Duration: 4 * time.Second, Err: errors.New("x")}), time.Second, time.Now())

	assert.Equal(t, uint64(2), histogramCount(t, m, "kedge_git_push_duration_seconds", metrics.PushSucceeded))
	assert.Equal(t, uint64(1), histogramCount(t, m, "kedge_git_push_duration_seconds", metrics.PushFailed))
	assert.InDelta(t, 2.0, histogramSum(t, m, "kedge_git_push_duration_seconds", metrics.PushSucceeded), 1e-9)
	assert.InDelta(t, 4.0, histogramSum(t, m, "kedge_git_push_duration_seconds", metrics.PushFailed), 1e-9)
}

// histogramOf finds the histogram of one result of a labelled family.
func histogramOf(t *testing.T, m *metrics.Metrics, name, result string) *dto.Histogram {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return metric.GetHistogram()
				}
			}
		}
	}
	t.Fatalf("%s{result=%q} not gathered", name, result)
	return nil
}

func histogramCount(t *testing.T, m *metrics.Metrics, name, result string) uint64 {
	return histogramOf(t, m, name, result).GetSampleCount()
}

func histogramSum(t *testing.T, m *metrics.Metrics, name, result string) float64 {
	return histogramOf(t, m, name, result).GetSampleSum()
}

func TestMeshChangesAndLeadership(t *testing.T) {
	m := metrics.New(nil)
	for range 3 {
		m.ObserveMeshChange()
	}
	// One cycle answered the three changes, 2.5 s after the first.
	m.ObserveMeshChangeLatency(2500 * time.Millisecond)
	m.SetLeader(true)

	want := `
# HELP kedge_leader 1 while this instance holds the leader Lease and may write to Git and GitHub.
# TYPE kedge_leader gauge
kedge_leader 1
# HELP kedge_mesh_changes_total Mesh changes reported by the cluster source (injector webhooks, injector ConfigMaps, namespace labels).
# TYPE kedge_mesh_changes_total counter
kedge_mesh_changes_total 3
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "kedge_leader", "kedge_mesh_changes_total"))
	latency := gathered(t, m, "kedge_mesh_change_to_cycle_seconds").GetHistogram()
	assert.Equal(t, uint64(1), latency.GetSampleCount(), "one observation per cycle, not per change")
	assert.InDelta(t, 2.5, latency.GetSampleSum(), 1e-9)

	m.SetLeader(false)
	assert.InDelta(t, 0.0, gathered(t, m, "kedge_leader").GetGauge().GetValue(), 0)
}

// gathered is the one series of an unlabelled family.
func gathered(t *testing.T, m *metrics.Metrics, name string) *dto.Metric {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1, name)
			return f.GetMetric()[0]
		}
	}
	t.Fatalf("%s not gathered", name)
	return nil
}

// TestGitHubCountersAreTheClientsOwn: each GitHub family is one field of
// the client's counters, read at scrape time, never summed twice.
func TestGitHubCountersAreTheClientsOwn(t *testing.T) {
	stats := forge.Stats{
		Calls: map[string]int64{"GET": 40, "POST": 7, "PATCH": 3}, Mutating: 10, NotModified: 25, TokenMints: 2,
		Retries: 4, RetryLater: 1, RateLimit: 5000, RateRemaining: 4950, RateReset: time.Unix(1_750_003_600, 0),
	}
	m := metrics.New(func() forge.Stats { return stats })
	want := `
# HELP kedge_github_mutating_requests_total Requests that changed something on GitHub.
# TYPE kedge_github_mutating_requests_total counter
kedge_github_mutating_requests_total 10
# HELP kedge_github_rate_limit_reset_timestamp_seconds When GitHub's primary rate limit window resets, as a Unix time.
# TYPE kedge_github_rate_limit_reset_timestamp_seconds gauge
kedge_github_rate_limit_reset_timestamp_seconds 1.7500036e+09
# HELP kedge_github_requests_total HTTP requests sent to GitHub by method, retries and token mints included; answers from the ETag cache count as the 304 they were.
# TYPE kedge_github_requests_total counter
kedge_github_requests_total{method="GET"} 40
kedge_github_requests_total{method="PATCH"} 3
kedge_github_requests_total{method="POST"} 7
# HELP kedge_github_retries_total GitHub calls repeated after a rate limit, a 5xx or a timeout.
# TYPE kedge_github_retries_total counter
kedge_github_retries_total 4
# HELP kedge_github_retry_later_total GitHub calls given up until the next cycle (rate limited for longer than kedge waits).
# TYPE kedge_github_retry_later_total counter
kedge_github_retry_later_total 1
# HELP kedge_github_token_mints_total GitHub App installation tokens requested.
# TYPE kedge_github_token_mints_total counter
kedge_github_token_mints_total 2
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"kedge_github_mutating_requests_total", "kedge_github_rate_limit_reset_timestamp_seconds", "kedge_github_requests_total",
		"kedge_github_retries_total", "kedge_github_retry_later_total", "kedge_github_token_mints_total"))
	// Two scrapes: the same values, not twice them.
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "kedge_github_retries_total", "kedge_github_requests_total"))
}
