package trim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// maxTrimmedPodBytes is the memory budget per cached pod: with 50,000 pods a
// kedge replica stays around 100 MiB.
const maxTrimmedPodBytes = 2048

// TestTrimmedPodMemory loads pods, decoded one by one as an informer does,
// into the same indexer an informer uses and measures the heap they keep.
func TestTrimmedPodMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("memory measurement is slow; run without -short")
	}
	fixture, err := os.ReadFile(filepath.Join("testdata", "pod-native-sidecar", "input.json"))
	require.NoError(t, err)

	const pods = 5000
	cases := []struct {
		name      string
		transform cache.TransformFunc
		budget    uint64
	}{
		{name: "untrimmed", transform: func(o any) (any, error) { return o, nil }},
		{name: "trimmed", transform: New().Transform, budget: maxTrimmedPodBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			perPod := measurePodCache(t, fixture, pods, tc.transform)
			t.Logf("%s: %d bytes/pod over %d pods", tc.name, perPod, pods)
			if tc.budget > 0 {
				assert.LessOrEqual(t, perPod, tc.budget, "trimmed pods exceed the memory budget")
			}
		})
	}
}

func measurePodCache(t *testing.T, fixture []byte, n int, transform cache.TransformFunc) uint64 {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	before := heapInUse()
	for i := range n {
		// Every pod differs in the fields that differ between real pods, so
		// no two cached pods can share those strings.
		raw := bytes.ReplaceAll(fixture, []byte("x2kqp"), fmt.Appendf(nil, "p%05d", i))
		raw = bytes.ReplaceAll(raw, []byte("0c6f5a2e-93d4"), fmt.Appendf(nil, "%08x-93d4", i))
		raw = bytes.ReplaceAll(raw, []byte("7d9c8b6f5d"), fmt.Appendf(nil, "%010x", i/10))
		var pod corev1.Pod
		require.NoError(t, json.Unmarshal(raw, &pod))
		obj, err := transform(&pod)
		require.NoError(t, err)
		require.NoError(t, store.Add(obj))
	}
	after := heapInUse()
	require.Len(t, store.List(), n)
	runtime.KeepAlive(store)
	if after < before {
		return 0
	}
	return (after - before) / uint64(n)
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
