package ghemu

import (
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// GitBranches answers branch lookups from a Git repository on disk (bare or
// not), so pull requests are checked against what was really pushed. The
// repository is reopened on every lookup to see pushes made in between.
func GitBranches(gitDir string) BranchLookup {
	return func(branch string) (string, bool) {
		repo, err := git.PlainOpen(gitDir)
		if err != nil {
			return "", false
		}
		ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
		if err != nil {
			return "", false
		}
		return ref.Hash().String(), true
	}
}

// GitFastForward merges by pointing the base branch at the head commit, the
// outcome of a fast-forward (or of a squash merge, as far as the tree is
// concerned). It returns the head commit as the merge commit.
func GitFastForward(gitDir string) MergeFunc {
	return func(base, headSHA string) (string, error) {
		repo, err := git.PlainOpen(gitDir)
		if err != nil {
			return "", fmt.Errorf("open %s: %w", gitDir, err)
		}
		ref := plumbing.NewHashReference(plumbing.NewBranchReferenceName(base), plumbing.NewHash(headSHA))
		if err := repo.Storer.SetReference(ref); err != nil {
			return "", fmt.Errorf("move %s to %s: %w", base, headSHA, err)
		}
		return headSHA, nil
	}
}
