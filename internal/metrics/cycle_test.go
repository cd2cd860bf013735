package metrics_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

const demoDir = "../../testdata/demo"

// bareRepo commits tree as the one commit of main in a bare repository.
func bareRepo(t *testing.T, tree, name string) string {
	t.Helper()
	work := t.TempDir()
	src, bare := filepath.Join(work, "src"), filepath.Join(work, name+".git")
	abs, err := filepath.Abs(tree)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "--work-tree", abs, "add", "-A"},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "GitOps repository"},
		{"clone", "-q", "--bare", src, bare},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return bare
}

// TestMetricsOfADemoCycle runs the demo's cycle, which pushes once to each
// of the two repositories the cluster applies from, and reads what the
// metrics say about it.
func TestMetricsOfADemoCycle(t *testing.T) {
	const token = "metrics-demo-token"
	gh := ghemu.NewHub(t, ghemu.HubOptions{Tokens: map[string]string{token: "kedge[bot]"}})
	platform := bareRepo(t, demoDir+"/gitops", "gitops")
	team := bareRepo(t, demoDir+"/team-reviews", "team-reviews")
	gh.AddRepo(ghemu.Options{Owner: "example-org", Repo: "gitops", Branches: ghemu.GitBranches(platform)})
	gh.AddRepo(ghemu.Options{Owner: "example-org", Repo: "team-reviews", Branches: ghemu.GitBranches(team)})

	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	cfg.Repo.Owner, cfg.Repo.Name, cfg.Repo.URL = "example-org", "gitops", "file://"+platform
	cfg.Repos = []config.RepoRule{{Match: "example-org/team-*", CloneURL: "file://" + team}}
	cfg.GitHub.APIURL, cfg.GitHub.Token = gh.URL+"/api/v3/", token
	cfg.Git.CacheDir = t.TempDir()
	cfg.Limits.MutationGap = 0
	require.NoError(t, cfg.Validate(config.ModeRun))
	set, err := snapshot.Read(demoDir + "/cluster")
	require.NoError(t, err)

	m := metrics.New(nil)
	svc, err := assemble.New(context.Background(), cfg, func(context.Context) (*objects.Set, error) { return set, nil },
		assemble.Options{ObservePush: m.ObservePush})
	require.NoError(t, err)
	report, err := svc.Reconciler.RunOnce(context.Background())
	require.NoError(t, err)
	m.ObserveCycle("start", report, nil, report.Duration, report.Started.Add(report.Duration))

	t.Run("kedge_git_push_duration_seconds: one observation per push", func(t *testing.T) {
		require.Equal(t, 2, report.Pushes, "one push to each repository")
		assert.Equal(t, uint64(report.Pushes), histogramCount(t, m, "kedge_git_push_duration_seconds", metrics.PushSucceeded))
	})

	t.Run("kedge_drifted_pods: each pod once", func(t *testing.T) {
		drifted, twoReasons := 0, 0
		for _, w := range report.Plan.Workloads {
			drifted += w.Pods.Drifted
			if len(w.Reasons) > 1 {
				twoReasons++
			}
		}
		require.Positive(t, twoReasons, "the demo has a workload drifting for two reasons")
		assert.Equal(t, 37, drifted, "the demo's drifted pods (testdata/demo/expected.json)")
		assert.InDelta(t, float64(drifted), gaugeSum(t, m, "kedge_drifted_pods"), 0)
	})

	t.Run("kedge_drifted_workloads: a workload once per reason", func(t *testing.T) {
		perReason := 0
		for _, w := range report.Plan.Workloads {
			perReason += len(w.Reasons)
		}
		assert.InDelta(t, float64(perReason), gaugeSum(t, m, "kedge_drifted_workloads"), 0)
	})

	t.Run("kedge_pull_requests: a namespace per repository it has a pull request in", func(t *testing.T) {
		prs := len(gh.Repo("example-org/gitops").PRs()) + len(gh.Repo("example-org/team-reviews").PRs())
		assert.InDelta(t, float64(prs), seriesValue(t, m, "kedge_pull_requests", "open"), 0)
	})
}

// gaugeSum adds every series of a gauge family.
func gaugeSum(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, metric := range f.GetMetric() {
				sum += metric.GetGauge().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

// seriesValue is the value of the gauge series of family name that has a
// label with value.
func seriesValue(t *testing.T, m *metrics.Metrics, name, value string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetValue() == value {
					return metric.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{…=%q} not gathered", name, value)
	return 0
}
