package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kedge-io/kedge/internal/drift"
)

// step is one measured child process.
type step struct {
	name    string
	command []string
	// check validates the first run's output.
	check func(outcome) error
}

// measurePlan runs `kedge plan` on the fleet's snapshot, with and without
// its repository, next to the floors: decoding the snapshot generically, indexing the
// repository. The steps take turns, so a change of load on the machine
// touches every series alike.
func measurePlan(ctx context.Context, opts options, r *report, kedge, self string, f *fleetData) error {
	expect := func(withRepo bool) func(outcome) error {
		return func(res outcome) error { return checkPlan(res.Stdout, f, withRepo) }
	}
	steps := []step{
		{name: "decode", command: []string{self, "-child", "generic", "-dir", f.Snapshot}},
		{name: "plan", command: []string{kedge, "plan", "--snapshot", f.Snapshot, "--output", "json"}, check: expect(false)},
		{name: "index", command: []string{self, "-child", "index", "-dir", f.Repo}},
		{name: "plan-repo", command: []string{kedge, "plan", "--snapshot", f.Snapshot, "--repo", f.Repo, "--output", "json"}, check: expect(true)},
	}
	series := map[string]*series{"decode": &r.Decode, "plan": &r.Plan, "index": &r.IndexFleet, "plan-repo": &r.PlanRepo}
	for round := range opts.runs {
		for i := range steps {
			s := steps[(i+round)%len(steps)]
			logf("plan figure, run %d/%d: %s", round+1, opts.runs, s.name)
			res, err := measure(ctx, opts.root, nil, s.command[0], s.command[1:]...)
			if err != nil {
				return err
			}
			if s.check != nil && round == 0 {
				if err := s.check(res); err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
			}
			res.Stdout = nil
			series[s.name].add(res)
			logf("  %s: %.1f s, peak RSS %d MiB", s.name, res.Wall.Seconds(), res.PeakRSS>>20)
		}
	}
	return nil
}

// checkPlan makes sure the measured plan is the fleet's: every drifted
// workload, and with the repository every one of them found.
func checkPlan(out []byte, f *fleetData, withRepo bool) error {
	var plan drift.Plan
	if err := json.Unmarshal(out, &plan); err != nil {
		return fmt.Errorf("plan output: %w", err)
	}
	if len(plan.Workloads) != f.Expect.DriftedWorkloads {
		return fmt.Errorf("plan has %d drifted workloads, the fleet %d", len(plan.Workloads), f.Expect.DriftedWorkloads)
	}
	if !withRepo {
		return nil
	}
	for _, w := range plan.Workloads {
		if w.Manifest.Status != drift.ManifestFound {
			return fmt.Errorf("%s %s/%s: manifest %s (%s)", w.Kind, w.Namespace, w.Name, w.Manifest.Status, w.Manifest.Detail)
		}
	}
	return nil
}

// measureIndex indexes the 20,000-file repository in a process of its own.
func measureIndex(ctx context.Context, opts options, r *report, self string, f *fleetData) error {
	for round := range opts.runs {
		logf("index figure, run %d/%d", round+1, opts.runs)
		res, err := measure(ctx, opts.root, nil, self, "-child", "index", "-dir", f.IndexRepo)
		if err != nil {
			return err
		}
		child, err := childSeconds(res)
		if err != nil {
			return err
		}
		r.IndexSeconds = append(r.IndexSeconds, child.Seconds)
		r.IndexObjects = child.Objects
		r.Index.add(res)
		logf("  index: %.1f s, peak RSS %d MiB", child.Seconds, res.PeakRSS>>20)
	}
	return nil
}
