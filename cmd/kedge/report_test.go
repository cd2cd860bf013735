package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
)

// TestPrintReportNamesEveryRepository: a namespace applied from two
// repositories has a pull request in each, and the summary shows both;
// with one repository, the summary does not name it.
func TestPrintReportNamesEveryRepository(t *testing.T) {
	tests := []struct {
		name     string
		outcomes []reconcile.Outcome
		want     string
	}{
		{
			name: "one repository",
			outcomes: []reconcile.Outcome{
				{Namespace: "shop", Repo: "acme/gitops", Action: reconcile.ActOpen, State: prstate.PROpen, PR: 4},
			},
			want: "shop                     open           open #4\n" +
				"0 drifted workloads, 1 pushes, cycle took 2s\n",
		},
		{
			name: "a namespace in two repositories",
			outcomes: []reconcile.Outcome{
				{Namespace: "reviews", Repo: "acme/platform", Action: reconcile.ActOpen, State: prstate.PROpen, PR: 7},
				{Namespace: "reviews", Repo: "acme/team-reviews", Action: reconcile.ActUpdate, State: prstate.PROpen, PR: 2, Detail: "rebased"},
			},
			want: "reviews                  open           open #7 in acme/platform\n" +
				"reviews                  update         open #2 in acme/team-reviews (rebased)\n" +
				"0 drifted workloads, 1 pushes, cycle took 2s\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printReport(&out, &reconcile.Report{Outcomes: tc.outcomes, Pushes: 1, Duration: 2 * time.Second}, false)
			assert.Equal(t, tc.want, out.String())
		})
	}
}
