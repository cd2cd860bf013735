package chaos

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Table renders outcomes as the fault matrix: fault, cycles to converge,
// duplicates, lost commits, orphan branches, and a verdict.
func Table(outcomes []Outcome) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tCYCLES TO CONVERGE\tDUPLICATES\tLOST COMMITS\tORPHAN BRANCHES\tRESULT")
	failed, ran := 0, 0
	for _, o := range outcomes {
		if o.Scenario == "" {
			continue // not run (filtered out with -run)
		}
		ran++
		cycles := "-"
		if o.Cycles > 0 {
			cycles = fmt.Sprint(o.Cycles)
		}
		result := "ok"
		if !o.OK() {
			result = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", o.Scenario, cycles, len(o.Damage.Duplicates), len(o.Damage.Lost), len(o.Damage.Orphans), result)
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\n%d faults, %d failed.\n", ran, failed)
	return b.String()
}
