package plan_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/synth"
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

// BenchmarkBuildAfterChange is a service cycle's plan after one namespace's
// label changed: the index is the last cycle's and so are the edits of
// every other namespace (PriorEdits), as the reconciler passes them.
func BenchmarkBuildAfterChange(b *testing.B) {
	fleet, err := synth.New(synth.Spec{Seed: 1, Namespaces: 1000, Workloads: 4000, Pods: 20000, Drift: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	repo := b.TempDir()
	if _, err := fleet.WriteRepo(repo); err != nil {
		b.Fatal(err)
	}
	index, err := index.Read(repo, index.Options{})
	if err != nil {
		b.Fatal(err)
	}
	opts := plan.Options{RepoRoot: repo, RepoURLs: []string{synth.DefaultRepoURL}, Index: index}
	last, err := plan.Build(fleet.Set, opts)
	if err != nil {
		b.Fatal(err)
	}
	opts.PriorEdits = last.Repositories[0].PriorEdits
	changed := relabelled(fleet.Set, last)
	var res *plan.Result
	for b.Loop() {
		if res, err = plan.Build(changed, opts); err != nil {
			b.Fatal(err)
		}
	}
	if len(res.Plan.Workloads) <= len(last.Plan.Workloads) {
		b.Fatalf("the relabelled namespace added no drift: %d then %d workloads", len(last.Plan.Workloads), len(res.Plan.Workloads))
	}
}

// relabelled is set with the first namespace without drift that is on
// the default revision moved to revision 1-25-1, sharing everything else
// as a live source's Set does.
func relabelled(set *objects.Set, last *plan.Result) *objects.Set {
	drifts := map[string]bool{}
	for _, w := range last.Plan.Workloads {
		drifts[w.Namespace] = true
	}
	out := *set
	out.Namespaces = slices.Clone(set.Namespaces)
	for i, ns := range out.Namespaces {
		if drifts[ns.Name] || ns.Labels["istio-injection"] != "enabled" {
			continue
		}
		labels := maps.Clone(ns.Labels)
		delete(labels, "istio-injection")
		labels["istio.io/rev"] = "1-25-1"
		out.Namespaces[i].Labels = labels
		break
	}
	return &out
}
