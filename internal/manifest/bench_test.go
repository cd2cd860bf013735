package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generateRepo writes a deterministic GitOps checkout: apps made of a base
// and two overlays (8 files each) and plain directories (4 files each).
// It returns the number of files written.
func generateRepo(tb testing.TB, root string, apps, plainDirs int) int {
	tb.Helper()
	files := 0
	write := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
		files++
	}
	deployment := func(kind, name, ns string) string {
		nsLine := ""
		if ns != "" {
			nsLine = "\n  namespace: " + ns
		}
		return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata:
  name: %s%s
spec:
  selector:
    matchLabels:
      app: %[2]s
  template:
    metadata:
      labels:
        app: %[2]s
    spec:
      containers:
        - name: app
          image: example.com/%[2]s:1.0.0
`, kind, name, nsLine)
	}
	service := func(name, ns string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  ports:\n    - port: 80\n", name, ns)
	}
	for i := 0; i < apps; i++ {
		app := fmt.Sprintf("app-%04d", i)
		base := filepath.Join("apps", app, "base")
		write(filepath.Join(base, "kustomization.yaml"), "resources:\n  - deployment.yaml\n  - service.yaml\n  - configmap.yaml\n")
		write(filepath.Join(base, "deployment.yaml"), deployment("Deployment", app, ""))
		write(filepath.Join(base, "service.yaml"), fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\nspec:\n  ports:\n    - port: 80\n", app))
		write(filepath.Join(base, "configmap.yaml"), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  level: info\n", app))
		for _, env := range []string{"staging", "prod"} {
			overlay := filepath.Join("apps", app, env)
			write(filepath.Join(overlay, "kustomization.yaml"), fmt.Sprintf(
				"namespace: %s-%s\nnamePrefix: %s-\nresources:\n  - ../base\npatches:\n  - path: replicas.yaml\n", app, env, env))
			write(filepath.Join(overlay, "replicas.yaml"), fmt.Sprintf(
				"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: 2\n", app))
		}
	}
	for i := 0; i < plainDirs; i++ {
		name := fmt.Sprintf("svc-%04d", i)
		ns := fmt.Sprintf("team-%02d", i%50)
		dir := filepath.Join("plain", ns, name)
		write(filepath.Join(dir, "deployment.yaml"), deployment("Deployment", name, ns)+"---\n"+service(name, ns))
		write(filepath.Join(dir, "statefulset.yaml"), deployment("StatefulSet", name+"-db", ns))
		write(filepath.Join(dir, "service.yaml"), service(name+"-db", ns))
		write(filepath.Join(dir, "configmap.yaml"), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  a: b\n", name, ns))
	}
	return files
}

// BenchmarkBuildIndex indexes a generated 20,000-file checkout: 1,000 apps
// (3,000 kustomize roots) and 3,000 plain directories.
func BenchmarkBuildIndex(b *testing.B) {
	root := b.TempDir()
	if n := generateRepo(b, root, 1000, 3000); n != 20000 {
		b.Fatalf("generated %d files", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var ix *Index
	for i := 0; i < b.N; i++ {
		var err error
		ix, err = BuildIndex(root, IndexOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(ix.Problems) != 0 {
		b.Fatalf("problems: %v", ix.Problems[:1])
	}
	// 1,000 bases + 2,000 overlay renders + 6,000 plain workloads.
	if got := len(ix.Objects()); got != 9000 {
		b.Fatalf("indexed %d objects", got)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	runtime.KeepAlive(ix)
}

// TestConcurrentRendersIndexAsOneWorker checks that rendering roots on
// several workers indexes exactly what one worker does, in the same order
// (run it with -race to check kustomize's shared state too).
func TestConcurrentRendersIndexAsOneWorker(t *testing.T) {
	root := t.TempDir()
	generateRepo(t, root, 40, 20)
	build := func(procs int) *Index {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ix, err := BuildIndex(root, IndexOptions{})
		require.NoError(t, err)
		return ix
	}
	one, many := build(1), build(8)
	require.Empty(t, many.Problems)
	require.Len(t, many.Objects(), 40*3+20*2)
	assert.Equal(t, one.Objects(), many.Objects())
	assert.Equal(t, one.roots, many.roots)
}
