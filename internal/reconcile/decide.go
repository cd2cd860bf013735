// Package reconcile runs one kedge cycle: read the cluster, plan, edit the
// GitOps checkout, and bring kedge's branches and pull requests in line
// with the plan, one namespace each.
package reconcile

import (
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/prstate"
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
	work *work
	// prs are kedge's PRs for the namespace's branch, oldest first.
	prs []forge.PR
	// branchExists is true when the branch is on the remote.
	branchExists bool
	// edited is true when someone else committed on the branch.
	edited bool
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
}

// decide is the whole policy of a namespace, free of I/O so each rule is a
// table row in the tests.
func decide(f namespaceFacts) decision {
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
	var d decision
	if len(open) > 0 {
		d.pr = &open[0]
		d.duplicates = open[1:]
	}
	switch {
	case f.work != nil && d.pr != nil && f.edited:
		d.action = ActEdited
	case f.work != nil && d.pr != nil:
		d.action = ActUpdate
	case f.work != nil && lastClosed != nil && sameTarget(lastClosed, f.work.state):
		d.pr = lastClosed
		d.action = ActClosedIgnored
		if lastClosed.Merged {
			d.action = ActMerged
		}
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

func sameTarget(pr *forge.PR, want prstate.State) bool {
	got, ok := prstate.ParseState(pr.Body)
	return ok && got.Hash == want.Hash
}
