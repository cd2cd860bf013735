package flux

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestFluxManifestOfTheApplyingCluster: two clusters of one repository
// write a Kustomization of the same name and path; the one the cluster's
// flux-system Kustomization applies is the one kedge patches.
func TestFluxManifestOfTheApplyingCluster(t *testing.T) {
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "flux-system", Name: name, Labels: labels}
	}
	set := &objects.Set{Kustomizations: []objects.Kustomization{
		{ObjectMeta: meta("flux-system", nil), Spec: objects.KustomizationSpec{Path: "./clusters/prod"}},
		{ObjectMeta: meta("podinfo", map[string]string{route.FluxKustomizeNameLabel: "flux-system", route.FluxKustomizeNamespaceLabel: "flux-system"}),
			Spec: objects.KustomizationSpec{Path: "./apps/podinfo"}},
	}}
	kustomization := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: podinfo\n  namespace: flux-system\nspec:\n  path: ./apps/podinfo\n"
	ix, err := index.Read(gitopstest.WriteTree(t, map[string]string{
		"clusters/staging/apps.yaml": kustomization,
		"clusters/prod/apps.yaml":    kustomization,
	}), index.Options{})
	require.NoError(t, err)
	f := Of(nil, set, set.Kustomizations[1])
	assert.Equal(t, "clusters/prod", f.AppliedFrom)
	assert.Equal(t, "clusters/prod/apps.yaml", manifestOf(ix, f).File)

	f.AppliedFrom = ""
	assert.Nil(t, manifestOf(ix, f), "two copies and no way to tell which one the cluster runs")
}
