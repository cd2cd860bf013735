package gitrepo

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ChangedSince returns the repo-relative, slash-separated paths of the
// files that differ between commit since and the base tip: added, modified
// and deleted, a renamed file as its old and its new path. An error means
// the difference is not known here, e.g. the shallow clone no longer holds
// since; the caller reads everything again.
func (r *Repo) ChangedSince(since plumbing.Hash) ([]string, error) {
	if since == r.baseTip {
		return nil, nil
	}
	from, err := r.treeOf(since)
	if err != nil {
		return nil, err
	}
	to, err := r.treeOf(r.baseTip)
	if err != nil {
		return nil, err
	}
	// Without rename detection a rename is a deletion and an addition,
	// which is what a reader of paths needs.
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: diff %s..%s: %w", shortHash(since), shortHash(r.baseTip), err)
	}
	seen := map[string]bool{}
	for _, c := range changes {
		for _, name := range []string{c.From.Name, c.To.Name} {
			if name != "" {
				seen[name] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

func (r *Repo) treeOf(commit plumbing.Hash) (*object.Tree, error) {
	c, err := r.repo.CommitObject(commit)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: commit %s: %w", shortHash(commit), err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("gitrepo: tree of %s: %w", shortHash(commit), err)
	}
	return tree, nil
}
