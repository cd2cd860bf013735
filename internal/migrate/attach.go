package migrate

import (
	"maps"
	"slices"
	"sort"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
)

// Locate decides, for each migration, where its namespace's label is
// written and computes the label edit. A label kedge cannot edit safely
// blocks its migration here, before any restart is planned for the
// namespace. It returns new migrations, and the label edits by namespace.
func Locate(ix *index.Index, migrations []drift.Migration, hints func(namespace string) locate.Hints) ([]drift.Migration, map[string]*LabelEdit) {
	out := slices.Clone(migrations)
	edits := map[string]*LabelEdit{}
	if len(out) == 0 {
		return out, edits
	}
	checkout := NewCheckout(ix)
	for i := range out {
		m := &out[i]
		h := hints(m.Namespace)
		if !m.Moves() {
			m.Manifest = checkout.Find(m.Namespace, h)
			if len(m.Ambient) > 0 {
				m.Ambient = checkout.placed(m.Ambient, m.Manifest.Path)
				m.Detail = ambient.Describe(m.Ambient)
			}
			continue
		}
		edit := checkout.Locate(m, h)
		if m.Moves() && len(m.Carried) > 0 {
			policies, carried, refused := checkout.carry(m)
			if len(refused) > 0 {
				m.Carried, m.Ambient = nil, refused
				m.Blocked, m.Detail = drift.BlockAmbientNotReady, ambient.Describe(refused)
				continue
			}
			m.Carried = carried
			if edit == nil {
				edit = &LabelEdit{Namespace: m.Namespace}
			}
			edit.Policies = policies
		}
		if edit != nil {
			edits[m.Namespace] = edit
		}
	}
	return out, edits
}

// Attached is the edit set with the migrations' label edits in it.
type Attached struct {
	Migrations []drift.Migration
	Edits      edit.Set
	// Refused are the refusals Attach adds: labels kedge will not edit, and
	// restart edits that do not combine with a label edit of the same file.
	Refused []restart.Refusal
}

// Attach puts each moving namespace's label edit into that namespace's
// edits, so the relabel and the restarts travel in one branch and one pull
// request, and lists on each migration the workloads restarted with it.
// When the label edit cannot be made on top of the restart edits of the same
// file, the label edit wins (the migration was decided first) and those
// restarts are refused. The inputs are left as they were.
func Attach(migrations []drift.Migration, edits edit.Set, labelEdits map[string]*LabelEdit) Attached {
	out := Attached{
		Migrations: slices.Clone(migrations),
		Edits:      edit.Set{Namespaces: maps.Clone(edits.Namespaces), Refused: slices.Clone(edits.Refused)},
	}
	if out.Edits.Namespaces == nil {
		out.Edits.Namespaces = map[string][]restart.FileEdit{}
	}
	for i := range out.Migrations {
		m := &out.Migrations[i]
		if m.Blocked == drift.BlockManifest && m.Manifest.Status == drift.ManifestFound && m.Manifest.Path != "" {
			out.Refused = append(out.Refused, restart.Refusal{Namespace: m.Namespace, Path: m.Manifest.Path, Reason: m.Manifest.Detail})
		}
		if !m.Moves() {
			continue
		}
		files := slices.Clone(out.Edits.Namespaces[m.Namespace])
		if le := labelEdits[m.Namespace]; le != nil {
			var changes []fileChange
			if m.Relabels() && le.Path != "" {
				changes = append(changes, le)
			}
			for _, pe := range le.Policies {
				changes = append(changes, pe)
			}
			for _, ch := range changes {
				var refused *restart.Refusal
				files, refused = withFileChange(files, le.Namespace, ch)
				if refused != nil {
					out.Refused = append(out.Refused, *refused)
				}
			}
			out.Edits.Namespaces[m.Namespace] = files
		}
		m.Workloads = restarted(files)
	}
	out.Edits.Refused = append(out.Edits.Refused, out.Refused...)
	restart.SortRefusals(out.Edits.Refused)
	return out
}

// fileChange is an edit a migration makes besides the restarts: the
// namespace's label edit, or a file of policies carried over.
type fileChange interface {
	file() (path string, before, after []byte)
	Onto(src []byte) ([]byte, error)
	what() string
}

func (e *LabelEdit) file() (string, []byte, []byte) { return e.Path, e.Before, e.After }
func (e *LabelEdit) what() string                   { return "the label edit of Namespace " + e.Namespace }
func (e *PolicyEdit) file() (string, []byte, []byte) {
	return e.Path, e.Before, e.After
}
func (e *PolicyEdit) what() string { return "the policies carried over to ambient mode" }

// withFileChange returns a namespace's file edits with a migration's
// change made too: on top of the restart edits of the same file, or, when
// it does not combine with them, instead of every restart edit of the
// workloads that file restarts (an overlay patch needs its kustomization
// edit). The migration was decided first, so its change wins.
func withFileChange(files []restart.FileEdit, namespace string, ch fileChange) ([]restart.FileEdit, *restart.Refusal) {
	path, before, after := ch.file()
	for j := range files {
		if files[j].Path != path {
			continue
		}
		combined, err := ch.Onto(files[j].After)
		if err == nil {
			files[j].After = combined
			return files, nil
		}
		refusal := &restart.Refusal{Namespace: namespace, Path: path, Workloads: files[j].Workloads,
			Reason: "the restart edits do not combine with " + ch.what() + ": " + refusalText(err)}
		dropped := map[restart.WorkloadID]bool{}
		for _, id := range files[j].Workloads {
			dropped[id] = true
		}
		kept := []restart.FileEdit{{Path: path, Before: before, After: after}}
		for k, f := range files {
			if k != j && !slices.ContainsFunc(f.Workloads, func(id restart.WorkloadID) bool { return dropped[id] }) {
				kept = append(kept, f)
			}
		}
		sort.Slice(kept, func(a, b int) bool { return kept[a].Path < kept[b].Path })
		return kept, refusal
	}
	files = append(files, restart.FileEdit{Path: path, Before: before, After: after})
	sort.Slice(files, func(a, b int) bool { return files[a].Path < files[b].Path })
	return files, nil
}

func restarted(files []restart.FileEdit) []drift.MigrationWorkload {
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

// WithoutRepository returns the migrations of a plan made without a
// checkout: the label's place is unknown, and every drifted workload of a
// moving namespace is what a restart would cover.
func WithoutRepository(migrations []drift.Migration, plan drift.Plan) []drift.Migration {
	out := slices.Clone(migrations)
	for i := range out {
		m := &out[i]
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
	return out
}

// For returns the namespace's migration in the plan, a copy, and whether it
// has one.
func For(plan drift.Plan, namespace string) (drift.Migration, bool) {
	for _, m := range plan.Migrations {
		if m.Namespace == namespace {
			return m, true
		}
	}
	return drift.Migration{}, false
}

// NamespaceAsWorkload presents a namespace's tracking metadata in the form
// locate.HintsIn reads, so the Namespace is looked for where its GitOps
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
