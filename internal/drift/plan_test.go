package drift_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestWorkloadMetadataAndStart(t *testing.T) {
	c := newCluster()
	c.namespace("shop", enabled)
	cart := c.deployment("shop", "cart", tmpl{}, map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/cart"})
	// The oldest pod is in sync and must not count; of the drifted ones,
	// the one without a start time falls back to its creation time.
	c.pod("shop", "cart-in-sync", &cart, injected("default", image124), startedDaysAgo(30))
	c.pod("shop", "cart-a", &cart, injected("default", image123), startedDaysAgo(3))
	c.pod("shop", "cart-b", &cart, injected("default", image123), startedDaysAgo(5))
	web := c.rollout("shop", "web", tmpl{})
	c.pod("shop", "web-a", &web, injected("default", image123))

	plan := c.compute(drift.Options{})
	require.Len(t, plan.Workloads, 2)

	got := plan.Workloads[0]
	assert.Equal(t, "cart", got.Name)
	assert.Equal(t, "apps/v1", got.APIVersion)
	assert.Equal(t, map[string]string{"app": "cart", "kustomize.toolkit.fluxcd.io/name": "apps"}, got.Labels)
	assert.Equal(t, map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/cart"}, got.Annotations)
	require.NotNil(t, got.OldestDriftedPodStart)
	assert.Equal(t, startOfDay.Add(-5*24*time.Hour), *got.OldestDriftedPodStart)

	rollout := plan.Workloads[1]
	assert.Equal(t, "web", rollout.Name)
	assert.Equal(t, "argoproj.io/v1alpha1", rollout.APIVersion)
	require.NotNil(t, rollout.OldestDriftedPodStart)
	assert.Equal(t, startOfDay.Add(-24*time.Hour), *rollout.OldestDriftedPodStart, "creation time stands in for a missing start time")
}

func TestComputeIsDeterministic(t *testing.T) {
	build := func(reverse bool) drift.Plan {
		c := newCluster()
		c.namespace("shop", enabled)
		cart := c.deployment("shop", "cart", tmpl{})
		c.pods("shop", "cart", 5, &cart, injected("default", image123))
		c.pod("shop", "cart-x", &cart, injected("1-25-0", image125))
		c.pods("shop", "bare", 3, nil, injected("default", image123))
		if reverse {
			for i, j := 0, len(c.set.Pods)-1; i < j; i, j = i+1, j-1 {
				c.set.Pods[i], c.set.Pods[j] = c.set.Pods[j], c.set.Pods[i]
			}
		}
		return c.compute(drift.Options{})
	}
	assert.Equal(t, build(false), build(true))
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    drift.Options
		wantErr string
	}{
		{name: "defaults", opts: drift.Options{}},
		{name: "globs and kinds", opts: drift.Options{IncludeNamespaces: []string{"team-*"}, ExcludeNamespaces: []string{"team-[ab]"}, Kinds: []string{"deployment", "Rollout"}}},
		{name: "bad include glob", opts: drift.Options{IncludeNamespaces: []string{"team-["}}, wantErr: `include namespaces: pattern "team-["`},
		{name: "bad exclude glob", opts: drift.Options{ExcludeNamespaces: []string{"["}}, wantErr: `exclude namespaces: pattern "["`},
		{name: "unrestartable kind", opts: drift.Options{Kinds: []string{"CronJob"}}, wantErr: `kinds: "CronJob" is not one of Deployment, StatefulSet, DaemonSet, Rollout`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestPlanJSON pins the plan's JSON contract: field names, sorted lists,
// and [] rather than null.
func TestPlanJSON(t *testing.T) {
	tests := []struct {
		name  string
		build func(c *cluster)
	}{
		{name: "empty", build: func(c *cluster) {}},
		{name: "upgrade", build: func(c *cluster) {
			c.namespace("shop", enabled)
			cart := c.deployment("shop", "cart", tmpl{})
			c.pods("shop", "cart", 3, &cart, injected("default", image123), startedDaysAgo(12))
			c.namespace("pay", map[string]string{"istio.io/rev": "stable"})
			api := c.deployment("pay", "api", tmpl{})
			c.pods("pay", "api", 2, &api, injected("default", image124), startedDaysAgo(2))
			c.pod("pay", "api-missing", &api, startedDaysAgo(1))
			c.namespace("batch", enabled)
			nightly := c.cronJob("batch", "nightly", tmpl{})
			c.pod("batch", "nightly-29000000-abcde", &nightly, injected("default", image123))
		}},
		{name: "delivered", build: func(c *cluster) {
			c.namespace("shop", enabled)
			c.deployment("shop", "podinfo", tmpl{})
			primary := c.flaggerCanary("shop", "podinfo", "podinfo", tmpl{})
			c.pods("shop", "podinfo-primary", 2, &primary, injected("default", image123), startedDaysAgo(4))
			api := c.rolloutWithWorkloadRef("shop", "api", "api-template", tmpl{})
			c.pods("shop", "api", 2, &api, injected("default", image124+"@"+digest64), startedDaysAgo(3))
			c.pod("shop", "api-old", &api, injected("default", image123+"@"+digest64), startedDaysAgo(6))
			db := c.statefulSet("shop", "db", tmpl{})
			c.onDelete("StatefulSet")
			c.pods("shop", "db", 2, &db, injected("default", image123))
			cache := c.statefulSet("shop", "cache", tmpl{})
			c.ownedWorkload("StatefulSet", c.operatorRef("dragonflydb.io/v1alpha1", "Dragonfly", "cache", false))
			c.pods("shop", "cache", 1, &cache, injected("default", image123))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster()
			tt.build(c)
			got, err := json.MarshalIndent(c.compute(drift.Options{Cluster: "prod-eu-1"}), "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')

			golden := filepath.Join("testdata", tt.name, "plan.json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(got))
			assert.Equal(t, string(want), string(got))
		})
	}
}
