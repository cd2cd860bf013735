package migrate

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/mesh"
)

var update = flag.Bool("update", false, "rewrite after.yaml of the testdata/edit/ns-* cases")

const (
	editRoot    = "../../testdata/edit"
	migrateRoot = "../../testdata/migrate"
)

// editCase is testdata/edit/ns-<case>/case.yaml. The first keys are the
// yamledit golden format (its own golden test runs the same call on
// before.yaml); the others place before.yaml in the repository under
// repo/ and say what the migration is.
type editCase struct {
	Op        string `yaml:"op"`
	Key       string `yaml:"key"`
	Value     string `yaml:"value"`
	Namespace string `yaml:"namespace"`
	From      string `yaml:"from"`
	To        string `yaml:"to"`
	File      string `yaml:"file"`
	Edit      string `yaml:"edit"`
}

// TestGoldenNamespaceLabelEdits locates each namespace in a checkout and
// compares the edit with after.yaml byte for byte.
func TestGoldenNamespaceLabelEdits(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(editRoot, "ns-*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var c editCase
			readYAML(t, filepath.Join(dir, "case.yaml"), &c)
			require.Equal(t, mesh.LabelRev, c.Key, "the yamledit call must be the migration's")
			require.Equal(t, c.To, c.Value, "the yamledit call must be the migration's")
			before, err := os.ReadFile(filepath.Join(dir, "before.yaml"))
			require.NoError(t, err)
			repo := copyRepo(t, filepath.Join(dir, "repo"))
			writeFile(t, filepath.Join(repo, c.File), before)

			m := drift.Migration{Namespace: c.Namespace, From: c.From, To: c.To}
			edit := checkoutOf(t, repo).Locate(&m, locate.Hints{})
			require.Empty(t, m.Blocked, m.Detail)
			require.NotNil(t, edit)
			if *update {
				writeFile(t, filepath.Join(dir, "after.yaml"), edit.After)
			}
			after, err := os.ReadFile(filepath.Join(dir, "after.yaml"))
			require.NoError(t, err)

			assert.Equal(t, drift.Manifest{Status: drift.ManifestFound, Path: c.File, Edit: c.Edit}, m.Manifest)
			assert.Equal(t, c.File, edit.Path)
			assert.Equal(t, string(before), string(edit.Before))
			assert.Equal(t, string(after), string(edit.After))
			assert.Equal(t, 1, changedLines(before, edit.After), "one line changes")

			again, err := edit.Onto(edit.After)
			require.NoError(t, err)
			assert.Equal(t, string(edit.After), string(again), "applying the edit twice changes nothing more")

			// With the edit in place, Git says the target: nothing more to write.
			writeFile(t, filepath.Join(repo, c.File), edit.After)
			m2 := drift.Migration{Namespace: c.Namespace, From: c.From, To: c.To}
			assert.Nil(t, checkoutOf(t, repo).Locate(&m2, locate.Hints{}))
			assert.Equal(t, drift.EditLabelAlreadySet, m2.Manifest.Edit)
		})
	}
}

// migrateCase is testdata/migrate/<case>/case.yaml: a checkout under repo/
// and where Locate must find the label, or why it must refuse.
type migrateCase struct {
	Namespace  string   `yaml:"namespace"`
	From       string   `yaml:"from"`
	To         string   `yaml:"to"`
	Status     string   `yaml:"status"`
	Path       string   `yaml:"path"`
	Edit       string   `yaml:"edit"`
	Blocked    string   `yaml:"blocked"`
	Detail     string   `yaml:"detail"`
	Candidates []string `yaml:"candidates"`
}

func TestLocateRefusesWhatItCannotEditSafely(t *testing.T) {
	entries, err := os.ReadDir(migrateRoot)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(migrateRoot, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "case.yaml")); err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			var c migrateCase
			readYAML(t, filepath.Join(dir, "case.yaml"), &c)
			repo := copyRepo(t, filepath.Join(dir, "repo"))
			m := drift.Migration{Namespace: c.Namespace, From: c.From, To: c.To}
			edit := checkoutOf(t, repo).Locate(&m, locate.Hints{})
			assert.Nil(t, edit, "nothing is written")
			assert.Equal(t, c.Status, m.Manifest.Status)
			assert.Equal(t, c.Path, m.Manifest.Path)
			assert.Equal(t, c.Edit, m.Manifest.Edit)
			assert.Equal(t, drift.MigrationBlock(c.Blocked), m.Blocked)
			if c.Detail != "" {
				assert.Equal(t, c.Detail, m.Detail)
			}
			assert.Equal(t, c.Candidates, m.Manifest.Candidates)
		})
	}
}

func TestLocateFollowsTheGitOpsToolsHints(t *testing.T) {
	repo := copyRepo(t, filepath.Join(migrateRoot, "ambiguous", "repo"))
	tests := []struct {
		name   string
		hints  locate.Hints
		status string
		path   string
		detail string
	}{
		{"the applied path decides", locate.Hints{Paths: []string{"team-b"}}, drift.ManifestFound, "team-b/web.yaml", ""},
		{"helm", locate.Hints{Helm: "HelmRelease infra/namespaces"}, drift.ManifestHelm, "", "the Namespace is rendered by HelmRelease infra/namespaces"},
		{"another repository", locate.Hints{OtherRepo: "https://github.com/o/other", Via: "Flux Kustomization flux-system/infra"}, drift.ManifestNoRepo, "",
			"Flux Kustomization flux-system/infra applies it from https://github.com/o/other, not this repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := drift.Migration{Namespace: "web", From: "1-24-0", To: "1-25-0"}
			edit := checkoutOf(t, repo).Locate(&m, tt.hints)
			assert.Equal(t, tt.status, m.Manifest.Status)
			assert.Equal(t, tt.path, m.Manifest.Path)
			assert.Equal(t, tt.detail, m.Manifest.Detail)
			assert.Equal(t, tt.status == drift.ManifestFound, edit != nil)
			assert.Equal(t, tt.status != drift.ManifestFound, m.Blocked == drift.BlockManifest)
		})
	}
}

func TestFindNamesTheFileWithoutEditing(t *testing.T) {
	repo := copyRepo(t, filepath.Join(editRoot, "ns-kustomize-resource", "repo"))
	before, err := os.ReadFile(filepath.Join(editRoot, "ns-kustomize-resource", "before.yaml"))
	require.NoError(t, err)
	writeFile(t, filepath.Join(repo, "infrastructure/namespaces/namespaces.yaml"), before)
	c := checkoutOf(t, repo)
	assert.Equal(t, drift.Manifest{Status: drift.ManifestFound, Path: "infrastructure/namespaces/namespaces.yaml"}, c.Find("shop", locate.Hints{}))
	assert.Equal(t, drift.ManifestNotFound, c.Find("nope", locate.Hints{}).Status)
}

func checkoutOf(t *testing.T, repo string) *Checkout {
	t.Helper()
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	return NewCheckout(ix)
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, v))
}

// copyRepo copies a fixture tree into a fresh directory (an absent tree
// gives an empty repository).
func copyRepo(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return dst
	}
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// changedLines counts the lines of a that b does not have at the same
// position; label edits never add or remove lines.
func changedLines(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(la) != len(lb) {
		return -1
	}
	n := 0
	for i := range la {
		if la[i] != lb[i] {
			n++
		}
	}
	return n
}

// documentCase is testdata/migrate/{injection,ambient}/<case>/case.yaml: a
// move that takes labels off the namespace (istio-injection, or the
// injection labels of a move to ambient) and sets others, and either the
// edited file (compared with after.yaml) or why it is refused.
type documentCase struct {
	Namespace    string            `yaml:"namespace"`
	From         string            `yaml:"from"`
	To           string            `yaml:"to"`
	RemoveLabels []string          `yaml:"removeLabels"`
	SetLabels    map[string]string `yaml:"setLabels"`
	Path         string            `yaml:"path"`
	// Edit is in-place (the default) or kustomize-labels.
	Edit    string `yaml:"edit"`
	Blocked string `yaml:"blocked"`
	Detail  string `yaml:"detail"`
}

func (c documentCase) migration() drift.Migration {
	return drift.Migration{Namespace: c.Namespace, From: c.From, To: c.To, RemoveLabels: c.RemoveLabels, SetLabels: c.SetLabels}
}

func TestLocateRemovesAndSetsLabels(t *testing.T) {
	var dirs []string
	for _, kind := range []string{"injection", "ambient"} {
		found, err := filepath.Glob(filepath.Join(migrateRoot, kind, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, found, kind)
		dirs = append(dirs, found...)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			var c documentCase
			readYAML(t, filepath.Join(dir, "case.yaml"), &c)
			repo := copyRepo(t, filepath.Join(dir, "repo"))
			m := c.migration()
			edit := checkoutOf(t, repo).Locate(&m, locate.Hints{})
			if c.Blocked != "" {
				assert.Nil(t, edit, "nothing is written")
				assert.Equal(t, drift.MigrationBlock(c.Blocked), m.Blocked)
				assert.Equal(t, c.Detail, m.Detail)
				assert.Equal(t, drift.Manifest{Status: drift.ManifestFound, Path: c.Path, Detail: c.Detail}, m.Manifest)
				return
			}
			require.Empty(t, m.Blocked, m.Detail)
			require.NotNil(t, edit)
			if *update {
				writeFile(t, filepath.Join(dir, "after.yaml"), edit.After)
			}
			after, err := os.ReadFile(filepath.Join(dir, "after.yaml"))
			require.NoError(t, err)
			wantEdit := c.Edit
			if wantEdit == "" {
				wantEdit = drift.EditInPlace
			}
			assert.Equal(t, drift.Manifest{Status: drift.ManifestFound, Path: c.Path, Edit: wantEdit}, m.Manifest)
			assert.Equal(t, c.Path, edit.Path)
			assert.Equal(t, string(after), string(edit.After))

			again, err := edit.Onto(edit.After)
			require.NoError(t, err)
			assert.Equal(t, string(edit.After), string(again), "applying the edit twice changes nothing more")

			// With the edit in place, Git says the target: nothing more to write.
			writeFile(t, filepath.Join(repo, c.Path), edit.After)
			m2 := c.migration()
			assert.Nil(t, checkoutOf(t, repo).Locate(&m2, locate.Hints{}))
			assert.Equal(t, drift.EditLabelAlreadySet, m2.Manifest.Edit)
		})
	}
}
