package engine

import (
	"sort"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// MeshSummary describes the control plane for people: each revision with
// its image, the tags pointing at it, and the namespaces whose new pods it
// would inject (judged by namespace labels alone, as a pod with no
// injection labels of its own would be).
func MeshSummary(model *mesh.Model, set *objects.Set) dashboard.Mesh {
	byRevision := map[string][]string{}
	for _, ns := range set.Namespaces {
		d := model.Decide(ns.Name, ns.Labels, mesh.Template{})
		if d.Inject && len(d.Conflict) == 0 {
			byRevision[d.Revision] = append(byRevision[d.Revision], ns.Name)
		}
	}
	out := dashboard.Mesh{Tags: model.Tags()}
	for _, r := range model.Revisions() {
		namespaces := byRevision[r.Name]
		sort.Strings(namespaces)
		out.Revisions = append(out.Revisions, dashboard.Revision{
			Name: r.Name, Image: r.Image, Tags: r.Tags, Namespaces: namespaces,
		})
	}
	return out
}
