package memlimit

import (
	"os"
	"runtime/debug"
	"sync"
)

// packedGCPercent is the collector's pace while kedge builds what it keeps
// until it builds it again: the service's first cycle builds the index, the
// plan and the pull-request listings later cycles update, and a cycle whose
// inputs changed builds a new plan. They are allocated amid far more
// garbage (parsed files, rendered roots, pushes), and the runtime never
// moves an object: a span holding one kept object among freed ones stays in
// use. The less the heap grows between collections while they are built,
// the fewer spans they end up spread over, and the less memory the process
// holds from then on, for a first cycle and plans that take longer (the
// README's Memory paragraph has the figures). A cycle with nothing new to
// plan is not paced: it keeps nothing new, and at this pace its few
// allocations would cost it a collection of the whole heap.
const packedGCPercent = 25

// Packed sets the collector's pace to packedGCPercent until the returned
// function is called. Calls may nest or overlap (a first cycle builds a
// plan); the pace there was before the first of them is set back when the
// last of them is done. The limit Apply sets still bounds the peaks. With
// GOGC set, the pace is the operator's and Packed leaves it alone. Calling
// a returned function more than once is safe.
func Packed() (done func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	pacing.Lock()
	if pacing.depth == 0 {
		pacing.previous = debug.SetGCPercent(packedGCPercent)
	}
	pacing.depth++
	pacing.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			pacing.Lock()
			defer pacing.Unlock()
			pacing.depth--
			if pacing.depth == 0 {
				debug.SetGCPercent(pacing.previous)
			}
		})
	}
}

// pacing counts the Packed calls not yet done, and keeps the pace to set
// back after the last.
var pacing struct {
	sync.Mutex
	depth    int
	previous int
}
