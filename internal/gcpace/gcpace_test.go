package gcpace

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestPhasesRestoreTheSettingFoundBeforeTheFirst(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(80))

	tight := Percent(50)
	assert.Equal(t, 50, current())
	loose := NewHeadroom(1 << 30)
	assert.Greater(t, current(), 80, "a small live heap gets a large percentage")
	tight()
	tight() // twice is once
	assert.Greater(t, current(), 80, "the later phase still runs")
	loose.Done()
	assert.Equal(t, 80, current())
}

func TestHeadroomIsBytesPastTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1000))
	h := NewHeadroom(1) // one byte past any live heap: as often as allowed
	assert.Equal(t, minPercent, current())
	h.Adjust()
	assert.Equal(t, minPercent, current())
	h.Done()
	assert.Equal(t, 1000, current())

	h = NewHeadroom(1 << 40)
	assert.Greater(t, current(), 1000)
	h.Done()
	assert.Equal(t, 1000, current())
}

func TestOffStaysOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	done := Percent(50)
	assert.Equal(t, -1, current())
	h := NewHeadroom(1 << 30)
	h.Adjust()
	assert.Equal(t, -1, current())
	h.Done()
	done()
	assert.Equal(t, -1, current())
}
