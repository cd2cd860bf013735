package dashboard

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLargestFittingIsTheLargestLimitThatFits: whatever the rows' lengths
// (short rows first, long rows first, a header over the budget), the search
// returns what the largest fitting limit renders, as a scan of every limit
// finds it, and render(0) when none fits.
func TestLargestFittingIsTheLargestLimitThatFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2026))
	for round := range 2000 {
		rows := rng.IntN(300)
		lengths := make([]int, rows)
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(1+rng.IntN(400))
		}
		if round%3 == 0 {
			// A few long rows at the end make the share of the whole a
			// poor guess.
			for i := rows * 9 / 10; i < rows; i++ {
				lengths[i] *= 50
			}
		}
		header := rng.IntN(2000)
		budget := rng.IntN(20000)
		render := func(limit int) (string, error) {
			if limit < 0 || limit > rows {
				limit = rows
			}
			n := header
			for _, l := range lengths[:limit] {
				n += l
			}
			if limit < rows {
				n += 10 // "and N more"
			}
			return strings.Repeat("x", n), nil
		}
		want, _ := render(-1)
		if len(want) > budget {
			want, _ = render(0)
			for limit := rows - 1; limit >= 0; limit-- {
				if cut, _ := render(limit); len(cut) <= budget {
					want = cut
					break
				}
			}
		}
		got, err := largestFitting(render, rows, budget)
		require.NoError(t, err)
		require.Equal(t, len(want), len(got), "round %d: %d rows, header %d, budget %d", round, rows, header, budget)
	}
}
