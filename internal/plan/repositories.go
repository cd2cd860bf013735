package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// RepositoryFor is the checkout of a route target at root; index may be
// nil. A rule with a base branch answers every branch of the repository
// the cluster follows; the default branch also answers HEAD.
func RepositoryFor(t route.Target, root string, ix *index.Index) Repository {
	return Repository{
		Name: t.Repo, Branch: t.Branch, URLs: t.URLs, Root: root, Paths: t.Rule.Paths, Index: ix,
		AllBranches: t.Rule.BaseBranch != "", Default: t.Default,
	}
}

// Label names a repository branch for people: "owner/name", with
// "@branch" when the checkout is of a named branch.
func (r Repository) Label() string {
	if r.Branch == "" {
		return r.Name
	}
	return r.Name + "@" + r.Branch
}

// answers reports whether the checkout holds what the cluster applies
// from s: the same repository (by name or address) and, unless the
// checkout answers all its branches, the same branch, HEAD being the
// default branch's. A pinned source is answered by none.
func (r Repository) answers(s route.Source) bool {
	if s.Pinned != "" || !r.isRepository(s) {
		return false
	}
	return r.AllBranches || r.Branch == s.Branch || r.Default && s.Branch == ""
}

func (r Repository) isRepository(s route.Source) bool {
	if s.Repo != "" && strings.EqualFold(r.Name, s.Repo) {
		return true
	}
	want := route.NormalizeURL(s.URL)
	return want != "" && slices.ContainsFunc(r.URLs, func(u string) bool { return route.NormalizeURL(u) == want })
}

// checkout is one Repository with its index and the hints its GitOps
// objects give.
type checkout struct {
	repo  Repository
	index *index.Index
	hints func(drift.Workload) locate.Hints
}

// openCheckouts indexes each repository (unless given its index) and
// reads the hints of its own sources. A source the cluster names no
// repository for (a Flux Kustomization of an OCIRepository, a
// GitRepository the cluster lacks) belongs to the first checkout, as it
// belongs to the only one of a single-repository plan.
func openCheckouts(set *objects.Set, opts Options) ([]checkout, error) {
	out := make([]checkout, len(opts.Repositories))
	for i, r := range opts.Repositories {
		ix := r.Index
		if ix == nil {
			var err error
			if ix, err = Open(r.Root, r.Paths, opts.MaxChartBytes); err != nil {
				return nil, fmt.Errorf("%s: %w", r.Label(), err)
			}
		}
		primary := i == 0
		hints := locate.HintsFromIn(ix, index.WithRepositoryApplications(set, ix), func(s route.Source) bool {
			if s.URL == "" {
				return primary
			}
			return r.answers(s)
		})
		if opts.HelmValues {
			hints = preferValues(hints)
		}
		if len(opts.Charts) > 0 {
			hints = withCharts(hints, opts.Charts)
		}
		out[i] = checkout{repo: r, index: ix, hints: hints}
	}
	return out, nil
}

// routing is where one workload (or Namespace) is planned: the checkouts
// that may hold it, or, with none, why it has no repository.
type routing struct {
	checkouts []int
	noRepo    drift.Manifest
	// outside is the address of a repository no checkout answers.
	outside string
}

// router decides, for each workload, which checkout it is planned in.
type router struct {
	set         *objects.Set
	checkouts   []checkout
	unavailable []UnavailableRepository
	listedBy    string
}

// newRouter routes over checkouts; messages name what lists the
// repositories ("repos:" unless opts says).
func newRouter(set *objects.Set, checkouts []checkout, opts Options) router {
	return router{set: set, checkouts: checkouts, unavailable: opts.Unavailable, listedBy: cmp.Or(opts.RepositoriesFrom, "repos:")}
}

// route reads where the cluster applies w from. A workload nothing
// tracks, or whose source names no repository, is planned in the first
// checkout; one a Flux HelmRelease renders may be in any checkout (the
// cluster does not say which holds the HelmRelease); one of an Argo CD
// Application with Git sources in several repositories in each of them.
func (r router) route(w drift.Workload) routing {
	if w.Labels[route.FluxHelmNameLabel] != "" {
		return routing{checkouts: r.all()}
	}
	sources := route.SourcesOf(r.set, w)
	if len(sources) == 0 {
		return routing{checkouts: []int{0}}
	}
	var out routing
	for _, s := range sources {
		if s.URL == "" {
			out.checkouts = appendOnce(out.checkouts, 0)
			continue
		}
		found := false
		for i, c := range r.checkouts {
			if c.repo.answers(s) {
				out.checkouts, found = appendOnce(out.checkouts, i), true
			}
		}
		if !found && out.noRepo.Status == "" {
			out.noRepo, out.outside = r.why(s)
		}
	}
	return out
}

// why says why no checkout answers s.
func (r router) why(s route.Source) (drift.Manifest, string) {
	where := route.NormalizeURL(s.URL)
	m := drift.Manifest{Status: drift.ManifestNoRepo, Repository: s.Repo}
	if s.Pinned != "" {
		m.Detail = fmt.Sprintf("%s applies it from %s and follows %s, which a pull request cannot move", s.Via, where, s.Pinned)
		return m, ""
	}
	if i := slices.IndexFunc(r.unavailable, func(u UnavailableRepository) bool { return u.answers(s) }); i >= 0 {
		m.Detail = fmt.Sprintf("%s applies it from %s, which could not be checked out this cycle: %s", s.Via, where, r.unavailable[i].Reason)
		return m, ""
	}
	if slices.ContainsFunc(r.checkouts, func(c checkout) bool { return c.repo.isRepository(s) }) {
		m.Detail = fmt.Sprintf("%s applies it from branch %s of %s, which is not checked out", s.Via, branchName(s.Branch), where)
		return m, ""
	}
	m.Detail = fmt.Sprintf("%s applies it from %s, which %s does not list", s.Via, where, r.listedBy)
	return m, s.URL
}

// unavailableManifest is w's no-repo status when the cluster applies it
// from a listed repository that could not be checked out.
func (r router) unavailableManifest(w drift.Workload) (drift.Manifest, bool) {
	for _, s := range route.SourcesOf(r.set, w) {
		if s.Pinned == "" && slices.ContainsFunc(r.unavailable, func(u UnavailableRepository) bool { return u.answers(s) }) {
			m, _ := r.why(s)
			return m, true
		}
	}
	return drift.Manifest{}, false
}

func branchName(b string) string {
	if b == "" {
		return "HEAD (the default branch)"
	}
	return b
}

func (r router) all() []int {
	out := make([]int, len(r.checkouts))
	for i := range out {
		out[i] = i
	}
	return out
}

func appendOnce(list []int, v int) []int {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// pick chooses among the checkouts that may hold w the first that finds
// it. When none does, it is the first of them, whose answer is reported,
// unless a source no checkout answers may hold w (an Argo CD Application
// reading another repository too): then -1, and w is no-repo.
func (r router) pick(w drift.Workload, rt routing) int {
	if len(rt.checkouts) == 1 && rt.noRepo.Status == "" {
		return rt.checkouts[0]
	}
	for _, i := range rt.checkouts {
		c := r.checkouts[i]
		if locate.One(c.index, w, c.hints(w)).Manifest.Status == drift.ManifestFound {
			return i
		}
	}
	if rt.noRepo.Status != "" {
		return -1
	}
	return rt.checkouts[0]
}

// buildRepositories is Build over several checkouts: one drift
// computation, each workload located and edited only in the checkout of
// the repository branch the cluster applies it from.
func buildRepositories(set *objects.Set, model *mesh.Model, selected []drift.Migration, opts Options) (*Result, error) {
	checkouts, err := openCheckouts(set, opts)
	if err != nil {
		return nil, err
	}
	r := newRouter(set, checkouts, opts)

	migrations, labelEdits, migrationsOf := locateMigrations(r, selected)
	drifted := drift.Compute(migrate.Relabel(set, migrations), model, opts.Drift)

	groups := make([][]drift.Workload, len(checkouts))
	unrouted := map[restart.WorkloadID]drift.Manifest{}
	outside := map[restart.WorkloadID]string{}
	for _, w := range drifted.Workloads {
		rt := r.route(w)
		i := -1
		if len(rt.checkouts) > 0 {
			i = r.pick(w, rt)
		}
		if i < 0 {
			unrouted[restart.IDOf(w)], outside[restart.IDOf(w)] = rt.noRepo, rt.outside
			continue
		}
		groups[i] = append(groups[i], w)
	}

	outcomes := map[restart.WorkloadID]drift.Manifest{}
	perRepo := make([]RepositoryEdits, len(checkouts))
	attachedMigrations := map[string]drift.Migration{}
	for i, c := range checkouts {
		locations := locate.After(c.index, c.repo.PriorEdits.Located(), groups[i], c.hints)
		edits, found, prior := edit.After(c.index, c.repo.PriorEdits, groups[i], locations, opts.editOptions())
		attached := migrate.Attach(migrationsOf[i], edits, labelEdits[i])
		for id, m := range found.WithRefusals(attached.Refused) {
			m.Repository = c.repo.Label()
			outcomes[id] = m
		}
		for _, m := range attached.Migrations {
			attachedMigrations[m.Namespace] = m
		}
		perRepo[i] = RepositoryEdits{Name: c.repo.Name, Branch: c.repo.Branch, Edits: attached.Edits, Index: c.index, PriorEdits: prior}
	}
	for id, m := range unrouted {
		outcomes[id] = m
	}
	planned := drifted.WithManifests(func(w drift.Workload) (drift.Manifest, bool) {
		m, ok := outcomes[restart.IDOf(w)]
		return m, ok
	})
	planned.Migrations = make([]drift.Migration, len(migrations))
	for i, m := range migrations {
		if a, ok := attachedMigrations[m.Namespace]; ok {
			m = a
		}
		planned.Migrations[i] = m
	}
	foreign := func(w drift.Workload) locate.Hints { return locate.Hints{OtherRepo: outside[restart.IDOf(w)]} }
	res := summarise(set, model, planned, unionOf(perRepo), checkouts[0].index, foreign)
	res.Repositories = perRepo
	for ns, facts := range res.Namespaces {
		facts.Repositories = repositoriesOf(perRepo, ns)
		res.Namespaces[ns] = facts
	}
	return res, nil
}

// locateMigrations locates each moving namespace's label in the checkout
// the cluster applies its Namespace from. A namespace applied from no
// checkout is blocked: its label cannot be changed. It returns the
// migrations in their order, and per checkout the label edits and the
// migrations located there.
func locateMigrations(r router, selected []drift.Migration) ([]drift.Migration, []map[string]*migrate.LabelEdit, [][]drift.Migration) {
	out := slices.Clone(selected)
	labelEdits := make([]map[string]*migrate.LabelEdit, len(r.checkouts))
	migrationsOf := make([][]drift.Migration, len(r.checkouts))
	at := make([][]int, len(r.checkouts))
	for i, m := range selected {
		w := migrate.NamespaceAsWorkload(r.set, m.Namespace)
		rt := r.route(w)
		if len(rt.checkouts) == 0 {
			out[i].Manifest = rt.noRepo
			if m.Moves() {
				out[i].Blocked, out[i].Detail = drift.BlockManifest, rt.noRepo.Detail
			}
			continue
		}
		c := rt.checkouts[0]
		migrationsOf[c] = append(migrationsOf[c], m)
		at[c] = append(at[c], i)
	}
	for c, ck := range r.checkouts {
		located, edits := migrate.Locate(ck.index, migrationsOf[c], namespaceHints(r.set, ck.hints))
		for j, m := range located {
			out[at[c][j]] = m
		}
		labelEdits[c], migrationsOf[c] = edits, located
	}
	return out, labelEdits, migrationsOf
}

// unionOf gathers every repository's edits, for displays: a namespace's
// files in repository order.
func unionOf(repos []RepositoryEdits) edit.Set {
	out := edit.Set{Namespaces: map[string][]restart.FileEdit{}}
	for _, r := range repos {
		for ns, files := range r.Edits.Namespaces {
			out.Namespaces[ns] = append(out.Namespaces[ns], files...)
		}
		out.Refused = append(out.Refused, r.Edits.Refused...)
	}
	restart.SortRefusals(out.Refused)
	return out
}

// repositoriesOf names the repositories a namespace's edits go to.
func repositoriesOf(repos []RepositoryEdits, ns string) []string {
	var out []string
	for _, r := range repos {
		if len(r.Edits.Namespaces[ns]) > 0 {
			out = append(out, Repository{Name: r.Name, Branch: r.Branch}.Label())
		}
	}
	return out
}
