package edit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/helmrelease"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

// TestHelmReleaseOutcomes: a Helm-rendered workload is found through its
// HelmRelease when kedge can edit it, and keeps the status helm, or another
// status saying why, when it cannot.
func TestHelmReleaseOutcomes(t *testing.T) {
	podinfo := gitopstest.HelmRendered(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "shop", "podinfo")
	tests := []struct {
		name  string
		files map[string]string
		want  drift.Manifest
	}{
		{
			name:  "a plain file",
			files: map[string]string{"apps/release.yaml": gitopstest.HelmRelease("podinfo", "shop")},
			want:  drift.Manifest{Status: drift.ManifestFound, Path: "apps/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease shop/podinfo"},
		},
		{
			name: "the namespace set by a kustomization",
			files: map[string]string{
				"apps/kustomization.yaml": "namespace: shop\nresources:\n  - release.yaml\n",
				"apps/release.yaml":       gitopstest.HelmRelease("podinfo", ""),
			},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/release.yaml", Edit: drift.EditHelmPostRenderer, Detail: "HelmRelease shop/podinfo"},
		},
		{
			name:  "a release of another namespace only",
			files: map[string]string{"apps/release.yaml": gitopstest.HelmRelease("podinfo", "other")},
			want: drift.Manifest{Status: drift.ManifestHelm,
				Detail: "HelmRelease shop/podinfo renders it; no HelmRelease shop/podinfo in the indexed paths"},
		},
		{
			name: "two files define the release",
			files: map[string]string{
				"a/release.yaml": gitopstest.HelmRelease("podinfo", "shop"),
				"b/release.yaml": gitopstest.HelmRelease("podinfo", "shop"),
			},
			want: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "HelmRelease shop/podinfo renders it; 2 definitions match HelmRelease shop/podinfo",
				Candidates: []string{"a/release.yaml", "b/release.yaml"}},
		},
		{
			name: "a base no overlay renders for this namespace alone",
			files: map[string]string{
				"base/kustomization.yaml":  "resources:\n  - release.yaml\n",
				"base/release.yaml":        gitopstest.HelmRelease("podinfo", ""),
				"shop/kustomization.yaml":  "namespace: shop\nresources:\n  - ../base\n  - ../other\n",
				"other/kustomization.yaml": "namePrefix: x-\nresources:\n  - ../base\n",
				"team/kustomization.yaml":  "namespace: team\nresources:\n  - ../base\n",
			},
			want: drift.Manifest{Status: drift.ManifestRefused, Path: "base/release.yaml",
				Detail: "base/release.yaml is deployed as several workloads and no overlay renders it only as HelmRelease shop/podinfo"},
		},
		{
			name:  "a file kedge cannot edit",
			files: map[string]string{"apps/release.yaml": gitopstest.HelmRelease("podinfo", "shop") + "  postRenderers: [{kustomize: {images: []}}]\n"},
			want: drift.Manifest{Status: drift.ManifestRefused, Path: "apps/release.yaml",
				Detail: "apps/release.yaml: spec.postRenderers is not a block list (line 14)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := index.Read(gitopstest.WriteTree(t, tt.files), index.Options{})
			require.NoError(t, err)
			plan := &drift.Plan{Workloads: []drift.Workload{podinfo}}
			plan, _ = locateAndEdit(ix, plan, locate.HintsIn(nil, &objects.Set{}), restart.Annotations{})
			assert.Equal(t, tt.want, plan.Workloads[0].Manifest)
		})
	}
}

func TestApplierOfHelmRenderedWorkloads(t *testing.T) {
	w := gitopstest.HelmRendered(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "flux-system", "podinfo")
	assert.Equal(t, "Flux helm-controller (upgrading HelmRelease flux-system/podinfo)", locate.Applier(w))
}

// TestOneFileOfSeveralReleases: a file holding two HelmReleases and a
// Deployment gets every restart in one edit, each release its own entry.
func TestOneFileOfSeveralReleases(t *testing.T) {
	web := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  template:\n    spec:\n      containers: []\n"
	repo := gitopstest.WriteTree(t, map[string]string{"apps/shop.yaml": gitopstest.HelmRelease("a", "shop") + "---\n" + web + "---\n" + gitopstest.HelmRelease("b", "shop")})
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{
		gitopstest.HelmRendered(gitopstest.Drifted("shop", "Deployment", "a", gitopstest.Istio125), "shop", "a"),
		gitopstest.HelmRendered(gitopstest.Drifted("shop", "StatefulSet", "b-db", gitopstest.Istio125), "shop", "b"),
		gitopstest.Drifted("shop", "Deployment", "web", gitopstest.Istio125),
	}}
	plan, set := locateAndEdit(ix, plan, locate.HintsIn(nil, &objects.Set{}), restart.Annotations{})
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

// TestReleasePatchedInAnOverlayStaysThere: a release kedge restarted from
// an overlay is restarted there again, even when its base is no longer
// shared: its older entry, applied after one in the base, would undo it.
func TestReleasePatchedInAnOverlayStaysThere(t *testing.T) {
	old, err := helmedit.ReleasePatchFile{AddPath: helmedit.CreatePostRenderers}.Render(helmrelease.PatchHeader, []helmedit.RestartPatch{{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo", Annotations: map[string]string{"kedge.io/restart-target": "1-24-0", "kedge.io/restartedAt": "0123"},
	}})
	require.NoError(t, err)
	repo := gitopstest.WriteTree(t, map[string]string{
		"base/kustomization.yaml":      "resources:\n  - release.yaml\n",
		"base/release.yaml":            gitopstest.HelmRelease("podinfo", ""),
		"shop/kustomization.yaml":      "namespace: shop\nresources:\n  - ../base\npatches:\n  - path: kedge-helm-podinfo.yaml\n    target:\n      kind: HelmRelease\n      name: podinfo\n",
		"shop/kedge-helm-podinfo.yaml": string(old),
	})
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{gitopstest.HelmRendered(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "shop", "podinfo")}}
	plan, set := locateAndEdit(ix, plan, locate.HintsIn(nil, &objects.Set{}), restart.Annotations{})
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
	assert.Equal(t, map[string]map[string]string{"Deployment/web": {"a": "2"}}, helmedit.ReleaseRestarts([]any{entry("1"), entry("2")}))
}
