package chaos

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The checks of a one-repository row see a fault that spills over: a push
// failure in the platform repository, held to a row that says only the
// team repository is struck, is reported in both directions.
func TestConfinedRowsCatchASpilledFault(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three cycles against the git server")
	}
	o := Run(t, Scenario{
		Name:     "platform push fails, said to strike the team repository",
		Confined: Repos[1],
		Fault:    PushFailsIn(Repos[0], http.StatusServiceUnavailable),
		Fired:    pushFired(Repos[0], http.StatusServiceUnavailable),
	})
	assert.True(t, o.Damage.Zero(), "the world itself recovers: %+v", o.Damage)
	for _, want := range []string{
		Repos[0] + ": %d PRs not opened in the faulted cycle, whose fault struck " + Repos[1] + " only",
		Repos[1] + ": the fault held back no PR",
		Repos[0] + ": %d pushes in the cycle that repaired " + Repos[1],
		Repos[0] + ": a PR opened in the cycle that repaired " + Repos[1],
		Repos[1] + ": the cycle after the fault opened no PR there",
	} {
		assert.True(t, reported(o.Problems, want), "%q in %q", want, o.Problems)
	}
	assert.False(t, o.OK())
}

// reported tells whether a problem reads as format, whatever its count
// (%d).
func reported(problems []string, format string) bool {
	re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(format), "%d", `\d+`) + "$")
	for _, p := range problems {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}
