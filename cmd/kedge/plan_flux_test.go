package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
)

// TestPlanResolvesFluxSubstitutionInTheNamespace: the analytics overlay
// names its namespace ${team}, which the cluster's Flux Kustomization sets
// with postBuild.substitute. `kedge plan` locates the workloads through it,
// and its patch restarts them without touching ${team}.
func TestPlanResolvesFluxSubstitutionInTheNamespace(t *testing.T) {
	dir := t.TempDir()
	repo, snapshot := filepath.Join(dir, "gitops"), filepath.Join(dir, "cluster")
	treecopy.Copy(t, demoRepo, repo)
	treecopy.Copy(t, demoCluster, snapshot)
	overlay := filepath.Join(repo, "apps", "prod-eu-1", "analytics", "kustomization.yaml")
	replaceOnce(t, overlay, "namespace: analytics\n", "namespace: ${team}\n")
	replaceOnce(t, filepath.Join(snapshot, "flux-system", "kustomizations.yaml"),
		"  path: ./apps/prod-eu-1/analytics\n", "  path: ./apps/prod-eu-1/analytics\n  postBuild:\n    substitute:\n      team: analytics\n")

	run := func(output string) string {
		var out, errOut bytes.Buffer
		code := execute(context.Background(), []string{
			"plan", "--snapshot", snapshot, "--repo", repo, "--cluster", "prod-eu-1", "--output", output,
		}, &out, &errOut)
		require.Equal(t, exitOK, code, errOut.String())
		return out.String()
	}
	plan := readPlan(t, []byte(run("json")))
	located := map[string]drift.Manifest{}
	for _, w := range plan.Workloads {
		if w.Namespace == "analytics" {
			located[w.Kind+"/"+w.Name] = w.Manifest
		}
	}
	assert.Equal(t, map[string]drift.Manifest{
		"DaemonSet/metrics-agent":     {Status: drift.ManifestFound, Path: "apps/prod-eu-1/analytics/metrics-agent.yaml", Edit: drift.EditInPlace},
		"Deployment/events-collector": {Status: drift.ManifestFound, Path: "apps/prod-eu-1/analytics/events-collector.yaml", Edit: drift.EditInPlace},
	}, located)

	patch := run("patch")
	assert.NotContains(t, patch, "analytics/kustomization.yaml")
	after := filepath.Join(dir, "after")
	treecopy.Copy(t, repo, after)
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir, cmd.Stdin = after, strings.NewReader(patch)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git apply: %s", out)
	kustomization, err := os.ReadFile(filepath.Join(after, "apps", "prod-eu-1", "analytics", "kustomization.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(kustomization), "namespace: ${team}\n")

	ann := restart.Annotations{Restart: restart.DefaultRestartAnnotation, Target: restart.DefaultTargetAnnotation}
	var restarts []editcheck.Restart
	for _, w := range plan.Workloads {
		target := restart.TargetValue(w.Desired)
		restarts = append(restarts, editcheck.Restart{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{ann.Target: target, ann.Restart: restart.RestartValue(w, target)},
		})
	}
	var changed []string
	for _, m := range diffHeader.FindAllStringSubmatch(patch, -1) {
		changed = append(changed, m[1])
	}
	res, err := editcheck.CompareRepos(editcheck.Check{
		Before: repo, After: after, Changed: changed, Restarts: restarts,
		TargetNamespaces: map[string]string{"apps/prod-eu-1/search": "search"},
		Flux:             map[string]editcheck.FluxApply{"apps/prod-eu-1/analytics": {Vars: map[string]string{"team": "analytics"}}},
	})
	require.NoError(t, err)
	assert.Empty(t, res.Problems)
	assert.True(t, res.Restarted["Deployment analytics/events-collector"])
	assert.True(t, res.Restarted["DaemonSet analytics/metrics-agent"])
}

// replaceOnce rewrites the one occurrence of old in a file.
func replaceOnce(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(data), old), "%s holds %q once", file, old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
}
