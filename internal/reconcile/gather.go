package reconcile

import (
	"sort"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
	"github.com/kedge-io/kedge/internal/waves"
)

// target is one namespace of one checkout: the pull request kedge keeps,
// or would open, for it there, and what the cycle found for it.
type target struct {
	checkout *checkout
	name     string
	// branch is the head branch of its pull request.
	branch string
	// work is what the branch must contain; nil when the plan has nothing
	// to commit there.
	work *work
	// prs are kedge's PRs for it, oldest first.
	prs []forge.PR
	// remote is the branch on the remote, when it exists.
	remote       gitrepo.BranchInfo
	branchExists bool
	// interrupted says why a branch of kedge's has neither work nor a PR.
	interrupted string
	// blocked says why no branch can carry a new pull request: the names
	// it could take are other bases' open PRs'.
	blocked string
	// pr is what its PR's title, body and commit message are rendered
	// from.
	pr dashboard.NamespacePR
	// held is why its repository is left for the next cycle.
	held error
}

// gather collects, for every checkout, each namespace's work, kedge's PRs
// and branches, and the data its PR is rendered from. A checkout that
// could not be opened or listed gives its namespaces with edits, held.
func (r *Reconciler) gather(set *objects.Set, res *plan.Result, cs checkouts, edits []edit.Set, listings []listing, issue *forge.Issue) []target {
	var out []target
	for i, c := range cs.list {
		held := c.err
		if held == nil {
			held = listings[i].err
		}
		if held != nil {
			out = append(out, heldTargets(c, edits[i], held)...)
			continue
		}
		out = append(out, r.gatherCheckout(set, res, c, edits[i], listings[i], issue)...)
	}
	return out
}

// gatherCheckout is gather for one checkout that opened and listed. Of
// the repository's pull requests it takes those the checkout's targets
// own (see ownerOn), and picks each namespace's branch (see branchOn).
func (r *Reconciler) gatherCheckout(set *objects.Set, res *plan.Result, c *checkout, edits edit.Set, l listing, issue *forge.Issue) []target {
	planned := workloadsByNamespace(res.Plan)
	works := map[string]*work{}
	for ns, files := range edits.Namespaces {
		if len(files) > 0 {
			works[ns] = r.workOf(res.Plan, c, ns, files, planned[ns])
		}
	}
	owned := map[string][]forge.PR{}
	headed := map[string]bool{}
	for _, pr := range l.prs {
		headed[pr.Head] = true
		if ns, ok := r.ownerOn(pr, c.base()); ok {
			owned[ns] = append(owned[ns], pr)
		}
	}
	names := map[string]bool{}
	for ns := range works {
		names[ns] = true
	}
	for ns := range owned {
		names[ns] = true
	}
	// A branch of kedge's with neither work nor a PR is what a cycle that
	// died between its push and opening the PR leaves behind when the drift
	// went away meanwhile. It would otherwise sit in the repository
	// unexplained; the dashboard names it (a returning drift reuses it).
	interrupted := map[string]string{}
	for branch := range l.remote {
		ns, base, ok := ParseBranch(r.settings.Cluster, branch)
		if !ok || names[ns] || headed[branch] || !c.names(base) {
			continue
		}
		interrupted[ns] = "branch " + branch + " has no pull request and nothing to fix now (a cycle was interrupted before opening one); delete it if the drift does not return"
		names[ns] = true
	}
	out := make([]target, 0, len(names))
	for ns := range names {
		branch, blocked := r.branchOn(c.defaultBase, c.base(), ns, owned[ns], l.prs)
		t := target{checkout: c, name: ns, branch: branch, blocked: blocked, work: works[ns], prs: owned[ns], interrupted: interrupted[ns]}
		t.remote, t.branchExists = l.remote[t.branch]
		t.pr = r.namespacePR(set, res, planned[ns], t, issue)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// names tells whether a branch name's base (as ParseBranch reads it) is
// the checkout's: "" names the default branch.
func (c *checkout) names(base string) bool {
	if base == "" {
		return c.defaultBase
	}
	return base == c.base()
}

// ownerOn tells which namespace of the checkout of base a pull request of
// its repository belongs to, if any. A PR belongs to the target of its
// repository, its base and its namespace: the namespace its branch names
// (kedge names every branch after its namespace, see BranchFor; the
// hidden state, which records it too, is read only for a branch that does
// not), and the base GitHub reports for it now. Its state records the base
// it was opened against too; when GitHub reports another (its base branch
// was renamed, or a person retargeted it), the PR is the new base's, whose
// next update records it. A PR of another base is another target's,
// whatever its branch is called: kedge neither updates nor closes it from
// here.
func (r *Reconciler) ownerOn(pr forge.PR, base string) (string, bool) {
	if pr.Base != base {
		return "", false
	}
	if ns, _, ok := ParseBranch(r.settings.Cluster, pr.Head); ok {
		return ns, true
	}
	if s, ok := prstate.ParseState(pr.Body); ok && s.Cluster == r.settings.Cluster && s.Namespace != "" {
		return s.Namespace, true
	}
	return "", false
}

// branchOn picks the branch of a namespace's pull request against base
// (the repository's default branch when defaultBase is set), given the
// namespace's own PRs and all of kedge's PRs of the repository:
// the head of its open PR, whatever it is called (a PR opened under an
// earlier name is carried on, never opened twice), else the name
// BranchFor gives. A name an open PR of another base already uses is
// never taken: moving that branch would move the other PR onto this base.
// The default branch's target then takes the longer name; with both
// taken, blocked says why nothing is pushed.
func (r *Reconciler) branchOn(defaultBase bool, base, ns string, owned, all []forge.PR) (branch, blocked string) {
	for _, pr := range owned {
		if pr.State == "open" {
			return pr.Head, ""
		}
	}
	name := BranchFor(r.settings.Cluster, ns, base, defaultBase)
	other := openAgainstOther(all, name, base)
	if other != nil && defaultBase {
		longer := BranchFor(r.settings.Cluster, ns, base, false)
		if openAgainstOther(all, longer, base) == nil {
			return longer, ""
		}
	}
	if other != nil {
		return name, movingRefused(name, other, base)
	}
	return name, ""
}

// work is what a namespace's branch must contain.
type work struct {
	files     map[string][]byte
	workloads []drift.Workload
	state     prstate.State
}

// workOf is what a namespace's branch in checkout c must contain: its
// files, the plan's workloads they restart, and the state its PR records.
func (r *Reconciler) workOf(p drift.Plan, c *checkout, ns string, files []edit.FileEdit, planned []drift.Workload) *work {
	w := &work{files: map[string][]byte{}}
	restarted := map[string]bool{}
	for _, e := range files {
		w.files[e.Path] = e.After
		for _, id := range e.Workloads {
			restarted[id.Kind+"/"+id.Name] = true
		}
	}
	for _, wl := range planned {
		if restarted[wl.Kind+"/"+wl.Name] {
			w.workloads = append(w.workloads, wl)
		}
	}
	w.state = prstate.NewState(r.settings.Cluster, ns, append(w.workloads, migrationTarget(p, ns)...)).For(c.name, c.base())
	return w
}

// heldTargets are the namespaces a failed repository would have had PRs
// for: on the dashboard, with nothing done.
func heldTargets(c *checkout, edits edit.Set, held error) []target {
	var out []target
	for ns, files := range edits.Namespaces {
		if len(files) > 0 {
			out = append(out, target{checkout: c, name: ns, held: held})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// namespacePR is the data a namespace's PR title, body and commit message
// are rendered from. Nothing in it depends on the clock, so a cycle that
// sees the same drift renders the same bytes and updates nothing.
// workloads are the plan's workloads of the namespace.
func (r *Reconciler) namespacePR(set *objects.Set, res *plan.Result, workloads []drift.Workload, t target, issue *forge.Issue) dashboard.NamespacePR {
	pr := dashboard.NamespacePR{
		Cluster:           r.settings.Cluster,
		Namespace:         t.name,
		Branch:            t.branch,
		BaseBranch:        t.checkout.base(),
		RepoWebURL:        t.checkout.webURL,
		Workloads:         workloads,
		ProxyVersions:     res.Namespaces[t.name].ProxyVersions,
		Applier:           res.Namespaces[t.name].Applier,
		OptOutAnnotation:  r.settings.Plan.Drift.OptOutAnnotation,
		RestartAnnotation: r.settings.Plan.Annotations.Restart,
		Wave:              r.waveRef(set, t.name),
	}
	if issue != nil {
		pr.DashboardURL = issue.HTMLURL
	}
	if t.work != nil {
		pr.State = t.work.state
	}
	if m, ok := migrate.For(res.Plan, t.name); ok && m.Relabels() {
		pr.Migration = &dashboard.Migration{From: m.From, To: m.To, NamespacePath: m.Manifest.Path, RemovedLabels: m.RemoveLabels, SetLabels: labelList(m.SetLabels),
			Carried: dashboard.CarriedPolicies(m.Carried)}
	}
	return pr
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

// waveRef names a namespace's wave in its PR; nil without waves.
func (r *Reconciler) waveRef(set *objects.Set, namespace string) *dashboard.WaveRef {
	if len(r.settings.Waves) == 0 {
		return nil
	}
	i := decide.Gate{Waves: r.settings.Waves, Set: set}.WaveOf(namespace)
	return &dashboard.WaveRef{Name: waves.Name(r.settings.Waves, i), Number: i + 1, Of: len(r.settings.Waves)}
}
