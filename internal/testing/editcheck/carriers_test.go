package editcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compareCarrier writes shared files into both checkouts, the carrier file
// as it is before and after, and compares them.
func compareCarrier(t *testing.T, shared map[string]string, file, before, after string, restart Restart) Result {
	t.Helper()
	check := Check{Before: t.TempDir(), After: t.TempDir(), Changed: []string{file}, Restarts: []Restart{restart}}
	for repo, carrier := range map[string]string{check.Before: before, check.After: after} {
		files := map[string]string{file: carrier}
		for p, content := range shared {
			files[p] = content
		}
		for p, content := range files {
			full := filepath.Join(repo, filepath.FromSlash(p))
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
		}
	}
	res, err := CompareRepos(check)
	require.NoError(t, err)
	return res
}

const webDeployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec: {}\n"

// TestCompareReposBuildsFluxKustomizations: a Flux Kustomization may change
// in spec.patches only, and its build with the patch must restart the
// intended workload, under the Kustomization's namespace, and nothing else.
func TestCompareReposBuildsFluxKustomizations(t *testing.T) {
	const ks = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: flux-system\n" +
		"spec:\n  path: ./apps/web\n  targetNamespace: shop\n"
	entry := func(body string) string {
		return "  patches:\n    - patch: |\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata:\n          name: web\n" +
			"        spec:\n" + body + "      target:\n        kind: Deployment\n        name: web\n"
	}
	restartBody := "          template:\n            metadata:\n              annotations:\n                kedge.io/restartedAt: abc\n"
	shared := map[string]string{"apps/web/web.yaml": webDeployment}
	restart := Restart{Namespace: "shop", Kind: "Deployment", Name: "web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}
	tests := []struct {
		name, after string
		want        []string
		restarted   bool
	}{
		{name: "the restart entry", after: ks + entry(restartBody), restarted: true},
		{
			name: "the path changed too", after: strings.Replace(ks, "./apps/web", "./apps/web/", 1) + entry(restartBody),
			want: []string{"clusters/web.yaml (Flux Kustomization flux-system/web): changes beyond spec.patches"},
		},
		{
			name: "an entry changing the replicas too", after: ks + entry("          replicas: 2\n"+restartBody),
			want: []string{"clusters/web.yaml (Flux Kustomization flux-system/web): Deployment shop/web changed beyond the restart annotations"},
		},
		{
			name: "an entry that does not build", after: ks + entry("          template: [\n"),
			want: []string{"clusters/web.yaml (Flux Kustomization flux-system/web): renders before the change, not after"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := compareCarrier(t, shared, "clusters/web.yaml", ks, tt.after, restart)
			assert.Equal(t, tt.want, firstClauses(res.Problems))
			assert.Equal(t, tt.restarted, res.Restarted[restart.String()])
		})
	}
}

// TestCompareReposRendersArgoHelmValues: an Application may change in its
// source's helm values only, and the chart rendered with them must restart
// the intended workload and nothing else.
func TestCompareReposRendersArgoHelmValues(t *testing.T) {
	const app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n" +
		"  destination:\n    namespace: shop\n  source:\n    path: charts/web\n"
	shared := map[string]string{
		"charts/web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/values.yaml": "replicas: 1\npodAnnotations: {}\n",
		"charts/web/templates/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {{ .Values.replicas }}\n" +
			"  template:\n    metadata:\n      annotations: {{ toJson .Values.podAnnotations }}\n    spec: {}\n",
	}
	values := func(extra string) string {
		return "    helm:\n      valuesObject:\n" + extra + "        podAnnotations:\n          kedge.io/restartedAt: abc\n"
	}
	restart := Restart{Namespace: "shop", Kind: "Deployment", Name: "web", Annotations: map[string]string{"kedge.io/restartedAt": "abc"}}
	tests := []struct {
		name, after string
		want        []string
		restarted   bool
	}{
		{name: "the restart annotations as values", after: app + values(""), restarted: true},
		{
			name: "another value changed too", after: app + values("        replicas: 2\n"),
			want: []string{"argocd/web.yaml (Argo CD Application argocd/web, source 0): Deployment shop/web changed beyond the restart annotations"},
		},
		{
			name: "the destination changed too", after: strings.Replace(app, "namespace: shop", "namespace: cart", 1) + values(""),
			want: []string{"argocd/web.yaml: Argo CD Application argocd/web: changes beyond the sources' kustomize.patches"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := compareCarrier(t, shared, "argocd/web.yaml", app, tt.after, restart)
			assert.Equal(t, tt.want, res.Problems)
			assert.Equal(t, tt.restarted, res.Restarted[restart.String()])
		})
	}
}

// firstClauses cuts each problem before the error a renderer gave, which
// names temporary paths.
func firstClauses(problems []string) []string {
	var out []string
	for _, p := range problems {
		before, _, _ := strings.Cut(p, ": trouble")
		before, _, _ = strings.Cut(before, ": MalformedYAML")
		out = append(out, before)
	}
	return out
}
