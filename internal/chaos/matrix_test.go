package chaos

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFaultMatrix plays every fault on its own world and holds each to the
// same rules: it converges within MaxCycles, with no duplicate, no lost
// commit, no unexplained branch and the end state the plan asks for. The
// table goes to the log and, when KEDGE_CHAOS_TABLE names a file, there.
// KEDGE_CHAOS_FULL kills the process at every step of every PR.
func TestFaultMatrix(t *testing.T) {
	// The kills at every step of every PR take a while; `make chaos` runs
	// them all, `go test` the first step of each kind.
	all := os.Getenv("KEDGE_CHAOS_FULL") != ""
	scenarios := Scenarios()
	scenarios = append(scenarios, KillScenarios(t, "first cycle", nil, all)...)
	scenarios = append(scenarios, KillScenarios(t, "change cycle", Changed, all)...)

	outcomes := make([]Outcome, len(scenarios))
	var mu sync.Mutex
	t.Run("faults", func(t *testing.T) {
		for i, s := range scenarios {
			t.Run(s.Name, func(t *testing.T) {
				t.Parallel()
				o := Run(t, s)
				mu.Lock()
				outcomes[i] = o
				mu.Unlock()
				assert.Positive(t, o.Cycles, "converges within %d cycles", MaxCycles)
				assert.Empty(t, o.Damage.Duplicates, "duplicates")
				assert.Empty(t, o.Damage.Lost, "lost commits")
				assert.Empty(t, o.Damage.Orphans, "unexplained branches")
				assert.Empty(t, o.Damage.Wrong, "end state")
				assert.Empty(t, o.Problems, "the run itself")
			})
		}
	})
	table := Table(outcomes)
	t.Log("\n" + table)
	if path := os.Getenv("KEDGE_CHAOS_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
