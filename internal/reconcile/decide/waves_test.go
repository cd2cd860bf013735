package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// TestGateWaves holds each namespace's decision against the waves of its
// targets: canary is wave 1, shop wave 2. Each row names the facts it
// turns on.
func TestGateWaves(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mergedAt := now.Add(-time.Hour)
	const newImage, oldImage = "docker.io/istio/proxyv2:1.25.0", "docker.io/istio/proxyv2:1.24.0"
	workload := func(ns, image string) drift.Workload {
		return drift.Workload{Namespace: ns, Kind: "Deployment", Name: "api", Desired: drift.Desired{Revision: "default", Image: image}}
	}
	body := func(ns, image string) string {
		return prstate.NewState("c", ns, []drift.Workload{workload(ns, image)}).Block()
	}
	open := func(ns, image string) forge.PR { return forge.PR{Number: 1, State: "open", Body: body(ns, image)} }
	closed := func(ns, image string) forge.PR { return forge.PR{Number: 2, State: "closed", Body: body(ns, image)} }
	merged := func(ns, image string) forge.PR {
		return forge.PR{Number: 3, State: "closed", Merged: true, MergedAt: &mergedAt, Body: body(ns, image)}
	}
	state := func(ns string, image string, d Decision, prs ...forge.PR) wantedFor {
		f := Facts{Namespace: ns, PRs: prs}
		if image != "" {
			f.Work = &Work{Workloads: []drift.Workload{workload(ns, image)}}
		}
		return wantedFor{facts: f, decision: d}
	}
	set := &objects.Set{Namespaces: []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "canary"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
	}}
	ws := []waves.Wave{{Name: "canary", Names: []string{"canary"}}, {Name: "rest"}}

	mergedPR := merged("canary", newImage)
	openOld := open("shop", oldImage)
	tests := []struct {
		name   string
		field  string
		canary wantedFor
		shop   wantedFor
		want   Action
		// deployed puts canary's Deployment in the cluster.
		deployed bool
	}{
		{"first wave not started: shop waits", "no PR's state block carries the target",
			state("canary", newImage, Decision{action: Open}), state("shop", newImage, Decision{action: Open}), None, false},
		{"first wave open: shop waits", "PR state open",
			state("canary", newImage, Decision{action: Update, pr: ptrTo(open("canary", newImage))}, open("canary", newImage)),
			state("shop", newImage, Decision{action: Open}), None, false},
		{"first wave closed unmerged: skipped, shop opens", "PR state closed, merged false",
			state("canary", newImage, Decision{action: ClosedIgnored}, closed("canary", newImage)),
			state("shop", newImage, Decision{action: Open}), Open, false},
		{"first wave merged, workload gone: shop opens", "PR merged_at; Deployment absent",
			state("canary", "", Decision{action: Merged, pr: &mergedPR}, mergedPR),
			state("shop", newImage, Decision{action: Open}), Open, false},
		{"first wave merged, still drifting: shop waits", "PR merged_at; plan still lists the workload",
			state("canary", newImage, Decision{action: Merged, pr: &mergedPR}, mergedPR),
			state("shop", newImage, Decision{action: Open}), None, true},
		{"new target mid-wave: shop's open PR for the old target is not updated", "open PR's state block has the old image",
			state("canary", newImage, Decision{action: Open}),
			state("shop", newImage, Decision{action: Update, pr: &openOld}, openOld), None, false},
		{"open PR already for the target keeps being updated", "open PR's state block has the target",
			state("canary", newImage, Decision{action: Open}),
			state("shop", newImage, Decision{action: Update, pr: ptrTo(open("shop", newImage))}, open("shop", newImage)), Update, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plan drift.Plan
			if tt.canary.facts.Work != nil {
				plan.Workloads = append(plan.Workloads, workload("canary", newImage))
			}
			cluster := *set
			if tt.deployed {
				cluster.Deployments = []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "canary", Name: "api"}}}
			}
			holds, rollouts := Gate{Waves: ws, Set: &cluster, Plan: plan, Grace: 30 * time.Minute, Now: now}.holds([]Facts{tt.canary.facts, tt.shop.facts}, []Decision{tt.canary.decision, tt.shop.decision})
			got := tt.shop.decision.action
			if holds[1] != nil {
				got = None
			}
			assert.Equal(t, tt.want, got, "reads %s", tt.field)
			assert.Len(t, rollouts, 1)
			if tt.want == None {
				assert.Contains(t, holds[1].detail, "wave canary comes first")
			}
		})
	}
}

// wantedFor is a namespace's facts and the decision they ask for before
// the waves have their say.
type wantedFor struct {
	facts    Facts
	decision Decision
}

func ptrTo[T any](v T) *T { return &v }
