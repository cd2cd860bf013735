package plan

import (
	"sort"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/image"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// summarise completes a result with what people are shown about it,
// computed once per plan.
func summarise(set *objects.Set, model *mesh.Model, p drift.Plan, edits edit.Set, ix *index.Index, hints func(drift.Workload) locate.Hints) *Result {
	res := &Result{Plan: p, Edits: edits, Index: ix, Mesh: meshSummary(model, set), Namespaces: map[string]Namespace{}}
	byNamespace := map[string][]drift.Workload{}
	for _, w := range p.Workloads {
		byNamespace[w.Namespace] = append(byNamespace[w.Namespace], w)
	}
	// A namespace without drifted workloads may still have a pull request
	// to close or follow, so every namespace is described.
	images := drift.ProxyImages(set)
	for _, ns := range set.Namespaces {
		res.Namespaces[ns.Name] = Namespace{
			ProxyVersions: versions(images[ns.Name]),
			Applier:       applier(byNamespace[ns.Name]),
			OtherRepo:     otherRepo(byNamespace[ns.Name], hints),
		}
	}
	return res
}

// meshSummary describes the control plane for people: each revision with
// its image, the tags pointing at it, and the namespaces whose new pods it
// would inject (judged by namespace labels alone, as a pod with no
// injection labels of its own would be).
func meshSummary(model *mesh.Model, set *objects.Set) mesh.Summary {
	byRevision := map[string][]string{}
	for _, ns := range set.Namespaces {
		d := model.Decide(ns.Name, ns.Labels, mesh.Template{})
		if d.Inject && len(d.Conflict) == 0 {
			byRevision[d.Revision] = append(byRevision[d.Revision], ns.Name)
		}
	}
	out := mesh.Summary{Tags: model.Tags()}
	for _, r := range model.Revisions() {
		namespaces := byRevision[r.Name]
		sort.Strings(namespaces)
		out.Revisions = append(out.Revisions, mesh.RevisionSummary{
			Name: r.Name, Image: r.Image, Tags: r.Tags, Namespaces: namespaces,
		})
	}
	return out
}

// versions counts pods by the proxy version of their image; pods without a
// proxy count under "".
func versions(images map[string]int) map[string]int {
	out := map[string]int{}
	for img, n := range images {
		version := ""
		if img != "" {
			version = image.Parse(img).Version()
		}
		out[version] += n
	}
	return out
}

// applier names what applies a merged change, from the tracking metadata
// of the namespace's workloads.
func applier(workloads []drift.Workload) string {
	for _, w := range workloads {
		if name := locate.Applier(w); name != "" {
			return name
		}
	}
	return "your GitOps controller"
}

// otherRepo is the repository another than the configured one that the
// cluster applies a namespace's drifted workloads from, if any.
func otherRepo(workloads []drift.Workload, hints func(drift.Workload) locate.Hints) string {
	if hints == nil {
		return ""
	}
	for _, w := range workloads {
		if h := hints(w); h.OtherRepo != "" && h.Helm == "" {
			return h.OtherRepo
		}
	}
	return ""
}
