package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
)

// prepared is a target with its commit built: what its branch must be
// pushed as, and whether a person committed on it.
type prepared struct {
	target
	// work is the target's work, or nil when the base branch already has
	// its content.
	work    *work
	message string
	// change is the branch's commit; nil without work.
	change *gitrepo.Change
	// edited is set when someone else committed on the branch; editors
	// names them.
	edited  bool
	editors string
}

// prepareBranches builds each namespace's commit and learns whether a
// person has committed on an existing branch, for every target in order.
// The history is fetched only when the remote tip is not already the
// commit kedge would push. A checkout whose commits cannot be built
// gives its namespaces with work, held, and its error by position; alone,
// it ends the cycle.
func (r *Reconciler) prepareBranches(ctx context.Context, cs checkouts, targets []target, prior map[string]map[string]renderedPR) ([]prepared, []error, error) {
	out := make([]prepared, 0, len(targets))
	failed := make([]error, len(cs.list))
	for _, group := range byCheckout(targets) {
		c := group[0].checkout
		if group[0].held != nil {
			for _, t := range group {
				out = append(out, prepared{target: t})
			}
			continue
		}
		built, err := r.prepareCheckout(ctx, c, group, prior[c.key])
		if err != nil {
			held, fatal := cs.failure(c, err)
			if fatal != nil {
				return nil, nil, fatal
			}
			failed[cs.indexOf(c)] = held
			for _, t := range group {
				if t.work != nil {
					out = append(out, prepared{target: target{checkout: c, name: t.name, held: held}})
				}
			}
			continue
		}
		out = append(out, built...)
	}
	return out, failed, nil
}

// byCheckout splits targets, which gather returns checkout by checkout,
// into each checkout's run.
func byCheckout(targets []target) [][]target {
	var out [][]target
	for i := 0; i < len(targets); {
		j := i + 1
		for j < len(targets) && targets[j].checkout == targets[i].checkout {
			j++
		}
		out = append(out, targets[i:j])
		i = j
	}
	return out
}

// prepareCheckout is prepareBranches for the targets of one checkout.
func (r *Reconciler) prepareCheckout(ctx context.Context, c *checkout, targets []target, prior map[string]renderedPR) ([]prepared, error) {
	known := r.preparedIn(c.key)
	settled := map[string]preparedBranch{}
	defer r.keepPrepared(c.key, settled)
	out := make([]prepared, 0, len(targets))
	for _, t := range targets {
		if t.work == nil {
			out = append(out, prepared{target: t})
			continue
		}
		if t.blocked != "" {
			// Its branch is another PR's: nothing is built on it.
			out = append(out, prepared{target: t, work: t.work})
			continue
		}
		p, answer, err := r.prepareTarget(ctx, c, t, prior, known[t.branch])
		if err != nil {
			return nil, err
		}
		if answer != nil {
			settled[t.branch] = *answer
		}
		out = append(out, p)
	}
	return out, nil
}

// prepareTarget builds one namespace's commit, or takes known, the last
// cycle's settled answer, when it is for the same commit on the same tips.
// It returns the answer that stands for the next cycle, if any.
func (r *Reconciler) prepareTarget(ctx context.Context, c *checkout, t target, prior map[string]renderedPR, known preparedBranch) (prepared, *preparedBranch, error) {
	message, err := r.commitMessage(t, prior)
	if err != nil {
		return prepared{}, nil, err
	}
	asked := preparedBranch{base: c.git.BaseTip(), remote: t.remote.Tip, message: message, files: t.work.files}
	var settled *preparedBranch
	change, err := known.answer(asked)
	if !errors.Is(err, errNotPrepared) {
		settled = &known
	} else {
		change, err = c.git.PrepareBranch(t.branch, t.work.files, message)
		if settledAnswer(change, err) {
			settled = &preparedBranch{base: asked.base, remote: asked.remote, message: message, files: asked.files, change: change, err: err}
		}
	}
	if errors.Is(err, gitrepo.ErrNoDifference) {
		return prepared{target: t, message: message}, settled, nil
	}
	if err != nil {
		return prepared{}, nil, fmt.Errorf("namespace %s: %w", t.name, err)
	}
	p := prepared{target: t, work: t.work, message: message, change: &change}
	if change.Changed && t.branchExists {
		history, err := c.git.BranchHistory(ctx, t.branch)
		if err != nil && !errors.Is(err, gitrepo.ErrBranchNotFound) {
			return prepared{}, nil, fmt.Errorf("namespace %s: %w", t.name, err)
		}
		p.edited = history.Edited()
		p.editors = strings.Join(identities(history.EditedBy), ", ")
	}
	return p, settled, nil
}

// facts are what the namespace is decided on.
func (p prepared) facts() decide.Facts {
	f := decide.Facts{
		Namespace: p.name, PRs: p.prs, BranchExists: p.branchExists,
		Edited: p.edited, Editors: p.editors, Interrupted: p.interrupted, Blocked: p.blocked,
	}
	if p.work != nil {
		f.Work = &decide.Work{Workloads: p.work.workloads, State: p.work.state}
	}
	if p.held != nil {
		f.Held = errorDetail(p.held)
	}
	return f
}

// changed reports whether the namespace's branch needs a push.
func (p prepared) changed() bool { return p.change != nil && p.change.Changed }

// preparedBranch is a commit kedge asked for on a namespace branch (its
// files and message, on a base tip, with the remote branch at a tip) and
// the answer, when it is one that cannot change while those are the same:
// the remote branch already holds the content, or the base does. A commit
// still to push is built again each time, as the remote tip may meanwhile
// have been fetched and found to hold the content.
type preparedBranch struct {
	base, remote plumbing.Hash
	message      string
	files        map[string][]byte
	change       gitrepo.Change
	err          error
}

// errNotPrepared says a branch has no settled answer for what is asked.
var errNotPrepared = errors.New("not prepared")

func (p preparedBranch) answer(asked preparedBranch) (gitrepo.Change, error) {
	if p.files == nil || p.base != asked.base || p.remote != asked.remote || p.message != asked.message || !sameFiles(p.files, asked.files) {
		return gitrepo.Change{}, errNotPrepared
	}
	return p.change, p.err
}

// settledAnswer reports whether PrepareBranch's answer stands while what
// was asked and the tips are the same.
func settledAnswer(change gitrepo.Change, err error) bool {
	return errors.Is(err, gitrepo.ErrNoDifference) || err == nil && !change.Changed
}

func sameFiles(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func (r *Reconciler) preparedIn(key string) map[string]preparedBranch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prepared[key]
}

// keepPrepared replaces a repository's settled branches with this cycle's:
// a branch no longer asked for is forgotten.
func (r *Reconciler) keepPrepared(key string, settled map[string]preparedBranch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prepared[key] = settled
}

func (r *Reconciler) commitMessage(t target, prior map[string]renderedPR) (string, error) {
	if prev, ok := prior[t.name]; ok {
		return prev.message, nil
	}
	return r.deps.Renderer.CommitMessage(t.pr)
}

func identities(ids []gitrepo.Identity) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.Name+" <"+id.Email+">")
	}
	return out
}
