package decide

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// Gate is what the rollout waves are judged on: the configured waves, the
// cluster and the plan the cycle read, the label that resumes a stopped
// rollout, the grace after a merge, and the clock. Without waves it holds
// nothing back.
type Gate struct {
	Waves       []waves.Wave
	Set         *objects.Set
	Plan        drift.Plan
	ResumeLabel string
	Grace       time.Duration
	Now         time.Time
}

// waveHold is a namespace's PR held back for a later wave, and why.
type waveHold struct {
	detail string
}

// state is what the row of a namespace whose wanted action is held back
// shows: a PR still to open waits for its wave, an open one stays open.
func (h waveHold) state(wanted Action) prstate.PRState {
	if wanted == Open {
		return prstate.PRWaitingForWave
	}
	return prstate.PROpen
}

// holds tells, for each namespace, whether its wanted opening or update
// waits for a wave of one of its targets, and returns each target's wave
// plan for the dashboard. It reads nothing but the facts, the wanted
// decisions and the cluster objects the cycle already has.
func (g Gate) holds(facts []Facts, wanted []Decision) ([]*waveHold, []waves.Rollout) {
	out := make([]*waveHold, len(facts))
	if len(g.Waves) == 0 {
		return out, nil
	}
	drifted := driftedWorkloads(g.Plan)
	var rollouts []waves.Rollout
	for _, target := range pendingTargets(facts) {
		var members []waves.Member
		for i, f := range facts {
			if m, ok := g.memberFor(f, wanted[i], target, drifted); ok {
				members = append(members, m)
			}
		}
		rollout := waves.Evaluate(target, g.Waves, members, g.Grace, g.Now)
		rollouts = append(rollouts, rollout)
		for i, f := range facts {
			a := wanted[i].action
			if out[i] != nil || (a != Open && a != Update) {
				continue
			}
			if hasTarget(f, target) && !rollout.MayOpen(g.WaveOf(f.Namespace)) && !carries(wanted[i].pr, target) {
				out[i] = &waveHold{detail: waitingFor(rollout)}
			}
		}
	}
	return out, rollouts
}

// driftedWorkloads holds "namespace/Kind/name" of every workload the plan
// lists.
func driftedWorkloads(plan drift.Plan) map[string]bool {
	out := map[string]bool{}
	for _, w := range plan.Workloads {
		out[w.Namespace+"/"+w.Kind+"/"+w.Name] = true
	}
	return out
}

// waitingFor says which wave a held-back namespace waits for, and why.
func waitingFor(rollout waves.Rollout) string {
	active := rollout.Waves[rollout.Active]
	why := string(active.State)
	if active.State == waves.StateBlocked {
		var names []string
		for _, b := range active.Blocking {
			names = append(names, b.Namespace+"/"+b.Kind+"/"+b.Name)
		}
		why = "blocked by " + strings.Join(names, ", ")
	}
	return "wave " + active.Name + " comes first, " + why
}

// WaveOf is the index of the wave a namespace belongs to, read from its
// name and its labels in the cluster.
func (g Gate) WaveOf(namespace string) int {
	var labels map[string]string
	for _, n := range g.Set.Namespaces {
		if n.Name == namespace {
			labels = n.Labels
		}
	}
	return waves.Of(g.Waves, namespace, labels)
}

// pendingTargets are the targets (revision@image) of the namespaces that
// have something to open or update: only those need a wave plan.
func pendingTargets(facts []Facts) []string {
	seen := map[string]bool{}
	for _, f := range facts {
		for _, t := range workTargets(f) {
			seen[t] = true
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func targetOf(revision, image string) string { return waves.TargetKey(revision, image) }

func hasTarget(f Facts, target string) bool {
	return slices.Contains(workTargets(f), target)
}

// noSidecar is the target of a move to ambient mode: its workloads are to
// run no sidecar, whether or not it restarts any.
var noSidecar = targetOf("", "")

// workTargets are the targets of a namespace's work: each restart's, and a
// move to ambient mode's, so that a namespace that only relabels goes
// through the waves too.
func workTargets(f Facts) []string {
	if f.Work == nil {
		return nil
	}
	var out []string
	for _, w := range f.Work.Workloads {
		out = append(out, targetOf(w.Desired.Revision, w.Desired.Image))
	}
	if movesToAmbient(f.Work.State.Targets) {
		out = append(out, noSidecar)
	}
	return out
}

// movesToAmbient tells the targets of a move to ambient mode: the
// Namespace entry a migration's PR state records.
func movesToAmbient(targets []prstate.Target) bool {
	return slices.ContainsFunc(targets, func(t prstate.Target) bool { return t.Kind == "Namespace" && t.Revision == drift.Ambient })
}

// prCarries tells whether a PR was opened for target: a restart onto it,
// or a move to ambient mode for the no-sidecar target.
func prCarries(pr forge.PR, target string) bool {
	if len(prTargets(pr, target)) > 0 {
		return true
	}
	s, ok := prstate.ParseState(pr.Body)
	return ok && target == noSidecar && movesToAmbient(s.Targets)
}

// prTargets are the workload targets a PR's body recorded for target; the
// Namespace entry of a migration is its relabel, not a restart.
func prTargets(pr forge.PR, target string) []prstate.Target {
	s, ok := prstate.ParseState(pr.Body)
	if !ok {
		return nil
	}
	var out []prstate.Target
	for _, t := range s.Targets {
		if t.Kind != "Namespace" && targetOf(t.Revision, t.Image) == target {
			out = append(out, t)
		}
	}
	return out
}

// memberFor is where a namespace stands in target's rollout: from what its
// facts ask for when it drifts to the target, else from its latest PR that
// carried the target. drifted holds the plan's workloads.
func (g Gate) memberFor(f Facts, d Decision, target string, drifted map[string]bool) (waves.Member, bool) {
	m := waves.Member{Namespace: f.Namespace, Wave: g.WaveOf(f.Namespace), Resumed: g.resumed(f.Namespace, target)}
	var pr *forge.PR
	if hasTarget(f, target) {
		switch {
		case d.action == ClosedIgnored:
			m.Progress = waves.Skipped
		case d.action == Merged:
			m.Progress, pr = waves.Merged, d.pr
		case carries(d.pr, target):
			m.Progress = waves.Open
		default:
			m.Progress = waves.Pending
		}
	} else {
		latest := latestPRWith(f.PRs, target)
		if latest == nil {
			return m, false
		}
		switch {
		case latest.State == "open":
			m.Progress = waves.Open
		case latest.Merged:
			m.Progress, pr = waves.Merged, latest
		default:
			m.Progress = waves.Skipped
		}
	}
	if pr != nil && pr.MergedAt != nil {
		m.MergedAt = *pr.MergedAt
		for _, t := range prTargets(*pr, target) {
			m.Workloads = append(m.Workloads, waves.Read(g.Set, f.Namespace, t.Kind, t.Name, drifted[f.Namespace+"/"+t.Kind+"/"+t.Name]))
		}
	}
	return m, true
}

// carries tells whether an open PR was already opened for target; it
// stays up to date whatever the waves say.
func carries(pr *forge.PR, target string) bool {
	return pr != nil && pr.State == "open" && prCarries(*pr, target)
}

func latestPRWith(prs []forge.PR, target string) *forge.PR {
	for i := len(prs) - 1; i >= 0; i-- {
		if prCarries(prs[i], target) {
			return &prs[i]
		}
	}
	return nil
}

// resumed tells whether a person labelled the namespace to let target's
// rollout go on despite its unhealthy workloads.
func (g Gate) resumed(namespace, target string) bool {
	if g.ResumeLabel == "" {
		return false
	}
	for _, n := range g.Set.Namespaces {
		if n.Name == namespace {
			return n.Labels[g.ResumeLabel] == waves.TargetID(target)
		}
	}
	return false
}
