package manifest

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// indexHeadroom is how much the index may allocate between two garbage
// collections. Rendering allocates about 1 MiB per kustomize root and keeps
// almost none of it; with the default GOGC and a small live heap the
// collector would run every few megabytes and take a fifth of the time.
const indexHeadroom = 256 << 20

var headroom struct {
	sync.Mutex
	users    int
	previous int
}

// withGCHeadroom lets the heap grow by at least indexHeadroom past the live
// heap before a collection, until restore is called. It never lowers the
// configured GOGC, so a large live heap (a service holding a big cluster)
// keeps its usual pace; overlapping callers restore the setting once.
func withGCHeadroom() (restore func()) {
	headroom.Lock()
	defer headroom.Unlock()
	headroom.users++
	if headroom.users == 1 {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		live := uint64(1 << 20)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > live {
			live = sample[0].Value.Uint64()
		}
		percent := int(indexHeadroom * 100 / live)
		headroom.previous = debug.SetGCPercent(-1)
		if headroom.previous < 0 || headroom.previous >= percent {
			percent = headroom.previous
		}
		debug.SetGCPercent(percent)
	}
	return func() {
		headroom.Lock()
		defer headroom.Unlock()
		headroom.users--
		if headroom.users == 0 {
			debug.SetGCPercent(headroom.previous)
		}
	}
}
