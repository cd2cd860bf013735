// Package plan turns what kedge read from a cluster (and, optionally, a
// checkout of the GitOps repository) into the drift plan and the edits that
// answer it. `kedge plan` prints the result; a reconcile cycle commits it.
//
// Data flows one way through four stages, each a function from values to
// new values: decide (mesh model, migrations and their namespace labels,
// drift), locate (where each drifted workload is written), edit (the file
// changes and each workload's outcome) and summarise (what the dashboard
// and pull requests show). No stage changes what an earlier one returned.
package plan

import (
	"errors"
	"fmt"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
)

// Options configures one evaluation.
type Options struct {
	Drift drift.Options
	// RepoRoot is a checkout of the GitOps repository; empty leaves every
	// workload's manifest status "no-repo".
	RepoRoot string
	// RepoURLs are the addresses of the repository (its GitHub address, the
	// clone URL); Flux and Argo CD sources naming another repository are
	// not hints for this one. Empty: every source is this repository.
	RepoURLs []string
	// Paths limits the index to these sub-trees of the checkout.
	Paths []string
	// MaxChartBytes bounds a chart a plan renders, uncompressed with its
	// subcharts (config helm.maxChartSize); 0 is the default.
	MaxChartBytes int64
	// Index is the index of RepoRoot when the caller has it already (a
	// service updates the last cycle's from what Git changed); nil builds
	// one.
	Index *index.Index
	// PriorEdits are the edit results an earlier plan of this checkout
	// returned (Result.Repositories[0].PriorEdits): the namespaces whose
	// restarts and files are unchanged keep theirs.
	PriorEdits  edit.Prior
	Annotations restart.Annotations
	// OmitBefore leaves Before out of the restart edits (see
	// edit.Options): for a caller that keeps plans and shows no
	// diff.
	OmitBefore bool
	// HelmValues restarts workloads of Flux HelmReleases through a chart
	// value in spec.values where the chart has one (config helm.prefer:
	// values), rather than through a post-renderer.
	HelmValues bool
	// Charts are the charts of chart repositories the cluster's Argo CD
	// Applications and the repository's Flux HelmReleases (through the
	// cluster's HelmRepositories) name, pulled before the plan, by
	// chart.Key.
	Charts map[string]chart.Pulled
	// Migrations move namespaces to another revision or tag; see
	// internal/migrate.
	Migrations []migrate.Policy
	// Repositories are several checkouts, each of one repository branch
	// the cluster applies from (see internal/route). When set, RepoRoot,
	// RepoURLs, Paths and Index are not read: each workload is located in
	// the checkout of the repository and branch its GitOps object applies
	// it from.
	Repositories []Repository
	// RepositoriesFrom names, in messages about a repository the cluster
	// applies from that is not among Repositories, what lists them:
	// "repos:" when empty.
	RepositoriesFrom string
	// Unavailable are repository branches besides Repositories that are
	// listed but could not be opened: a workload applied from one is
	// no-repo, and its detail says why rather than that nothing lists it.
	Unavailable []UnavailableRepository
}

// UnavailableRepository is a listed repository branch that could not be
// checked out, and why.
type UnavailableRepository struct {
	Repository
	Reason string
}

// Repository is one checkout of one repository branch.
type Repository struct {
	// Name is "owner/name".
	Name string
	// Branch is the branch checked out at Root, the PR base; "" is the
	// repository's default branch, as in route.Target. A workload is
	// planned here only when the cluster follows this very branch (or
	// AllBranches is set, or HEAD and Default is).
	Branch string
	// URLs are the addresses the cluster's objects use for it.
	URLs  []string
	Root  string
	Paths []string
	// Index is Root's when the caller has it already; nil builds one.
	Index *index.Index
	// PriorEdits are what an earlier plan returned for this checkout.
	PriorEdits edit.Prior
	// AllBranches makes the checkout answer whatever branch of the
	// repository the cluster follows: a repos: rule with a baseBranch, or
	// a checkout named without a branch on the command line.
	AllBranches bool
	// Default is set when Branch is the repository's default branch: the
	// checkout then also answers the sources that follow HEAD.
	Default bool
}

// RepositoryEdits are the edits planned in one repository branch.
type RepositoryEdits struct {
	Name   string
	Branch string
	Edits  edit.Set
	Index  *index.Index
	// PriorEdits are the edit results, for the next plan of the checkout.
	PriorEdits edit.Prior
}

// Result is the plan and everything needed to act on it and to show it.
type Result struct {
	Plan  drift.Plan
	Edits edit.Set
	// Index is nil without a repository.
	Index *index.Index
	// Mesh describes the control plane for the dashboard.
	Mesh mesh.Summary
	// Namespaces holds, for every namespace with drifted workloads, what
	// its pull request shows besides the workloads.
	Namespaces map[string]Namespace
	// Repositories are the edits per repository branch, in Options'
	// order; with a single checkout, one entry whose Edits are Edits.
	Repositories []RepositoryEdits
}

// Namespace is what a namespace's pull request shows about it.
type Namespace struct {
	// ProxyVersions counts the namespace's live pods by proxy version.
	ProxyVersions map[string]int
	// Applier names what applies a merged change.
	Applier string
	// OtherRepo is the repository the cluster applies the namespace's
	// drifted workloads from, when that is not the configured one.
	OtherRepo string
	// Repositories are the repository branches (Repository.Label) its
	// edits go to, with Options.Repositories; nil otherwise.
	Repositories []string
}

// Build computes the plan and, with a repository, locates and edits every
// drifted workload, and every namespace a migration moves. Nothing is
// written anywhere.
func Build(set *objects.Set, opts Options) (*Result, error) {
	if err := opts.Drift.Validate(); err != nil {
		return nil, err
	}
	model := mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps, set.ProxyConfigs...)
	selected, err := selectMigrations(set, model, opts)
	if err != nil {
		return nil, err
	}
	if len(opts.Repositories) > 0 {
		return buildRepositories(set, model, selected, opts)
	}
	if opts.RepoRoot == "" {
		drifted := drift.Compute(migrate.Relabel(set, selected), model, opts.Drift)
		if len(opts.Unavailable) > 0 {
			// Every listed repository failed to open: say so of the
			// workloads applied from one, not that none is configured.
			drifted = drifted.WithManifests(newRouter(set, nil, opts).unavailableManifest)
		}
		drifted.Migrations = migrate.WithoutRepository(selected, drifted)
		return summarise(set, model, drifted, edit.Set{Namespaces: map[string][]restart.FileEdit{}}, nil, nil), nil
	}
	ix := opts.Index
	if ix == nil {
		var err error
		if ix, err = Open(opts.RepoRoot, opts.Paths, opts.MaxChartBytes); err != nil {
			return nil, err
		}
	}
	// Without the cluster's Applications, those written in the repository
	// say what Argo CD applies.
	hints := locate.HintsIn(ix, index.WithRepositoryApplications(set, ix), opts.RepoURLs...)
	if opts.HelmValues {
		hints = preferValues(hints)
	}
	if len(opts.Charts) > 0 {
		hints = withCharts(hints, opts.Charts)
	}
	// Where each moving namespace's label is written is settled before any
	// restart is planned: the restarts are planned for the revision the
	// namespace will have.
	migrations, labelEdits := migrate.Locate(ix, selected, namespaceHints(set, hints))
	drifted := drift.Compute(migrate.Relabel(set, migrations), model, opts.Drift)
	locations := locate.After(ix, opts.PriorEdits.Located(), drifted.Workloads, hints)
	edits, outcomes, prior := edit.After(ix, opts.PriorEdits, drifted.Workloads, locations, opts.editOptions())
	attached := migrate.Attach(migrations, edits, labelEdits)
	outcomes = outcomes.WithRefusals(attached.Refused)
	planned := drifted.WithManifests(func(w drift.Workload) (drift.Manifest, bool) {
		m, ok := outcomes[restart.IDOf(w)]
		return m, ok
	})
	planned.Migrations = attached.Migrations
	res := summarise(set, model, planned, attached.Edits, ix, hints)
	res.Repositories = []RepositoryEdits{{Edits: res.Edits, Index: ix, PriorEdits: prior}}
	return res, nil
}

// Open indexes the checkout at root (the sub-trees paths of it; all of it
// when empty): the one place a checkout is indexed, whether for `kedge
// plan`, for each checkout of `kedge plan --repo`, or for the service's
// first cycle on a clone. maxChartBytes bounds a chart its sources render
// (0: render.DefaultMaxChartBytes).
func Open(root string, paths []string, maxChartBytes int64) (*index.Index, error) {
	ix, err := index.Read(root, index.Options{Paths: paths, MaxChartBytes: maxChartBytes})
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", root, err)
	}
	return ix, nil
}

// selectMigrations picks the namespaces the policies move. A migration
// target is checked against the mesh, which only exists here; it is still
// the configuration that is wrong.
func selectMigrations(set *objects.Set, model *mesh.Model, opts Options) ([]drift.Migration, error) {
	if err := migrate.Validate(model, opts.Migrations); err != nil {
		var policy *migrate.PolicyError
		if errors.As(err, &policy) {
			return nil, &config.Error{Key: policy.Key, Msg: policy.Msg}
		}
		return nil, err
	}
	return migrate.Select(set, model, opts.Migrations, migrate.ScopeOf(opts.Drift)), nil
}

// namespaceHints looks for a Namespace where its GitOps tool applies it
// from.
func namespaceHints(set *objects.Set, hints func(drift.Workload) locate.Hints) func(string) locate.Hints {
	return func(namespace string) locate.Hints { return hints(migrate.NamespaceAsWorkload(set, namespace)) }
}

// preferValues makes every workload's hints ask for chart values over
// post-renderers.
func preferValues(hints func(drift.Workload) locate.Hints) func(drift.Workload) locate.Hints {
	return func(w drift.Workload) locate.Hints {
		h := hints(w)
		h.PreferValues = true
		return h
	}
}

// withCharts gives every workload's hints the pulled charts.
func withCharts(hints func(drift.Workload) locate.Hints, charts map[string]chart.Pulled) func(drift.Workload) locate.Hints {
	return func(w drift.Workload) locate.Hints { return locate.WithPulledCharts(hints(w), charts) }
}

func (o Options) editOptions() edit.Options {
	return edit.Options{Annotations: o.Annotations, OmitBefore: o.OmitBefore}
}
