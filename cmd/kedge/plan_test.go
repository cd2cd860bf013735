package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

const demoExpected = "../../testdata/demo/expected.json"

// planRun runs `kedge plan` on the demo in process and returns its output.
func planRun(t *testing.T, output string) string {
	t.Helper()
	return planWith(t, output, "--repo", demoRepo)
}

// planRunAllRepos plans the demo over both repositories the cluster applies
// from, named as its GitRepositories name them.
func planRunAllRepos(t *testing.T, output string) string {
	t.Helper()
	return planWith(t, output, "--repo", "example-org/gitops="+demoRepo, "--repo", "example-org/team-reviews="+demoTeamRepo)
}

func planWith(t *testing.T, output string, repos ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	args := append([]string{"plan", "--snapshot", demoCluster, "--cluster", "prod-eu-1", "--output", output}, repos...)
	code := execute(context.Background(), args, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	return out.String()
}

// comparedWorkload is the part of a plan entry that expected.json pins down.
type comparedWorkload struct {
	Namespace, Kind, Name string
	Reasons               []drift.Reason
	DesiredRevision       string
	Status, Path, Edit    string
}

func comparedWorkloads(p drift.Plan) []comparedWorkload {
	out := make([]comparedWorkload, 0, len(p.Workloads))
	for _, w := range p.Workloads {
		out = append(out, comparedWorkload{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name, Reasons: w.Reasons,
			DesiredRevision: w.Desired.Revision,
			Status:          w.Manifest.Status, Path: w.Manifest.Path, Edit: w.Manifest.Edit,
		})
	}
	return out
}

func comparedSkips(p drift.Plan) []drift.Skipped {
	out := make([]drift.Skipped, 0, len(p.Skipped))
	for _, s := range p.Skipped {
		out = append(out, drift.Skipped{Namespace: s.Namespace, Kind: s.Kind, Name: s.Name, Reason: s.Reason})
	}
	return out
}

func readPlan(t *testing.T, data []byte) drift.Plan {
	t.Helper()
	var p drift.Plan
	require.NoError(t, json.Unmarshal(data, &p))
	return p
}

// TestPlanMatchesTheHandDerivedDemoPlan holds `kedge plan --output json` on
// the demo to testdata/demo/expected.json, worked out by hand from Istio's
// injection rules and the demo repository's layout.
func TestPlanMatchesTheHandDerivedDemoPlan(t *testing.T) {
	raw, err := os.ReadFile(demoExpected)
	require.NoError(t, err)
	want := readPlan(t, raw)
	got := readPlan(t, []byte(planRunAllRepos(t, "json")))

	assert.Equal(t, want.Cluster, got.Cluster)
	assert.Equal(t, comparedWorkloads(want), comparedWorkloads(got))
	assert.Equal(t, comparedSkips(want), comparedSkips(got))
	for _, w := range got.Workloads {
		// A Helm edit's detail names the release it goes through.
		helmEdit := w.Manifest.Edit == drift.EditHelmPostRenderer || w.Manifest.Edit == drift.EditHelmValues
		if w.Manifest.Status == drift.ManifestFound && !helmEdit {
			assert.Empty(t, w.Manifest.Detail, "%s %s/%s is found but its edit is not made", w.Kind, w.Namespace, w.Name)
		}
	}
}

var diffHeader = regexp.MustCompile(`(?m)^diff --git a/(\S+) b/`)

// TestPlanPatchOnTheDemo holds `kedge plan --output patch` to the promises
// every patch makes: each changed line is a restart annotation, a
// metadata:/annotations: line it needed, or kedge's overlay patch and its
// kustomization entry; and applied with git, the repository renders to
// exactly what it rendered before but for the restart annotations of the
// drifted workloads, every one of which is restarted.
func TestPlanPatchOnTheDemo(t *testing.T) {
	patch := planRun(t, "patch")
	plan := readPlan(t, []byte(planRun(t, "json")))
	require.NotEmpty(t, patch)

	ann := restart.Annotations{Restart: restart.DefaultRestartAnnotation, Target: restart.DefaultTargetAnnotation}
	t.Run("changed lines", func(t *testing.T) {
		assert.Empty(t, editcheck.PatchLineViolations(patch, editcheck.Rules{
			AnnotationKeys: []string{ann.Restart, ann.Target}, PatchFiles: []string{"kedge-restart-patch.yaml", "kedge-restart-patch.yml"},
			PostRendererMarker: helmedit.RestartMarker, ReleasePatchPrefix: "kedge-helm-",
		}))
	})

	t.Run("applied and rendered", func(t *testing.T) {
		after := filepath.Join(t.TempDir(), "gitops")
		treecopy.Copy(t, demoRepo, after)
		cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
		cmd.Dir = after
		cmd.Stdin = bytes.NewBufferString(patch)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git apply: %s", out)

		var restarts []editcheck.Restart
		var edited []string
		for _, w := range plan.Workloads {
			target := restart.TargetValue(w.Desired)
			restarts = append(restarts, editcheck.Restart{
				Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
				Annotations: map[string]string{ann.Target: target, ann.Restart: restart.RestartValue(w, target)},
			})
			if w.Manifest.Status == drift.ManifestFound && w.Manifest.Edit != drift.EditAlreadyBumped {
				edited = append(edited, w.Kind+" "+w.Namespace+"/"+w.Name)
			}
		}
		var changed []string
		for _, m := range diffHeader.FindAllStringSubmatch(patch, -1) {
			changed = append(changed, m[1])
		}
		set, err := snapshot.Read(demoCluster)
		require.NoError(t, err)
		targets := map[string]string{}
		for _, k := range set.Kustomizations {
			if k.Spec.TargetNamespace != "" {
				targets[strings.TrimPrefix(k.Spec.Path, "./")] = k.Spec.TargetNamespace
			}
		}
		res, err := editcheck.CompareRepos(editcheck.Check{
			Before: demoRepo, After: after, Changed: changed, Restarts: restarts, TargetNamespaces: targets,
		})
		require.NoError(t, err)
		assert.Empty(t, res.Problems)
		require.NotEmpty(t, edited)
		for _, id := range edited {
			assert.True(t, res.Restarted[id], "%s is found in the repository but the patch does not restart it", id)
		}
	})
}

// TestPlanTableNamesFilesItCouldNotIndex: a drifted workload whose manifest
// is unreadable shows as not-found, and the table says which file is at
// fault and why, on one line.
func TestPlanTableNamesFilesItCouldNotIndex(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "gitops")
	treecopy.Copy(t, demoRepo, repo)
	treecopy.Copy(t, "../../testdata/bad/repo/malformed-yaml/files", repo)
	var out, errOut bytes.Buffer
	code := execute(context.Background(), []string{
		"plan", "--snapshot", demoCluster, "--repo", repo, "--cluster", "prod-eu-1",
	}, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	var row string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "apps/prod-eu-1/search ") {
			row = line
		}
	}
	assert.Contains(t, out.String(), "NOT INDEXED")
	assert.Contains(t, row, "build-failed", out.String())
	assert.Regexp(t, `search\s+Deployment\s+indexer\s+.*not-found`, out.String())
}

// TestPlanKeepsKustomizeWarningsOffStderr: kustomize prints a warning for a
// deprecated field on every build, straight to the process's standard
// error. `kedge plan` keeps its standard error clean and lists the fields
// in the table instead, and the workloads are located as usual.
func TestPlanKeepsKustomizeWarningsOffStderr(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "gitops")
	treecopy.Copy(t, demoRepo, repo)
	kustomization := filepath.Join(repo, "apps", "prod-eu-1", "search", "kustomization.yaml")
	require.NoError(t, os.WriteFile(kustomization, []byte("apiVersion: kustomize.config.k8s.io/v1beta1\n"+
		"kind: Kustomization\ncommonLabels: {team: search}\nresources: [search-api.yaml, indexer.yaml, synonyms.yaml]\n"), 0o644))

	processStderr, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer processStderr.Close()
	realStderr := os.Stderr
	os.Stderr = processStderr
	var out, errOut bytes.Buffer
	code := execute(context.Background(), []string{
		"plan", "--snapshot", demoCluster, "--repo", repo, "--cluster", "prod-eu-1",
	}, &out, &errOut)
	os.Stderr = realStderr
	require.Equal(t, exitOK, code, errOut.String())

	written, err := os.ReadFile(processStderr.Name())
	require.NoError(t, err)
	assert.Empty(t, string(written), "the process's standard error")
	assert.Empty(t, errOut.String(), "the command's standard error")
	assert.Regexp(t, `(?m)^DEPRECATED\s+PROBLEM\s+DETAIL\n`+
		`apps/prod-eu-1/search/kustomization.yaml\s+deprecated\s+'commonLabels' is deprecated`, out.String())
	assert.Regexp(t, `search\s+Deployment\s+indexer\s+.*found apps/prod-eu-1/search/indexer.yaml`, out.String())
}

// TestPlanMarkdownNamesTheClusterAndChartsProxies: the offline dashboard's
// title names the cluster (--cluster, KEDGE_CLUSTER), or, given none, the
// snapshot it read and that no cluster was named (a snapshot carries no
// name); each namespace carries the proxy-version chart a PR body shows.
func TestPlanMarkdownNamesTheClusterAndChartsProxies(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   string
		title string
	}{
		{name: "flag", args: []string{"--cluster", "prod-eu-1"}, title: "# Istio data-plane drift in prod-eu-1\n"},
		{name: "environment", env: "eu-west", title: "# Istio data-plane drift in eu-west\n"},
		{name: "no name", title: "# Istio data-plane drift in snapshot `" + demoCluster + "` (no cluster name given)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("KEDGE_CLUSTER", tt.env)
			}
			args := append([]string{"plan", "--snapshot", demoCluster, "--repo", demoRepo, "--output", "markdown"}, tt.args...)
			code, out, stderr := run(t, args...)
			require.Equal(t, exitOK, code, stderr)
			assert.True(t, strings.HasPrefix(out, tt.title), "title of:\n%s", out)
			assert.Contains(t, out, "### Proxy versions in shop\n\n```mermaid\npie showData\n    title 16 pods in shop\n")
		})
	}
}

// The table lists each migration and, one line each, what Istio's ambient
// migration guide refuses or what the move carries over, with the file.
func TestTableListsMigrationRefusals(t *testing.T) {
	refused := ambient.Finding{Object: ambient.Ref{Kind: "PeerAuthentication", Namespace: "shop", Name: "plain"}, Path: "apps/shop/pa.yaml",
		Field: "spec.mtls.mode", Reason: "disables mTLS", Step: ambient.StepNotSupported}
	var b strings.Builder
	require.NoError(t, writeMigrations(&b, []drift.Migration{
		{Namespace: "shop", From: "1-24-0", To: "ambient", Blocked: drift.BlockAmbientNotReady, Ambient: []ambient.Finding{refused},
			Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "namespaces/shop.yaml"}},
		{Namespace: "web", From: "ambient", To: "1-24-0", Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "namespaces/web.yaml", Edit: drift.EditInPlace}},
	}))
	assert.Equal(t, `
MIGRATION  FROM     TO       STATE              MANIFEST
shop       1-24-0   ambient  ambient-not-ready  found namespaces/shop.yaml
web        ambient  1-24-0   moves              found namespaces/web.yaml (in-place)
  shop refused: PeerAuthentication shop/plain (apps/shop/pa.yaml) spec.mtls.mode: disables mTLS [What is not supported: https://istio.io/latest/docs/ambient/migrate/#what-is-not-supported]
`, b.String())
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"found a.yaml (in-place)", "found a.yaml (in-place)"},
		{"helm (rendering: template: x\nexecution error at (t.yaml:1:3): {}|)", "helm (rendering: template: x execution error at (t.yaml:1:3): {}|)"},
		{"a\r\n\tb", "a b"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, oneLine(tt.in))
	}
}
