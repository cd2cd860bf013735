package trim

import (
	"encoding/json"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kedge-io/kedge/internal/testing/synth"
)

// BenchmarkTrimmedPodCache loads the pods of a synthetic fleet, each
// decoded on its own as an informer decodes it, through the transform into
// the indexer an informer uses, and reports the heap the cache keeps per
// pod (the approach of TestTrimmedPodMemory, on a fleet's varied pods: three
// revisions, native and classic sidecars, pods without one).
func BenchmarkTrimmedPodCache(b *testing.B) {
	fleet, err := synth.New(synth.Spec{Seed: 1, Namespaces: 500, Workloads: 2000, Pods: 10000, Drift: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	wire := make([][]byte, len(fleet.Pods))
	for i := range fleet.Pods {
		if wire[i], err = json.Marshal(&fleet.Pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	fleet = nil
	runtime.GC()

	cases := []struct {
		unit      string
		transform func() cache.TransformFunc
	}{
		{"trimmed-B/pod", func() cache.TransformFunc { return New().Transform }},
		{"untrimmed-B/pod", func() cache.TransformFunc { return func(o any) (any, error) { return o, nil } }},
	}
	perPod := make([]uint64, len(cases))
	for b.Loop() {
		for i, c := range cases {
			perPod[i] = cachedBytesPerPod(b, wire, c.transform())
		}
	}
	for i, c := range cases {
		b.ReportMetric(float64(perPod[i]), c.unit)
	}
}

func cachedBytesPerPod(b *testing.B, wire [][]byte, transform cache.TransformFunc) uint64 {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	before := heapInUse()
	for _, raw := range wire {
		var pod corev1.Pod
		if err := json.Unmarshal(raw, &pod); err != nil {
			b.Fatal(err)
		}
		obj, err := transform(&pod)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Add(obj); err != nil {
			b.Fatal(err)
		}
	}
	after := heapInUse()
	if len(store.List()) != len(wire) {
		b.Fatalf("cached %d pods, want %d", len(store.List()), len(wire))
	}
	runtime.KeepAlive(store)
	if after < before {
		return 0
	}
	return (after - before) / uint64(len(wire))
}
