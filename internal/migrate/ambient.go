package migrate

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
)

// ambientLabels are the labels a namespace in ambient mode carries that
// the way back takes off.
var ambientLabels = []string{ambient.LabelDataplaneMode, ambient.LabelUseWaypoint, ambient.LabelUseWaypointNamespace}

// decideAmbient moves a namespace out of sidecars into ambient mode, in the
// order of Istio's migration guide (https://istio.io/latest/docs/ambient/migrate/):
// ambient.ToAmbient decides from every object the guide names whether it
// can move now, and which policies its pull request carries over; then one
// change sets istio.io/dataplane-mode=ambient (and istio.io/use-waypoint),
// removes istio-injection and istio.io/rev, and restarts the workloads,
// whose new pods come up without a sidecar.
func decideAmbient(cluster *ambient.Cluster, model *mesh.Model, p Policy, ns *corev1.Namespace) drift.Migration {
	m := drift.Migration{Namespace: ns.Name, From: p.From, To: p.To, Workloads: []drift.MigrationWorkload{}}
	if p.OptOutLabel != "" {
		if v, ok := ns.Labels[p.OptOutLabel]; ok && v != "false" {
			return blocked(m, drift.BlockOptedOut, "label "+p.OptOutLabel+"="+v)
		}
	}
	for _, key := range []string{mesh.LabelInjection, mesh.LabelRev} {
		if _, ok := ns.Labels[key]; ok {
			m.RemoveLabels = append(m.RemoveLabels, key)
		}
	}
	m.SetLabels = map[string]string{ambient.LabelDataplaneMode: ambient.ModeAmbient}
	if p.Waypoint != "" {
		m.SetLabels[ambient.LabelUseWaypoint] = p.Waypoint
	}
	revision, _ := TargetRevision(model, p.From)
	readiness := cluster.ToAmbient(ambient.Move{Namespace: ns.Name, Labels: movedLabels(ns.Labels, m), RootNamespace: model.RootNamespace(revision)})
	if !readiness.Ready() {
		m.RemoveLabels, m.SetLabels = nil, nil
		m.Ambient = readiness.Refusals
		return blocked(m, drift.BlockAmbientNotReady, ambient.Describe(readiness.Refusals))
	}
	m.Carried = readiness.Rewrites
	return m
}

// decideBack moves a namespace in ambient mode back to sidecars injected
// by p.To, the guide's rollback: istio.io/dataplane-mode and the waypoint
// labels go, istio.io/rev comes back, and the restarted pods are injected
// again. ambient.ToSidecar refuses while a policy of the namespace is
// attached to a waypoint, which sidecars do not enforce.
func decideBack(cluster *ambient.Cluster, model *mesh.Model, p Policy, ns *corev1.Namespace) drift.Migration {
	m := decide(model, p, ns)
	if m.Blocked != "" {
		m.RemoveLabels = nil
		return m
	}
	var remove []string
	for _, key := range ambientLabels {
		if _, ok := ns.Labels[key]; ok {
			remove = append(remove, key)
		}
	}
	d := model.Decide(ns.Name, relabelled(ns.Labels, p.To, remove), mesh.Template{})
	if !answers(d, m.Revision) {
		return blocked(m, drift.BlockNotInjected, "without "+ambient.LabelDataplaneMode+" and with "+mesh.LabelRev+"="+p.To+" "+whoAnswers(d))
	}
	m.RemoveLabels = remove
	readiness := cluster.ToSidecar(ambient.Move{Namespace: ns.Name, Labels: relabelled(ns.Labels, p.To, remove), RootNamespace: model.RootNamespace(m.Revision)})
	if !readiness.Ready() {
		m.RemoveLabels = nil
		m.Ambient = readiness.Refusals
		return blocked(m, drift.BlockSidecarNotReady, ambient.Describe(readiness.Refusals))
	}
	return m
}
