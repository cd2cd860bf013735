package plan_test

import (
	"testing"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/synth"
)

// BenchmarkBuild plans a synthetic fleet of 10,000 pods against its GitOps
// repository: drift, the index of the repository, locating every drifted
// workload and computing the edits. `make bench` measures the full-size
// fleet through the kedge binary.
func BenchmarkBuild(b *testing.B) {
	fleet, err := synth.New(synth.Spec{Seed: 1, Namespaces: 500, Workloads: 2000, Pods: 10000, Drift: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	repo := b.TempDir()
	files, err := fleet.WriteRepo(repo)
	if err != nil {
		b.Fatal(err)
	}
	want := fleet.Expect()
	opts := plan.Options{RepoRoot: repo, RepoURLs: []string{synth.DefaultRepoURL}}
	var res *plan.Result
	for b.Loop() {
		if res, err = plan.Build(fleet.Set, opts); err != nil {
			b.Fatal(err)
		}
	}
	if len(res.Plan.Workloads) != want.DriftedWorkloads {
		b.Fatalf("planned %d workloads, the fleet drifts %d", len(res.Plan.Workloads), want.DriftedWorkloads)
	}
	for _, w := range res.Plan.Workloads {
		if w.Manifest.Status != drift.ManifestFound {
			b.Fatalf("%s %s/%s: %s", w.Kind, w.Namespace, w.Name, w.Manifest.Status)
		}
	}
	b.ReportMetric(float64(len(res.Plan.Workloads)), "workloads")
	b.ReportMetric(float64(files), "repo-files")
	b.ReportMetric(float64(len(res.Edits.All())), "edited-files")
}
