package reconcile

import (
	"reflect"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
)

// rendered is a prepared target with its PR's title and body; both are
// empty without work.
type rendered struct {
	prepared
	title, body string
}

// renderedPR is what a namespace's PR data rendered to. The renderer is a
// function of that data alone (namespacePR leaves the clock out), so the
// same data renders the same title, body and commit message again.
type renderedPR struct {
	pr                   dashboard.NamespacePR
	title, body, message string
}

// renderedDashboard is the dashboard's render without the cycle's time,
// from the data it was rendered from.
type renderedDashboard struct {
	data   dashboard.ClusterDashboard
	stable string
}

// render renders the title and body of every prepared target with work,
// in order, or takes the last cycle's render of the same data.
func (r *Reconciler) render(ps []prepared, prior map[string]map[string]renderedPR) ([]rendered, error) {
	out := make([]rendered, 0, len(ps))
	for _, p := range ps {
		if p.work == nil {
			out = append(out, rendered{prepared: p})
			continue
		}
		if prev, ok := prior[p.checkout.key][p.name]; ok {
			out = append(out, rendered{prepared: p, title: prev.title, body: prev.body})
			continue
		}
		title, err := r.deps.Renderer.PRTitle(p.pr)
		if err != nil {
			return nil, err
		}
		body, err := r.deps.Renderer.PRBody(p.pr)
		if err != nil {
			return nil, err
		}
		out = append(out, rendered{prepared: p, title: title, body: body})
	}
	return out, nil
}

// priorRenders returns, per checkout key and namespace, the last cycle's
// render of the very PR data each target now has.
func (r *Reconciler) priorRenders(targets []target) map[string]map[string]renderedPR {
	r.mu.Lock()
	last := r.renders
	r.mu.Unlock()
	out := map[string]map[string]renderedPR{}
	for _, t := range targets {
		key := t.checkout.key
		if out[key] == nil {
			out[key] = map[string]renderedPR{}
		}
		if prev, ok := last[key][t.name]; ok && reflect.DeepEqual(prev.pr, t.pr) {
			out[key][t.name] = prev
		}
	}
	return out
}

// keepRenders replaces the renders of every checkout that got as far as
// rendering with this cycle's: those of the namespaces whose title, body
// and message were all rendered. decisions are rs's; held lists the keys
// of the checkouts held back, whose renders are kept as they were.
func (r *Reconciler) keepRenders(cs checkouts, held map[string]bool, rs []rendered, decisions []decide.Decision) {
	kept := map[string]map[string]renderedPR{}
	for _, c := range cs.list {
		if !held[c.key] {
			kept[c.key] = map[string]renderedPR{}
		}
	}
	for i, t := range rs {
		if _, ok := kept[t.checkout.key]; !ok || t.work == nil || t.message == "" || t.title == "" {
			continue
		}
		body := t.body
		// The PR listing's cache already holds this text when the PR
		// shows it: keep that copy, not a second one per namespace.
		if pr := decisions[i].PR(); pr != nil && pr.Body == body {
			body = pr.Body
		}
		kept[t.checkout.key][t.name] = renderedPR{pr: t.pr, title: t.title, body: body, message: t.message}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, renders := range kept {
		r.renders[key] = renders
	}
}

// stableDashboard renders the dashboard without the cycle's time, or
// takes the last cycle's render of the same data.
func (r *Reconciler) stableDashboard(data dashboard.ClusterDashboard) (string, error) {
	r.mu.Lock()
	last := r.dashboard
	r.mu.Unlock()
	if last != nil && reflect.DeepEqual(last.data, data) {
		return last.stable, nil
	}
	stable, err := r.deps.Renderer.DashboardIssue(data)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.dashboard = &renderedDashboard{data: data, stable: stable}
	r.mu.Unlock()
	return stable, nil
}
