package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Istio policies, routes, waypoints and Services are listed with the file
// and document they are written in, from a plain file, a kustomization
// that kustomize renders (its namespace: applied), and one the index reads
// without kustomize.
func TestMeshObjectsNameTheirFile(t *testing.T) {
	repo := t.TempDir()
	write := func(rel, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, rel), []byte(content), 0o644))
	}
	write("plain/policies.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: web}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: get-only, namespace: web}
spec: {selector: {matchLabels: {app: web}}}
`)
	write("shop/kustomization.yaml", "namespace: shop\nnamePrefix: team-\nresources: [policy.yaml, route.yaml]\n")
	write("shop/policy.yaml", "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: strict}\nspec: {mtls: {mode: STRICT}}\n")
	write("shop/route.yaml", "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: cart}\nspec: {}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: cart}\nspec: {selector: {app: cart}}\n")
	write("cart/kustomization.yaml", "resources: [waypoint.yaml]\n")
	write("cart/waypoint.yaml", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: waypoint, namespace: cart}\nspec: {gatewayClassName: istio-waypoint}\n")

	ix, err := Read(repo, Options{})
	require.NoError(t, err)
	got := map[string]Source{}
	for _, m := range ix.MeshObjects() {
		got[m.Kind+" "+m.Namespace+"/"+m.Name+" @"+m.Root] = m.Source
	}
	assert.Equal(t, map[string]Source{
		"AuthorizationPolicy web/get-only @":        {Path: "plain/policies.yaml", Document: 1, APIVersion: "security.istio.io/v1", Kind: "AuthorizationPolicy", Name: "get-only", Namespace: "web"},
		"PeerAuthentication shop/team-strict @shop": {Path: "shop/policy.yaml", APIVersion: "security.istio.io/v1", Kind: "PeerAuthentication", Name: "strict"},
		"HTTPRoute shop/team-cart @shop":            {Path: "shop/route.yaml", APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "cart"},
		"Service shop/team-cart @shop":              {Path: "shop/route.yaml", Document: 1, APIVersion: "v1", Kind: "Service", Name: "cart"},
		"Gateway cart/waypoint @cart":               {Path: "cart/waypoint.yaml", APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "waypoint", Namespace: "cart"},
	}, got)
}
