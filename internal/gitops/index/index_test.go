package index_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
	"github.com/kedge-io/kedge/internal/yamledit"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// indexed is the part of an index.Object the index tests pin down.
type indexed struct {
	Kind, Namespace, Name string
	Root                  string
	Source                index.Source
}

func objectsOf(ix *index.Index) []indexed {
	var out []indexed
	for _, o := range ix.Objects() {
		out = append(out, indexed{o.Kind, o.Namespace, o.Name, o.Root, o.Source})
	}
	return out
}

func problemsOf(ix *index.Index) map[string]index.ProblemKind {
	out := map[string]index.ProblemKind{}
	for _, p := range ix.Problems {
		out[p.Path] = p.Kind
	}
	return out
}

func TestBuildIndexTracesRenderedObjectsToSources(t *testing.T) {
	deploy := func(path string, doc int, kind, name, ns string) index.Source {
		return index.Source{Path: path, Document: doc, APIVersion: "apps/v1", Kind: kind, Name: name, Namespace: ns}
	}
	tests := []struct {
		repo string
		want []indexed
	}{
		{
			repo: "kustomize-prefix",
			want: []indexed{
				{"Deployment", "shop", "prod-cart-v1", "apps/shop", deploy("apps/shop/deployment.yaml", 0, "Deployment", "cart", "")},
				// The ConfigMap before it is document 0 of the file.
				{"StatefulSet", "shop", "prod-redis-v1", "apps/shop", deploy("apps/shop/redis.yaml", 1, "StatefulSet", "redis", "")},
				// The cluster root includes the app: same objects, rendered again.
				{"Deployment", "shop", "prod-cart-v1", "clusters/prod", deploy("apps/shop/deployment.yaml", 0, "Deployment", "cart", "")},
				{"StatefulSet", "shop", "prod-redis-v1", "clusters/prod", deploy("apps/shop/redis.yaml", 1, "StatefulSet", "redis", "")},
			},
		},
		{
			repo: "shared-base",
			want: []indexed{
				{"Deployment", "", "web", "base", deploy("base/web.yaml", 0, "Deployment", "web", "")},
				{"Deployment", "", "worker", "base", deploy("base/worker.yaml", 0, "Deployment", "worker", "")},
				{"Deployment", "team-a", "web", "overlays/team-a", deploy("base/web.yaml", 0, "Deployment", "web", "")},
				{"Deployment", "team-a", "worker", "overlays/team-a", deploy("base/worker.yaml", 0, "Deployment", "worker", "")},
				{"Deployment", "team-b", "b-web", "overlays/team-b", deploy("base/web.yaml", 0, "Deployment", "web", "")},
				{"Deployment", "team-b", "b-worker", "overlays/team-b", deploy("base/worker.yaml", 0, "Deployment", "worker", "")},
				{"Deployment", "team-c", "web", "overlays/team-c", deploy("base/web.yaml", 0, "Deployment", "web", "")},
				{"Deployment", "team-c", "worker", "overlays/team-c", deploy("base/worker.yaml", 0, "Deployment", "worker", "")},
			},
		},
		{
			repo: "plain",
			want: []indexed{
				{"DaemonSet", "", "node-agent", "", deploy("apps/agent.yaml", 0, "DaemonSet", "node-agent", "")},
				{"Deployment", "", "billing", "", deploy("apps/billing.yaml", 0, "Deployment", "billing", "")},
				{"Deployment", "payments", "api", "", deploy("apps/multi.yaml", 1, "Deployment", "api", "payments")},
				{"StatefulSet", "payments", "ledger", "", deploy("apps/multi.yaml", 2, "StatefulSet", "ledger", "payments")},
			},
		},
		{
			repo: "remote",
			want: []indexed{
				{"Deployment", "local", "local-app", "apps/local", deploy("apps/local/deploy.yaml", 0, "Deployment", "local-app", "")},
			},
		},
		{
			repo: "symlink",
			want: []indexed{
				{"Deployment", "vault", "good", "", deploy("apps/good/deploy.yaml", 0, "Deployment", "good", "vault")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			ix, err := index.Read(gitopstest.FixtureRepo(tt.repo), index.Options{})
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.want, objectsOf(ix))
		})
	}
}

func TestBuildIndexReportsSkippedPaths(t *testing.T) {
	tests := []struct {
		repo string
		want map[string]index.ProblemKind
	}{
		{"kustomize-prefix", map[string]index.ProblemKind{}},
		{"plain", map[string]index.ProblemKind{
			"apps/broken.yaml": index.ProblemUnparsable,
			"docs/README.md":   index.ProblemNotYAML,
		}},
		{"helm", map[string]index.ProblemKind{
			"charts/podinfo/templates/deployment.yaml": index.ProblemHelmTemplate,
		}},
		{"remote", map[string]index.ProblemKind{
			"apps/remote-https": index.ProblemRemoteBase,
			"apps/remote-scp":   index.ProblemRemoteBase,
			// Remote only through its base.
			"apps/nested": index.ProblemRemoteBase,
			"apps/broken": index.ProblemBuildFailed,
		}},
		{"symlink", map[string]index.ProblemKind{
			"apps/leak.yaml":      index.ProblemOutsideRepo,
			"apps/linked-base":    index.ProblemOutsideRepo,
			"overlays/via-link":   index.ProblemOutsideRepo,
			"overlays/via-dotdot": index.ProblemOutsideRepo,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			ix, err := index.Read(gitopstest.FixtureRepo(tt.repo), index.Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, problemsOf(ix))
		})
	}
}

func TestBuildIndexNeverReadsOutsideTheCheckout(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("symlink"), index.Options{})
	require.NoError(t, err)
	for _, r := range ix.Roots() {
		for _, f := range r.Reads() {
			assert.NotContains(t, f, "..", "root %s read %s", r.Dir, f)
		}
	}
	for _, o := range ix.Objects() {
		assert.NotEqual(t, "secret-app", o.Name, "an object from outside the checkout was indexed")
	}
}

func TestBuildIndexPaths(t *testing.T) {
	tests := []struct {
		name    string
		paths   []string
		want    []string // indexed source files
		wantErr bool
	}{
		{name: "whole repository", want: []string{"apps/frontend/frontend.yaml", "apps/podinfo/deployment.yaml", "staging/podinfo/deployment.yaml"}},
		{name: "one sub-tree", paths: []string{"./staging"}, want: []string{"staging/podinfo/deployment.yaml"}},
		{name: "two sub-trees", paths: []string{"apps/frontend", "staging/"}, want: []string{"apps/frontend/frontend.yaml", "staging/podinfo/deployment.yaml"}},
		{name: "escaping path", paths: []string{"../.."}, wantErr: true},
		{name: "missing path", paths: []string{"nope"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := index.Read(gitopstest.FixtureRepo("flux"), index.Options{Paths: tt.paths})
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, o := range ix.Objects() {
				got = append(got, o.Source.Path)
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}

func TestBuildIndexRootBehindSymlinkedCheckout(t *testing.T) {
	link := filepath.Join(t.TempDir(), "checkout")
	abs, err := filepath.Abs(gitopstest.FixtureRepo("kustomize-prefix"))
	require.NoError(t, err)
	require.NoError(t, os.Symlink(abs, link))
	ix, err := index.Read(link, index.Options{})
	require.NoError(t, err)
	assert.Empty(t, ix.Problems)
	assert.Len(t, ix.Objects(), 4)
}

func TestWithOriginAnnotations(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"absent", "resources:\n- a.yaml\n"},
		{"other option set", "buildMetadata: [managedByLabel]\nresources:\n- a.yaml\n"},
		{"already set", "buildMetadata:\n- originAnnotations\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := index.WithOriginAnnotations([]byte(tt.in))
			require.NoError(t, err)
			docs, err := document.Parse(out)
			require.NoError(t, err)
			require.Len(t, docs, 1)
			assert.Contains(t, string(out), "originAnnotations")
		})
	}
}

func TestRemoteFilesOfEveryField(t *testing.T) {
	k := types.Kustomization{
		Crds:                  []string{"crds/local.yaml", "https://x/crd.yaml"},
		Configurations:        []string{"HTTP://x/c.yaml"},
		Generators:            []string{"https://x/g.yaml"},
		Transformers:          []string{"https://x/t.yaml", "transformers/local.yaml"},
		Validators:            []string{"https://x/v.yaml"},
		Patches:               []types.Patch{{Path: "https://x/p.yaml"}, {Patch: "apiVersion: v1\nkind: X\n"}},
		PatchesJson6902:       []types.Patch{{Path: "https://x/j.yaml"}},
		PatchesStrategicMerge: []types.PatchStrategicMerge{"https://x/s.yaml", "apiVersion: v1\nkind: X\nmetadata:\n  name: https://x\n"},
		Replacements:          []types.ReplacementField{{Path: "https://x/r.yaml"}},
		OpenAPI:               map[string]string{"path": "https://x/o.json"},
		ConfigMapGenerator: []types.ConfigMapArgs{{GeneratorArgs: types.GeneratorArgs{KvPairSources: types.KvPairSources{
			FileSources: []string{"key=https://x/f", "https://x/g", "local.txt"}, EnvSources: []string{"https://x/e.env"}}}}},
		SecretGenerator: []types.SecretArgs{{GeneratorArgs: types.GeneratorArgs{KvPairSources: types.KvPairSources{FileSources: []string{"https://x/s"}}}}},
		HelmCharts:      []types.HelmChart{{Repo: "https://x/charts", ValuesFile: "https://x/values.yaml"}},
	}
	assert.Equal(t, []string{"https://x/crd.yaml", "HTTP://x/c.yaml", "https://x/g.yaml", "https://x/t.yaml", "https://x/v.yaml",
		"https://x/p.yaml", "https://x/j.yaml", "https://x/s.yaml", "https://x/r.yaml", "https://x/o.json",
		"https://x/f", "https://x/g", "https://x/e.env", "https://x/s", "https://x/charts", "https://x/values.yaml"}, index.RemoteFiles(&k))
}

func TestIsRemoteRef(t *testing.T) {
	tests := []struct {
		ref  string
		want bool
	}{
		{"https://github.com/org/repo//base?ref=v1", true},
		{"git::https://example.com/org/repo", true},
		{"ssh://git@example.com/org/repo.git", true},
		{"git@github.com:org/repo.git//base", true},
		{"github.com/org/repo/base?ref=main", true},
		{"file:///srv/repo", true},
		{"GIT::http://127.0.0.1/x", true},
		{"Git::file:///x?ref=--upload-pack=touch%20/tmp/x", true},
		{"HTTPS://example.com/base", true},
		{"hg::https://example.com/repo", true},
		{"s3::https://bucket/x", true},
		{"GitHub.com/org/repo", true},
		{"user.name@example.com:org/repo", true},
		{" https://example.com/x", true},
		{"../base", false},
		{"base:v2/overlay", false},
		{"deployment.yaml", false},
		{"github-base/overlay", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			assert.Equal(t, tt.want, index.IsRemoteRef(tt.ref))
		})
	}
}

// TestDocumentIndicesAgreeWithYamledit pins the object numbering shared with
// yamledit.Target.Document: empty documents are skipped, List items count.
func TestDocumentIndicesAgreeWithYamledit(t *testing.T) {
	src := []byte(`# header
---
---
# only a comment
---
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: in-list
    spec:
      template:
        metadata:
          annotations:
            a: "1"
  - apiVersion: v1
    kind: Service
    metadata:
      name: svc
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: last
spec:
  template:
    metadata:
      annotations:
        a: "2"
`)
	docs, err := document.Parse(src)
	require.NoError(t, err)
	require.Len(t, docs, 3)
	for _, d := range docs {
		if !document.IsWorkload(d.APIVersion, d.Kind) {
			continue
		}
		got, err := yamledit.PodTemplateAnnotations(src, yamledit.Target{Kind: d.Kind, Name: d.Name, Document: d.Index})
		require.NoError(t, err, "%s %s at %d", d.Kind, d.Name, d.Index)
		assert.Equal(t, d.TemplateAnnotations, got)
	}
	assert.Equal(t, 0, docs[0].Index)
	assert.Equal(t, "in-list", docs[0].Name)
	assert.Equal(t, 2, docs[2].Index)
	assert.Equal(t, "last", docs[2].Name)
}

// TestBuildIndexReportsUnreadableFiles builds a checkout of files that
// cannot be read as manifests, each of which a real repository can hold, and
// requires that every one is reported, none stops the index or blocks it,
// and the good file next to them is still found.
func TestBuildIndexReportsUnreadableFiles(t *testing.T) {
	repo := t.TempDir()
	write := func(p, content string) {
		full := filepath.Join(repo, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	write("apps/good/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: good\n  namespace: good\n"+
		"spec:\n  template:\n    metadata:\n      labels:\n        app: good\n")
	write("apps/binary.yaml", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
	write("apps/tabs.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n\tname: tabs\n")
	write("apps/empty.yaml", "")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "apps", "dir.yaml"), 0o755))
	require.NoError(t, os.Symlink("nowhere.yaml", filepath.Join(repo, "apps", "dangling.yaml")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(repo, "apps", "pipe.yaml"), 0o644))
	write("missing-file/kustomization.yaml", "resources:\n  - missing.yaml\n")
	write("not-a-list/kustomization.yaml", "resources: {not: [a list\n")
	write("pipe-listed/kustomization.yaml", "resources:\n  - pipe.yaml\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(repo, "pipe-listed", "pipe.yaml"), 0o644))

	type result struct {
		ix  *index.Index
		err error
	}
	done := make(chan result, 1)
	go func() {
		ix, err := index.Read(repo, index.Options{})
		done <- result{ix, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("indexing blocked on a file")
	}
	require.NoError(t, res.err)
	assert.Equal(t, map[string]index.ProblemKind{
		"apps/binary.yaml":   index.ProblemUnparsable,
		"apps/tabs.yaml":     index.ProblemUnparsable,
		"apps/dangling.yaml": index.ProblemOutsideRepo,
		"apps/pipe.yaml":     index.ProblemNotRegular,
		"missing-file":       index.ProblemBuildFailed,
		"not-a-list":         index.ProblemBuildFailed,
		"pipe-listed":        index.ProblemBuildFailed,
		// The pipe is reported where it lies as well.
		"pipe-listed/pipe.yaml": index.ProblemNotRegular,
	}, problemsOf(res.ix))
	assert.Equal(t, []indexed{{"Deployment", "good", "good", "", index.Source{
		Path: "apps/good/deploy.yaml", APIVersion: "apps/v1", Kind: "Deployment", Name: "good", Namespace: "good",
	}}}, objectsOf(res.ix))
}

func TestParseDocumentsRefusesExcessiveAliasing(t *testing.T) {
	var laughs strings.Builder
	laughs.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [*a%d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d]\n", i, i, i-1)
	}
	tests := []struct {
		name    string
		src     string
		wantErr bool
	}{
		{"billion laughs", laughs.String() + "kind: Deployment\n", true},
		{"anchors as people use them", "x-env: &env [{name: A, value: b}]\nkind: Deployment\nspec:\n  env: *env\n  more: *env\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := document.Parse([]byte(tt.src))
			if tt.wantErr {
				assert.True(t, yamlguard.IsOverBudget(err), "%v", err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
