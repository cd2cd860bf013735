package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// TestSubstitutionMatches follows Flux's post-build substitution: no strict
// mode, so an unset variable reads as empty; a Secret's variable may be
// anything.
func TestSubstitutionMatches(t *testing.T) {
	sub := &substitution{vars: map[string]string{"tenant": "shop", "empty": ""}, secrets: map[string]bool{"region": true}}
	tests := []struct {
		written, want string
		match         bool
	}{
		{"${tenant}", "shop", true},
		{"${tenant}", "${tenant}", false},
		{"api-${env:=prod}", "api-prod", true},
		{"api-${env:-prod}", "api-prod", true},
		{"api-${empty:=prod}", "api-prod", true},
		{"api-${tenant:=prod}", "api-shop", true},
		{"api-${unset}", "api-", true},
		{"worker-${region}", "worker-eu", true},
		{"worker-${region}", "worker-", false},
		{"worker-${region^^}", "worker-EU", true},
		{"${tenant}-${region}-x", "shop-us-east-x", true},
		{"${tenant}-${region}-x", "shop-us-east-y", false},
		{"plain", "plain", true},
		{"${unclosed", "x", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.match, sub.matches(tt.written, tt.want), "%s as %s", tt.written, tt.want)
	}
	var none *substitution
	assert.True(t, none.matches("${tenant}", "${tenant}"), "without substitution a name is read literally")
}

func TestSubstitutionForOrdersSources(t *testing.T) {
	ix := &Index{flux: &fluxSources{
		configMaps: map[string]map[string]string{
			"flux-system/first":  {"a": "from-first", "b": "from-first"},
			"flux-system/second": {"b": "from-second", "c": "line\n"},
		},
		secretKeys: map[string][]string{"flux-system/secret": {"a", "d"}},
	}}
	f := &FluxKustomization{Namespace: "flux-system", PostBuild: &objects.PostBuild{
		Substitute: map[string]string{"d": "inline"},
		SubstituteFrom: []objects.SubstituteReference{
			{Kind: "ConfigMap", Name: "first"}, {Kind: "Secret", Name: "secret"}, {Kind: "ConfigMap", Name: "second"}, {Kind: "ConfigMap", Name: "missing", Optional: true},
		},
	}}
	sub := ix.substitutionFor(f)
	assert.Equal(t, map[string]string{"b": "from-second", "c": "line", "d": "inline"}, sub.vars)
	assert.Equal(t, map[string]bool{"a": true}, sub.secrets)

	// The cluster's ConfigMap wins over the repository's copy.
	f.configMaps = map[string]map[string]string{"first": {"b": "live"}}
	f.PostBuild.SubstituteFrom = f.PostBuild.SubstituteFrom[:1]
	assert.Equal(t, map[string]string{"b": "live", "d": "inline"}, ix.substitutionFor(f).vars)

	assert.Nil(t, ix.substitutionFor(&FluxKustomization{PostBuild: &objects.PostBuild{}}), "no variables, no substitution")
	assert.NotNil(t, ix.substitutionFor(&FluxKustomization{PostBuild: &objects.PostBuild{SubstituteStrategy: "Always"}}))
}

// TestFluxManifestOfTheApplyingCluster: two clusters of one repository
// write a Kustomization of the same name and path; the one the cluster's
// flux-system Kustomization applies is the one kedge patches.
func TestFluxManifestOfTheApplyingCluster(t *testing.T) {
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "flux-system", Name: name, Labels: labels}
	}
	set := &objects.Set{Kustomizations: []objects.Kustomization{
		{ObjectMeta: meta("flux-system", nil), Spec: objects.KustomizationSpec{Path: "./clusters/prod"}},
		{ObjectMeta: meta("podinfo", map[string]string{fluxKustomizeNameLabel: "flux-system", fluxKustomizeNamespaceLabel: "flux-system"}),
			Spec: objects.KustomizationSpec{Path: "./apps/podinfo"}},
	}}
	sources := &fluxSources{kustomizations: []fluxManifest{
		{File: "clusters/staging/apps.yaml", Name: "podinfo", Namespace: "flux-system", Spec: fluxSpec{Path: "apps/podinfo"}},
		{File: "clusters/prod/apps.yaml", Name: "podinfo", Namespace: "flux-system", Spec: fluxSpec{Path: "apps/podinfo"}},
	}}
	f := fluxHint(set, set.Kustomizations[1])
	assert.Equal(t, "clusters/prod", f.AppliedFrom)
	assert.Equal(t, "clusters/prod/apps.yaml", sources.manifestOf(f).File)

	f.AppliedFrom = ""
	assert.Nil(t, sources.manifestOf(f), "two copies and no way to tell which one the cluster runs")
}
