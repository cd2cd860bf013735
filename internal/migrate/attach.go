package migrate

import (
	"sort"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/manifest"
	"github.com/kedge-io/kedge/internal/objects"
)

// Attach puts each moving namespace's label edit into that namespace's
// edits, so the relabel and the restarts travel in one branch and one pull
// request, and lists on each migration the workloads restarted with it.
// When the label edit cannot be made on top of restart edits of the same
// file, the migration is blocked and Attach returns false: the restarts
// were planned for the target revision, so the caller must plan again.
func Attach(migrations []drift.Migration, edits *manifest.EditSet, labelEdits map[string]*LabelEdit) bool {
	if edits.Namespaces == nil {
		edits.Namespaces = map[string][]manifest.FileEdit{}
	}
	ok := true
	for i := range migrations {
		m := &migrations[i]
		if m.Blocked == drift.BlockManifest && m.Manifest.Status == drift.ManifestFound && m.Manifest.Path != "" {
			edits.Refused = append(edits.Refused, manifest.Refusal{Namespace: m.Namespace, Path: m.Manifest.Path, Reason: m.Manifest.Detail})
		}
		if !m.Moves() {
			continue
		}
		files := edits.Namespaces[m.Namespace]
		if le := labelEdits[m.Namespace]; le != nil && m.Relabels() {
			merged := false
			for j := range files {
				if files[j].Path != le.Path {
					continue
				}
				after, err := le.Onto(files[j].After)
				if err != nil {
					m.Blocked, m.Detail = drift.BlockManifest, "the label edit of "+le.Path+" does not combine with the restart edits of the same file: "+refusalText(err)
					m.Manifest.Detail = m.Detail
					ok = false
					break
				}
				files[j].After = after
				merged = true
			}
			if !m.Moves() {
				continue
			}
			if !merged {
				files = append(files, manifest.FileEdit{Path: le.Path, Before: le.Before, After: le.After})
				sort.Slice(files, func(a, b int) bool { return files[a].Path < files[b].Path })
			}
			edits.Namespaces[m.Namespace] = files
		}
		m.Workloads = restarted(files)
	}
	sort.SliceStable(edits.Refused, func(a, b int) bool {
		if edits.Refused[a].Namespace != edits.Refused[b].Namespace {
			return edits.Refused[a].Namespace < edits.Refused[b].Namespace
		}
		return edits.Refused[a].Path < edits.Refused[b].Path
	})
	return ok
}

func restarted(files []manifest.FileEdit) []drift.MigrationWorkload {
	seen := map[drift.MigrationWorkload]bool{}
	out := []drift.MigrationWorkload{}
	for _, f := range files {
		for _, id := range f.Workloads {
			w := drift.MigrationWorkload{Kind: id.Kind, Name: id.Name}
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// WithoutRepository fills the migrations of a plan made without a
// checkout: the label's place is unknown, and every drifted workload of a
// moving namespace is what a restart would cover.
func WithoutRepository(migrations []drift.Migration, plan drift.Plan) {
	for i := range migrations {
		m := &migrations[i]
		m.Manifest = drift.Manifest{Status: drift.ManifestNoRepo}
		if !m.Moves() {
			continue
		}
		m.Workloads = []drift.MigrationWorkload{}
		for _, w := range plan.Workloads {
			if w.Namespace == m.Namespace {
				m.Workloads = append(m.Workloads, drift.MigrationWorkload{Kind: w.Kind, Name: w.Name})
			}
		}
	}
}

// For returns the namespace's migration in the plan, nil when none.
func For(plan drift.Plan, namespace string) *drift.Migration {
	for i := range plan.Migrations {
		if plan.Migrations[i].Namespace == namespace {
			return &plan.Migrations[i]
		}
	}
	return nil
}

// NamespaceAsWorkload presents a namespace's tracking metadata in the form
// manifest.HintsFor reads, so the Namespace is looked for where its GitOps
// tool applies it from.
func NamespaceAsWorkload(set *objects.Set, namespace string) drift.Workload {
	w := drift.Workload{Namespace: namespace, Kind: "Namespace", Name: namespace, APIVersion: "v1"}
	for i := range set.Namespaces {
		if set.Namespaces[i].Name == namespace {
			w.Labels, w.Annotations = set.Namespaces[i].Labels, set.Namespaces[i].Annotations
		}
	}
	return w
}
