package reconcile

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
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
	return &Reconciler{settings: settings, deps: deps, last: map[string]*indexedCheckout{}, prepared: map[string]map[string]preparedBranch{}, renders: map[string]map[string]renderedPR{}}
}

// BranchPrefix is the prefix of every branch kedge owns for a cluster; it is
// how kedge recognises its branches and PRs, and keeps clusters sharing a
// repository out of each other's way.
func BranchPrefix(cluster string) string { return "kedge/" + cluster + "/" }

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

// nsState is one namespace's facts, decision and rendered PR in a cycle.
type nsState struct {
	repo       *repository
	name       string
	branch     string
	baseBranch string
	set        *objects.Set
	facts      namespaceFacts
	decision   decision
	change     *gitrepo.Change
	pr         dashboard.NamespacePR
	title      string
	body       string
	message    string
	outcome    Outcome
}

// RunOnce runs one full cycle. An error leaves nothing half-done that the
// next cycle cannot finish: branches are pushed before PRs are opened, PRs
// are found by branch name, and nothing is force-pushed over another
// author's commit. With several repositories, one that fails is left for
// the next cycle and the others go on; the errors are joined.
func (r *Reconciler) RunOnce(ctx context.Context) (*Report, error) {
	start := r.deps.Now()
	watch := &stopwatch{now: r.deps.Now, last: start}
	set, err := r.deps.Source(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cluster: %w", err)
	}
	watch.lap("cluster")
	c, err := r.openRepositories(ctx, set)
	if err != nil {
		return nil, err
	}
	watch.lap("checkouts")
	res, err := r.plan(ctx, set, c)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	watch.lap("plan")
	if err := r.readRepositories(ctx, c); err != nil {
		return nil, err
	}
	issue, err := r.findDashboard(ctx)
	if err != nil {
		return nil, err
	}
	watch.lap("listings")

	report := &Report{Started: start, Plan: res.Plan, Result: res}
	states, err := r.decideAll(ctx, set, res, c, issue)
	if err != nil {
		return nil, err
	}
	report.Rollouts = r.gateWaves(set, res.Plan, states)
	r.applyLimits(states, c.prs())
	watch.lap("branches")
	if err := r.pushAll(ctx, c, report); err != nil {
		return nil, err
	}
	watch.lap("push")
	errs := c.errors()
	for _, st := range states {
		if err := r.applyPR(ctx, st, res.Plan, report); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", st.name, err))
			st.outcome.Detail = errorDetail(err)
			if isRetryLater(err) {
				st.outcome.State = prstate.PRRateLimited
			}
		}
		st.outcome.Namespace, st.outcome.Repo = st.name, st.repo.name
		report.Outcomes = append(report.Outcomes, st.outcome)
	}
	sortOutcomes(report)
	report.Refused = refusedFiles(res)
	report.Mismatch = r.repositoryMismatch(res)
	if sentence := report.Mismatch.Sentence(); sentence != "" {
		r.deps.Log.Warn(sentence, "configured", report.Mismatch.Configured)
	}
	report.Index, report.Repositories = c.report()
	watch.lap("pull requests")
	report.Duration = r.deps.Now().Sub(start)
	if err := r.updateDashboard(ctx, issue, set, res, states, report); err != nil {
		errs = append(errs, err)
	}
	watch.lap("dashboard")
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

func (w *stopwatch) lap(name string) {
	t := w.now()
	w.stages = append(w.stages, Stage{Name: name, Took: t.Sub(w.last)})
	w.last = t
}

// decideAll gathers every repository's namespaces, builds their commits and
// renders their PRs, and decides what to do with each.
func (r *Reconciler) decideAll(ctx context.Context, set *objects.Set, res *plan.Result, c *cycleRepos, issue *forge.Issue) ([]*nsState, error) {
	var all []*nsState
	for _, repo := range c.repos {
		if repo.err != nil {
			all = append(all, heldStates(repo)...)
			continue
		}
		repo.states = r.gather(set, res, repo, issue)
		prior := r.priorRenders(repo.key, repo.states)
		if err := r.prepareBranches(ctx, repo, repo.states, prior); err != nil {
			if err := c.fail(repo, err); err != nil {
				return nil, err
			}
			repo.states = nil
			all = append(all, heldStates(repo)...)
			continue
		}
		for _, st := range repo.states {
			st.decision = decide(st.facts)
			if err := r.render(st, prior); err != nil {
				return nil, err
			}
		}
		r.keepRenders(repo.key, repo.states)
		all = append(all, repo.states...)
	}
	return all, nil
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

// gather collects, per namespace, the work the plan asks for and kedge's
// PRs and branches.
func (r *Reconciler) gather(set *objects.Set, res *plan.Result, repo *repository, issue *forge.Issue) []*nsState {
	prefix := BranchPrefix(r.settings.Cluster)
	prs, remote := repo.prs, repo.remote
	byName := map[string]*nsState{}
	get := func(ns string) *nsState {
		if st, ok := byName[ns]; ok {
			return st
		}
		st := &nsState{repo: repo, name: ns, branch: prefix + ns, set: set, baseBranch: repo.git.BaseBranch()}
		_, st.facts.branchExists = remote[st.branch]
		byName[ns] = st
		return st
	}
	planned := workloadsByNamespace(res.Plan)
	for ns, edits := range repo.edits.Namespaces {
		if len(edits) == 0 {
			continue
		}
		w := &work{files: map[string][]byte{}}
		restarted := map[string]bool{}
		for _, e := range edits {
			w.files[e.Path] = e.After
			for _, id := range e.Workloads {
				restarted[id.Kind+"/"+id.Name] = true
			}
		}
		for _, wl := range planned[ns] {
			if restarted[wl.Kind+"/"+wl.Name] {
				w.workloads = append(w.workloads, wl)
			}
		}
		w.state = prstate.NewState(r.settings.Cluster, ns, append(w.workloads, migrationTarget(res.Plan, ns)...))
		get(ns).facts.work = w
	}
	for _, pr := range prs {
		ns := strings.TrimPrefix(pr.Head, prefix)
		if ns == "" || strings.Contains(ns, "/") {
			continue
		}
		st := get(ns)
		st.facts.prs = append(st.facts.prs, pr)
	}
	// A branch of kedge's with neither work nor a PR is what a cycle that
	// died between its push and opening the PR leaves behind when the drift
	// went away meanwhile. It would otherwise sit in the repository
	// unexplained; the dashboard names it (a returning drift reuses it).
	for branch := range remote {
		ns := strings.TrimPrefix(branch, prefix)
		if _, known := byName[ns]; known || ns == "" || strings.Contains(ns, "/") {
			continue
		}
		st := get(ns)
		st.outcome.State = prstate.PRNotYetOpened
		st.outcome.Detail = "branch " + branch + " has no pull request and nothing to fix now (a cycle was interrupted before opening one); delete it if the drift does not return"
	}
	out := make([]*nsState, 0, len(byName))
	for _, st := range byName {
		st.pr = r.namespacePR(set, res, planned[st.name], st, issue)
		st.pr.BaseBranch = st.baseBranch
		if m, ok := migrate.For(res.Plan, st.name); ok && m.Relabels() {
			st.pr.Migration = &dashboard.Migration{From: m.From, To: m.To, NamespacePath: m.Manifest.Path, RemovedLabels: m.RemoveLabels, SetLabels: labelList(m.SetLabels),
				Carried: dashboard.CarriedPolicies(m.Carried)}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// workloadsByNamespace groups a plan's workloads by namespace, in plan
// order: a fleet has thousands of namespaces, each looked up once.
func workloadsByNamespace(p drift.Plan) map[string][]drift.Workload {
	out := map[string][]drift.Workload{}
	for _, w := range p.Workloads {
		out[w.Namespace] = append(out[w.Namespace], w)
	}
	return out
}

// labelList writes labels as sorted key=value entries.
func labelList(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// migrationTarget records a relabel in the PR's hidden state as one more
// target, the Namespace and its new label value, so that a PR closed
// unmerged is not taken for one moving the namespace elsewhere.
func migrationTarget(plan drift.Plan, namespace string) []drift.Workload {
	m, ok := migrate.For(plan, namespace)
	if !ok || !m.Relabels() {
		return nil
	}
	return []drift.Workload{{Namespace: namespace, Kind: "Namespace", Name: namespace, Desired: drift.Desired{Revision: m.To}}}
}

// prepareBranches builds each namespace's commit and learns whether a
// person has committed on an existing branch. The history is fetched only
// when the remote tip is not already the commit kedge would push.
func (r *Reconciler) prepareBranches(ctx context.Context, repo *repository, states []*nsState, prior map[string]renderedPR) error {
	known := r.preparedIn(repo.key)
	settled := map[string]preparedBranch{}
	defer r.keepPrepared(repo.key, settled)
	for _, st := range states {
		if st.facts.work == nil {
			continue
		}
		message, err := r.commitMessage(st, prior)
		if err != nil {
			return err
		}
		st.message = message
		asked := preparedBranch{base: repo.git.BaseTip(), remote: repo.remote[st.branch].Tip, message: message, files: st.facts.work.files}
		change, err := known[st.branch].answer(asked)
		if !errors.Is(err, errNotPrepared) {
			settled[st.branch] = known[st.branch]
		} else {
			change, err = repo.git.PrepareBranch(st.branch, st.facts.work.files, message)
			if settledAnswer(change, err) {
				asked.change, asked.err = change, err
				settled[st.branch] = asked
			}
		}
		if errors.Is(err, gitrepo.ErrNoDifference) {
			st.facts.work = nil
			continue
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %w", st.name, err)
		}
		st.change = &change
		if change.Changed && st.facts.branchExists {
			history, err := repo.git.BranchHistory(ctx, st.branch)
			if err != nil && !errors.Is(err, gitrepo.ErrBranchNotFound) {
				return fmt.Errorf("namespace %s: %w", st.name, err)
			}
			st.facts.edited = history.Edited()
			st.outcome.Detail = strings.Join(identities(history.EditedBy), ", ")
		}
	}
	return nil
}

// preparedBranch is a commit kedge asked for on a namespace branch (its
// files and message, on a base tip, with the remote branch at a tip) and
// the answer, when it is one that cannot change while those are the same:
// the remote branch already holds the content, or the base does. A commit
// still to push is built again each time, as the remote tip may meanwhile
// have been fetched and found to hold the content.
type preparedBranch struct {
	base, remote plumbing.Hash
	message      string
	files        map[string][]byte
	change       gitrepo.Change
	err          error
}

// errNotPrepared says a branch has no settled answer for what is asked.
var errNotPrepared = errors.New("not prepared")

func (p preparedBranch) answer(asked preparedBranch) (gitrepo.Change, error) {
	if p.files == nil || p.base != asked.base || p.remote != asked.remote || p.message != asked.message || !sameFiles(p.files, asked.files) {
		return gitrepo.Change{}, errNotPrepared
	}
	return p.change, p.err
}

// settledAnswer reports whether PrepareBranch's answer stands while what
// was asked and the tips are the same.
func settledAnswer(change gitrepo.Change, err error) bool {
	return errors.Is(err, gitrepo.ErrNoDifference) || err == nil && !change.Changed
}

func sameFiles(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func (r *Reconciler) preparedIn(key string) map[string]preparedBranch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prepared[key]
}

// keepPrepared replaces a repository's settled branches with this cycle's:
// a branch no longer asked for is forgotten.
func (r *Reconciler) keepPrepared(key string, settled map[string]preparedBranch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prepared[key] = settled
}

func (r *Reconciler) commitMessage(st *nsState, prior map[string]renderedPR) (string, error) {
	if prev, ok := prior[st.name]; ok {
		return prev.message, nil
	}
	return r.deps.Renderer.CommitMessage(st.pr)
}

func (r *Reconciler) render(st *nsState, prior map[string]renderedPR) error {
	if st.facts.work == nil {
		return nil
	}
	if prev, ok := prior[st.name]; ok {
		st.title, st.body = prev.title, prev.body
		return nil
	}
	var err error
	if st.title, err = r.deps.Renderer.PRTitle(st.pr); err != nil {
		return err
	}
	st.body, err = r.deps.Renderer.PRBody(st.pr)
	return err
}

// applyLimits holds back new PRs beyond limits.maxOpenPRs and
// limits.maxNewPRsPerCycle; held-back namespaces are neither pushed nor
// opened, and wait for a later cycle.
func (r *Reconciler) applyLimits(states []*nsState, prs []forge.PR) {
	open := 0
	for _, pr := range prs {
		if pr.State == "open" {
			open++
		}
	}
	for _, st := range states {
		if st.decision.action == ActClose {
			open--
		}
	}
	opened := 0
	for _, st := range states {
		if st.decision.action != ActOpen {
			continue
		}
		overOpen := r.settings.MaxOpenPRs > 0 && open >= r.settings.MaxOpenPRs
		overCycle := r.settings.MaxNewPRsPerCycle > 0 && opened >= r.settings.MaxNewPRsPerCycle
		if overOpen || overCycle {
			st.decision.action = ActNone
			st.outcome.State = prstate.PRNotYetOpened
			st.outcome.Detail = "waiting: limits.maxOpenPRs / limits.maxNewPRsPerCycle"
			continue
		}
		open++
		opened++
	}
}

// push sends every branch of a repository that changed in one push, each
// with a lease on the tip kedge read, so a branch someone moved meanwhile is
// left alone.
func (r *Reconciler) push(ctx context.Context, repository *repository, report *Report) error {
	repo, states, remote := repository.git, repository.states, repository.remote
	var changes []gitrepo.Change
	leases := map[string]plumbing.Hash{}
	for _, st := range states {
		a := st.decision.action
		if st.change == nil || !st.change.Changed || (a != ActOpen && a != ActUpdate) {
			continue
		}
		changes = append(changes, *st.change)
		if info, ok := remote[st.branch]; ok {
			leases[st.branch] = info.Tip
		}
	}
	if len(changes) == 0 || r.settings.DryRun {
		return nil
	}
	report.Pushes++
	repository.pushes++
	pushed, err := repo.Push(ctx, changes, leases)
	report.PushDuration += pushed.Duration
	var lease *gitrepo.LeaseError
	if errors.As(err, &lease) {
		moved := map[string]bool{}
		for _, c := range lease.Conflicts {
			moved[c.Branch] = true
		}
		for _, st := range states {
			if moved[st.branch] {
				// Someone pushed between our read and our push; the next
				// cycle reads their commit and decides again.
				st.decision.action = ActNone
				st.outcome.State = prstate.PREdited
				st.outcome.Detail = "the branch moved while kedge pushed; retried next cycle"
			}
		}
		r.deps.Log.Warn("branches moved during push", "error", err)
		return nil
	}
	if err != nil {
		return &PushError{Duration: pushed.Duration, Err: err}
	}
	return nil
}

// PushError is a push that failed, with what it cost: the time from the
// ref advertisement to the failure, zero when it failed before that.
type PushError struct {
	Duration time.Duration
	Err      error
}

func (e *PushError) Error() string { return "push: " + e.Err.Error() }

func (e *PushError) Unwrap() error { return e.Err }

func identities(ids []gitrepo.Identity) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.Name+" <"+id.Email+">")
	}
	return out
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

func sortOutcomes(r *Report) {
	slices.SortStableFunc(r.Outcomes, func(a, b Outcome) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Repo, b.Repo))
	})
	slices.SortStableFunc(r.Previews, func(a, b Preview) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Repo, b.Repo))
	})
}
