package ghemu

import (
	"fmt"
	"os"
	"os/exec"

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

// GitDiff answers pull request diffs from a Git repository on disk with Git
// itself, as GitHub computes them: `git diff base...head`, the changes on
// head since its merge base with base, in Git's default format (a/ and b/
// prefixes, abbreviated blob ids, three lines of context). The user's and
// the system's Git configuration are ignored, so no local setting changes
// the format.
func GitDiff(gitDir string) DiffFunc {
	return func(baseSHA, headSHA string) (string, error) {
		cmd := exec.Command("git", "--git-dir", gitDir, "diff", "--no-color", "--no-ext-diff", baseSHA+"..."+headSHA)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git diff %s...%s in %s: %w", baseSHA, headSHA, gitDir, err)
		}
		return string(out), nil
	}
}
