package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/memlimit"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/route"
)

// repository is one repository branch a cycle writes to: its checkout and
// index, its GitHub client, kedge's PRs and branches there, and the
// namespaces whose PRs go there.
type repository struct {
	// key tells the repository branches apart across cycles (the index
	// cache); "" for the configured repository alone.
	key    string
	name   string // owner/name
	target route.Target
	webURL string

	git     *gitrepo.Repo
	forge   *forge.Client
	index   *index.Index
	indexed IndexUpdate
	// priorEdits are the edit results of the last plan with this checkout.
	priorEdits edit.Prior
	edits      edit.Set
	prs        []forge.PR
	remote     map[string]gitrepo.BranchInfo
	states     []*nsState
	pushes     int
	// err is why the repository is left for the next cycle.
	err error
}

// cycleRepos are the repositories of one cycle. With several, a failure
// in one is recorded on it and the others go on; alone (no rules), a
// failure ends the cycle, as it always has.
type cycleRepos struct {
	repos   []*repository
	several bool
}

// fail records err on repo and returns nil, or returns err when the cycle
// has one repository only.
func (c *cycleRepos) fail(repo *repository, err error) error {
	if !c.several {
		return err
	}
	repo.err = fmt.Errorf("repository %s: %w", repo.name, err)
	return nil
}

func (c *cycleRepos) errors() []error {
	var out []error
	for _, repo := range c.repos {
		if repo.err != nil {
			out = append(out, repo.err)
		}
	}
	return out
}

// prs are kedge's PRs in every repository, for the limits that count
// across them.
func (c *cycleRepos) prs() []forge.PR {
	var out []forge.PR
	for _, repo := range c.repos {
		out = append(out, repo.prs...)
	}
	return out
}

func (c *cycleRepos) report() (IndexUpdate, []RepositoryReport) {
	var first IndexUpdate
	out := make([]RepositoryReport, 0, len(c.repos))
	for i, repo := range c.repos {
		if i == 0 {
			first = repo.indexed
		}
		out = append(out, RepositoryReport{Name: repo.name, Branch: repo.target.Branch, Pushes: repo.pushes, Index: repo.indexed, Err: repo.err})
	}
	return first, out
}

// openRepositories clones or fetches, and indexes, the configured
// repository, or with rules every repository branch the cluster applies
// from that the rules admit.
func (r *Reconciler) openRepositories(ctx context.Context, set *objects.Set) (*cycleRepos, error) {
	if len(r.settings.Rules) == 0 {
		git, err := r.deps.OpenRepo(ctx)
		if err != nil {
			return nil, fmt.Errorf("open repository: %w", err)
		}
		repo := &repository{name: configuredRepository(r.settings.RepoWebURL), webURL: r.settings.RepoWebURL, git: git, forge: r.deps.Forge}
		if repo.index, repo.indexed, repo.priorEdits, err = r.index("", git, r.settings.Plan.Paths); err != nil {
			return nil, fmt.Errorf("index %s: %w", git.Worktree(), err)
		}
		return &cycleRepos{repos: []*repository{repo}}, nil
	}
	// Repositories outside the rules are left to the plan, which reports
	// their workloads (manifest status no-repo) without a checkout.
	targets, _ := route.Targets(set, r.settings.Rules)
	c := &cycleRepos{several: true}
	for _, t := range targets {
		repo := &repository{key: t.Repo + "@" + t.Branch, name: t.Repo, target: t, webURL: r.webURLOf(t.Repo)}
		c.repos = append(c.repos, repo)
		if err := r.openTarget(ctx, repo); err != nil {
			_ = c.fail(repo, err)
		}
	}
	return c, nil
}

func (r *Reconciler) openTarget(ctx context.Context, repo *repository) error {
	var err error
	if repo.forge, err = r.deps.ForgeFor(ctx, repo.name); err != nil {
		return err
	}
	if repo.git, err = r.deps.OpenTarget(ctx, repo.target); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if repo.index, repo.indexed, repo.priorEdits, err = r.index(repo.key, repo.git, repo.target.Rule.Paths); err != nil {
		return fmt.Errorf("index %s: %w", repo.git.Worktree(), err)
	}
	return nil
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

// plan builds one plan over every repository that opened, and hands each
// its edits. A plan is a function of the cluster's Set, the checkouts and
// their indexes and the settings, which stay; with the same Set (the source
// returns the one it gave when nothing in the cluster changed) and the same
// indexes (an index nothing changed in is kept as it is), the last plan is
// the answer again. Pulled charts are not stamped: a plan with any is built.
func (r *Reconciler) plan(ctx context.Context, set *objects.Set, c *cycleRepos) (*plan.Result, error) {
	opts := r.settings.Plan
	// A cycle commits each edit's After and never shows a diff, while the
	// plan is kept until the next one: its edits' Before would be half the
	// file contents kedge holds between cycles.
	opts.OmitBefore = true
	var planned []*repository
	for _, repo := range c.repos {
		if repo.err != nil {
			opts.Unavailable = append(opts.Unavailable, plan.UnavailableRepository{
				Repository: plan.RepositoryFor(repo.target, "", nil), Reason: errors.Unwrap(repo.err).Error(),
			})
			continue
		}
		planned = append(planned, repo)
		if r.deps.Charts != nil {
			opts.Charts = mergeCharts(opts.Charts, r.deps.Charts(ctx, set, repo.index))
		}
		if c.several {
			checkout := plan.RepositoryFor(repo.target, repo.git.Worktree(), repo.index)
			checkout.PriorEdits = repo.priorEdits
			opts.Repositories = append(opts.Repositories, checkout)
		}
	}
	if !c.several {
		opts.RepoRoot, opts.Index, opts.PriorEdits = c.repos[0].git.Worktree(), c.repos[0].index, c.repos[0].priorEdits
	}
	inputs := planInputsOf(set, c.several, planned, opts.Unavailable)
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
			return nil, err
		}
		r.keepPlan(inputs, res)
	}
	if !c.several {
		c.repos[0].edits = res.Edits
		if len(res.Repositories) > 0 {
			r.keepEdits(c.repos[0].key, c.repos[0].index, res.Repositories[0].PriorEdits)
		}
		return res, nil
	}
	for i, repo := range planned {
		if i < len(res.Repositories) {
			repo.edits = res.Repositories[i].Edits
			r.keepEdits(repo.key, repo.index, res.Repositories[i].PriorEdits)
		}
	}
	return res, nil
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

func planInputsOf(set *objects.Set, several bool, planned []*repository, unavailable []plan.UnavailableRepository) planInputs {
	in := planInputs{set: set, several: several, unavailable: unavailable}
	for _, repo := range planned {
		in.checkouts = append(in.checkouts, plannedCheckout{target: repo.target, worktree: repo.git.Worktree(), index: repo.index})
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

func mergeCharts(into, more map[string]chart.Pulled) map[string]chart.Pulled {
	if into == nil {
		return more
	}
	for k, v := range more {
		into[k] = v
	}
	return into
}

// readRepositories lists kedge's PRs and branches in each repository.
func (r *Reconciler) readRepositories(ctx context.Context, c *cycleRepos) error {
	prefix := BranchPrefix(r.settings.Cluster)
	for _, repo := range c.repos {
		if repo.err != nil {
			continue
		}
		var err error
		if repo.prs, err = repo.forge.FindPRs(ctx, prefix); err != nil {
			err = fmt.Errorf("list pull requests: %w", err)
		} else if repo.remote, err = repo.git.RemoteBranches(ctx, prefix); err != nil {
			err = fmt.Errorf("list branches: %w", err)
		}
		if err != nil {
			if err := c.fail(repo, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// pushAll makes one push per repository. With several repositories, a
// push that fails holds back that repository's PRs only.
func (r *Reconciler) pushAll(ctx context.Context, c *cycleRepos, report *Report) error {
	for _, repo := range c.repos {
		if repo.err != nil {
			continue
		}
		err := r.push(ctx, repo, report)
		if err == nil {
			continue
		}
		if err := c.fail(repo, err); err != nil {
			return err
		}
		for _, st := range repo.states {
			if a := st.decision.action; a == ActOpen || a == ActUpdate {
				st.decision.action = ActNone
				st.outcome.State = prstate.PRNotYetOpened
				st.outcome.Detail = "the push to " + repo.name + " failed; retried next cycle"
			}
		}
	}
	return nil
}

// heldStates are the namespaces a failed repository would have had PRs
// for: on the dashboard, with nothing done.
func heldStates(repo *repository) []*nsState {
	var out []*nsState
	for ns, edits := range repo.edits.Namespaces {
		if len(edits) == 0 {
			continue
		}
		out = append(out, &nsState{repo: repo, name: ns, decision: decision{action: ActNone}, outcome: Outcome{
			State: prstate.PRNotYetOpened, Detail: errorDetail(repo.err),
		}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
