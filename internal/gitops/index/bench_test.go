package index_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// BenchmarkBuildIndex indexes a generated 20,000-file checkout: 1,000 apps
// (3,000 kustomize roots) and 3,000 plain directories.
func BenchmarkBuildIndex(b *testing.B) {
	root := b.TempDir()
	if n := gitopstest.GenerateRepo(b, root, 1000, 3000); n != 20000 {
		b.Fatalf("generated %d files", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var ix *index.Index
	for i := 0; i < b.N; i++ {
		var err error
		ix, err = index.Read(root, index.Options{})
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
	gitopstest.GenerateRepo(t, root, 40, 20)
	build := func(procs int) *index.Index {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ix, err := index.Read(root, index.Options{})
		require.NoError(t, err)
		return ix
	}
	one, many := build(1), build(8)
	require.Empty(t, many.Problems)
	require.Len(t, many.Objects(), 40*3+20*2)
	assert.Equal(t, one.Objects(), many.Objects())
	assert.Equal(t, index.RootsOf(one), index.RootsOf(many))
}
