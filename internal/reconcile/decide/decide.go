// Package decide is the whole policy of a kedge cycle: from what the cycle
// learned about each namespace (its work, kedge's pull requests for its
// branch, who committed there, why it is held), the rollout waves of the
// targets it drifts to and the PR limits, it chooses once what becomes of
// every namespace: open, update, close, leave, follow a merge, or hold back.
//
// It does no I/O, so each rule is a table row in the tests, and it is a
// room of its own so that the compiler holds the rule that a decision is
// made once: a Decision's fields are unexported, so only this package can
// fill one in, and the stages after it (push, pull-request calls) read it
// through its methods and report what became of it in values of their own.
package decide

import (
	"slices"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// Action is what a cycle does for one namespace.
type Action string

const (
	// None: nothing to do.
	None Action = "none"
	// Open: push the branch and open a pull request.
	Open Action = "open"
	// Update: refresh the open pull request's branch, title and body.
	Update Action = "update"
	// Close: the drift is gone; close the pull request with a comment.
	Close Action = "close"
	// Edited: someone else pushed to the branch; leave it and say so once.
	Edited Action = "edited"
	// ClosedIgnored: a person closed the PR for this very target; it is
	// not opened again until the target changes.
	ClosedIgnored Action = "closed-ignored"
	// Merged: the PR for this target was merged; follow the rollout.
	Merged Action = "merged"
)

// Work is what a namespace's branch must carry, as far as deciding reads
// it: the workloads it restarts and the state its PR records.
type Work struct {
	Workloads []drift.Workload
	State     prstate.State
}

// Facts are what the cycle learned about one namespace before deciding.
type Facts struct {
	Namespace string
	// Work is nil when the plan has nothing to commit for the namespace.
	Work *Work
	// PRs are kedge's PRs for the namespace's branch, oldest first.
	PRs []forge.PR
	// BranchExists is true when the branch is on the remote.
	BranchExists bool
	// Edited is true when someone else committed on the branch; Editors
	// names them.
	Edited  bool
	Editors string
	// Interrupted, when set, says why a branch of kedge's has neither a
	// pull request nor anything to fix.
	Interrupted string
	// Blocked, when set, says why no branch can carry a new pull request.
	Blocked string
	// Held, when set, is why the namespace's repository is left for the
	// next cycle.
	Held string
}

// Decision is the action chosen for one namespace and the PR it concerns.
type Decision struct {
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

// Action is what is to be done for the namespace.
func (d Decision) Action() Action { return d.action }

// PR is the pull request the action concerns, one of the facts' PRs; nil
// when there is none yet.
func (d Decision) PR() *forge.PR { return d.pr }

// Duplicates are further open PRs for the same branch, which can only come
// from outside kedge; they are closed in favour of PR. The slice is a copy.
func (d Decision) Duplicates() []forge.PR { return slices.Clone(d.duplicates) }

// Superseded is a merged PR for an older target whose rollout kedge stops
// following, because the PR it opens now takes over; nil otherwise.
func (d Decision) Superseded() *forge.PR { return d.superseded }

// State is where the namespace's PR stands before the action is carried
// out; empty when the action itself says.
func (d Decision) State() prstate.PRState { return d.state }

// Detail is why the namespace is held back, or what the facts said (the
// people who committed on its branch).
func (d Decision) Detail() string { return d.detail }

// Limits are limits.maxOpenPRs and limits.maxNewPRsPerCycle (zero: no
// limit), and how many of kedge's PRs are open across every repository.
type Limits struct {
	MaxOpen, MaxNewPerCycle int
	Open                    int
}

// Namespaces decides every namespace: its action follows from its facts,
// the rollout waves of the targets it drifts to (gate), and the PR limits.
// It returns one decision per fact, in order, and each target's wave plan.
func Namespaces(facts []Facts, gate Gate, limits Limits) ([]Decision, []waves.Rollout) {
	wanted := make([]Decision, len(facts))
	for i, f := range facts {
		wanted[i] = policy(f)
	}
	waveHolds, rollouts := gate.holds(facts, wanted)
	limitHolds := limits.holds(wanted, waveHolds)
	out := make([]Decision, len(facts))
	for i, d := range wanted {
		switch {
		case waveHolds[i] != nil:
			out[i] = Decision{action: None, pr: d.pr, duplicates: d.duplicates, state: waveHolds[i].state(d.action), detail: waveHolds[i].detail}
		case limitHolds[i]:
			out[i] = Decision{action: None, pr: d.pr, duplicates: d.duplicates, state: prstate.PRNotYetOpened, detail: "waiting: limits.maxOpenPRs / limits.maxNewPRsPerCycle"}
		default:
			out[i] = d
		}
	}
	return out, rollouts
}

// policy is what one namespace's facts ask for, before the waves and the
// limits have their say.
func policy(f Facts) Decision {
	if f.Held != "" {
		return Decision{action: None, state: prstate.PRNotYetOpened, detail: f.Held}
	}
	var open []forge.PR
	var lastClosed *forge.PR
	for i := range f.PRs {
		pr := f.PRs[i]
		if pr.State == "open" {
			open = append(open, pr)
		} else {
			lastClosed = &f.PRs[i]
		}
	}
	d := Decision{detail: f.Editors}
	if f.Interrupted != "" {
		d.state, d.detail = prstate.PRNotYetOpened, f.Interrupted
	}
	if len(open) > 0 {
		d.pr = &open[0]
		d.duplicates = open[1:]
	}
	switch {
	case f.Work != nil && d.pr != nil && f.Edited:
		d.action = Edited
	case f.Work != nil && d.pr != nil:
		d.action = Update
	case f.Work != nil && lastClosed != nil && sameTarget(lastClosed, f.Work.State) && (lastClosed.Merged || !prstate.ClosedByKedge(lastClosed.Body)):
		// A PR a person closed unmerged is their answer for these targets;
		// one kedge closed was closed for a reason that no longer holds.
		d.pr = lastClosed
		d.action = ClosedIgnored
		if lastClosed.Merged {
			d.action = Merged
		}
	case f.Work != nil && f.Blocked != "":
		d.action, d.state, d.detail = None, prstate.PRNotYetOpened, f.Blocked
	case f.Work != nil && f.BranchExists && f.Edited:
		// A branch without an open PR that a person has committed to is
		// theirs now; opening a PR from it would present their commit as
		// kedge's, and rebuilding it would drop the commit.
		d.action = Edited
	case f.Work != nil:
		d.action = Open
		if lastClosed != nil && lastClosed.Merged {
			d.superseded = lastClosed
		}
	case d.pr != nil:
		d.action = Close
	case lastClosed != nil && lastClosed.Merged:
		d.pr = lastClosed
		d.action = Merged
	default:
		d.action = None
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
func (l Limits) holds(wanted []Decision, waveHolds []*waveHold) []bool {
	open := l.Open
	for _, d := range wanted {
		if d.action == Close {
			open--
		}
	}
	out := make([]bool, len(wanted))
	opened := 0
	for i, d := range wanted {
		if d.action != Open || waveHolds[i] != nil {
			continue
		}
		overOpen := l.MaxOpen > 0 && open >= l.MaxOpen
		overCycle := l.MaxNewPerCycle > 0 && opened >= l.MaxNewPerCycle
		if overOpen || overCycle {
			out[i] = true
			continue
		}
		open++
		opened++
	}
	return out
}
