package gitrepo

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Probe asks the remote of opts.URL, with opts.Auth, what a clone would
// first ask (`git ls-remote`): it proves the repository exists, the
// credentials may clone it, and the base branch (opts.BaseBranch, else
// the remote's default branch) is there to build on. It returns that
// branch and writes nothing, locally or remotely.
func Probe(ctx context.Context, opts Options) (string, error) {
	endpoint, err := transport.NewEndpoint(opts.URL)
	if err != nil {
		return "", fmt.Errorf("gitrepo: parse repository URL %s: %w", redactURL(opts.URL), err)
	}
	r := &Repo{opts: opts, endpoint: endpoint}
	refs, err := r.list(ctx)
	if err != nil {
		return "", err
	}
	branch := opts.BaseBranch
	for _, ref := range refs {
		if branch == "" && ref.Name() == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference && ref.Target().IsBranch() {
			branch = ref.Target().Short()
		}
	}
	if branch == "" {
		return "", fmt.Errorf("gitrepo: %s does not name a default branch; set the base branch", redactURL(opts.URL))
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.NewBranchReferenceName(branch) {
			return branch, nil
		}
	}
	return branch, fmt.Errorf("gitrepo: %s has no branch %q", redactURL(opts.URL), branch)
}
