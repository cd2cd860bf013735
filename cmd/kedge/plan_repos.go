package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
)

// checkoutFlags reads the --repo values: one bare PATH (the single
// repository of today), or NAME=PATH, repeated, where NAME is owner/name
// or owner/name@branch. A checkout named without a branch stands for
// whatever branch of the repository the cluster follows.
func checkoutFlags(values []string) (single string, repos []plan.Repository, err error) {
	for _, v := range values {
		name, root, named := strings.Cut(v, "=")
		if !named || !isRepoName(name) {
			if len(values) > 1 {
				return "", nil, usageError{fmt.Errorf("--repo %q: several checkouts are each given as owner/name[@branch]=PATH", v)}
			}
			return v, nil, nil
		}
		if root == "" {
			return "", nil, usageError{fmt.Errorf("--repo %q: no path after =", v)}
		}
		repo, branch, _ := strings.Cut(name, "@")
		r := plan.Repository{Name: repo, Branch: branch, Root: root, AllBranches: branch == ""}
		for _, seen := range repos {
			if strings.EqualFold(seen.Label(), r.Label()) {
				return "", nil, usageError{fmt.Errorf("--repo %s is given twice", r.Label())}
			}
		}
		repos = append(repos, r)
	}
	return "", repos, nil
}

// isRepoName reports whether s is owner/name or owner/name@branch.
func isRepoName(s string) bool {
	repo, branch, hasBranch := strings.Cut(s, "@")
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/\\") || strings.ContainsAny(owner, "\\:") {
		return false
	}
	return !hasBranch || branch != ""
}

// indexCheckouts indexes each named checkout and pulls the charts their
// HelmReleases name, as the single-checkout plan does for its one.
func indexCheckouts(ctx context.Context, set *objects.Set, opts *plan.Options, pulls *assemble.ChartPulls) error {
	opts.Charts = map[string]chart.Pulled{}
	for i := range opts.Repositories {
		r := &opts.Repositories[i]
		ix, err := untilCancelled(ctx, func() (*index.Index, error) {
			return plan.Open(r.Root, r.Paths, opts.MaxChartBytes)
		})
		if err != nil {
			return fmt.Errorf("index %s (%s): %w", r.Root, r.Label(), err)
		}
		r.Index = ix
		for k, v := range pulls.Pull(ctx, set, ix) {
			opts.Charts[k] = v
		}
	}
	return nil
}

// writeRepositoriesPatch prints each repository's diff after a line
// naming it; git apply skips those lines, and each part applies in its own
// checkout.
func writeRepositoriesPatch(w io.Writer, res *plan.Result) error {
	for _, r := range res.Repositories {
		diff := edit.UnifiedDiff(r.Edits.All())
		if diff == "" {
			continue
		}
		label := plan.Repository{Name: r.Name, Branch: r.Branch}.Label()
		if _, err := fmt.Fprintf(w, "# %s\n%s", label, diff); err != nil {
			return err
		}
	}
	return nil
}
