package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// Moves to ambient mode go through the waves like restarts, as the
// no-sidecar target, even for a namespace whose move restarts nothing: its
// PR's state records only the Namespace's move.
func TestAmbientMovesGoThroughWaves(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mergedAt := now.Add(-time.Hour)
	move := func(ns string) prstate.State {
		return prstate.NewState("c", ns, []drift.Workload{{Namespace: ns, Kind: "Namespace", Name: ns, Desired: drift.Desired{Revision: drift.Ambient}}})
	}
	relabelOnly := func(ns string, d Decision, prs ...forge.PR) wantedFor {
		return wantedFor{decision: d, facts: Facts{Namespace: ns, PRs: prs, Work: &Work{State: move(ns)}}}
	}
	open := forge.PR{Number: 1, State: "open", Body: move("canary").Block()}
	merged := forge.PR{Number: 2, State: "closed", Merged: true, MergedAt: &mergedAt, Body: move("canary").Block()}
	set := &objects.Set{Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "canary"}}, {ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}}
	gate := Gate{Waves: []waves.Wave{{Name: "canary", Names: []string{"canary"}}, {Name: "rest"}}, Set: set, Grace: 30 * time.Minute, Now: now}

	tests := []struct {
		name   string
		canary wantedFor
		want   Action
	}{
		{"the first wave's move is not opened yet: shop waits", relabelOnly("canary", Decision{action: Open}), None},
		{"the first wave's move is open: shop waits", relabelOnly("canary", Decision{action: Update, pr: &open}, open), None},
		{"the first wave's move is merged: shop opens", wantedFor{decision: Decision{action: Merged, pr: &merged}, facts: Facts{Namespace: "canary", PRs: []forge.PR{merged}}}, Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shop := relabelOnly("shop", Decision{action: Open})
			holds, rollouts := gate.holds([]Facts{tt.canary.facts, shop.facts}, []Decision{tt.canary.decision, shop.decision})
			got := shop.decision.action
			if holds[1] != nil {
				got = None
			}
			assert.Equal(t, tt.want, got)
			if assert.Len(t, rollouts, 1) {
				assert.Equal(t, waves.TargetKey("", ""), rollouts[0].Target, "the no-sidecar target")
			}
			if tt.want == None {
				assert.Equal(t, prstate.PRWaitingForWave, holds[1].state(shop.decision.action))
				assert.Contains(t, holds[1].detail, "wave canary comes first")
			}
		})
	}
}
