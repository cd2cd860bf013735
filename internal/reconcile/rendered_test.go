package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
)

// TestRendersFollowTheirData takes a namespace's last title, body and
// commit message only while its PR data is the same, and renders again
// what the data changed; the answers equal fresh renders.
func TestRendersFollowTheirData(t *testing.T) {
	renderer, err := dashboard.NewRenderer("")
	require.NoError(t, err)
	r := New(Settings{Cluster: "prod"}, Deps{Renderer: renderer})
	web := drift.Workload{Namespace: "shop", Kind: "Deployment", Name: "web", Desired: drift.Desired{Revision: "1-25-0"}, Reasons: []drift.Reason{drift.ReasonRevision}}
	prFor := func(ns string, workloads ...drift.Workload) dashboard.NamespacePR {
		return dashboard.NamespacePR{Cluster: "prod", Namespace: ns, Branch: "kedge/prod/" + ns, BaseBranch: "main", Workloads: workloads}
	}
	c := &checkout{}
	targetsOf := func(prs []dashboard.NamespacePR) []target {
		var targets []target
		for _, pr := range prs {
			targets = append(targets, target{checkout: c, name: pr.Namespace, pr: pr, work: &work{}})
		}
		return targets
	}
	cycle := func(prs ...dashboard.NamespacePR) []rendered {
		targets := targetsOf(prs)
		prior := r.priorRenders(targets)
		var ps []prepared
		for _, tg := range targets {
			message, err := r.commitMessage(tg, prior[""])
			require.NoError(t, err)
			ps = append(ps, prepared{target: tg, work: tg.work, message: message})
		}
		rs, err := r.render(ps, prior)
		require.NoError(t, err)
		r.keepRenders(checkouts{list: []*checkout{c}}, nil, rs, make([]decide.Decision, len(rs)))
		return rs
	}
	fresh := func(rd rendered) [3]string {
		title, err := renderer.PRTitle(rd.pr)
		require.NoError(t, err)
		body, err := renderer.PRBody(rd.pr)
		require.NoError(t, err)
		message, err := renderer.CommitMessage(rd.pr)
		require.NoError(t, err)
		return [3]string{title, body, message}
	}

	cycle(prFor("shop", web), prFor("cart", web))
	steps := []struct {
		name   string
		prs    []dashboard.NamespacePR
		reused []string
	}{
		{"the same data", []dashboard.NamespacePR{prFor("shop", web), prFor("cart", web)}, []string{"shop", "cart"}},
		{"shop's workload moves on", []dashboard.NamespacePR{prFor("shop", withRevision(web, "1-26-0")), prFor("cart", web)}, []string{"cart"}},
		{"a namespace appears", []dashboard.NamespacePR{prFor("shop", withRevision(web, "1-26-0")), prFor("cart", web), prFor("ads", web)}, []string{"shop", "cart"}},
	}
	for _, step := range steps {
		var reused []string
		for ns := range r.priorRenders(targetsOf(step.prs))[""] {
			reused = append(reused, ns)
		}
		assert.ElementsMatch(t, step.reused, reused, step.name)
		for _, rd := range cycle(step.prs...) {
			assert.Equal(t, fresh(rd), [3]string{rd.title, rd.body, rd.message}, "%s: %s", step.name, rd.name)
		}
	}
}

func withRevision(w drift.Workload, rev string) drift.Workload {
	w.Desired.Revision = rev
	return w
}

// TestStableDashboardFollowsItsData renders the dashboard again whenever
// its data changed, and answers what a fresh render gives.
func TestStableDashboardFollowsItsData(t *testing.T) {
	renderer, err := dashboard.NewRenderer("")
	require.NoError(t, err)
	r := New(Settings{Cluster: "prod"}, Deps{Renderer: renderer})
	row := func(ns string, state prstate.PRState) dashboard.NamespaceStatus {
		return dashboard.NamespaceStatus{Namespace: ns, State: state}
	}
	for _, data := range []dashboard.ClusterDashboard{
		{Cluster: "prod", Namespaces: []dashboard.NamespaceStatus{row("shop", prstate.PRNotYetOpened)}},
		{Cluster: "prod", Namespaces: []dashboard.NamespaceStatus{row("shop", prstate.PRNotYetOpened)}},
		{Cluster: "prod", Namespaces: []dashboard.NamespaceStatus{row("shop", prstate.PRRefused)}},
		{Cluster: "prod", Namespaces: []dashboard.NamespaceStatus{row("shop", prstate.PRRefused), row("cart", prstate.PRNotYetOpened)}},
	} {
		got, err := r.stableDashboard(data)
		require.NoError(t, err)
		want, err := renderer.DashboardIssue(data)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
