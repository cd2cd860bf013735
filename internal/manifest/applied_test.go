package manifest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAppliedCandidatesKeepEveryPathThatApplies checks the lookup against
// a scan of every applied path, for rooted and plain objects, paths that
// are roots and directories, prefixes that are not directories, the
// repository root, and paths named only by the hints.
func TestAppliedCandidatesKeepEveryPathThatApplies(t *testing.T) {
	ix := &Index{
		roots: map[string]*Root{
			"bases/redis":    {Dir: "bases/redis"},
			"tenants/a":      {Dir: "tenants/a"},
			"tenants/a-b":    {Dir: "tenants/a-b"},
			"clusters/prod":  {Dir: "clusters/prod"},
			"tenants/a/deep": {Dir: "tenants/a/deep"},
		},
		includedBy: map[string][]string{
			"bases/redis": {"tenants/a", "tenants/a-b"},
			"tenants/a":   {"clusters/prod"},
		},
	}
	var applied []Applied
	for _, p := range []string{".", "tenants", "tenants/a", "tenants/a-b", "tenants/a/deep", "bases", "bases/redis",
		"clusters", "clusters/prod", "apps", "apps/x", "apps/x/y.yaml", "ten", "tenants/a/", "tenants/b"} {
		for i := range 2 {
			applied = append(applied, Applied{Path: p, Namespace: fmt.Sprintf("ns-%d", i), Via: p})
		}
	}
	objects := []Object{
		{Name: "redis", Root: "bases/redis"},
		{Name: "api", Root: "tenants/a", Namespace: "a"},
		{Name: "api", Root: "tenants/a-b", Namespace: "a-b"},
		{Name: "deep", Root: "tenants/a/deep"},
		{Name: "plain", Source: Source{Path: "apps/x/y.yaml"}},
		{Name: "top", Source: Source{Path: "top.yaml"}},
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
