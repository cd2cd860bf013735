package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamledit"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func helmRelease(name, namespace string) string {
	out := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		out += "  namespace: " + namespace + "\n"
	}
	return out + "spec:\n  interval: 5m\n  chart:\n    spec:\n      chart: podinfo\n      sourceRef:\n        kind: HelmRepository\n        name: podinfo\n"
}

// TestHelmReleaseOutcomes: a Helm-rendered workload is found through its
// HelmRelease when kedge can edit it, and keeps the status helm, or another
// status saying why, when it cannot.
func TestHelmReleaseOutcomes(t *testing.T) {
	podinfo := helmRendered(drifted("shop", "Deployment", "podinfo", istio125), "shop", "podinfo")
	tests := []struct {
		name  string
		files map[string]string
		want  drift.Manifest
	}{
		{
			name:  "a plain file",
			files: map[string]string{"apps/release.yaml": helmRelease("podinfo", "shop")},
			want:  drift.Manifest{Status: drift.ManifestFound, Path: "apps/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease shop/podinfo"},
		},
		{
			name: "the namespace set by a kustomization",
			files: map[string]string{
				"apps/kustomization.yaml": "namespace: shop\nresources:\n  - release.yaml\n",
				"apps/release.yaml":       helmRelease("podinfo", ""),
			},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease shop/podinfo"},
		},
		{
			name:  "a release of another namespace only",
			files: map[string]string{"apps/release.yaml": helmRelease("podinfo", "other")},
			want: drift.Manifest{Status: drift.ManifestHelm,
				Detail: "HelmRelease shop/podinfo renders it and is not in the repository (no HelmRelease shop/podinfo in the indexed paths)"},
		},
		{
			name: "two files define the release",
			files: map[string]string{
				"a/release.yaml": helmRelease("podinfo", "shop"),
				"b/release.yaml": helmRelease("podinfo", "shop"),
			},
			want: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "HelmRelease shop/podinfo renders it; 2 definitions match HelmRelease shop/podinfo",
				Candidates: []string{"a/release.yaml", "b/release.yaml"}},
		},
		{
			name: "a base no overlay renders for this namespace alone",
			files: map[string]string{
				"base/kustomization.yaml":  "resources:\n  - release.yaml\n",
				"base/release.yaml":        helmRelease("podinfo", ""),
				"shop/kustomization.yaml":  "namespace: shop\nresources:\n  - ../base\n  - ../other\n",
				"other/kustomization.yaml": "namePrefix: x-\nresources:\n  - ../base\n",
				"team/kustomization.yaml":  "namespace: team\nresources:\n  - ../base\n",
			},
			want: drift.Manifest{Status: drift.ManifestRefused, Path: "base/release.yaml",
				Detail: "base/release.yaml is deployed as several workloads and no overlay renders it only as HelmRelease shop/podinfo"},
		},
		{
			name:  "a file kedge cannot edit",
			files: map[string]string{"apps/release.yaml": helmRelease("podinfo", "shop") + "  postRenderers: [{kustomize: {images: []}}]\n"},
			want: drift.Manifest{Status: drift.ManifestRefused, Path: "apps/release.yaml",
				Detail: "apps/release.yaml: spec.postRenderers is not a block list (line 14)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := BuildIndex(writeTree(t, tt.files), IndexOptions{})
			require.NoError(t, err)
			plan := &drift.Plan{Workloads: []drift.Workload{podinfo}}
			plan, _ = locateAndEdit(ix, plan, HintsFor(&objects.Set{}), Annotations{})
			assert.Equal(t, tt.want, plan.Workloads[0].Manifest)
		})
	}
}

func TestApplierOfHelmRenderedWorkloads(t *testing.T) {
	w := helmRendered(drifted("shop", "Deployment", "podinfo", istio125), "flux-system", "podinfo")
	assert.Equal(t, "Flux helm-controller (upgrading HelmRelease flux-system/podinfo)", Applier(w))
}

// TestOneFileOfSeveralReleases: a file holding two HelmReleases and a
// Deployment gets every restart in one edit, each release its own entry.
func TestOneFileOfSeveralReleases(t *testing.T) {
	web := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  template:\n    spec:\n      containers: []\n"
	repo := writeTree(t, map[string]string{"apps/shop.yaml": helmRelease("a", "shop") + "---\n" + web + "---\n" + helmRelease("b", "shop")})
	ix, err := BuildIndex(repo, IndexOptions{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{
		helmRendered(drifted("shop", "Deployment", "a", istio125), "shop", "a"),
		helmRendered(drifted("shop", "StatefulSet", "b-db", istio125), "shop", "b"),
		drifted("shop", "Deployment", "web", istio125),
	}}
	plan, set := locateAndEdit(ix, plan, HintsFor(&objects.Set{}), Annotations{})
	for _, w := range plan.Workloads {
		assert.Equal(t, drift.ManifestFound, w.Manifest.Status, "%s: %s", w.Name, w.Manifest.Detail)
	}
	require.Len(t, set.Namespaces["shop"], 1)
	edit := set.Namespaces["shop"][0]
	assert.Len(t, edit.Workloads, 3)
	after := string(edit.After)
	assert.Contains(t, after, "              kind: StatefulSet\n              name: b-db\n")
	assert.Contains(t, after, "      kedge.io/restart-target: \"1-25-0@docker.io/istio/proxyv2:1.25.0\"\n")
	assert.Equal(t, 2, strings.Count(after, "  postRenderers:\n"), "one entry per release")
}

// TestCompareRelease: the render of a HelmRelease after kedge's edit may
// differ from the one before by kedge's entry alone, and in it only by the
// intended workloads' patches.
func TestCompareRelease(t *testing.T) {
	entry := func(patches ...[2]string) map[string]any {
		var list []any
		for _, p := range patches {
			list = append(list, map[string]any{
				"target": map[string]any{"kind": "Deployment", "name": p[0]},
				"patch": "# kedge: restart\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + p[0] +
					"\nspec:\n  template:\n    metadata:\n      annotations:\n        kedge.io/restartedAt: \"" + p[1] + "\"\n",
			})
		}
		return map[string]any{"kustomize": map[string]any{"patches": list}}
	}
	images := map[string]any{"kustomize": map[string]any{"images": []any{map[string]any{"name": "web", "newTag": "2"}}}}
	release := func(interval string, postRenderers ...any) map[string]any {
		spec := map[string]any{"interval": interval}
		if len(postRenderers) > 0 {
			spec["postRenderers"] = postRenderers
		}
		return map[string]any{"kind": "HelmRelease", "spec": spec}
	}
	in := intent{release: map[string]map[string]string{"Deployment/web": {"kedge.io/restartedAt": "new"}}}
	id := WorkloadID{Namespace: "shop", Kind: "HelmRelease", Name: "app"}
	tests := []struct {
		name          string
		before, after map[string]any
		wantErr       string
	}{
		{name: "entry added", before: release("5m", images), after: release("5m", images, entry([2]string{"web", "new"}))},
		{name: "entry updated, the other patch kept", before: release("5m", entry([2]string{"db", "1"}, [2]string{"web", "old"})),
			after: release("5m", entry([2]string{"db", "1"}, [2]string{"web", "new"}))},
		{name: "another workload's patch changed", before: release("5m", entry([2]string{"db", "1"})),
			after: release("5m", entry([2]string{"db", "2"}, [2]string{"web", "new"})), wantErr: "post-renderer patch of Deployment/db changes"},
		{name: "the wrong value", before: release("5m"), after: release("5m", entry([2]string{"web", "old"})), wantErr: `sets kedge.io/restartedAt to "old"`},
		{name: "another field", before: release("5m"), after: release("1m", entry([2]string{"web", "new"})), wantErr: "changes beyond kedge's post-renderer"},
		{name: "the team's entry dropped", before: release("5m", images), after: release("5m", entry([2]string{"web", "new"})), wantErr: "changes beyond kedge's post-renderer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compareRelease(tt.before, tt.after, in, id)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestReleasePatchedInAnOverlayStaysThere: a release kedge restarted from
// an overlay is restarted there again, even when its base is no longer
// shared: its older entry, applied after one in the base, would undo it.
func TestReleasePatchedInAnOverlayStaysThere(t *testing.T) {
	old, err := yamledit.ReleasePatchFile{AddPath: yamledit.CreatePostRenderers}.Render(releasePatchHeader, []yamledit.RestartPatch{{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo", Annotations: map[string]string{"kedge.io/restart-target": "1-24-0", "kedge.io/restartedAt": "0123"},
	}})
	require.NoError(t, err)
	repo := writeTree(t, map[string]string{
		"base/kustomization.yaml":      "resources:\n  - release.yaml\n",
		"base/release.yaml":            helmRelease("podinfo", ""),
		"shop/kustomization.yaml":      "namespace: shop\nresources:\n  - ../base\npatches:\n  - path: kedge-helm-podinfo.yaml\n    target:\n      kind: HelmRelease\n      name: podinfo\n",
		"shop/kedge-helm-podinfo.yaml": string(old),
	})
	ix, err := BuildIndex(repo, IndexOptions{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{helmRendered(drifted("shop", "Deployment", "podinfo", istio125), "shop", "podinfo")}}
	plan, set := locateAndEdit(ix, plan, HintsFor(&objects.Set{}), Annotations{})
	assert.Equal(t, drift.Manifest{Status: drift.ManifestFound, Path: "base/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease shop/podinfo"}, plan.Workloads[0].Manifest)
	require.Len(t, set.Namespaces["shop"], 1)
	edit := set.Namespaces["shop"][0]
	assert.Equal(t, "shop/kedge-helm-podinfo.yaml", edit.Path)
	assert.Contains(t, string(edit.After), "path: /spec/postRenderers\n", "the file keeps creating the list")
	assert.Contains(t, string(edit.After), `kedge.io/restart-target: "1-25-0@docker.io/istio/proxyv2:1.25.0"`)
}

func TestLaterRestartEntriesWin(t *testing.T) {
	entry := func(value string) any {
		return map[string]any{"kustomize": map[string]any{"patches": []any{map[string]any{
			"target": map[string]any{"kind": "Deployment", "name": "web"},
			"patch":  "# kedge: restart\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      annotations:\n        a: " + value + "\n",
		}}}}
	}
	assert.Equal(t, map[string]map[string]string{"Deployment/web": {"a": "2"}}, yamledit.ReleaseRestarts([]any{entry("1"), entry("2")}))
}
