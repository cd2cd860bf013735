package reconcile

import (
	"slices"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// waveOf is the index of the wave a namespace belongs to, read from its
// name and labels.
func (r *Reconciler) waveOf(set *objects.Set, namespace string) int {
	var labels map[string]string
	for _, n := range set.Namespaces {
		if n.Name == namespace {
			labels = n.Labels
		}
	}
	return waves.Of(r.settings.Waves, namespace, labels)
}

// waveRef names a namespace's wave in its PR; nil without waves.
func (r *Reconciler) waveRef(set *objects.Set, namespace string) *dashboard.WaveRef {
	if len(r.settings.Waves) == 0 {
		return nil
	}
	i := r.waveOf(set, namespace)
	return &dashboard.WaveRef{Name: waves.Name(r.settings.Waves, i), Number: i + 1, Of: len(r.settings.Waves)}
}

// gateWaves holds back the PRs of namespaces whose wave has not started
// for one of their targets, and returns each target's wave plan for the
// dashboard. It runs after decide, on the cycle's decisions, and reads
// nothing but the PRs and the cluster objects the cycle already has.
func (r *Reconciler) gateWaves(set *objects.Set, plan drift.Plan, states []*nsState) []waves.Rollout {
	if len(r.settings.Waves) == 0 {
		return nil
	}
	drifted := map[string]bool{}
	for _, w := range plan.Workloads {
		drifted[w.Namespace+"/"+w.Kind+"/"+w.Name] = true
	}
	var rollouts []waves.Rollout
	for _, target := range pendingTargets(states) {
		var members []waves.Member
		for _, st := range states {
			if m, ok := r.memberFor(set, drifted, st, target); ok {
				members = append(members, m)
			}
		}
		rollout := waves.Evaluate(target, r.settings.Waves, members, r.settings.Grace, r.deps.Now())
		rollouts = append(rollouts, rollout)
		for _, st := range states {
			if hasTarget(st, target) && !rollout.MayOpen(r.waveOf(set, st.name)) && !carries(st.decision.pr, target) {
				r.holdForWave(st, rollout)
			}
		}
	}
	return rollouts
}

// pendingTargets are the targets (revision@image) of the namespaces that
// have something to open or update: only those need a wave plan.
func pendingTargets(states []*nsState) []string {
	seen := map[string]bool{}
	for _, st := range states {
		for _, t := range workTargets(st) {
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

func hasTarget(st *nsState, target string) bool {
	return slices.Contains(workTargets(st), target)
}

// noSidecar is the target of a move to ambient mode: its workloads are to
// run no sidecar, whether or not it restarts any.
var noSidecar = targetOf("", "")

// workTargets are the targets of a namespace's work: each restart's, and a
// move to ambient mode's, so that a namespace that only relabels goes
// through the waves too.
func workTargets(st *nsState) []string {
	if st.facts.work == nil {
		return nil
	}
	var out []string
	for _, w := range st.facts.work.workloads {
		out = append(out, targetOf(w.Desired.Revision, w.Desired.Image))
	}
	if movesToAmbient(st.facts.work.state.Targets) {
		out = append(out, noSidecar)
	}
	return out
}

// movesToAmbient tells the targets of a move to ambient mode: the
// Namespace entry migrationTarget records.
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

// memberFor is where a namespace stands in target's rollout: from this
// cycle's decision when it drifts to the target, else from its latest PR
// that carried the target.
func (r *Reconciler) memberFor(set *objects.Set, drifted map[string]bool, st *nsState, target string) (waves.Member, bool) {
	m := waves.Member{Namespace: st.name, Wave: r.waveOf(set, st.name), Resumed: r.resumed(set, st.name, target)}
	var pr *forge.PR
	if hasTarget(st, target) {
		d := st.decision
		switch {
		case d.action == ActClosedIgnored:
			m.Progress = waves.Skipped
		case d.action == ActMerged:
			m.Progress, pr = waves.Merged, d.pr
		case carries(d.pr, target):
			m.Progress = waves.Open
		default:
			m.Progress = waves.Pending
		}
	} else {
		latest := latestPRWith(st.facts.prs, target)
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
			m.Workloads = append(m.Workloads, waves.Read(set, st.name, t.Kind, t.Name, drifted[st.name+"/"+t.Kind+"/"+t.Name]))
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
func (r *Reconciler) resumed(set *objects.Set, namespace, target string) bool {
	if r.settings.ResumeLabel == "" {
		return false
	}
	for _, n := range set.Namespaces {
		if n.Name == namespace {
			return n.Labels[r.settings.ResumeLabel] == waves.TargetID(target)
		}
	}
	return false
}

// holdForWave keeps a namespace's PR for a later cycle: nothing is pushed
// or opened, and an open PR keeps what it has.
func (r *Reconciler) holdForWave(st *nsState, rollout waves.Rollout) {
	switch st.decision.action {
	case ActOpen:
		st.outcome.State = prstate.PRWaitingForWave
	case ActUpdate:
		st.outcome.State = prstate.PROpen
	default:
		return
	}
	st.decision.action = ActNone
	st.decision.superseded = nil
	active := rollout.Waves[rollout.Active]
	why := string(active.State)
	if active.State == waves.StateBlocked {
		var names []string
		for _, b := range active.Blocking {
			names = append(names, b.Namespace+"/"+b.Kind+"/"+b.Name)
		}
		why = "blocked by " + strings.Join(names, ", ")
	}
	st.outcome.Detail = "wave " + active.Name + " comes first, " + why
}
