package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
)

// pushResult is what one repository branch's push did.
type pushResult struct {
	// pushes is 1 when a push was sent, else 0; duration is what it took.
	pushes   int
	duration time.Duration
	// moved are the branches someone moved between kedge's read and its
	// push: left untouched, and decided again next cycle.
	moved map[string]bool
	// failed is why the push failed; nothing of the repository branch
	// went out.
	failed error
	// refused are the branches kedge would not push, and why: an open PR
	// against another base uses them.
	refused map[string]string
}

// blocks tells whether the push result keeps a decision to open or update
// the branch from being carried out, and what the namespace's row says.
func (p pushResult) blocks(d decide.Decision, branch, repo string) (Outcome, bool) {
	if d.Action() != ActOpen && d.Action() != ActUpdate {
		return Outcome{}, false
	}
	switch {
	case p.refused[branch] != "":
		return Outcome{Action: ActNone, State: prstate.PRNotYetOpened, Detail: p.refused[branch]}, true
	case p.failed != nil:
		return Outcome{Action: ActNone, State: prstate.PRNotYetOpened, Detail: "the push to " + repo + " failed; retried next cycle"}, true
	case p.moved[branch]:
		return Outcome{Action: ActNone, State: prstate.PREdited, Detail: "the branch moved while kedge pushed; retried next cycle"}, true
	}
	return Outcome{}, false
}

// pushAll makes one push per repository branch, in the checkouts' order.
// With several, a push that fails holds back that repository branch's PRs
// only; alone, it ends the cycle.
func (r *Reconciler) pushAll(ctx context.Context, cs checkouts, listings []listing, rs []rendered, decisions []decide.Decision) ([]pushResult, error) {
	out := make([]pushResult, len(cs.list))
	for i, c := range cs.list {
		if c.err != nil {
			continue
		}
		changes, leases, refused := branchesToPushOn(c, c.base(), listings[i], rs, decisions)
		res, err := r.push(ctx, c, changes, leases)
		if err != nil {
			held, fatal := cs.failure(c, err)
			if fatal != nil {
				return nil, fatal
			}
			res.failed = held
		}
		res.refused = refused
		out[i] = res
	}
	return out, nil
}

// branchesToPushOn are the commits of checkout c's namespaces whose
// decision opens or updates a PR, with the lease of each branch that
// exists. A branch that an open PR against another base uses is refused
// whatever was decided: pushing this base's commit onto it would make that
// PR carry this base's history. gather never picks such a branch; this is
// the last word before anything leaves.
// c's base is base.
func branchesToPushOn(c *checkout, base string, l listing, rs []rendered, decisions []decide.Decision) ([]gitrepo.Change, map[string]plumbing.Hash, map[string]string) {
	var changes []gitrepo.Change
	leases := map[string]plumbing.Hash{}
	refused := map[string]string{}
	for j, t := range rs {
		a := decisions[j].Action()
		if t.checkout != c || !t.changed() || (a != ActOpen && a != ActUpdate) {
			continue
		}
		if pr := openAgainstOther(l.prs, t.branch, base); pr != nil {
			refused[t.branch] = movingRefused(t.branch, pr, base)
			continue
		}
		changes = append(changes, *t.change)
		if t.branchExists {
			leases[t.branch] = t.remote.Tip
		}
	}
	return changes, leases, refused
}

// movingRefused says why branch, the head of pr, is not moved onto base.
func movingRefused(branch string, pr *forge.PR, base string) string {
	return fmt.Sprintf("branch %s is the head of pull request #%d against %s; kedge will not move it onto %s", branch, pr.Number, pr.Base, base)
}

// openAgainstOther is an open pull request among prs whose head is branch
// and whose base is not base.
func openAgainstOther(prs []forge.PR, branch, base string) *forge.PR {
	for i := range prs {
		if prs[i].Head == branch && prs[i].State == "open" && prs[i].Base != base {
			return &prs[i]
		}
	}
	return nil
}

// push sends changes in one push, each with a lease on the tip kedge read,
// so a branch someone moved meanwhile is left alone.
func (r *Reconciler) push(ctx context.Context, c *checkout, changes []gitrepo.Change, leases map[string]plumbing.Hash) (pushResult, error) {
	if len(changes) == 0 || r.settings.DryRun {
		return pushResult{}, nil
	}
	pushed, err := c.git.Push(ctx, changes, leases)
	res := pushResult{pushes: 1, duration: pushed.Duration}
	var lease *gitrepo.LeaseError
	if errors.As(err, &lease) {
		// Someone pushed between our read and our push; the next cycle
		// reads their commit and decides again.
		res.moved = map[string]bool{}
		for _, conflict := range lease.Conflicts {
			res.moved[conflict.Branch] = true
		}
		r.deps.Log.Warn("branches moved during push", "error", err)
		return res, nil
	}
	if err != nil {
		return res, &PushError{Duration: pushed.Duration, Err: err}
	}
	return res, nil
}

// PushError is a push that failed, with what it cost: the time from the
// ref advertisement to the failure, zero when it failed before that.
type PushError struct {
	Duration time.Duration
	Err      error
}

func (e *PushError) Error() string { return "push: " + e.Err.Error() }

func (e *PushError) Unwrap() error { return e.Err }
