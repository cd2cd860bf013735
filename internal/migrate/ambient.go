package migrate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// decideAmbient moves a namespace out of sidecars into ambient mode, in the
// order of Istio's migration guide (https://istio.io/latest/docs/ambient/migrate/):
// the cluster must run ztunnel and istio-cni with ambient, and a waypoint
// must already be Programmed where L7 policies need one; then one change
// sets istio.io/dataplane-mode=ambient (and istio.io/use-waypoint), removes
// istio-injection and istio.io/rev, and restarts the workloads, whose new
// pods come up without a sidecar.
func decideAmbient(set *objects.Set, p Policy, ns *corev1.Namespace) drift.Migration {
	m := drift.Migration{Namespace: ns.Name, From: p.From, To: p.To, Workloads: []drift.MigrationWorkload{}}
	if p.OptOutLabel != "" {
		if v, ok := ns.Labels[p.OptOutLabel]; ok && v != "false" {
			return blocked(m, drift.BlockOptedOut, "label "+p.OptOutLabel+"="+v)
		}
	}
	problems := append(ambient.ClusterProblems(set), ambient.NamespaceProblems(set, ns.Name)...)
	if p.Waypoint != "" {
		problems = append(problems, ambient.WaypointProblems(set, ns.Name, p.Waypoint)...)
	}
	if len(problems) > 0 {
		details := make([]string, 0, len(problems))
		for _, pr := range problems {
			details = append(details, pr.Detail)
		}
		return blocked(m, drift.BlockAmbientNotReady, strings.Join(details, "; "))
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
	return m
}
