package chaos

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// matrixWorkers is how many scenarios run at once.
const matrixWorkers = 4

// TestFaultMatrix plays every fault on its own world and holds each to the
// same rules: it converges within MaxCycles, with no duplicate, no lost
// commit, no unexplained branch and the end state the plan asks for. The
// table goes to the log and, when KEDGE_CHAOS_TABLE names a file, there.
// KEDGE_CHAOS_FULL kills the process at every step of every PR.
func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault matrix takes minutes; make chaos runs it")
	}
	// The kills at every step of every PR take a while; `make chaos` runs
	// them all, `go test` the first step of each kind.
	all := os.Getenv("KEDGE_CHAOS_FULL") != ""
	scenarios := Scenarios()
	edited := Then(Opened, PersonCommitsOn("orders"), BaseMoved)
	// A process killed by SIGKILL gets no chance to clean up; one whose
	// context is cancelled is the cheaper stand-in for the other cycles.
	// `make chaos` runs every cycle both ways.
	scenarios = append(scenarios, KillScenarios(t, "first cycle", nil, all, true)...)
	scenarios = append(scenarios, KillScenarios(t, "change cycle", Changed, all, false)...)
	scenarios = append(scenarios, KillScenarios(t, "edited cycle", edited, all, false)...)
	if all {
		scenarios = append(scenarios, KillScenarios(t, "first cycle", nil, all, false)...)
		scenarios = append(scenarios, KillScenarios(t, "change cycle", Changed, all, true)...)
		scenarios = append(scenarios, KillScenarios(t, "edited cycle", edited, all, true)...)
	}

	outcomes := make([]Outcome, len(scenarios))
	t.Run("faults", func(t *testing.T) {
		// Scenarios wait on retries and on git's processes as much as they
		// compute: run more of them at once than there are cores.
		work := make(chan int)
		var wg sync.WaitGroup
		for range matrixWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					s := scenarios[i]
					t.Run(s.Name, func(t *testing.T) {
						o := Run(t, s)
						outcomes[i] = o
						assert.Positive(t, o.Cycles, "converges within %d cycles", MaxCycles)
						assert.Empty(t, o.Damage.Duplicates, "duplicates")
						assert.Empty(t, o.Damage.Lost, "lost commits")
						assert.Empty(t, o.Damage.Orphans, "unexplained branches")
						assert.Empty(t, o.Damage.Wrong, "end state")
						assert.Empty(t, o.Problems, "the run itself")
					})
				}
			}()
		}
		for i := range scenarios {
			work <- i
		}
		close(work)
		wg.Wait()
	})
	table := Table(outcomes)
	t.Log("\n" + table)
	if path := os.Getenv("KEDGE_CHAOS_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
