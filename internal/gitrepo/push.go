package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// ErrLeaseBroken matches a *LeaseError with errors.Is.
var ErrLeaseBroken = errors.New("gitrepo: remote branch moved since it was read")

// LeaseConflict is one branch whose remote tip was not the one expected.
type LeaseConflict struct {
	Branch string
	// Expected is the lease; zero means the branch was expected not to exist.
	Expected plumbing.Hash
	// Actual is the tip found; zero means the branch does not exist.
	Actual plumbing.Hash
}

// LeaseError lists the branches Push left untouched because someone else
// moved them since kedge read them. Branches not listed were pushed.
type LeaseError struct {
	Conflicts []LeaseConflict
}

func (e *LeaseError) Error() string {
	parts := make([]string, 0, len(e.Conflicts))
	for _, c := range e.Conflicts {
		parts = append(parts, fmt.Sprintf("%s (expected %s, found %s)", c.Branch, shortHash(c.Expected), shortHash(c.Actual)))
	}
	return "gitrepo: remote branches moved since they were read, left untouched: " + strings.Join(parts, ", ")
}

// Is makes errors.Is(err, ErrLeaseBroken) true.
func (e *LeaseError) Is(target error) bool { return target == ErrLeaseBroken }

// RejectedError lists branches the server refused for reasons other than a
// lease (a protected branch, a hook), with the server's reason.
type RejectedError struct {
	Reasons map[string]string
}

func (e *RejectedError) Error() string {
	branches := make([]string, 0, len(e.Reasons))
	for b := range e.Reasons {
		branches = append(branches, b)
	}
	sort.Strings(branches)
	parts := make([]string, 0, len(branches))
	for _, b := range branches {
		parts = append(parts, b+": "+e.Reasons[b])
	}
	return "gitrepo: the remote refused: " + strings.Join(parts, "; ")
}

// Push sends every changed branch in one push. leases holds, per branch, the
// remote tip kedge expects to replace; a branch missing from leases (or with
// a zero hash) is expected not to exist. A branch whose remote tip differs is
// not touched and is reported in a *LeaseError; the check is made against the
// push's own ref advertisement and enforced again by the server, which
// updates a ref only if it still holds the expected value. A branch already
// at its new commit counts as pushed. Branches not named in the returned
// error were updated.
func (r *Repo) Push(ctx context.Context, changes []Change, leases map[string]plumbing.Hash) (PushResult, error) {
	var updates []refUpdate
	seen := map[string]bool{}
	for _, c := range changes {
		if !c.Changed {
			continue
		}
		if c.Branch == r.baseBranch {
			return PushResult{}, fmt.Errorf("gitrepo: refusing to push to the base branch %q", c.Branch)
		}
		if seen[c.Branch] {
			return PushResult{}, fmt.Errorf("gitrepo: branch %q appears twice in one push", c.Branch)
		}
		seen[c.Branch] = true
		updates = append(updates, refUpdate{branch: c.Branch, old: leases[c.Branch], new: c.Commit})
	}
	return r.send(ctx, updates)
}

// PushResult is what a push cost.
type PushResult struct {
	// Duration runs from the ref advertisement to the server's report; it
	// is zero when nothing had to be sent (every branch was already at its
	// commit, or none could be updated).
	Duration time.Duration
}

// DeleteBranches deletes the named remote branches in one push, whatever
// they point at. Branches that do not exist are skipped.
func (r *Repo) DeleteBranches(ctx context.Context, names []string) error {
	updates := make([]refUpdate, 0, len(names))
	for _, name := range names {
		if name == r.baseBranch {
			return fmt.Errorf("gitrepo: refusing to delete the base branch %q", name)
		}
		updates = append(updates, refUpdate{branch: name, delete: true})
	}
	_, err := r.send(ctx, updates)
	return err
}

type refUpdate struct {
	branch string
	old    plumbing.Hash
	new    plumbing.Hash
	delete bool
}

// send runs one receive-pack exchange. go-git's own Push takes a single
// lease, so the request is built here from its protocol parts.
func (r *Repo) send(ctx context.Context, updates []refUpdate) (res PushResult, err error) {
	if len(updates) == 0 {
		return res, nil
	}
	auth, token, err := r.auth(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = redact(err, token) }()
	// A push is observed once it tried the server: it failed talking to
	// it, or it sent ref updates. Reading the refs and finding nothing to
	// send is no push, and a branch left alone because its lease broke
	// before sending is no failure of the push.
	attempt, tried, refused := time.Now(), false, false
	if observe := r.opts.ObservePush; observe != nil {
		defer func() {
			if !tried {
				return
			}
			var pushErr error
			if refused {
				pushErr = err
			}
			observe(time.Since(attempt), pushErr)
		}()
	}
	fail := func(what string, err error) error {
		tried, refused = true, true
		return withContext(ctx, fmt.Errorf("gitrepo: push to %s: %s: %w", redactURL(r.opts.URL), what, err))
	}

	cli, err := client.NewClient(r.endpoint)
	if err != nil {
		return res, fail("transport", err)
	}
	sess, err := cli.NewReceivePackSession(r.endpoint, auth)
	if err != nil {
		return res, fail("connect", err)
	}
	defer func() { _ = sess.Close() }()
	started := time.Now()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return res, fail("read refs", err)
	}
	advertised, err := adv.AllReferences()
	if err != nil {
		return res, fail("read refs", err)
	}
	current := func(branch string) plumbing.Hash {
		if ref, ok := advertised[plumbing.NewBranchReferenceName(branch)]; ok {
			return ref.Hash()
		}
		return plumbing.ZeroHash
	}

	var conflicts []LeaseConflict
	var cmds []*packp.Command
	var commits []plumbing.Hash
	for _, u := range updates {
		cur := current(u.branch)
		name := plumbing.NewBranchReferenceName(u.branch)
		switch {
		case u.delete && cur.IsZero():
			delete(r.remoteTips, u.branch)
		case u.delete:
			cmds = append(cmds, &packp.Command{Name: name, Old: cur, New: plumbing.ZeroHash})
		case cur == u.new:
			r.remoteTips[u.branch] = u.new
		case cur != u.old:
			conflicts = append(conflicts, LeaseConflict{Branch: u.branch, Expected: u.old, Actual: cur})
		default:
			cmds = append(cmds, &packp.Command{Name: name, Old: u.old, New: u.new})
			commits = append(commits, u.new)
		}
	}

	var rejected map[string]string
	if len(cmds) > 0 {
		tried = true
		statuses, err := r.receivePack(ctx, sess, adv.Capabilities, cmds, commits)
		res.Duration = time.Since(started)
		if err != nil {
			return res, fail("send", err)
		}
		var failed []*packp.Command
		for _, cmd := range cmds {
			branch := cmd.Name.Short()
			reason, answered := statuses[cmd.Name]
			switch {
			case answered && reason == "":
				if cmd.New.IsZero() {
					delete(r.remoteTips, branch)
				} else {
					r.remoteTips[branch] = cmd.New
				}
			case !answered:
				statuses[cmd.Name] = "no status reported"
				failed = append(failed, cmd)
			default:
				failed = append(failed, cmd)
			}
		}
		if len(failed) > 0 {
			refused = true
			more, reasons, err := r.classifyFailures(ctx, failed, statuses)
			if err != nil {
				return res, err
			}
			conflicts = append(conflicts, more...)
			rejected = reasons
		}
	}

	var errs []error
	if len(conflicts) > 0 {
		sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Branch < conflicts[j].Branch })
		errs = append(errs, &LeaseError{Conflicts: conflicts})
	}
	if len(rejected) > 0 {
		errs = append(errs, &RejectedError{Reasons: rejected})
	}
	return res, errors.Join(errs...)
}

// receivePack sends the commands with a pack of the objects they need and
// returns each ref's outcome: "" for ok, the server's reason otherwise.
func (r *Repo) receivePack(ctx context.Context, sess interface {
	ReceivePack(context.Context, *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error)
}, caps *capability.List, cmds []*packp.Command, commits []plumbing.Hash) (map[plumbing.ReferenceName]string, error) {
	if len(commits) < len(cmds) && !caps.Supports(capability.DeleteRefs) {
		return nil, errors.New("the server does not allow deleting branches")
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	req.Commands = cmds
	if len(commits) > 0 {
		pack, err := r.pack(commits, !caps.Supports(capability.OFSDelta))
		if err != nil {
			return nil, err
		}
		req.Packfile = pack
	}
	report, err := sess.ReceivePack(ctx, req)
	if report == nil {
		if err == nil {
			err = errors.New("the server sent no report")
		}
		return nil, err
	}
	if report.UnpackStatus != "ok" {
		return nil, fmt.Errorf("the server could not unpack: %s", report.UnpackStatus)
	}
	statuses := map[plumbing.ReferenceName]string{}
	for _, s := range report.CommandStatuses {
		if s.Status == "ok" {
			statuses[s.ReferenceName] = ""
		} else {
			statuses[s.ReferenceName] = s.Status
		}
	}
	return statuses, nil
}

// classifyFailures reads the remote again to tell refs that lost a race with
// someone else's push (lease conflicts) from refs the server refused.
func (r *Repo) classifyFailures(ctx context.Context, failed []*packp.Command, statuses map[plumbing.ReferenceName]string) ([]LeaseConflict, map[string]string, error) {
	refs, err := r.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, ref := range refs {
		now[ref.Name()] = ref.Hash()
	}
	var conflicts []LeaseConflict
	rejected := map[string]string{}
	for _, cmd := range failed {
		branch := cmd.Name.Short()
		if actual := now[cmd.Name]; actual != cmd.Old {
			conflicts = append(conflicts, LeaseConflict{Branch: branch, Expected: cmd.Old, Actual: actual})
			continue
		}
		rejected[branch] = statuses[cmd.Name]
	}
	return conflicts, rejected, nil
}

// pack encodes the objects commits add to their parents: the commit, the
// trees along changed paths and the new blobs. The server has the parents
// (the base tip), so nothing else is needed, and the base tree is never
// walked whole.
func (r *Repo) pack(commits []plumbing.Hash, useRefDeltas bool) (io.ReadCloser, error) {
	seen := map[plumbing.Hash]bool{}
	var objects []plumbing.Hash
	add := func(h plumbing.Hash) bool {
		if seen[h] {
			return false
		}
		seen[h] = true
		objects = append(objects, h)
		return true
	}
	var addTree func(tree, parentTree plumbing.Hash) error
	addTree = func(tree, parentTree plumbing.Hash) error {
		if tree == parentTree || !add(tree) {
			return nil
		}
		t, err := r.repo.TreeObject(tree)
		if err != nil {
			return err
		}
		before := map[string]plumbing.Hash{}
		if !parentTree.IsZero() {
			pt, err := r.repo.TreeObject(parentTree)
			if err != nil {
				return err
			}
			for _, e := range pt.Entries {
				if e.Mode == filemode.Dir {
					before[e.Name] = e.Hash
				} else {
					before[e.Name+"\x00blob"] = e.Hash
				}
			}
		}
		for _, e := range t.Entries {
			switch e.Mode {
			case filemode.Dir:
				if err := addTree(e.Hash, before[e.Name]); err != nil {
					return err
				}
			case filemode.Submodule:
			default:
				if before[e.Name+"\x00blob"] != e.Hash {
					add(e.Hash)
				}
			}
		}
		return nil
	}
	for _, h := range commits {
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		if !add(h) {
			continue
		}
		var parentTree plumbing.Hash
		if len(c.ParentHashes) > 0 {
			if p, err := r.repo.CommitObject(c.ParentHashes[0]); err == nil {
				parentTree = p.TreeHash
			}
		}
		if err := addTree(c.TreeHash, parentTree); err != nil {
			return nil, fmt.Errorf("objects of %s: %w", h, err)
		}
	}
	var buf bytes.Buffer
	if _, err := packfile.NewEncoder(&buf, r.repo.Storer, useRefDeltas).Encode(objects, 10); err != nil {
		return nil, fmt.Errorf("encode pack: %w", err)
	}
	return io.NopCloser(&buf), nil
}

func shortHash(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}
