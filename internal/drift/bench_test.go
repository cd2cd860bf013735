package drift_test

import (
	"fmt"
	"testing"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	benchNamespaces      = 5_000
	workloadsPerNS       = 4
	podsPerWorkload      = 5
	benchExpectedPods    = benchNamespaces * workloadsPerNS * podsPerWorkload
	benchExpectedWorkers = benchNamespaces * workloadsPerNS
)

// largeCluster is 5,000 namespaces × 4 workloads × 5 pods, with namespace
// labelling and pod states rotating so every code path is exercised.
func largeCluster() (*objects.Set, *mesh.Model) {
	c := newCluster()
	c.installs = append(c.installs, meshtest.IstiodRevision("1-24-1", image124))
	nsLabels := []map[string]string{
		enabled,
		{"istio.io/rev": "stable"},
		{"istio.io/rev": "1-24-1"},
		{"istio.io/dataplane-mode": "ambient"},
		nil,
	}
	podStates := [][]podOption{
		{injected("default", image124)},
		{injected("default", image123)},
		{injected("1-25-0", image125)},
		{injected("1-24-1", image124)},
		{native("default", image124)},
		nil,
	}
	state := 0
	for n := range benchNamespaces {
		ns := fmt.Sprintf("team-%04d", n)
		c.namespace(ns, nsLabels[n%len(nsLabels)])
		var owners []owned
		owners = append(owners,
			c.deployment(ns, "api", tmpl{}),
			c.deployment(ns, "web", tmpl{labels: map[string]string{"tier": "frontend"}}),
			c.statefulSet(ns, "db", tmpl{}))
		if n%5 == 0 {
			owners = append(owners, c.rollout(ns, "canary", tmpl{}))
		} else {
			owners = append(owners, c.daemonSet(ns, "agent", tmpl{}))
		}
		for i := range owners {
			for p := range podsPerWorkload {
				c.pod(ns, fmt.Sprintf("%s-%d-%d", ns, i, p), &owners[i], podStates[state%len(podStates)]...)
				state++
			}
		}
	}
	in := meshtest.Merge(c.installs...)
	set := c.set
	in.AddTo(&set)
	return &set, mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps)
}

func BenchmarkCompute(b *testing.B) {
	set, m := largeCluster()
	if len(set.Pods) != benchExpectedPods {
		b.Fatalf("generated %d pods, want %d", len(set.Pods), benchExpectedPods)
	}
	b.ReportAllocs()
	var plan drift.Plan
	for b.Loop() {
		plan = drift.Compute(set, m, drift.Options{Cluster: "bench"})
	}
	b.ReportMetric(float64(len(plan.Workloads)), "workloads")
	if len(plan.Workloads) == 0 || len(plan.Workloads) > benchExpectedWorkers {
		b.Fatalf("implausible plan: %d workloads", len(plan.Workloads))
	}
}
