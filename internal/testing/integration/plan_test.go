package integration

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/plan"
)

// The demo cluster created through the API and read back by the informers
// must plan exactly as its snapshot does: same drift, same skips, same
// manifest locations, same edits.
func TestLivePlanMatchesSnapshotPlan(t *testing.T) {
	admin := controlPlane(t)
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	opts := assemble.PlanOptions(cfg, demoRepo)

	snapshot, err := snapshot.Read(demoCluster)
	require.NoError(t, err)
	want, err := plan.Build(snapshot, opts)
	require.NoError(t, err)
	require.NotEmpty(t, want.Plan.Workloads)
	require.NotEmpty(t, want.Plan.Skipped)
	require.NotEmpty(t, want.Edits.All())

	for _, id := range identities {
		t.Run(id.name, func(t *testing.T) {
			live, err := cluster.NewLive(cluster.LiveOptions{Config: id.restConfigFor(admin)})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			require.NoError(t, live.Start(ctx))
			require.NoError(t, live.WaitForSync(ctx))

			got, err := plan.Build(live.Set(), opts)
			require.NoError(t, err)
			assert.Equal(t, jsonOf(t, want.Plan), jsonOf(t, got.Plan), "plan JSON")
			// Beyond the JSON, workloads carry their metadata for GitOps
			// tracking; the live source drops kubectl's last-applied copy
			// of the whole object, which nothing reads.
			assert.Equal(t, withoutLastApplied(want.Plan), got.Plan)
			assert.Equal(t, editsOf(want), editsOf(got), "the edits kedge would commit")
		})
	}
}

func withoutLastApplied(p drift.Plan) drift.Plan {
	out := p
	out.Workloads = make([]drift.Workload, len(p.Workloads))
	for i, w := range p.Workloads {
		if _, ok := w.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
			w.Annotations = maps.Clone(w.Annotations)
			delete(w.Annotations, corev1.LastAppliedConfigAnnotation)
		}
		out.Workloads[i] = w
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// editsOf maps each edited file to its new content.
func editsOf(res *plan.Result) map[string]string {
	out := map[string]string{}
	for _, e := range res.Edits.All() {
		out[e.Path] = string(e.After)
	}
	return out
}
