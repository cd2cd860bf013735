package migrate

import (
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
)

const movesRoot = "../../testdata/migrate/moves"

// moveCase is testdata/migrate/moves/<case>/case.yaml: a move into ambient
// mode carrying policies over, or a move back to sidecars, on the checkout
// under repo/. Every file the move writes is compared with after/<path>
// byte for byte, and both checkouts are rendered with kustomize (the
// independent oracle of internal/testing/editcheck) to prove that the
// Namespace's labels and the policies' attachments are all that changes.
type moveCase struct {
	Namespace    string            `yaml:"namespace"`
	From         string            `yaml:"from"`
	To           string            `yaml:"to"`
	RemoveLabels []string          `yaml:"removeLabels"`
	SetLabels    map[string]string `yaml:"setLabels"`
	Carried      []carriedCase     `yaml:"carried"`
	// Refused, when set, is the start of the Detail of a move refused in
	// Git; nothing is written.
	Refused string `yaml:"refused"`
	// Paths of the refused findings, as the index places them.
	RefusedPaths []string `yaml:"refusedPaths"`
}

type carriedCase struct {
	Kind       string            `yaml:"kind"`
	Namespace  string            `yaml:"namespace"`
	Name       string            `yaml:"name"`
	Selector   map[string]string `yaml:"selector"`
	TargetRefs []string          `yaml:"targetRefs"`
	// Path is the file kedge must find it in.
	Path string `yaml:"path"`
}

func (c moveCase) migration() drift.Migration {
	m := drift.Migration{Namespace: c.Namespace, From: c.From, To: c.To, RemoveLabels: c.RemoveLabels, SetLabels: c.SetLabels}
	for _, p := range c.Carried {
		rw := &ambient.Rewrite{Selector: p.Selector, Waypoints: []string{c.Namespace + "/waypoint"}}
		for _, name := range p.TargetRefs {
			rw.TargetRefs = append(rw.TargetRefs, objects.PolicyTargetReference{Kind: "Service", Name: name})
		}
		m.Carried = append(m.Carried, ambient.Finding{Object: ambient.Ref{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name},
			Field: "spec.selector", Reason: "carried over: its rule needs the HTTP request", Step: ambient.StepAuthorization, Rewrite: rw})
	}
	return m
}

// changes are what the move may change: the Namespace's labels and each
// carried policy's attachment.
func (c moveCase) changes() []editcheck.Change {
	out := []editcheck.Change{{Kind: "Namespace", Name: c.Namespace, Apply: func(o map[string]any) map[string]any {
		labels, _, _ := unstructured.NestedStringMap(o, "metadata", "labels")
		if labels == nil {
			labels = map[string]string{}
		}
		for _, k := range c.RemoveLabels {
			delete(labels, k)
		}
		set := maps.Clone(c.SetLabels)
		if c.To != drift.Ambient {
			set = map[string]string{"istio.io/rev": c.To}
		}
		maps.Copy(labels, set)
		_ = unstructured.SetNestedStringMap(o, labels, "metadata", "labels")
		return o
	}}}
	for _, p := range c.Carried {
		refs := make([]any, len(p.TargetRefs))
		for i, name := range p.TargetRefs {
			refs[i] = map[string]any{"kind": "Service", "group": "", "name": name}
		}
		out = append(out, editcheck.Change{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, Apply: func(o map[string]any) map[string]any {
			unstructured.RemoveNestedField(o, "spec", "selector")
			_ = unstructured.SetNestedSlice(o, refs, "spec", "targetRefs")
			return o
		}})
	}
	return out
}

func TestGoldenAmbientMoves(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(movesRoot, "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var c moveCase
			readYAML(t, filepath.Join(dir, "case.yaml"), &c)
			repo := copyRepo(t, filepath.Join(dir, "repo"))
			ix, err := index.Read(repo, index.Options{})
			require.NoError(t, err)
			located, edits := Locate(ix, []drift.Migration{c.migration()}, func(string) locate.Hints { return locate.Hints{} })
			require.Len(t, located, 1)
			m := located[0]
			if c.Refused != "" {
				assert.Equal(t, drift.BlockAmbientNotReady, m.Blocked)
				assert.True(t, strings.HasPrefix(m.Detail, c.Refused), m.Detail)
				assert.Empty(t, edits, "nothing is written")
				assert.Empty(t, m.Carried)
				var paths []string
				for _, f := range m.Ambient {
					paths = append(paths, f.Path)
				}
				assert.Equal(t, c.RefusedPaths, paths)
				return
			}
			require.Empty(t, m.Blocked, m.Detail)
			for i, p := range c.Carried {
				assert.Equal(t, p.Path, m.Carried[i].Path, "the carried policy names its file")
			}

			// The files, as the namespace's branch carries them.
			attached := Attach(located, edit.Set{}, edits)
			files := map[string][]byte{}
			for _, f := range attached.Edits.Namespaces[c.Namespace] {
				files[f.Path] = f.After
			}
			require.NotEmpty(t, files)
			if *update {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, "after")))
				for p, data := range files {
					writeFile(t, filepath.Join(dir, "after", p), data)
				}
			}
			var want []string
			require.NoError(t, filepath.WalkDir(filepath.Join(dir, "after"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(filepath.Join(dir, "after"), p)
					want = append(want, filepath.ToSlash(rel))
				}
				return err
			}))
			got := make([]string, 0, len(files))
			for p := range files {
				got = append(got, p)
			}
			sort.Strings(got)
			assert.Equal(t, want, got, "the files the move writes")
			for _, p := range want {
				golden, err := os.ReadFile(filepath.Join(dir, "after", p))
				require.NoError(t, err)
				assert.Equal(t, string(golden), string(files[p]), p)
			}

			// Rendered before and after: only the intended changes.
			after := copyRepo(t, filepath.Join(dir, "repo"))
			for p, data := range files {
				writeFile(t, filepath.Join(after, p), data)
			}
			res, err := editcheck.CompareRepos(editcheck.Check{Before: repo, After: after, Changed: got, Changes: c.changes()})
			require.NoError(t, err)
			assert.Empty(t, res.Problems)
			for _, ch := range c.changes() {
				assert.True(t, res.Changed[ch.String()], "%s is changed as intended", ch)
			}

			// With the edits in Git, the same move writes nothing more.
			ix, err = index.Read(after, index.Options{})
			require.NoError(t, err)
			again, edits := Locate(ix, []drift.Migration{c.migration()}, func(string) locate.Hints { return locate.Hints{} })
			require.Empty(t, again[0].Blocked, again[0].Detail)
			assert.Equal(t, drift.EditLabelAlreadySet, again[0].Manifest.Edit)
			assert.Empty(t, Attach(again, edit.Set{}, edits).Edits.Namespaces[c.Namespace])
		})
	}
}

// A move the cluster refuses names, for each object, the file in Git that
// writes it: the policy's, the Namespace's own for its waypoint label, and
// none for what the repository does not write.
func TestLocateNamesTheFilesOfRefusals(t *testing.T) {
	repo := copyRepo(t, filepath.Join(movesRoot, "carry-plain", "repo"))
	ix, err := index.Read(repo, index.Options{})
	require.NoError(t, err)
	refusals := []ambient.Finding{
		{Object: ambient.Ref{Kind: "DaemonSet", Namespace: "istio-system", Name: "ztunnel"}, Reason: "ztunnel is ready on 1 of 2 nodes", Step: ambient.StepInstall},
		{Object: ambient.Ref{Kind: "Namespace", Name: "web"}, Field: "metadata.labels[istio.io/use-waypoint]", Reason: "waypoint web/waypoint does not exist", Step: ambient.StepWaypoints},
		{Object: ambient.Ref{Kind: "AuthorizationPolicy", Namespace: "web", Name: "get-only"}, Field: "spec.action", Reason: "action CUSTOM", Step: ambient.StepAuthorization},
	}
	m := drift.Migration{Namespace: "web", From: "1-24-0", To: "ambient", Blocked: drift.BlockAmbientNotReady, Ambient: refusals, Detail: ambient.Describe(refusals)}
	located, edits := Locate(ix, []drift.Migration{m}, func(string) locate.Hints { return locate.Hints{} })
	assert.Empty(t, edits)
	var paths []string
	for _, f := range located[0].Ambient {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"", "namespace.yaml", "policies.yaml"}, paths)
	assert.Equal(t, ambient.Describe(located[0].Ambient), located[0].Detail)
	assert.Contains(t, located[0].Detail, "AuthorizationPolicy web/get-only (policies.yaml) spec.action: action CUSTOM [Migrate policies")
	assert.Empty(t, m.Ambient[2].Path, "the migration given is left as it was")
}
