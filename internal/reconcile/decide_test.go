package reconcile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/prstate"
)

func TestDecide(t *testing.T) {
	target := prstate.NewState("c", "shop", []drift.Workload{{Namespace: "shop", Kind: "Deployment", Name: "cart",
		Desired: drift.Desired{Revision: "1-25-0", Image: "docker.io/istio/proxyv2:1.25.0"}}})
	oldTarget := prstate.NewState("c", "shop", []drift.Workload{{Namespace: "shop", Kind: "Deployment", Name: "cart",
		Desired: drift.Desired{Revision: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0"}}})
	w := &work{state: target}
	merged := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	pr := func(n int, state string, s prstate.State) forge.PR {
		return forge.PR{Number: n, State: state, Body: "body\n" + s.Block()}
	}
	mergedPR := func(n int, s prstate.State) forge.PR {
		p := pr(n, "closed", s)
		p.Merged, p.MergedAt = true, &merged
		return p
	}
	tests := []struct {
		name       string
		facts      namespaceFacts
		want       Action
		wantPR     int
		duplicates int
		superseded int
	}{
		{"nothing at all", namespaceFacts{}, ActNone, 0, 0, 0},
		{"new drift opens a PR", namespaceFacts{work: w}, ActOpen, 0, 0, 0},
		{"open PR is updated", namespaceFacts{work: w, prs: []forge.PR{pr(3, "open", oldTarget)}, branchExists: true}, ActUpdate, 3, 0, 0},
		{"open PR edited by a person is left alone", namespaceFacts{work: w, prs: []forge.PR{pr(3, "open", target)}, branchExists: true, edited: true}, ActEdited, 3, 0, 0},
		{"drift gone closes the open PR", namespaceFacts{prs: []forge.PR{pr(3, "open", target)}}, ActClose, 3, 0, 0},
		{"closed unmerged for the same target stays closed", namespaceFacts{work: w, prs: []forge.PR{pr(3, "closed", target)}}, ActClosedIgnored, 3, 0, 0},
		{"closed unmerged by kedge for the same target: it comes back, a new PR opens",
			namespaceFacts{work: w, prs: []forge.PR{{Number: 3, State: "closed", Body: prstate.ClosedBody(pr(3, "open", target).Body, "closed-not-editable")}}}, ActOpen, 0, 0, 0},
		{"closed unmerged for an old target: a new target opens a new PR", namespaceFacts{work: w, prs: []forge.PR{pr(3, "closed", oldTarget)}}, ActOpen, 0, 0, 0},
		{"closed PR with a hand-edited state block counts as another target", namespaceFacts{work: w, prs: []forge.PR{{Number: 3, State: "closed", Body: "<!-- kedge:state {\"hash\":\"x\"} -->"}}}, ActOpen, 0, 0, 0},
		{"merged for the same target is followed", namespaceFacts{work: w, prs: []forge.PR{mergedPR(3, target)}}, ActMerged, 3, 0, 0},
		{"merged and drift gone is followed", namespaceFacts{prs: []forge.PR{mergedPR(3, target)}}, ActMerged, 3, 0, 0},
		{"orphan branch a person committed to is not taken over", namespaceFacts{work: w, branchExists: true, edited: true}, ActEdited, 0, 0, 0},
		{"orphan kedge branch is adopted", namespaceFacts{work: w, branchExists: true}, ActOpen, 0, 0, 0},
		{"the oldest open PR wins over duplicates", namespaceFacts{work: w, prs: []forge.PR{pr(3, "open", target), pr(5, "open", target)}}, ActUpdate, 3, 1, 0},
		{"an open PR wins over an older closed one", namespaceFacts{work: w, prs: []forge.PR{pr(2, "closed", target), pr(4, "open", target)}}, ActUpdate, 4, 0, 0},
		{"a new target after a merge opens a PR that takes over", namespaceFacts{work: w, prs: []forge.PR{mergedPR(3, oldTarget)}}, ActOpen, 0, 0, 3},
		{"a new target after a PR closed unmerged takes nothing over", namespaceFacts{work: w, prs: []forge.PR{mergedPR(2, oldTarget), pr(3, "closed", oldTarget)}}, ActOpen, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, _ := decide([]namespaceFacts{tt.facts}, waveGate{}, prLimits{})
			d := ds[0]
			assert.Equal(t, tt.want, d.action)
			if tt.wantPR == 0 {
				assert.Nil(t, d.pr)
			} else if assert.NotNil(t, d.pr) {
				assert.Equal(t, tt.wantPR, d.pr.Number)
			}
			assert.Len(t, d.duplicates, tt.duplicates)
			if tt.superseded == 0 {
				assert.Nil(t, d.superseded)
			} else if assert.NotNil(t, d.superseded) {
				assert.Equal(t, tt.superseded, d.superseded.Number)
			}
		})
	}
}
