package index_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestPlainKustomizationsIndexAsKustomizeRendersThem indexes every
// repository under testdata, and a generated one, twice: reading plain
// kustomizations directly and rendering every root with kustomize. Both
// must find the same workloads at the same sources, the same problems and
// the same files read by each root.
func TestPlainKustomizationsIndexAsKustomizeRendersThem(t *testing.T) {
	generated := t.TempDir()
	gitopstest.GenerateRepo(t, generated, 30, 10)
	writePlainLayouts(t, generated)
	repos := []string{generated}
	for _, pattern := range []string{"../../../testdata/*/*/repo", "../../../testdata/demo/gitops", "../../../testdata/bad/repo/*/files"} {
		found, err := filepath.Glob(pattern)
		require.NoError(t, err)
		repos = append(repos, found...)
	}
	require.Greater(t, len(repos), 20)

	plainRoots := 0
	for _, repo := range repos {
		name := strings.TrimPrefix(repo, "../../../testdata/")
		if repo == generated {
			name = "generated"
		}
		t.Run(name, func(t *testing.T) {
			fast, err := index.Read(repo, index.Options{})
			require.NoError(t, err)
			slow, err := index.Read(repo, index.Options{KustomizeEveryRoot: true})
			require.NoError(t, err)

			assert.Equal(t, sortedObjects(slow.Objects()), sortedObjects(fast.Objects()))
			assert.Equal(t, slow.Problems, fast.Problems)
			require.Equal(t, len(index.RootsOf(slow)), len(index.RootsOf(fast)))
			for dir, want := range index.RootsOf(slow) {
				got := index.RootsOf(fast)[dir]
				require.NotNil(t, got, dir)
				assert.Equal(t, want.Reads(), got.Reads(), "files %s reads", dir)
				assert.Equal(t, want.Includes(), got.Includes(), "kustomizations %s includes", dir)
				assert.Equal(t, want.Problem, got.Problem, dir)
			}
			plainRoots += index.PlainRoots(fast)
		})
	}
	assert.Greater(t, plainRoots, 50, "roots read without kustomize")
}

// writePlainLayouts adds the plain shapes kustomize has opinions on: a
// namespace set above one set below, nested directories, a file listed
// through a symlink, a List, two documents with one identity, a document
// without a name, and a directory without a kustomization.
func writePlainLayouts(t *testing.T, root string) {
	t.Helper()
	deploy := func(name, ns string) string {
		meta := "  name: " + name + "\n"
		if ns != "" {
			meta += "  namespace: " + ns + "\n"
		}
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n" + meta +
			"spec:\n  template:\n    metadata:\n      annotations:\n        a: \"1\"\n    spec:\n      containers: [{name: c, image: i}]\n"
	}
	files := map[string]string{
		"plain/inner/kustomization.yaml":  "namespace: inner\nresources:\n  - app.yaml\n",
		"plain/inner/app.yaml":            deploy("inner-app", "written"),
		"plain/outer/kustomization.yaml":  "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: outer\nresources:\n  - ../inner\n  - own.yaml\n",
		"plain/outer/own.yaml":            deploy("own", "") + "---\n" + deploy("second", "x"),
		"plain/nons/kustomization.yaml":   "resources:\n  - ../inner/app.yaml\n  - svc.yaml\n",
		"plain/nons/svc.yaml":             "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
		"plain/list/kustomization.yaml":   "resources:\n  - list.yaml\n",
		"plain/list/list.yaml":            "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(deploy("in-list", "l"), "\n", "\n  ") + "\n",
		"plain/dup/kustomization.yaml":    "namespace: same\nresources:\n  - a.yaml\n  - b.yaml\n",
		"plain/dup/a.yaml":                deploy("twin", "one"),
		"plain/dup/b.yaml":                deploy("twin", "two"),
		"plain/noname/kustomization.yaml": "resources:\n  - a.yaml\n",
		"plain/noname/a.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {}\n",
		"plain/nodir/kustomization.yaml":  "resources:\n  - sub\n",
		"plain/nodir/sub/a.yaml":          deploy("sub", "n"),
		"plain/link/kustomization.yaml":   "resources:\n  - linked.yaml\n",
	}
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink("../inner/app.yaml", filepath.Join(root, "plain/link/linked.yaml")))
}

func sortedObjects(objs []index.Object) []index.Object {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if a.Root != b.Root {
			return a.Root < b.Root
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return objs
}
