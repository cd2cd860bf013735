package reconcile

import (
	"reflect"

	"github.com/kedge-io/kedge/internal/dashboard"
)

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

// priorRenders returns, per namespace of a repository, the last cycle's
// render of the very PR data each now has.
func (r *Reconciler) priorRenders(key string, states []*nsState) map[string]renderedPR {
	r.mu.Lock()
	last := r.renders[key]
	r.mu.Unlock()
	out := map[string]renderedPR{}
	for _, st := range states {
		if prev, ok := last[st.name]; ok && reflect.DeepEqual(prev.pr, st.pr) {
			out[st.name] = prev
		}
	}
	return out
}

// keepRenders replaces a repository's renders with this cycle's, those of
// the namespaces whose title, body and message were all rendered.
func (r *Reconciler) keepRenders(key string, states []*nsState) {
	kept := map[string]renderedPR{}
	for _, st := range states {
		if st.facts.work != nil && st.message != "" && st.title != "" {
			body := st.body
			// The PR listing's cache already holds this text when the PR
			// shows it: keep that copy, not a second one per namespace.
			if pr := st.decision.pr; pr != nil && pr.Body == body {
				body = pr.Body
			}
			kept[st.name] = renderedPR{pr: st.pr, title: st.title, body: body, message: st.message}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.renders[key] = kept
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
