package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	demoCluster = "../../testdata/demo/cluster"
	demoRepo    = "../../testdata/demo/gitops"
	// demoTeamRepo is the reviews team's repository, which the demo
	// cluster applies namespace reviews from.
	demoTeamRepo = "../../testdata/demo/team-reviews"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBadBudgetsExitTwo: a chart-pull or render key set wrong in the
// environment stops a command before anything runs, naming the key.
func TestBadBudgetsExitTwo(t *testing.T) {
	tests := []struct{ env, value, wantKey string }{
		{"KEDGE_HELM_MAXCHARTSIZE", "ten megabytes", "helm.maxChartSize"},
		{"KEDGE_HELM_ALLOWEDHOSTS", "charts.example.com,https://evil.example/x", "helm.allowedHosts[1]"},
		{"KEDGE_RENDER_TIMEOUT", "0s", "render.timeout"},
		{"KEDGE_RENDER_MEMORY", "-1Gi", "render.memory"},
		{"KEDGE_RENDER_WORKERS", "-2", "render.workers"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			code, stdout, stderr := run(t, "plan", "--snapshot", demoCluster)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Contains(t, stderr, "config "+tt.wantKey+":")
			assert.Empty(t, stdout)
		})
	}
}

func TestExitCodes(t *testing.T) {
	badConfig := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(badConfig, []byte("repo: {owner: o, nmae: typo}\n"), 0o600))
	badBudget := filepath.Join(t.TempDir(), "budget.yaml")
	require.NoError(t, os.WriteFile(badBudget, []byte("render: {memory: lots}\n"), 0o600))
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"version", []string{"version"}, exitOK, ""},
		{"unknown flag", []string{"plan", "--nope"}, exitUsage, "unknown flag: --nope"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "frobnicate"},
		{"stray argument", []string{"plan", "extra"}, exitUsage, "unexpected argument"},
		{"bad output", []string{"plan", "--snapshot", demoCluster, "--output", "yaml"}, exitUsage, "--output"},
		{"patch without repo", []string{"plan", "--snapshot", demoCluster, "--output", "patch"}, exitUsage, "--repo"},
		{"unknown config key", []string{"plan", "--config", badConfig, "--snapshot", demoCluster}, exitUsage, "repo.nmae"},
		{"bad render budget", []string{"plan", "--config", badBudget, "--snapshot", demoCluster}, exitUsage, "config render.memory"},
		{"missing config file", []string{"plan", "--config", "/nonexistent/kedge.yaml"}, exitUsage, "/nonexistent/kedge.yaml"},
		{"run without settings", []string{"run", "--once", "--snapshot", demoCluster}, exitUsage, "config cluster"},
		{"snapshot without --out", []string{"snapshot"}, exitUsage, "--out"},
		{"missing snapshot directory", []string{"plan", "--snapshot", "/nonexistent/snapshot"}, exitRuntime, "/nonexistent/snapshot"},
		{"doctor with checks that fail", []string{"doctor", "--config", badConfig}, exitRuntime, "doctor: 7 of 7 checks did not pass"},
		{"doctor with a stray argument", []string{"doctor", "extra"}, exitUsage, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			assert.Equal(t, tt.wantCode, code, stderr)
			assert.Contains(t, stderr, tt.wantErr)
		})
	}
}

func TestPlanOutputs(t *testing.T) {
	code, out, stderr := run(t, "plan", "--snapshot", demoCluster, "--output", "json", "--cluster", "prod-eu-1")
	require.Equal(t, exitOK, code, stderr)
	var plan struct {
		Cluster   string `json:"cluster"`
		Workloads []struct {
			Manifest struct {
				Status string `json:"status"`
			} `json:"manifest"`
		} `json:"workloads"`
		Skipped []json.RawMessage `json:"skipped"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	assert.Equal(t, "prod-eu-1", plan.Cluster)
	require.NotEmpty(t, plan.Workloads)
	for _, w := range plan.Workloads {
		assert.Equal(t, "no-repo", w.Manifest.Status, "without --repo")
	}
	assert.NotEmpty(t, plan.Skipped)

	code, out, stderr = run(t, "plan", "--snapshot", demoCluster, "--repo", demoRepo, "--output", "patch")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "diff --git a/")
	assert.Contains(t, out, "+        kedge.io/restartedAt:")

	code, out, stderr = run(t, "plan", "--snapshot", demoCluster, "--output", "markdown")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "| Workload |")

	code, out, stderr = run(t, "plan", "--snapshot", demoCluster, "--repo", demoRepo)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "NAMESPACE")
	assert.Contains(t, out, "drifted workloads")
}

func TestPlanReadsTheEnvironment(t *testing.T) {
	t.Setenv("KEDGE_SOURCE_SNAPSHOT", demoCluster)
	t.Setenv("KEDGE_NAMESPACES_INCLUDE", "shop")
	code, out, stderr := run(t, "plan", "--output", "json")
	require.Equal(t, exitOK, code, stderr)
	var plan struct {
		Workloads []struct {
			Namespace string `json:"namespace"`
		} `json:"workloads"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.NotEmpty(t, plan.Workloads)
	for _, w := range plan.Workloads {
		assert.Equal(t, "shop", w.Namespace)
	}
}

// TestDoctorNamesTheKeyOfABadConfiguration: one line per check, the
// configuration's naming the key, the others not made.
func TestDoctorNamesTheKeyOfABadConfiguration(t *testing.T) {
	badConfig := filepath.Join(t.TempDir(), "kedge.yaml")
	require.NoError(t, os.WriteFile(badConfig, []byte("cluster: prod-eu-1\nrepo: {owner: o}\ngithub: {token: t}\n"), 0o600))
	code, stdout, _ := run(t, "doctor", "--config", badConfig)
	assert.Equal(t, exitRuntime, code)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 7, stdout)
	assert.Equal(t, "FAIL  configuration: "+badConfig+": config repo.name: required — fix: correct repo.name; config/kedge.example.yaml documents it", lines[0])
	for _, l := range lines[1:] {
		assert.True(t, strings.HasPrefix(l, "skip  "), l)
	}
}
