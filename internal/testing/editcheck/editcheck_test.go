package editcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var rules = Rules{AnnotationKeys: []string{"kedge.io/restartedAt", "kedge.io/restart-target"}, PatchFiles: []string{"kedge-restart-patch.yaml", "kedge-restart-patch.yml"}}

func TestPatchLineViolations(t *testing.T) {
	hunk := func(file string, lines ...string) string {
		return "diff --git a/" + file + " b/" + file + "\n--- a/" + file + "\n+++ b/" + file + "\n@@ -1,3 +1,4 @@\n" +
			" context: line\n" + strings.Join(lines, "\n") + "\n"
	}
	tests := []struct {
		name  string
		patch string
		want  []string
	}{
		{"new annotations", hunk("apps/web.yaml", "+      annotations:", `+        kedge.io/restartedAt: "abc"`, `+        kedge.io/restart-target: "1-25-0"`), nil},
		{"replaced value", hunk("apps/web.yaml", "-        kedge.io/restartedAt: old", `+        kedge.io/restartedAt: "new"`), nil},
		{"quoted and JSON keys", hunk("apps/web.json", `+          "kedge.io/restartedAt": "abc",`, `+    'kedge.io/restart-target': x`), nil},
		{"missing metadata", hunk("apps/web.yaml", "+    metadata:", "+      annotations:", `+        kedge.io/restartedAt: "abc"`), nil},
		{"empty annotations filled", hunk("apps/web.yaml", "-      annotations: {}", "+      annotations:", `+        kedge.io/restartedAt: "abc"`), nil},
		{"overlay patch file", hunk("overlays/a/kedge-restart-patch.yaml", "+kind: Deployment", "+  name: web"), nil},
		{"kustomization entry", hunk("overlays/a/kustomization.yaml", "+patches:", "+  - path: kedge-restart-patch.yaml"), nil},
		{"Kustomization file name", hunk("overlays/a/Kustomization", "+- path: ./kedge-restart-patch.yaml"), nil},
		{
			"neighbour line rewritten", hunk("apps/web.yaml", "-        a: b", "+        a: b", `+        kedge.io/restartedAt: "abc"`),
			[]string{"apps/web.yaml: -        a: b", "apps/web.yaml: +        a: b"},
		},
		{"comma added to JSON", hunk("apps/web.json", `-    "team": "shop"`, `+    "team": "shop",`), []string{`apps/web.json: -    "team": "shop"`, `apps/web.json: +    "team": "shop",`}},
		{"other patch listed", hunk("overlays/a/kustomization.yaml", "+  - path: replicas.yaml"), []string{"overlays/a/kustomization.yaml: +  - path: replicas.yaml"}},
		{"other key", hunk("apps/web.yaml", "+  replicas: 3"), []string{"apps/web.yaml: +  replicas: 3"}},
		{"Flux Kustomization entry", hunk("clusters/prod/apps.yaml", fluxEntry("kedge.io/restartedAt")...), nil},
		{"Argo CD kustomize block around the entry", hunk("argocd/web.yaml", append([]string{"+kustomize:"}, fluxEntry("kedge.io/restartedAt")...)...), nil},
		{
			"Argo CD kustomize block holding the entries without patches:", hunk("argocd/web.yaml", append([]string{"+kustomize:"}, fluxEntry("kedge.io/restartedAt")[1:]...)...),
			[]string{"argocd/web.yaml: +kustomize:", "argocd/web.yaml: +    - patch: |", "argocd/web.yaml: +        apiVersion: apps/v1",
				"argocd/web.yaml: +        kind: Deployment", "argocd/web.yaml: +          name: web",
				"argocd/web.yaml: +        spec:", "argocd/web.yaml: +          template:", "argocd/web.yaml: +      target:",
				"argocd/web.yaml: +        kind: Deployment", "argocd/web.yaml: +        name: web"},
		},
		{
			"Flux Kustomization entry setting another annotation", hunk("clusters/prod/apps.yaml", fluxEntry("example.com/other")...),
			[]string{"clusters/prod/apps.yaml: +  patches:", "clusters/prod/apps.yaml: +    - patch: |", "clusters/prod/apps.yaml: +        apiVersion: apps/v1",
				"clusters/prod/apps.yaml: +        kind: Deployment", "clusters/prod/apps.yaml: +          name: web",
				"clusters/prod/apps.yaml: +        spec:", "clusters/prod/apps.yaml: +          template:",
				`clusters/prod/apps.yaml: +                example.com/other: "abc"`, "clusters/prod/apps.yaml: +      target:",
				"clusters/prod/apps.yaml: +        kind: Deployment", "clusters/prod/apps.yaml: +        name: web"},
		},
		{
			"flow line gains the annotation",
			hunk("apps/web.json", `-  "template": {"metadata": {"labels": {"app": "web"}, "annotations": {}},`,
				`+  "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"kedge.io/restartedAt": "abc"}},`),
			nil,
		},
		{
			"flow line gains the annotation and loses something else",
			hunk("apps/web.yaml", "-  template: {metadata: {labels: {app: web}}}", "+  template: {metadata: {labels: {app: api}, annotations: {kedge.io/restartedAt: abc}}}"),
			[]string{"apps/web.yaml: -  template: {metadata: {labels: {app: web}}}"},
		},
		{
			"flow patches list",
			hunk("overlays/a/kustomization.yaml", "-  patches: [{path: a.yaml}]", "+  patches: [{path: a.yaml}, {path: kedge-restart-patch.yaml}]"),
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, PatchLineViolations(tt.patch, rules))
		})
	}
}

// TestCompareReposCatchesNeighbours edits a base two overlays share, which
// restarts the workload of the other overlay too.
func TestCompareReposCatchesNeighbours(t *testing.T) {
	write := func(root, p, content string) {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	deployment := func(annotations string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n" +
			"      labels:\n        app: web\n" + annotations
	}
	restarted := "      annotations:\n        kedge.io/restartedAt: \"abc\"\n"
	before, after := t.TempDir(), t.TempDir()
	for _, repo := range []string{before, after} {
		write(repo, "base/kustomization.yaml", "resources:\n  - web.yaml\n")
		write(repo, "team-a/kustomization.yaml", "namespace: team-a\nresources:\n  - ../base\n")
		write(repo, "team-b/kustomization.yaml", "namespace: team-b\nresources:\n  - ../base\n")
	}
	write(before, "base/web.yaml", deployment(""))
	write(after, "base/web.yaml", deployment(restarted))
	restarts := []Restart{{Namespace: "team-a", Kind: "Deployment", Name: "web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}}

	res, err := CompareRepos(Check{Before: before, After: after, Changed: []string{"base/web.yaml"}, Restarts: restarts})
	require.NoError(t, err)
	assert.Equal(t, []string{"team-b: Deployment team-b/web carries the restart of Deployment team-a/web"}, res.Problems)
	assert.Equal(t, map[string]bool{"Deployment team-a/web": true}, res.Restarted)

	roots, included, err := Roots(before)
	require.NoError(t, err)
	assert.Equal(t, []string{"base", "team-a", "team-b"}, roots)
	assert.Equal(t, map[string]bool{"base": true}, included)
}

// TestCompareReposJudgesEachObject: only the restart's annotations may
// change, on the workload they name, wherever the template had them or not.
func TestCompareReposJudgesEachObject(t *testing.T) {
	const web = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  replicas: 2\n  template:\n"
	restart := Restart{Namespace: "shop", Kind: "Deployment", Name: "web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}
	tests := []struct {
		name, before, after string
		want                []string
		restarted           bool
	}{
		{
			name:   "annotations created with their metadata",
			before: web + "    spec: {}\n", after: web + "    metadata:\n      annotations:\n        kedge.io/restartedAt: abc\n    spec: {}\n",
			restarted: true,
		},
		{
			name:   "annotation added beside others",
			before: web + "    metadata:\n      annotations:\n        a: b\n", after: web + "    metadata:\n      annotations:\n        a: b\n        kedge.io/restartedAt: abc\n",
			restarted: true,
		},
		{
			name:   "another field changed too",
			before: web + "    spec: {}\n", after: strings.Replace(web, "replicas: 2", "replicas: 3", 1) + "    metadata:\n      annotations:\n        kedge.io/restartedAt: abc\n    spec: {}\n",
			want: []string{"apps/web.yaml: Deployment shop/web changed beyond the restart annotations"},
		},
		{
			name:   "another annotation dropped",
			before: web + "    metadata:\n      annotations:\n        a: b\n", after: web + "    metadata:\n      annotations:\n        kedge.io/restartedAt: abc\n",
			want: []string{"apps/web.yaml: Deployment shop/web changed beyond the restart annotations"},
		},
		{
			name:   "wrong value",
			before: web + "    spec: {}\n", after: web + "    metadata:\n      annotations:\n        kedge.io/restartedAt: abd\n    spec: {}\n",
			want: []string{"apps/web.yaml: Deployment shop/web changed without carrying an intended restart"},
		},
		{
			name:   "restart of another namespace",
			before: strings.Replace(web, "shop", "cart", 1) + "    spec: {}\n", after: strings.Replace(web, "shop", "cart", 1) + "    metadata:\n      annotations:\n        kedge.io/restartedAt: abc\n    spec: {}\n",
			want: []string{"apps/web.yaml: Deployment cart/web carries the restart of Deployment shop/web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := t.TempDir(), t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(before, "apps"), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(after, "apps"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(before, "apps", "web.yaml"), []byte(tt.before), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(after, "apps", "web.yaml"), []byte(tt.after), 0o644))

			res, err := CompareRepos(Check{Before: before, After: after, Changed: []string{"apps/web.yaml"}, Restarts: []Restart{restart}})
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Problems)
			assert.Equal(t, tt.restarted, res.Restarted[restart.String()])
		})
	}
}

// fluxEntry is the added lines of a Flux Kustomization patches entry
// setting the annotation key on Deployment web.
func fluxEntry(key string) []string {
	return []string{
		"+  patches:", "+    - patch: |", "+        apiVersion: apps/v1", "+        kind: Deployment", "+        metadata:", "+          name: web",
		"+        spec:", "+          template:", "+            metadata:", "+              annotations:", "+                " + key + `: "abc"`,
		"+      target:", "+        kind: Deployment", "+        name: web",
	}
}

// TestCompareReposBuildsArgoSources: an Application may change in its
// source's kustomize.patches only, and the build of the source with the
// patch must restart the intended workload and nothing else.
func TestCompareReposBuildsArgoSources(t *testing.T) {
	const app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web-a\n  namespace: argocd\nspec:\n" +
		"  source:\n    path: apps/web\n    kustomize:\n      namePrefix: a-\n"
	entry := func(key string) string {
		return "      patches:\n        - patch: |\n            apiVersion: apps/v1\n            kind: Deployment\n            metadata:\n              name: web\n" +
			"            spec:\n              template:\n                metadata:\n                  annotations:\n                    " + key + ": abc\n" +
			"          target:\n            kind: Deployment\n            name: web\n"
	}
	restart := Restart{Namespace: "", Kind: "Deployment", Name: "a-web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}
	tests := []struct {
		name, after string
		want        []string
		restarted   bool
	}{
		{name: "the restart entry", after: app + entry("kedge.io/restartedAt"), restarted: true},
		{
			name: "a prefix changed too", after: strings.Replace(app, "a-", "b-", 1) + entry("kedge.io/restartedAt"),
			want: []string{"argocd/web-a.yaml: Argo CD Application argocd/web-a: changes beyond the sources' kustomize.patches"},
		},
		{
			name: "an entry setting another annotation", after: app + entry("example.com/other"),
			want: []string{"argocd/web-a.yaml (Argo CD Application argocd/web-a, source 0): Deployment /a-web changed without carrying an intended restart"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := t.TempDir(), t.TempDir()
			for _, repo := range []string{before, after} {
				for p, content := range map[string]string{
					"apps/web/kustomization.yaml": "resources:\n  - web.yaml\n",
					"apps/web/web.yaml":           "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec: {}\n",
				} {
					require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(p)), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(repo, p), []byte(content), 0o644))
				}
				require.NoError(t, os.MkdirAll(filepath.Join(repo, "argocd"), 0o755))
			}
			require.NoError(t, os.WriteFile(filepath.Join(before, "argocd", "web-a.yaml"), []byte(app), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(after, "argocd", "web-a.yaml"), []byte(tt.after), 0o644))

			res, err := CompareRepos(Check{Before: before, After: after, Changed: []string{"argocd/web-a.yaml"}, Restarts: []Restart{restart}})
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Problems)
			assert.Equal(t, tt.restarted, res.Restarted[restart.String()])
		})
	}
}
