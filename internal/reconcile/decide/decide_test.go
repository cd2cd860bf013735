package decide

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
	w := &Work{State: target}
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
		facts      Facts
		want       Action
		wantPR     int
		duplicates int
		superseded int
	}{
		{"nothing at all", Facts{}, None, 0, 0, 0},
		{"new drift opens a PR", Facts{Work: w}, Open, 0, 0, 0},
		{"open PR is updated", Facts{Work: w, PRs: []forge.PR{pr(3, "open", oldTarget)}, BranchExists: true}, Update, 3, 0, 0},
		{"open PR edited by a person is left alone", Facts{Work: w, PRs: []forge.PR{pr(3, "open", target)}, BranchExists: true, Edited: true}, Edited, 3, 0, 0},
		{"drift gone closes the open PR", Facts{PRs: []forge.PR{pr(3, "open", target)}}, Close, 3, 0, 0},
		{"closed unmerged for the same target stays closed", Facts{Work: w, PRs: []forge.PR{pr(3, "closed", target)}}, ClosedIgnored, 3, 0, 0},
		{"closed unmerged by kedge for the same target: it comes back, a new PR opens",
			Facts{Work: w, PRs: []forge.PR{{Number: 3, State: "closed", Body: prstate.ClosedBody(pr(3, "open", target).Body, "closed-not-editable")}}}, Open, 0, 0, 0},
		{"closed unmerged for an old target: a new target opens a new PR", Facts{Work: w, PRs: []forge.PR{pr(3, "closed", oldTarget)}}, Open, 0, 0, 0},
		{"closed PR with a hand-edited state block counts as another target", Facts{Work: w, PRs: []forge.PR{{Number: 3, State: "closed", Body: "<!-- kedge:state {\"hash\":\"x\"} -->"}}}, Open, 0, 0, 0},
		{"merged for the same target is followed", Facts{Work: w, PRs: []forge.PR{mergedPR(3, target)}}, Merged, 3, 0, 0},
		{"merged and drift gone is followed", Facts{PRs: []forge.PR{mergedPR(3, target)}}, Merged, 3, 0, 0},
		{"orphan branch a person committed to is not taken over", Facts{Work: w, BranchExists: true, Edited: true}, Edited, 0, 0, 0},
		{"orphan kedge branch is adopted", Facts{Work: w, BranchExists: true}, Open, 0, 0, 0},
		{"the oldest open PR wins over duplicates", Facts{Work: w, PRs: []forge.PR{pr(3, "open", target), pr(5, "open", target)}}, Update, 3, 1, 0},
		{"an open PR wins over an older closed one", Facts{Work: w, PRs: []forge.PR{pr(2, "closed", target), pr(4, "open", target)}}, Update, 4, 0, 0},
		{"a new target after a merge opens a PR that takes over", Facts{Work: w, PRs: []forge.PR{mergedPR(3, oldTarget)}}, Open, 0, 0, 3},
		{"a new target after a PR closed unmerged takes nothing over", Facts{Work: w, PRs: []forge.PR{mergedPR(2, oldTarget), pr(3, "closed", oldTarget)}}, Open, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, _ := Namespaces([]Facts{tt.facts}, Gate{}, Limits{})
			d := ds[0]
			assert.Equal(t, tt.want, d.Action())
			if tt.wantPR == 0 {
				assert.Nil(t, d.PR())
			} else if assert.NotNil(t, d.PR()) {
				assert.Equal(t, tt.wantPR, d.PR().Number)
			}
			assert.Len(t, d.Duplicates(), tt.duplicates)
			if tt.superseded == 0 {
				assert.Nil(t, d.Superseded())
			} else if assert.NotNil(t, d.Superseded()) {
				assert.Equal(t, tt.superseded, d.Superseded().Number)
			}
		})
	}
}
