package flux

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestSubstitutionMatches follows Flux's post-build substitution: no strict
// mode, so an unset variable reads as empty; a Secret's variable may be
// anything.
func TestSubstitutionMatches(t *testing.T) {
	sub := &Substitution{vars: map[string]string{"tenant": "shop", "empty": ""}, secrets: map[string]bool{"region": true}}
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
		assert.Equal(t, tt.match, sub.Matches(tt.written, tt.want), "%s as %s", tt.written, tt.want)
	}
	var none *Substitution
	assert.True(t, none.Matches("${tenant}", "${tenant}"), "without substitution a name is read literally")
}

func TestSubstitutionForOrdersSources(t *testing.T) {
	repo := gitopstest.WriteTree(t, map[string]string{"flux-system/vars.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: first
  namespace: flux-system
data:
  a: from-first
  b: from-first
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: second
  namespace: flux-system
data:
  b: from-second
  c: "line\n"
---
apiVersion: v1
kind: Secret
metadata:
  name: secret
  namespace: flux-system
stringData:
  a: never read
  d: never read
`})
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	f := &Kustomization{Namespace: "flux-system", PostBuild: &objects.PostBuild{
		Substitute: map[string]string{"d": "inline"},
		SubstituteFrom: []objects.SubstituteReference{
			{Kind: "ConfigMap", Name: "first"}, {Kind: "Secret", Name: "secret"}, {Kind: "ConfigMap", Name: "second"}, {Kind: "ConfigMap", Name: "missing", Optional: true},
		},
	}}
	sub := SubstitutionOf(ix, f)
	assert.Equal(t, map[string]string{"b": "from-second", "c": "line", "d": "inline"}, sub.vars)
	assert.Equal(t, map[string]bool{"a": true}, sub.secrets)

	// The cluster's ConfigMap wins over the repository's copy.
	f.configMaps = map[string]map[string]string{"first": {"b": "live"}}
	f.PostBuild.SubstituteFrom = f.PostBuild.SubstituteFrom[:1]
	assert.Equal(t, map[string]string{"b": "live", "d": "inline"}, SubstitutionOf(ix, f).vars)

	assert.Nil(t, SubstitutionOf(ix, &Kustomization{PostBuild: &objects.PostBuild{}}), "no variables, no substitution")
	assert.NotNil(t, SubstitutionOf(ix, &Kustomization{PostBuild: &objects.PostBuild{SubstituteStrategy: "Always"}}))
}
