package migrate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/restart"
)

// replaceEdit stands for a label edit: it swaps old for new in whatever
// version of the file it is given, and fails when old is not there.
func replaceEdit(ns, path, old, new string, before []byte) *LabelEdit {
	apply := func(src []byte) ([]byte, bool, error) {
		if !bytes.Contains(src, []byte(old)) {
			return nil, false, errors.New("the label moved")
		}
		return bytes.Replace(src, []byte(old), []byte(new), 1), true, nil
	}
	after, _, _ := apply(before)
	return &LabelEdit{Namespace: ns, Path: path, Before: before, After: after, apply: apply}
}

func found(path string) drift.Manifest {
	return drift.Manifest{Status: drift.ManifestFound, Path: path, Edit: drift.EditInPlace}
}

func TestAttachPutsTheRelabelIntoTheNamespacesBranch(t *testing.T) {
	nsFile := []byte("kind: Namespace\nrev: a\n")
	shared := []byte("kind: Namespace\nrev: a\n---\nkind: Deployment\nrestart: old\n")
	tests := []struct {
		name        string
		migration   drift.Migration
		labelEdit   *LabelEdit
		edits       map[string][]restart.FileEdit
		wantFiles   map[string]string
		wantRefused []restart.WorkloadID
		wantStarts  []drift.MigrationWorkload
	}{
		{
			name:      "own file, next to the restarts",
			migration: drift.Migration{Namespace: "web", From: "a", To: "b", Manifest: found("ns/web.yaml")},
			labelEdit: replaceEdit("web", "ns/web.yaml", "rev: a", "rev: b", nsFile),
			edits: map[string][]restart.FileEdit{"web": {{Path: "apps/web/api.yaml", After: []byte("restarted"),
				Workloads: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "api"}, {Namespace: "web", Kind: "Deployment", Name: "api"}}}}},
			wantFiles:  map[string]string{"apps/web/api.yaml": "restarted", "ns/web.yaml": "kind: Namespace\nrev: b\n"},
			wantStarts: []drift.MigrationWorkload{{Kind: "Deployment", Name: "api"}},
		},
		{
			name:      "same file as a restart",
			migration: drift.Migration{Namespace: "web", From: "a", To: "b", Manifest: found("all.yaml")},
			labelEdit: replaceEdit("web", "all.yaml", "rev: a", "rev: b", shared),
			edits: map[string][]restart.FileEdit{"web": {{Path: "all.yaml", Before: shared, After: bytes.Replace(shared, []byte("old"), []byte("new"), 1),
				Workloads: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "api"}}}}},
			wantFiles:  map[string]string{"all.yaml": "kind: Namespace\nrev: b\n---\nkind: Deployment\nrestart: new\n"},
			wantStarts: []drift.MigrationWorkload{{Kind: "Deployment", Name: "api"}},
		},
		{
			name:      "relabel only",
			migration: drift.Migration{Namespace: "web", From: "a", To: "b", Manifest: found("ns/web.yaml")},
			labelEdit: replaceEdit("web", "ns/web.yaml", "rev: a", "rev: b", nsFile),
			wantFiles: map[string]string{"ns/web.yaml": "kind: Namespace\nrev: b\n"},
		},
		{
			// The migration was decided first: its label edit stands, and
			// the restarts that need the same file are refused with theirs.
			name:      "does not combine",
			migration: drift.Migration{Namespace: "web", From: "a", To: "b", Manifest: found("all.yaml")},
			labelEdit: replaceEdit("web", "all.yaml", "rev: a", "rev: b", shared),
			edits: map[string][]restart.FileEdit{"web": {
				{Path: "all.yaml", Before: shared, After: []byte("rewritten"), Workloads: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "api"}}},
				{Path: "patch.yaml", After: []byte("patched"), Workloads: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "api"}}},
				{Path: "other.yaml", After: []byte("restarted"), Workloads: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "db"}}},
			}},
			wantFiles:   map[string]string{"all.yaml": "kind: Namespace\nrev: b\n---\nkind: Deployment\nrestart: old\n", "other.yaml": "restarted"},
			wantRefused: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "api"}},
			wantStarts:  []drift.MigrationWorkload{{Kind: "Deployment", Name: "db"}},
		},
		{
			name:      "git already says the target",
			migration: drift.Migration{Namespace: "web", From: "a", To: "b", Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "ns/web.yaml", Edit: drift.EditLabelAlreadySet}},
			edits: map[string][]restart.FileEdit{"web": {{Path: "apps/web/api.yaml", After: []byte("restarted"),
				Workloads: []restart.WorkloadID{{Namespace: "web", Kind: "Deployment", Name: "api"}}}}},
			wantFiles:  map[string]string{"apps/web/api.yaml": "restarted"},
			wantStarts: []drift.MigrationWorkload{{Kind: "Deployment", Name: "api"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := edit.Set{Namespaces: tt.edits}
			migrations := []drift.Migration{tt.migration}
			labelEdits := map[string]*LabelEdit{}
			if tt.labelEdit != nil {
				labelEdits["web"] = tt.labelEdit
			}
			before := set.Namespaces["web"]
			attached := Attach(migrations, set, labelEdits)
			got := map[string]string{}
			for _, f := range attached.Edits.Namespaces["web"] {
				got[f.Path] = string(f.After)
			}
			assert.Equal(t, tt.wantFiles, got)
			var refused []restart.WorkloadID
			for _, r := range attached.Refused {
				refused = append(refused, r.Workloads...)
			}
			assert.Equal(t, tt.wantRefused, refused)
			assert.Equal(t, attached.Refused, attached.Edits.Refused)
			assert.Empty(t, attached.Migrations[0].Blocked)
			want := tt.wantStarts
			if want == nil {
				want = []drift.MigrationWorkload{}
			}
			assert.Equal(t, want, attached.Migrations[0].Workloads)
			assert.Equal(t, tt.edits["web"], before, "the edits Attach was given are left as they were")
			assert.Empty(t, migrations[0].Workloads, "the migrations Attach was given are left as they were")
		})
	}
}

func TestAttachReportsLabelsKedgeCannotEdit(t *testing.T) {
	migrations := []drift.Migration{
		{Namespace: "a", Blocked: drift.BlockManifest, Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "ns.yaml", Detail: "edit refused: why"}},
		{Namespace: "b", Blocked: drift.BlockManifest, Manifest: drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Namespace b"}},
		{Namespace: "c", Blocked: drift.BlockIstioInjection, Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "ns.yaml"}},
	}
	attached := Attach(migrations, edit.Set{}, nil)
	assert.Equal(t, []restart.Refusal{{Namespace: "a", Path: "ns.yaml", Reason: "edit refused: why"}}, attached.Edits.Refused)
	assert.Empty(t, attached.Edits.Namespaces)
}

func TestWithoutRepositoryListsTheDriftedWorkloads(t *testing.T) {
	plan := drift.Plan{Workloads: []drift.Workload{
		{Namespace: "a", Kind: "Deployment", Name: "x"},
		{Namespace: "b", Kind: "StatefulSet", Name: "y"},
	}}
	migrations := []drift.Migration{{Namespace: "b"}, {Namespace: "a", Blocked: drift.BlockOptedOut}}
	got := WithoutRepository(migrations, plan)
	assert.Equal(t, []drift.MigrationWorkload{{Kind: "StatefulSet", Name: "y"}}, got[0].Workloads)
	assert.Equal(t, drift.ManifestNoRepo, got[0].Manifest.Status)
	assert.Empty(t, got[1].Workloads)
	assert.Equal(t, drift.ManifestNoRepo, got[1].Manifest.Status)
	assert.Empty(t, migrations[0].Manifest.Status, "the migrations it was given are left as they were")
}
