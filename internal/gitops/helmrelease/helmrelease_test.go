package helmrelease

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/restart"
)

// TestCompareRelease: the render of a HelmRelease after kedge's edit may
// differ from the one before by kedge's entry alone, and in it only by the
// intended workloads' patches.
func TestCompareRelease(t *testing.T) {
	entry := func(patches ...[2]string) map[string]any {
		var list []any
		for _, p := range patches {
			list = append(list, map[string]any{
				"target": map[string]any{"kind": "Deployment", "name": p[0]},
				"patch": "# kedge: restart\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + p[0] +
					"\nspec:\n  template:\n    metadata:\n      annotations:\n        kedge.io/restartedAt: \"" + p[1] + "\"\n",
			})
		}
		return map[string]any{"kustomize": map[string]any{"patches": list}}
	}
	images := map[string]any{"kustomize": map[string]any{"images": []any{map[string]any{"name": "web", "newTag": "2"}}}}
	helmRelease := func(interval string, postRenderers ...any) map[string]any {
		spec := map[string]any{"interval": interval}
		if len(postRenderers) > 0 {
			spec["postRenderers"] = postRenderers
		}
		return map[string]any{"kind": "HelmRelease", "spec": spec}
	}
	release := map[string]map[string]string{"Deployment/web": {"kedge.io/restartedAt": "new"}}
	id := restart.WorkloadID{Namespace: "shop", Kind: "HelmRelease", Name: "app"}
	tests := []struct {
		name          string
		before, after map[string]any
		wantErr       string
	}{
		{name: "entry added", before: helmRelease("5m", images), after: helmRelease("5m", images, entry([2]string{"web", "new"}))},
		{name: "entry updated, the other patch kept", before: helmRelease("5m", entry([2]string{"db", "1"}, [2]string{"web", "old"})),
			after: helmRelease("5m", entry([2]string{"db", "1"}, [2]string{"web", "new"}))},
		{name: "another workload's patch changed", before: helmRelease("5m", entry([2]string{"db", "1"})),
			after: helmRelease("5m", entry([2]string{"db", "2"}, [2]string{"web", "new"})), wantErr: "post-renderer patch of Deployment/db changes"},
		{name: "the wrong value", before: helmRelease("5m"), after: helmRelease("5m", entry([2]string{"web", "old"})), wantErr: `sets kedge.io/restartedAt to "old"`},
		{name: "another field", before: helmRelease("5m"), after: helmRelease("1m", entry([2]string{"web", "new"})), wantErr: "changes beyond kedge's post-renderer"},
		{name: "the team's entry dropped", before: helmRelease("5m", images), after: helmRelease("5m", entry([2]string{"web", "new"})), wantErr: "changes beyond kedge's post-renderer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compare(tt.before, tt.after, release, id)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
