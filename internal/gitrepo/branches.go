package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrBranchNotFound is returned for a branch the remote does not have.
var ErrBranchNotFound = errors.New("gitrepo: no such remote branch")

// BranchInfo describes a remote branch.
type BranchInfo struct {
	Tip plumbing.Hash
}

// RemoteBranches lists the remote branches whose names start with prefix
// (kedge's own), as `git ls-remote` does, without fetching them.
func (r *Repo) RemoteBranches(ctx context.Context, prefix string) (map[string]BranchInfo, error) {
	refs, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	branches := map[string]BranchInfo{}
	for _, ref := range refs {
		if !ref.Name().IsBranch() || ref.Type() != plumbing.HashReference {
			continue
		}
		name := ref.Name().Short()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		branches[name] = BranchInfo{Tip: ref.Hash()}
	}
	for name := range r.remoteTips {
		if strings.HasPrefix(name, prefix) {
			delete(r.remoteTips, name)
		}
	}
	for name, b := range branches {
		r.remoteTips[name] = b.Tip
	}
	return branches, nil
}

// Identity is a commit author or committer.
type Identity struct {
	Name  string
	Email string
}

// CommitInfo is one commit of a branch's history.
type CommitInfo struct {
	Hash      plumbing.Hash
	Parents   []plumbing.Hash
	Author    Identity
	Committer Identity
	Message   string
}

// History is what kedge knows of a remote branch's commits above its base.
type History struct {
	Branch string
	Tip    plumbing.Hash
	// Commits follows first parents from the tip, newest first, down to and
	// including kedge's own commit, as far as commits are present locally.
	// It holds the tip unless the branch points at the base tip itself.
	Commits []CommitInfo
	// EditedBy lists, in order of appearance, everyone other than kedge who
	// authored or committed one of Commits.
	EditedBy []Identity
}

// Edited reports whether anyone but kedge authored or committed a commit on
// the branch: kedge then stops updating it.
func (h History) Edited() bool { return len(h.EditedBy) > 0 }

// BranchHistory fetches branch's tip, one commit deep, and tells whether the
// branch is still kedge's own. kedge only ever commits directly on a base
// commit, and any later change by someone else, including a rebase, amend
// or merge by a person or by GitHub, makes that someone the committer of the
// tip; so the tip is enough to decide. Older commits already present
// locally (such as kedge's own commit under a person's) are listed too.
func (r *Repo) BranchHistory(ctx context.Context, branch string) (History, error) {
	if err := plumbing.NewBranchReferenceName(branch).Validate(); err != nil {
		return History{}, fmt.Errorf("gitrepo: branch %q: %w", branch, err)
	}
	if err := r.fetch(ctx, branch); err != nil {
		if errors.Is(err, ErrBranchNotFound) {
			delete(r.remoteTips, branch)
		}
		return History{}, err
	}
	ref, err := r.repo.Reference(remoteRef(branch), true)
	if err != nil {
		return History{}, fmt.Errorf("gitrepo: branch %q: %w", branch, err)
	}
	h := History{Branch: branch, Tip: ref.Hash()}
	r.remoteTips[branch] = h.Tip

	seen := map[Identity]bool{}
	note := func(id Identity) {
		if !r.isKedge(id) && !seen[id] {
			seen[id] = true
			h.EditedBy = append(h.EditedBy, id)
		}
	}
	for next := h.Tip; !next.IsZero() && next != r.baseTip; {
		c, err := r.repo.CommitObject(next)
		if errors.Is(err, plumbing.ErrObjectNotFound) && len(h.Commits) > 0 {
			break // beyond the fetched depth
		}
		if err != nil {
			return History{}, fmt.Errorf("gitrepo: branch %q: read %s: %w", branch, next, err)
		}
		info := commitInfo(c)
		h.Commits = append(h.Commits, info)
		note(info.Author)
		note(info.Committer)
		if r.isKedge(info.Author) && r.isKedge(info.Committer) {
			break // kedge's commits sit on a base commit
		}
		next = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			next = c.ParentHashes[0]
		}
	}
	return h, nil
}

// isKedge matches on the e-mail address: it is what forges attribute commits
// by, while the display name may be changed in configuration.
func (r *Repo) isKedge(id Identity) bool {
	return strings.EqualFold(id.Email, r.opts.AuthorEmail)
}

func commitInfo(c *object.Commit) CommitInfo {
	return CommitInfo{
		Hash:      c.Hash,
		Parents:   append([]plumbing.Hash(nil), c.ParentHashes...),
		Author:    Identity{Name: c.Author.Name, Email: c.Author.Email},
		Committer: Identity{Name: c.Committer.Name, Email: c.Committer.Email},
		Message:   c.Message,
	}
}
