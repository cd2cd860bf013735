// Package reconcile runs one kedge cycle: read the cluster, plan, edit the
// GitOps checkout, and bring kedge's branches and pull requests in line
// with the plan, one namespace each.
//
// A cycle is a pipeline of stages, each a function from the values the
// earlier stages returned to new values: open the checkouts, plan, list
// kedge's PRs and branches, gather each namespace's facts, prepare its
// commit, render its PR, decide, push, apply. decide is the one place an
// action is chosen; pushing returns what happened to each branch and
// applying returns each namespace's outcome, and neither changes a
// decision.
package reconcile

import (
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// Action is what a cycle does for one namespace.
type Action string

const (
	// ActNone: nothing to do.
	ActNone Action = "none"
	// ActOpen: push the branch and open a pull request.
	ActOpen Action = "open"
	// ActUpdate: refresh the open pull request's branch, title and body.
	ActUpdate Action = "update"
	// ActUpToDate is reported, never decided: an update found the open
	// pull request's branch, title, body and labels as they should be and
	// sent nothing.
	ActUpToDate Action = "up-to-date"
	// ActClose: the drift is gone; close the pull request with a comment.
	ActClose Action = "close"
	// ActEdited: someone else pushed to the branch; leave it and say so once.
	ActEdited Action = "edited"
	// ActClosedIgnored: a person closed the PR for this very target; it is
	// not opened again until the target changes.
	ActClosedIgnored Action = "closed-ignored"
	// ActMerged: the PR for this target was merged; follow the rollout.
	ActMerged Action = "merged"
)

// work is what a namespace's branch must contain.
type work struct {
	files     map[string][]byte
	workloads []drift.Workload
	state     prstate.State
}

// namespaceFacts are what the cycle learned about one namespace before
// deciding.
type namespaceFacts struct {
	namespace string
	work      *work
	// prs are kedge's PRs for the namespace's branch, oldest first.
	prs []forge.PR
	// branchExists is true when the branch is on the remote.
	branchExists bool
	// edited is true when someone else committed on the branch; editors
	// names them.
	edited  bool
	editors string
	// interrupted, when set, says why a branch of kedge's has neither a
	// pull request nor anything to fix.
	interrupted string
	// blocked, when set, says why no branch can carry a new pull request.
	blocked string
	// held is why the namespace's repository is left for the next cycle.
	held error
}

// decision is the action and the PR it concerns.
type decision struct {
	action Action
	pr     *forge.PR
	// duplicates are further open PRs for the same branch, which can only
	// come from outside kedge; they are closed in favour of pr.
	duplicates []forge.PR
	// superseded is a merged PR for an older target whose rollout kedge
	// stops following, because the PR it opens now takes over.
	superseded *forge.PR
	// state and detail are what the namespace's row shows before the
	// action is carried out: why it is held back, or what the facts said.
	state  prstate.PRState
	detail string
}

// prLimits are limits.maxOpenPRs and limits.maxNewPRsPerCycle, and how many
// of kedge's PRs are open across every repository.
type prLimits struct {
	maxOpen, maxNewPerCycle int
	open                    int
}

// decide is the whole policy of a cycle, free of I/O so each rule is a
// table row in the tests: every namespace's action follows from its facts,
// the rollout waves of the targets it drifts to (gate), and the PR limits.
// It returns one decision per fact, in order, and each target's wave plan.
// Nothing changes a decision afterwards: the push and the pull-request
// calls report what became of it in their own results.
func decide(facts []namespaceFacts, gate waveGate, limits prLimits) ([]decision, []waves.Rollout) {
	wanted := make([]decision, len(facts))
	for i, f := range facts {
		wanted[i] = policy(f)
	}
	waveHolds, rollouts := gate.holds(facts, wanted)
	limitHolds := limits.holds(wanted, waveHolds)
	out := make([]decision, len(facts))
	for i, d := range wanted {
		switch {
		case waveHolds[i] != nil:
			out[i] = decision{action: ActNone, pr: d.pr, duplicates: d.duplicates, state: waveHolds[i].state(d.action), detail: waveHolds[i].detail}
		case limitHolds[i]:
			out[i] = decision{action: ActNone, pr: d.pr, duplicates: d.duplicates, state: prstate.PRNotYetOpened, detail: "waiting: limits.maxOpenPRs / limits.maxNewPRsPerCycle"}
		default:
			out[i] = d
		}
	}
	return out, rollouts
}

// policy is what one namespace's facts ask for, before the waves and the
// limits have their say.
func policy(f namespaceFacts) decision {
	if f.held != nil {
		return decision{action: ActNone, state: prstate.PRNotYetOpened, detail: errorDetail(f.held)}
	}
	var open []forge.PR
	var lastClosed *forge.PR
	for i := range f.prs {
		pr := f.prs[i]
		if pr.State == "open" {
			open = append(open, pr)
		} else {
			lastClosed = &f.prs[i]
		}
	}
	d := decision{detail: f.editors}
	if f.interrupted != "" {
		d.state, d.detail = prstate.PRNotYetOpened, f.interrupted
	}
	if len(open) > 0 {
		d.pr = &open[0]
		d.duplicates = open[1:]
	}
	switch {
	case f.work != nil && d.pr != nil && f.edited:
		d.action = ActEdited
	case f.work != nil && d.pr != nil:
		d.action = ActUpdate
	case f.work != nil && lastClosed != nil && sameTarget(lastClosed, f.work.state) && (lastClosed.Merged || !prstate.ClosedByKedge(lastClosed.Body)):
		// A PR a person closed unmerged is their answer for these targets;
		// one kedge closed was closed for a reason that no longer holds.
		d.pr = lastClosed
		d.action = ActClosedIgnored
		if lastClosed.Merged {
			d.action = ActMerged
		}
	case f.work != nil && f.blocked != "":
		d.action, d.state, d.detail = ActNone, prstate.PRNotYetOpened, f.blocked
	case f.work != nil && f.branchExists && f.edited:
		// A branch without an open PR that a person has committed to is
		// theirs now; opening a PR from it would present their commit as
		// kedge's, and rebuilding it would drop the commit.
		d.action = ActEdited
	case f.work != nil:
		d.action = ActOpen
		if lastClosed != nil && lastClosed.Merged {
			d.superseded = lastClosed
		}
	case d.pr != nil:
		d.action = ActClose
	case lastClosed != nil && lastClosed.Merged:
		d.pr = lastClosed
		d.action = ActMerged
	default:
		d.action = ActNone
	}
	return d
}

// sameTarget tells whether pr was opened for the very targets of want; a
// PR opened before kedge recorded its repository and base counts too.
func sameTarget(pr *forge.PR, want prstate.State) bool {
	got, ok := prstate.ParseState(pr.Body)
	return ok && got.SameTargets(want)
}

// holds tells which of the wanted openings the limits hold back: those
// beyond limits.maxOpenPRs open PRs (counting the ones this cycle closes as
// closed) or beyond limits.maxNewPRsPerCycle, in order. Openings the waves
// hold back count for neither.
func (l prLimits) holds(wanted []decision, waveHolds []*waveHold) []bool {
	open := l.open
	for _, d := range wanted {
		if d.action == ActClose {
			open--
		}
	}
	out := make([]bool, len(wanted))
	opened := 0
	for i, d := range wanted {
		if d.action != ActOpen || waveHolds[i] != nil {
			continue
		}
		overOpen := l.maxOpen > 0 && open >= l.maxOpen
		overCycle := l.maxNewPerCycle > 0 && opened >= l.maxNewPerCycle
		if overOpen || overCycle {
			out[i] = true
			continue
		}
		open++
		opened++
	}
	return out
}
