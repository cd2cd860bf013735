package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/memlimit"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/route"
)

// checkout is one repository branch a cycle writes to, as the cycle opened
// it: its clone and index and its GitHub client. Later stages read it and
// never change it.
type checkout struct {
	// key tells the repository branches apart across cycles (the index
	// cache); "" for the configured repository alone.
	key    string
	name   string // owner/name
	target route.Target
	webURL string
	// defaultBase is set when the base is the repository's default branch
	// (the configured repository alone counts as such): its pull requests'
	// branches keep the short name (see BranchFor).
	defaultBase bool

	git     *gitrepo.Repo
	forge   *forge.Client
	index   *index.Index
	indexed IndexUpdate
	// priorEdits are the edit results of the last plan with this checkout.
	priorEdits edit.Prior
	// err is why it could not be opened; the repository is left for the
	// next cycle.
	err error
}

// base is the branch the checkout's pull requests target.
func (c *checkout) base() string {
	if c.git == nil {
		return ""
	}
	return c.git.BaseBranch()
}

// checkouts are the repository branches of one cycle. With several, a
// failure in one holds that one back and the others go on; alone (no
// rules), a failure ends the cycle, as it always has.
type checkouts struct {
	list    []*checkout
	several bool
}

// failure is err as the cycle records it for c: nil when c is one of
// several, whose failure holds back c alone, else err, which ends the
// cycle.
func (cs checkouts) failure(c *checkout, err error) (held error, fatal error) {
	if !cs.several {
		return nil, err
	}
	return fmt.Errorf("repository %s: %w", c.name, err), nil
}

// openRepositories clones or fetches, and indexes, the configured
// repository, or with rules every repository branch the cluster applies
// from that the rules admit.
func (r *Reconciler) openRepositories(ctx context.Context, set *objects.Set) (checkouts, error) {
	if len(r.settings.Rules) == 0 {
		git, err := r.deps.OpenRepo(ctx)
		if err != nil {
			return checkouts{}, fmt.Errorf("open repository: %w", err)
		}
		index, indexed, prior, err := r.index("", git, r.settings.Plan.Paths)
		if err != nil {
			return checkouts{}, fmt.Errorf("index %s: %w", git.Worktree(), err)
		}
		c := &checkout{name: configuredRepository(r.settings.RepoWebURL), webURL: r.settings.RepoWebURL, defaultBase: true,
			git: git, forge: r.deps.Forge, index: index, indexed: indexed, priorEdits: prior}
		return checkouts{list: []*checkout{c}}, nil
	}
	// Repositories outside the rules are left to the plan, which reports
	// their workloads (manifest status no-repo) without a checkout.
	targets, _ := route.Targets(set, r.settings.Rules)
	defaults, unknown := r.defaultBranches(ctx, targets)
	cs := checkouts{several: true}
	for _, t := range route.Resolve(targets, defaults) {
		if err := unknown[strings.ToLower(t.Repo)]; err != nil {
			c := &checkout{key: t.Repo + "@" + t.Branch, name: t.Repo, target: t, webURL: r.webURLOf(t.Repo)}
			c.err, _ = cs.failure(c, fmt.Errorf("default branch: %w", err))
			cs.list = append(cs.list, c)
			continue
		}
		cs.list = append(cs.list, r.openTarget(ctx, t))
	}
	return cs, nil
}

// DefaultBranchRecheck is how long kedge believes what GitHub said a
// repository's default branch is before asking again: a default branch
// is rarely changed, and one lookup per repository and hour costs next to
// nothing.
const DefaultBranchRecheck = time.Hour

// knownDefault is a repository's default branch as GitHub named it, and
// when.
type knownDefault struct {
	branch string
	at     time.Time
}

// defaultBranches names the default branch of every repository of the
// targets (GET /repos/{owner}/{repo}, default_branch), by lower-case
// owner/name, from what the last lookups said while it stands. A
// repository whose lookup fails is returned with its error: its targets
// are held back, since which of them follow the default branch is not
// known.
func (r *Reconciler) defaultBranches(ctx context.Context, targets []route.Target) (map[string]string, map[string]error) {
	now := r.deps.Now()
	defaults, unknown := map[string]string{}, map[string]error{}
	for _, t := range targets {
		repo := strings.ToLower(t.Repo)
		if _, done := defaults[repo]; done || unknown[repo] != nil {
			continue
		}
		r.mu.Lock()
		known, ok := r.defaults[repo]
		r.mu.Unlock()
		if ok && now.Sub(known.at) < DefaultBranchRecheck {
			defaults[repo] = known.branch
			continue
		}
		branch, err := r.lookUpDefault(ctx, t.Repo)
		if err != nil {
			unknown[repo] = err
			continue
		}
		defaults[repo] = branch
		r.mu.Lock()
		r.defaults[repo] = knownDefault{branch: branch, at: now}
		r.mu.Unlock()
	}
	return defaults, unknown
}

func (r *Reconciler) lookUpDefault(ctx context.Context, repo string) (string, error) {
	gh, err := r.deps.ForgeFor(ctx, repo)
	if err != nil {
		return "", err
	}
	return gh.DefaultBranch(ctx)
}

// openTarget opens one repository branch; a failure is recorded on the
// checkout it returns.
func (r *Reconciler) openTarget(ctx context.Context, t route.Target) *checkout {
	c := checkout{key: t.Repo + "@" + t.Branch, name: t.Repo, target: t, webURL: r.webURLOf(t.Repo), defaultBase: t.Default}
	var err error
	if c.forge, err = r.deps.ForgeFor(ctx, c.name); err != nil {
		c.err, _ = checkouts{several: true}.failure(&c, err)
		return &c
	}
	if c.git, err = r.deps.OpenTarget(ctx, t); err != nil {
		c.err, _ = checkouts{several: true}.failure(&c, fmt.Errorf("open: %w", err))
		return &c
	}
	if c.index, c.indexed, c.priorEdits, err = r.index(c.key, c.git, t.Rule.Paths); err != nil {
		c.err, _ = checkouts{several: true}.failure(&c, fmt.Errorf("index %s: %w", c.git.Worktree(), err))
	}
	return &c
}

// webURLOf is a repository's web address on the configured repository's
// host.
func (r *Reconciler) webURLOf(name string) string {
	u, err := url.Parse(r.settings.RepoWebURL)
	if err != nil || u.Host == "" {
		return "https://github.com/" + name
	}
	return u.Scheme + "://" + u.Host + "/" + name
}

// plan builds one plan over every repository that opened, and returns it
// with each checkout's edits (by position; none for one that failed). A
// plan is a function of the cluster's Set, the checkouts and their indexes
// and the settings, which stay; with the same Set (the source returns the
// one it gave when nothing in the cluster changed) and the same indexes
// (an index nothing changed in is kept as it is), the last plan is the
// answer again. Pulled charts are not stamped: a plan with any is built.
func (r *Reconciler) plan(ctx context.Context, set *objects.Set, cs checkouts) (*plan.Result, []edit.Set, error) {
	opts := r.settings.Plan
	// A cycle commits each edit's After and never shows a diff, while the
	// plan is kept until the next one: its edits' Before would be half the
	// file contents kedge holds between cycles.
	opts.OmitBefore = true
	var planned []int
	for i, c := range cs.list {
		if c.err != nil {
			opts.Unavailable = append(opts.Unavailable, plan.UnavailableRepository{
				Repository: plan.RepositoryFor(c.target, "", nil), Reason: errors.Unwrap(c.err).Error(),
			})
			continue
		}
		planned = append(planned, i)
		if r.deps.Charts != nil {
			opts.Charts = mergeCharts(opts.Charts, r.deps.Charts(ctx, set, c.index))
		}
		if cs.several {
			checkout := plan.RepositoryFor(c.target, c.git.Worktree(), c.index)
			checkout.PriorEdits = c.priorEdits
			opts.Repositories = append(opts.Repositories, checkout)
		}
	}
	first := cs.list[0]
	if !cs.several {
		opts.RepoRoot, opts.Index, opts.PriorEdits = first.git.Worktree(), first.index, first.priorEdits
	}
	inputs := planInputsOf(set, cs, planned, opts.Unavailable)
	res := r.lastPlanFor(inputs, len(opts.Charts) == 0)
	if res == nil {
		// The plan is kept until the next one is built, and built amid
		// the garbage of editing and verifying every drifted namespace
		// (memlimit.Packed says why that is paced).
		packed := memlimit.Packed()
		var err error
		res, err = plan.Build(set, opts)
		packed()
		if err != nil {
			return nil, nil, err
		}
		r.keepPlan(inputs, res)
	}
	edits := make([]edit.Set, len(cs.list))
	if !cs.several {
		edits[0] = res.Edits
		if len(res.Repositories) > 0 {
			r.keepEdits(first.key, first.index, res.Repositories[0].PriorEdits)
		}
		return res, edits, nil
	}
	for j, i := range planned {
		if j < len(res.Repositories) {
			edits[i] = res.Repositories[j].Edits
			r.keepEdits(cs.list[i].key, cs.list[i].index, res.Repositories[j].PriorEdits)
		}
	}
	return res, edits, nil
}

// planInputs are what a plan is built from besides the settings.
type planInputs struct {
	set         *objects.Set
	several     bool
	checkouts   []plannedCheckout
	unavailable []plan.UnavailableRepository
}

// plannedCheckout is one repository a plan covered: which, where it is
// checked out, and its index.
type plannedCheckout struct {
	target   route.Target
	worktree string
	index    *index.Index
}

// lastPlan is a plan and what it was built from.
type lastPlan struct {
	inputs planInputs
	res    *plan.Result
}

func planInputsOf(set *objects.Set, cs checkouts, planned []int, unavailable []plan.UnavailableRepository) planInputs {
	in := planInputs{set: set, several: cs.several, unavailable: unavailable}
	for _, i := range planned {
		c := cs.list[i]
		in.checkouts = append(in.checkouts, plannedCheckout{target: c.target, worktree: c.git.Worktree(), index: c.index})
	}
	return in
}

// lastPlanFor returns the last plan when it was built from the same
// inputs, or nil. A plan that no longer answers is let go at once: at
// fleet scale it and its Set are hundreds of megabytes the new plan would
// otherwise be built beside.
func (r *Reconciler) lastPlanFor(in planInputs, reusable bool) *plan.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.lastPlan
	if !reusable || last == nil || last.inputs.set != in.set || last.inputs.several != in.several || !slices.EqualFunc(last.inputs.checkouts, in.checkouts, sameCheckout) ||
		!reflect.DeepEqual(last.inputs.unavailable, in.unavailable) {
		r.lastPlan = nil
		return nil
	}
	return last.res
}

// sameCheckout compares indexes by identity: an index is a value, and one
// that nothing changed in is kept as it is.
func sameCheckout(a, b plannedCheckout) bool {
	return a.index == b.index && a.worktree == b.worktree && reflect.DeepEqual(a.target, b.target)
}

func (r *Reconciler) keepPlan(in planInputs, res *plan.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastPlan = &lastPlan{inputs: in, res: res}
}

// mergeCharts returns the charts of both maps; neither is written.
func mergeCharts(a, b map[string]chart.Pulled) map[string]chart.Pulled {
	if a == nil {
		return b
	}
	out := make(map[string]chart.Pulled, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// listing is kedge's PRs and branches in a checkout's repository, or why
// they could not be read.
type listing struct {
	prs    []forge.PR
	remote map[string]gitrepo.BranchInfo
	err    error
}

// readRepositories lists kedge's PRs and branches in each repository that
// opened, by position. The checkouts of several branches of one
// repository share its pull-request listing: it is one repository's.
func (r *Reconciler) readRepositories(ctx context.Context, cs checkouts) ([]listing, error) {
	prefix := BranchPrefix(r.settings.Cluster)
	out := make([]listing, len(cs.list))
	listed := map[string][]forge.PR{}
	for i, c := range cs.list {
		if c.err != nil {
			continue
		}
		prs, err := listed[c.name], error(nil)
		if _, ok := listed[c.name]; !ok {
			if prs, err = c.forge.FindPRs(ctx, prefix); err != nil {
				err = fmt.Errorf("list pull requests: %w", err)
			} else {
				listed[c.name] = prs
			}
		}
		var remote map[string]gitrepo.BranchInfo
		if err == nil {
			if remote, err = c.git.RemoteBranches(ctx, prefix); err != nil {
				err = fmt.Errorf("list branches: %w", err)
			}
		}
		if err != nil {
			held, fatal := cs.failure(c, err)
			if fatal != nil {
				return nil, fatal
			}
			out[i] = listing{err: held}
			continue
		}
		out[i] = listing{prs: prs, remote: remote}
	}
	return out, nil
}

// openPRs counts kedge's open PRs in every repository, for the limits
// that count across them; a repository listed for several of its
// branches counts once.
func openPRs(cs checkouts, listings []listing) int {
	counted := map[string]bool{}
	n := 0
	for i, l := range listings {
		if counted[cs.list[i].name] || l.prs == nil {
			continue
		}
		counted[cs.list[i].name] = true
		for _, pr := range l.prs {
			if pr.State == "open" {
				n++
			}
		}
	}
	return n
}

// indexOf is c's position.
func (cs checkouts) indexOf(c *checkout) int {
	return slices.Index(cs.list, c)
}

// firstFailure is why checkout i was left for the next cycle, if it was:
// it could not be opened, listed, prepared or pushed.
func firstFailure(cs checkouts, i int, listings []listing, unprepared []error, pushes []pushResult) error {
	c := cs.list[i]
	switch {
	case c.err != nil:
		return c.err
	case listings[i].err != nil:
		return listings[i].err
	case unprepared[i] != nil:
		return unprepared[i]
	case pushes != nil:
		return pushes[i].failed
	}
	return nil
}

// heldCheckouts are the keys of the checkouts held back before their
// branches were built.
func heldCheckouts(cs checkouts, listings []listing, unprepared []error) map[string]bool {
	out := map[string]bool{}
	for i, c := range cs.list {
		if firstFailure(cs, i, listings, unprepared, nil) != nil {
			out[c.key] = true
		}
	}
	return out
}

// pushTotals are how many pushes the cycle made and how long they took.
func pushTotals(pushes []pushResult) (int, time.Duration) {
	n, took := 0, time.Duration(0)
	for _, p := range pushes {
		n += p.pushes
		took += p.duration
	}
	return n, took
}

// repositoryReports say what the cycle did in each repository branch, and
// how the first one's index was made.
func repositoryReports(cs checkouts, listings []listing, unprepared []error, pushes []pushResult) (IndexUpdate, []RepositoryReport) {
	out := make([]RepositoryReport, 0, len(cs.list))
	for i, c := range cs.list {
		out = append(out, RepositoryReport{Name: c.name, Branch: c.target.Branch, Pushes: pushes[i].pushes, Index: c.indexed,
			Err: firstFailure(cs, i, listings, unprepared, pushes)})
	}
	return cs.list[0].indexed, out
}

// failures are the errors of the repositories left for the next cycle.
func failures(repos []RepositoryReport) []error {
	var out []error
	for _, r := range repos {
		if r.Err != nil {
			out = append(out, r.Err)
		}
	}
	return out
}
