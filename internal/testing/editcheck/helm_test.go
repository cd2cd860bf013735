package editcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompareReposRendersHelmReleases holds post-renderer changes of a
// HelmRelease to what the chart then installs: only the intended restart
// annotations on the intended workload may change.
func TestCompareReposRendersHelmReleases(t *testing.T) {
	chart := map[string]string{
		"charts/app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"charts/app/values.yaml": "replicas: 1\n",
		"charts/app/templates/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n" +
			"  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:1\n",
		"charts/app/templates/worker.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-worker\nspec:\n" +
			"  template:\n    spec:\n      containers:\n        - name: worker\n          image: worker:1\n",
	}
	release := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: shop\n  namespace: shop\nspec:\n" +
		"  chart:\n    spec:\n      chart: ./charts/app\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n"
	postRenderer := func(name, body string) string {
		return "  postRenderers:\n    - kustomize:\n        patches:\n          - target:\n              kind: Deployment\n              name: " + name + "\n" +
			"            patch: |\n              apiVersion: apps/v1\n              kind: Deployment\n              metadata:\n                name: " + name + "\n" +
			"              spec:\n" + body
	}
	restartBody := "                template:\n                  metadata:\n                    annotations:\n                      kedge.io/restartedAt: abc\n"
	restart := Restart{Namespace: "shop", Kind: "Deployment", Name: "shop-web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}
	tests := []struct {
		name, after string
		want        []string
		restarted   bool
	}{
		{name: "restart of the intended workload", after: release + postRenderer("shop-web", restartBody), restarted: true},
		{
			name:  "restart of another workload of the release",
			after: release + postRenderer("shop-worker", restartBody),
			want:  []string{"apps/release.yaml (HelmRelease shop/shop): Deployment shop/shop-worker carries the restart of Deployment shop/shop-web"},
		},
		{
			name:  "post-renderer changing more than the restart",
			after: release + postRenderer("shop-web", "                replicas: 3\n"+restartBody),
			want:  []string{"apps/release.yaml (HelmRelease shop/shop): Deployment shop/shop-web changed beyond the restart annotations"},
		},
		{
			name:  "values changed beside the post-renderer",
			after: release + "  values:\n    replicas: 2\n" + postRenderer("shop-web", restartBody),
			want:  []string{"apps/release.yaml: HelmRelease shop/shop changed beyond its post-renderers"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := t.TempDir(), t.TempDir()
			for _, repo := range []string{before, after} {
				for p, content := range chart {
					full := filepath.Join(repo, filepath.FromSlash(p))
					require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
					require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
				}
				require.NoError(t, os.MkdirAll(filepath.Join(repo, "apps"), 0o755))
			}
			require.NoError(t, os.WriteFile(filepath.Join(before, "apps", "release.yaml"), []byte(release), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(after, "apps", "release.yaml"), []byte(tt.after), 0o644))

			res, err := CompareRepos(Check{Before: before, After: after, Changed: []string{"apps/release.yaml"}, Restarts: []Restart{restart}})
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Problems)
			assert.Equal(t, tt.restarted, res.Restarted[restart.String()])
		})
	}
}

func TestPatchLineViolationsOfHelmReleases(t *testing.T) {
	helm := Rules{AnnotationKeys: rules.AnnotationKeys, PostRendererMarker: "# kedge: restart", ReleasePatchPrefix: "kedge-helm-"}
	diff := func(file string, lines ...string) string {
		return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -1,3 +1,4 @@\n" +
			" context: line\n" + strings.Join(lines, "\n") + "\n"
	}
	entry := []string{"+    - kustomize:", "+        patches:", "+          - target:", "+              kind: Deployment", "+              name: web",
		"+            patch: |", "+              # kedge: restart", "+              kind: Deployment"}
	assert.Empty(t, PatchLineViolations(diff("apps/release.yaml", append([]string{"+  postRenderers:"}, entry...)...), helm))
	assert.Empty(t, PatchLineViolations(diff("apps/release.yaml", entry...), helm))
	unmarked := append(append([]string{}, entry[:6]...), "+              kind: Deployment")
	assert.NotEmpty(t, PatchLineViolations(diff("apps/release.yaml", unmarked...), helm))
	assert.NotEmpty(t, PatchLineViolations(diff("apps/release.yaml", append(entry, "+  suspend: true")...), helm))
	assert.Empty(t, PatchLineViolations(diff("overlays/a/kedge-helm-shop.yaml", "+- op: add"), helm))
	assert.Empty(t, PatchLineViolations(diff("overlays/a/kustomization.yaml", "+patches:", "+  - path: kedge-helm-shop.yaml", "+    target:",
		"+      kind: HelmRelease", "+      name: shop"), helm))
	assert.NotEmpty(t, PatchLineViolations(diff("overlays/a/kustomization.yaml", "+  - path: kedge-helm-shop.yaml", "+    target:",
		"+      kind: Deployment", "+      name: shop"), helm))
}

// TestCompareReposJudgesPostRenderersOfChartsElsewhere: a chart from a
// HelmRepository is not fetched; the release's change is then judged by its
// post-renderers alone.
func TestCompareReposJudgesPostRenderersOfChartsElsewhere(t *testing.T) {
	release := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: shop\n  namespace: shop\nspec:\n" +
		"  chart:\n    spec:\n      chart: app\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n"
	entry := func(name, extra string) string {
		return "    - kustomize:\n        patches:\n          - target:\n              kind: Deployment\n              name: " + name + "\n" +
			"            patch: |\n              apiVersion: apps/v1\n              kind: Deployment\n              metadata:\n                name: " + name + "\n" +
			"              spec:\n" + extra + "                template:\n                  metadata:\n                    annotations:\n" +
			"                      kedge.io/restartedAt: abc\n"
	}
	images := "    - kustomize:\n        images:\n          - name: web\n            newTag: \"2\"\n"
	restart := Restart{Namespace: "shop", Kind: "Deployment", Name: "web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}
	tests := []struct {
		name, before, after string
		want                []string
		restarted           bool
	}{
		{name: "entry added to a release without post-renderers", before: release, after: release + "  postRenderers:\n" + entry("web", ""), restarted: true},
		{name: "entry added after the team's", before: release + "  postRenderers:\n" + images, after: release + "  postRenderers:\n" + images + entry("web", ""), restarted: true},
		{
			name: "the team's entry replaced", before: release + "  postRenderers:\n" + images, after: release + "  postRenderers:\n" + entry("web", ""),
			want: []string{"apps/release.yaml: HelmRelease shop/shop: post-renderers changed beyond one restart entry"},
		},
		{
			name: "a patch doing more", before: release, after: release + "  postRenderers:\n" + entry("web", "                replicas: 3\n"),
			want: []string{"apps/release.yaml: HelmRelease shop/shop: post-renderer 0 does more than set intended restart annotations"},
		},
		{
			name: "a workload not restarted", before: release, after: release + "  postRenderers:\n" + entry("api", ""),
			want: []string{"apps/release.yaml: HelmRelease shop/shop: post-renderer 0 does more than set intended restart annotations"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := t.TempDir(), t.TempDir()
			for repo, content := range map[string]string{before: tt.before, after: tt.after} {
				require.NoError(t, os.MkdirAll(filepath.Join(repo, "apps"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(repo, "apps", "release.yaml"), []byte(content), 0o644))
			}
			res, err := CompareRepos(Check{Before: before, After: after, Changed: []string{"apps/release.yaml"}, Restarts: []Restart{restart}})
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Problems)
			assert.Equal(t, tt.restarted, res.Restarted[restart.String()])
		})
	}
}
