// Package gcpace sets the garbage collector's pace for one phase of work
// and puts it back afterwards. kedge's two heavy phases want opposite
// things: decoding a snapshot keeps much of what it allocates (a tighter
// pace keeps the peak near the live heap), rendering kustomize roots keeps
// almost nothing (a looser pace saves collections that find nothing).
//
// The setting is process-wide: phases that overlap share it, the latest
// one wins, and the setting found before the first is restored after the
// last. A GOGC of "off" is left alone.
package gcpace

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

var state struct {
	sync.Mutex
	phases   int
	original int
}

// begin records the setting found before the first phase; it returns it.
// Called with state held.
func begin() int {
	if state.phases == 0 {
		state.original = debug.SetGCPercent(100)
		debug.SetGCPercent(state.original)
	}
	state.phases++
	return state.original
}

// end restores the original setting after the last phase. Called with
// state held.
func end() {
	state.phases--
	if state.phases == 0 {
		debug.SetGCPercent(state.original)
	}
}

// set applies percent unless GOGC is off. Called with state held.
func set(percent int) {
	if state.original >= 0 {
		debug.SetGCPercent(percent)
	}
}

// Percent sets GOGC to percent until done is called.
func Percent(percent int) (done func()) {
	state.Lock()
	defer state.Unlock()
	begin()
	set(percent)
	return onceLocked(end)
}

func onceLocked(f func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			state.Lock()
			defer state.Unlock()
			f()
		})
	}
}

// Headroom paces collections so that about bytes may be allocated past the
// live heap between two of them, whatever its size: a small live heap gets
// a large percentage (fewer collections), a large one a small percentage
// (a bounded peak), down to minPercent. The live heap changes as the phase
// goes on; call Adjust now and then.
type Headroom struct {
	bytes uint64
	// Done ends the phase.
	Done func()
}

// NewHeadroom starts a phase.
func NewHeadroom(bytes uint64) *Headroom {
	state.Lock()
	defer state.Unlock()
	h := &Headroom{bytes: bytes}
	begin()
	set(h.percent())
	h.Done = onceLocked(end)
	return h
}

// Adjust recomputes the pace from the live heap now.
func (h *Headroom) Adjust() {
	state.Lock()
	defer state.Unlock()
	if state.phases > 0 {
		set(h.percent())
	}
}

// percent is the GOGC that leaves h.bytes past the live heap. Called with
// state held.
func (h *Headroom) percent() int {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	live := uint64(4 << 20)
	if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > live {
		live = sample[0].Value.Uint64()
	}
	return max(int(h.bytes*100/live), minPercent)
}

// minPercent keeps a large live heap from being marked over and over.
const minPercent = 25
