package dashboard

import (
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/ambient"
)

// CarriedPolicies are the policies a move to ambient mode carries over, as
// a PR shows them.
func CarriedPolicies(carried []ambient.Finding) []CarriedPolicy {
	var out []CarriedPolicy
	for _, f := range carried {
		if f.Rewrite == nil {
			continue
		}
		keys := make([]string, 0, len(f.Rewrite.Selector))
		for k := range f.Rewrite.Selector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		selector := make([]string, len(keys))
		for i, k := range keys {
			selector[i] = k + "=" + f.Rewrite.Selector[k]
		}
		p := CarriedPolicy{Object: f.Object.String(), Path: f.Path, Selector: strings.Join(selector, ","), Waypoints: f.Rewrite.Waypoints}
		for _, t := range f.Rewrite.TargetRefs {
			p.Services = append(p.Services, t.Name)
		}
		out = append(out, p)
	}
	return out
}
