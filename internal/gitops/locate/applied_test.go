package locate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestAppliedCandidatesKeepEveryPathThatApplies checks the lookup against
// a scan of every applied path, for rooted and plain objects, paths that
// are roots and directories, prefixes that are not directories, the
// repository root, and paths named only by the hints.
func TestAppliedCandidatesKeepEveryPathThatApplies(t *testing.T) {
	deploy := func(name string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n"
	}
	repo := gitopstest.WriteTree(t, map[string]string{
		"bases/redis/kustomization.yaml":    "resources: [redis.yaml]\n",
		"bases/redis/redis.yaml":            deploy("redis"),
		"tenants/a/kustomization.yaml":      "namespace: a\nresources: [../../bases/redis]\n",
		"tenants/a-b/kustomization.yaml":    "namespace: a-b\nresources: [../../bases/redis]\n",
		"clusters/prod/kustomization.yaml":  "resources: [../../tenants/a]\n",
		"tenants/a/deep/kustomization.yaml": "resources: [deep.yaml]\n",
		"tenants/a/deep/deep.yaml":          deploy("deep"),
	})
	built, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"clusters/prod"}, built.IncludedBy("tenants/a"))
	require.Equal(t, []string{"clusters/prod", "tenants/a", "tenants/a-b"}, built.IncludedBy("bases/redis"), "builds read their bases' bases too")
	ix := locator{Index: built}
	var applied []Applied
	for _, p := range []string{".", "tenants", "tenants/a", "tenants/a-b", "tenants/a/deep", "bases", "bases/redis",
		"clusters", "clusters/prod", "apps", "apps/x", "apps/x/y.yaml", "ten", "tenants/a/", "tenants/b"} {
		for i := range 2 {
			applied = append(applied, Applied{Path: p, Namespace: fmt.Sprintf("ns-%d", i), Via: p})
		}
	}
	objects := []index.Object{
		{Name: "redis", Root: "bases/redis"},
		{Name: "api", Root: "tenants/a", Namespace: "a"},
		{Name: "api", Root: "tenants/a-b", Namespace: "a-b"},
		{Name: "deep", Root: "tenants/a/deep"},
		{Name: "plain", Source: index.Source{Path: "apps/x/y.yaml"}},
		{Name: "top", Source: index.Source{Path: "top.yaml"}},
		{Name: "generated"},
	}
	hintsCases := []Hints{
		{Applied: applied},
		{Applied: applied, Paths: []string{"apps/x", "extra/dir"}, TargetNamespace: "forced", Via: "hint"},
		{Paths: []string{"tenants/a"}},
	}
	for hi, hints := range hintsCases {
		for _, o := range objects {
			var scan, looked []Applied
			for _, a := range appliedFor(hints) {
				if ix.applies(a.Path, &o) {
					scan = append(scan, a)
				}
			}
			for _, a := range ix.appliedCandidates(&o, hints) {
				if ix.applies(a.Path, &o) {
					looked = append(looked, a)
				}
			}
			assert.Equal(t, scan, looked, "hints %d, object %s (root %q, path %q)", hi, o.Name, o.Root, o.Source.Path)
		}
	}
}
