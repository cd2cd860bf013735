// Package reconcile runs one kedge cycle: read the cluster, plan, edit the
// GitOps checkout, and bring kedge's branches and pull requests in line
// with the plan, one namespace each.
//
// A cycle is a pipeline of stages, each a function from the values the
// earlier stages returned to new values: open the checkouts, plan, list
// kedge's PRs and branches, gather each namespace's facts, prepare its
// commit, render its PR, decide, push, apply. Package decide is the one
// place an action is chosen, and the only one that can make a decision;
// pushing returns what happened to each branch and applying returns each
// namespace's outcome, and neither can change a decision.
package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/waves"
)

// Settings are the parts of the configuration a cycle acts on.
type Settings struct {
	Cluster string
	// Plan configures planning; RepoRoot is set to the checkout each cycle.
	Plan plan.Options
	// RepoWebURL is the repository's web address, for links in PR bodies.
	RepoWebURL        string
	Labels            []string
	Draft             bool
	MaxOpenPRs        int
	MaxNewPRsPerCycle int
	// ReviewersKey is a namespace label or annotation listing reviewers.
	ReviewersKey string
	// ReviewersByNamespace maps namespace globs to reviewers.
	ReviewersByNamespace map[string][]string
	// Grace is how long after a merge workloads may drift before kedge
	// names them.
	Grace time.Duration
	// Waves order the namespaces' PRs for a new target; ResumeLabel is
	// the namespace label that lets a blocked rollout go on.
	Waves       []waves.Wave
	ResumeLabel string
	// DryRun computes and reports everything but pushes nothing and makes
	// no mutating GitHub call.
	DryRun bool
	// Rules, when set, admit the repositories kedge writes to (the
	// configured one first): each namespace's PR goes to the repository
	// and branch the cluster applies it from (see internal/route). Empty,
	// the cycle works on the configured repository alone, through
	// Deps.OpenRepo.
	Rules []route.Rule
}

// Deps are the parts a cycle talks to.
type Deps struct {
	// Source reads the cluster.
	Source func(context.Context) (*objects.Set, error)
	// OpenRepo clones or fetches the GitOps repository.
	OpenRepo func(context.Context) (*gitrepo.Repo, error)
	// Forge is the configured repository's GitHub client; the cluster
	// dashboard issue lives there.
	Forge *forge.Client
	// OpenTarget clones or fetches one repository branch the cluster
	// applies from, and ForgeFor is the GitHub client of a repository
	// ("owner/name"); both are used with Settings.Rules only.
	OpenTarget func(context.Context, route.Target) (*gitrepo.Repo, error)
	ForgeFor   func(context.Context, string) (*forge.Client, error)
	Renderer   *dashboard.Renderer
	Log        *slog.Logger
	// Charts pulls the charts of chart repositories the cluster's Argo CD
	// Applications name, and those the indexed repository's HelmReleases
	// take from the cluster's HelmRepositories; nil pulls none.
	Charts func(context.Context, *objects.Set, *index.Index) map[string]chart.Pulled
	// Now is the clock; tests fix it.
	Now func() time.Time
}

// Reconciler runs cycles.
type Reconciler struct {
	settings Settings
	deps     Deps

	mu sync.Mutex
	// last holds, per repository branch, the index the previous cycle
	// planned with; the next cycle updates it from what Git changed
	// instead of indexing everything.
	last map[string]*indexedCheckout
	// prepared holds, per repository branch, the namespace branches whose
	// commit the last cycle found already pushed (or not needed), and from
	// what; a cycle asking for the same commit on the same tips takes the
	// answer instead of building the commit's trees again.
	prepared map[string]map[string]preparedBranch
	// renders are, per repository branch and namespace, the last cycle's
	// PR title, body and commit message and the data they were rendered
	// from; dashboard is the same for the dashboard issue.
	renders   map[string]map[string]renderedPR
	dashboard *renderedDashboard
	// lastPlan is the last cycle's plan and what it was built from.
	lastPlan *lastPlan
	// defaults are the repositories' default branches GitHub named, by
	// lower-case owner/name.
	defaults map[string]knownDefault
}

// indexedCheckout is an index and the commit of the checkout it indexes,
// and the edit results the last plan with it returned.
type indexedCheckout struct {
	index    *index.Index
	commit   plumbing.Hash
	worktree string
	edits    edit.Prior
}

// New returns a Reconciler.
func New(settings Settings, deps Deps) *Reconciler {
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Reconciler{settings: settings, deps: deps, last: map[string]*indexedCheckout{}, prepared: map[string]map[string]preparedBranch{}, renders: map[string]map[string]renderedPR{}, defaults: map[string]knownDefault{}}
}

// BranchPrefix is the prefix of every branch kedge owns for a cluster; it is
// how kedge recognises its branches and PRs, and keeps clusters sharing a
// repository out of each other's way.
func BranchPrefix(cluster string) string { return "kedge/" + cluster + "/" }

// BranchFor is the name of kedge's branch for a namespace's pull request
// against base: kedge/<cluster>/<namespace> for the repository's default
// branch (the name kedge has always used), kedge/<cluster>/<namespace>@<base>
// for any other base. A namespace name has no "@" or "/", so the name
// reads back unambiguously, and the names of two bases of one repository
// never collide: git keeps branch names unique, and a base that is a
// prefix of another ("release", "release/1") cannot exist beside it.
func BranchFor(cluster, namespace, base string, defaultBase bool) string {
	if defaultBase {
		return BranchPrefix(cluster) + namespace
	}
	return BranchPrefix(cluster) + namespace + "@" + base
}

// ParseBranch reads a branch name BranchFor gave: the namespace, and the
// base it names ("" for a default branch's). ok is false for any other
// branch.
func ParseBranch(cluster, branch string) (namespace, base string, ok bool) {
	rest, ok := strings.CutPrefix(branch, BranchPrefix(cluster))
	if !ok {
		return "", "", false
	}
	namespace, base, long := strings.Cut(rest, "@")
	if namespace == "" || strings.Contains(namespace, "/") || long && base == "" {
		return "", "", false
	}
	return namespace, base, true
}

// Action is what a cycle did for one namespace: what package decide chose,
// or ActUpToDate.
type Action = decide.Action

const (
	ActNone          = decide.None
	ActOpen          = decide.Open
	ActUpdate        = decide.Update
	ActClose         = decide.Close
	ActEdited        = decide.Edited
	ActClosedIgnored = decide.ClosedIgnored
	ActMerged        = decide.Merged
	// ActUpToDate is reported, never decided: an update found the open
	// pull request's branch, title, body and labels as they should be and
	// sent nothing.
	ActUpToDate Action = "up-to-date"
)

// Outcome is what a cycle did for one namespace in one repository: a
// namespace applied from two repositories has a pull request in each.
type Outcome struct {
	Namespace string
	// Repo is the repository's owner/name.
	Repo   string
	Action Action
	State  prstate.PRState
	PR     int
	PRURL  string
	Detail string
}

// Report summarises a cycle.
type Report struct {
	Started  time.Time
	Duration time.Duration
	Plan     drift.Plan
	// Outcomes are sorted by namespace, then repository.
	Outcomes []Outcome
	// Pushes is the number of git pushes made: at most one per
	// repository.
	Pushes int
	// PushDuration is how long the pushes took (see gitrepo.PushResult).
	PushDuration time.Duration
	// Refused are files kedge would not edit.
	Refused []dashboard.RefusedFile
	// Mismatch names the namespaces the cluster applies from another
	// repository than the configured one.
	Mismatch dashboard.Mismatch
	// Stragglers are workloads still drifting after a merge and the grace
	// time.
	Stragglers []dashboard.Straggler
	// Rollouts are the wave plans of the targets with PRs to open.
	Rollouts []waves.Rollout
	// Previews are the rendered PRs (dry runs only), in the order of
	// Outcomes.
	Previews []Preview
	Result   *plan.Result
	// Index says how the cycle's manifest index was made (the first
	// repository's, with several).
	Index IndexUpdate
	// Repositories say what the cycle did in each repository branch.
	Repositories []RepositoryReport
	// Stages are how long each step of the cycle took.
	Stages Stages
}

// RepositoryReport is what a cycle did in one repository branch.
type RepositoryReport struct {
	Name, Branch string
	Pushes       int
	Index        IndexUpdate
	// Err is why the repository was left for the next cycle.
	Err error
}

// IndexUpdate says how a cycle's manifest index was made: from the last
// cycle's and the files Git changed since, or by reading the whole
// checkout.
type IndexUpdate struct {
	Incremental bool
	// ChangedFiles is how many files changed since the last cycle's
	// commit; 0 when the index was read in full.
	ChangedFiles int
}

// Preview is a PR as it would be opened.
type Preview struct {
	Namespace, Repo string
	Title, Body     string
	Files           map[string][]byte
}

// RunOnce runs one full cycle. An error leaves nothing half-done that the
// next cycle cannot finish: branches are pushed before PRs are opened, PRs
// are found by branch name, and nothing is force-pushed over another
// author's commit. With several repositories, one that fails is left for
// the next cycle and the others go on; the errors are joined.
func (r *Reconciler) RunOnce(ctx context.Context) (*Report, error) {
	start := r.deps.Now()
	watch := stopwatch{now: r.deps.Now, last: start}
	set, err := r.deps.Source(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cluster: %w", err)
	}
	watch = watch.lap("cluster")
	cs, err := r.openRepositories(ctx, set)
	if err != nil {
		return nil, err
	}
	watch = watch.lap("checkouts")
	res, edits, err := r.plan(ctx, set, cs)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	watch = watch.lap("plan")
	listings, err := r.readRepositories(ctx, cs)
	if err != nil {
		return nil, err
	}
	issue, err := r.findDashboard(ctx)
	if err != nil {
		return nil, err
	}
	watch = watch.lap("listings")

	targets := r.gather(set, res, cs, edits, listings, issue)
	prior := r.priorRenders(targets)
	prepared, unprepared, err := r.prepareBranches(ctx, cs, targets, prior)
	if err != nil {
		return nil, err
	}
	rs, err := r.render(prepared, prior)
	if err != nil {
		return nil, err
	}
	facts := make([]decide.Facts, len(rs))
	for i, t := range rs {
		facts[i] = t.facts()
	}
	gate := decide.Gate{Waves: r.settings.Waves, Set: set, Plan: res.Plan, ResumeLabel: r.settings.ResumeLabel, Grace: r.settings.Grace, Now: r.deps.Now()}
	limits := decide.Limits{MaxOpen: r.settings.MaxOpenPRs, MaxNewPerCycle: r.settings.MaxNewPRsPerCycle, Open: openPRs(cs, listings)}
	decisions, rollouts := decide.Namespaces(facts, gate, limits)
	held := heldCheckouts(cs, listings, unprepared)
	r.keepRenders(cs, held, rs, decisions)
	watch = watch.lap("branches")
	pushes, err := r.pushAll(ctx, cs, listings, rs, decisions)
	if err != nil {
		return nil, err
	}
	watch = watch.lap("push")

	in := read{set: set, res: res}
	var errs []error
	outcomes := make([]Outcome, len(rs))
	var stragglers []dashboard.Straggler
	var previews []Preview
	for i, t := range rs {
		a, err := r.apply(ctx, t, decisions[i], pushes[cs.indexOf(t.checkout)], in)
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", t.name, err))
		}
		outcomes[i] = a.outcome
		if a.straggler != nil {
			stragglers = append(stragglers, *a.straggler)
		}
		if a.preview != nil {
			previews = append(previews, *a.preview)
		}
	}
	report := &Report{Started: start, Plan: res.Plan, Result: res, Rollouts: rollouts, Stragglers: stragglers,
		Outcomes: sortedOutcomes(outcomes), Previews: sortedPreviews(previews), Refused: refusedFiles(res), Mismatch: r.repositoryMismatch(res)}
	report.Pushes, report.PushDuration = pushTotals(pushes)
	if sentence := report.Mismatch.Sentence(); sentence != "" {
		r.deps.Log.Warn(sentence, "configured", report.Mismatch.Configured)
	}
	report.Index, report.Repositories = repositoryReports(cs, listings, unprepared, pushes)
	errs = append(failures(report.Repositories), errs...)
	watch = watch.lap("pull requests")
	report.Duration = r.deps.Now().Sub(start)
	if err := r.updateDashboard(ctx, issue, res, rs, outcomes, report); err != nil {
		errs = append(errs, err)
	}
	watch = watch.lap("dashboard")
	report.Stages = watch.stages
	return report, errors.Join(errs...)
}

// Stage is how long one step of a cycle took.
type Stage struct {
	Name string
	Took time.Duration
}

// Stages are the steps of a cycle in the order they ran.
type Stages []Stage

// String reads as "cluster 4ms, checkouts 1.2s, …", for the log line that
// ends a cycle: where a slow cycle spends its time is the first question
// an operator asks of it.
func (s Stages) String() string {
	parts := make([]string, len(s))
	for i, st := range s {
		parts[i] = st.Name + " " + st.Took.Round(time.Millisecond).String()
	}
	return strings.Join(parts, ", ")
}

// stopwatch records the steps of one cycle as each ends.
type stopwatch struct {
	now    func() time.Time
	last   time.Time
	stages Stages
}

// lap returns the stopwatch with the step that just ended.
func (w stopwatch) lap(name string) stopwatch {
	t := w.now()
	w.stages = append(slices.Clip(w.stages), Stage{Name: name, Took: t.Sub(w.last)})
	w.last = t
	return w
}

// index returns the index of the checkout at the base tip: the last
// cycle's updated from the files Git changed since, or a new one when there
// is none or the difference is not known; and the edit results the last
// plan returned for the checkout.
func (r *Reconciler) index(key string, repo *gitrepo.Repo, paths []string) (*index.Index, IndexUpdate, edit.Prior, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tip, worktree := repo.BaseTip(), repo.Worktree()
	if last := r.last[key]; last != nil && last.worktree == worktree {
		changed, err := repo.ChangedSince(last.commit)
		if err == nil {
			index, err := last.index.Update(changed)
			if err == nil {
				r.last[key] = &indexedCheckout{index: index, commit: tip, worktree: worktree, edits: last.edits}
				return index, IndexUpdate{Incremental: true, ChangedFiles: len(changed)}, last.edits, nil
			}
			r.deps.Log.Debug("index update failed; indexing the whole checkout", "error", err)
		} else {
			r.deps.Log.Debug("changes since the last indexed commit unknown; indexing the whole checkout", "commit", last.commit.String(), "error", err)
		}
	}
	ix, err := plan.Open(worktree, paths, r.settings.Plan.MaxChartBytes)
	if err != nil {
		delete(r.last, key)
		return nil, IndexUpdate{}, edit.Prior{}, err
	}
	r.last[key] = &indexedCheckout{index: ix, commit: tip, worktree: worktree}
	return ix, IndexUpdate{}, edit.Prior{}, nil
}

// keepEdits remembers a plan's edit results for the checkout's next cycle,
// when the checkout is still at the index they were planned with.
func (r *Reconciler) keepEdits(key string, index *index.Index, edits edit.Prior) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last := r.last[key]; last != nil && last.index == index {
		kept := *last
		kept.edits = edits
		r.last[key] = &kept
	}
}

func errorDetail(err error) string {
	var later *forge.RetryLaterError
	if errors.As(err, &later) {
		return later.Error()
	}
	return err.Error()
}

func isRetryLater(err error) bool {
	var later *forge.RetryLaterError
	return errors.As(err, &later)
}

// reviewersFor reads the namespace's reviewers key, else the first matching
// glob of the configuration. "org/team" entries are teams.
func (r *Reconciler) reviewersFor(ns *objects.Set, name string) (users, teams []string) {
	var list []string
	for _, n := range ns.Namespaces {
		if n.Name != name || r.settings.ReviewersKey == "" {
			continue
		}
		v, ok := n.Labels[r.settings.ReviewersKey]
		if !ok {
			v = n.Annotations[r.settings.ReviewersKey]
		}
		list = append(list, strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ' ' })...)
	}
	if len(list) == 0 {
		globs := make([]string, 0, len(r.settings.ReviewersByNamespace))
		for g := range r.settings.ReviewersByNamespace {
			globs = append(globs, g)
		}
		sort.Strings(globs)
		for _, g := range globs {
			if ok, _ := path.Match(g, name); ok {
				list = r.settings.ReviewersByNamespace[g]
				break
			}
		}
	}
	for _, entry := range list {
		entry = strings.TrimPrefix(strings.TrimSpace(entry), "@")
		if entry == "" {
			continue
		}
		if _, team, ok := strings.Cut(entry, "/"); ok {
			teams = append(teams, team)
		} else {
			users = append(users, entry)
		}
	}
	return users, teams
}

// Of returns the outcomes of namespace ns, one per repository it has a
// pull request in.
func (r *Report) Of(ns string) []Outcome {
	var out []Outcome
	for _, o := range r.Outcomes {
		if o.Namespace == ns {
			out = append(out, o)
		}
	}
	return out
}

// sortedOutcomes are outcomes by namespace, then repository.
func sortedOutcomes(outcomes []Outcome) []Outcome {
	out := slices.Clone(outcomes)
	slices.SortStableFunc(out, func(a, b Outcome) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Repo, b.Repo))
	})
	return out
}

// sortedPreviews are previews by namespace, then repository.
func sortedPreviews(previews []Preview) []Preview {
	out := slices.Clone(previews)
	slices.SortStableFunc(out, func(a, b Preview) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Repo, b.Repo))
	})
	return out
}
