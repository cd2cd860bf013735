// Package engine turns what kedge read from a cluster (and, optionally, a
// checkout of the GitOps repository) into the drift plan and the edits that
// answer it. `kedge plan` prints its result; a reconcile cycle commits it.
package engine

import (
	"errors"
	"fmt"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/manifest"
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
	Paths       []string
	Annotations manifest.Annotations
	// Migrations move namespaces to another revision or tag; see
	// internal/migrate.
	Migrations []migrate.Policy
}

// Result is the plan and everything needed to act on it.
type Result struct {
	Plan  drift.Plan
	Mesh  *mesh.Model
	Edits manifest.EditSet
	// Index is nil without a repository.
	Index *manifest.Index
}

// Build computes the plan and, with a repository, locates and edits every
// drifted workload, and every namespace a migration moves. Nothing is
// written anywhere.
func Build(set *objects.Set, opts Options) (*Result, error) {
	if err := opts.Drift.Validate(); err != nil {
		return nil, err
	}
	model := mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps, set.ProxyConfigs...)
	// A migration target is checked against the mesh, which only exists
	// here; it is still the configuration that is wrong.
	if err := migrate.Validate(model, opts.Migrations); err != nil {
		var policy *migrate.PolicyError
		if errors.As(err, &policy) {
			return nil, &config.Error{Key: policy.Key, Msg: policy.Msg}
		}
		return nil, err
	}
	migrations := migrate.Select(set, model, opts.Migrations, migrate.ScopeOf(opts.Drift))
	res := &Result{Mesh: model}
	if opts.RepoRoot == "" {
		res.Plan = drift.Compute(migrate.Relabel(set, migrations), model, opts.Drift)
		migrate.WithoutRepository(migrations, res.Plan)
		res.Plan.Migrations = migrations
		return res, nil
	}
	index, err := manifest.BuildIndex(opts.RepoRoot, manifest.IndexOptions{Paths: opts.Paths})
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", opts.RepoRoot, err)
	}
	res.Index = index
	hints := manifest.HintsFor(set, opts.RepoURLs...)
	labelEdits := locateNamespaces(set, index, opts.Paths, migrations, hints)
	// A label edit that does not combine with the restarts of the same file
	// blocks its migration, and the restarts planned for the target
	// revision must then be planned again; that can happen once per
	// migration at most.
	for attempt := 0; ; attempt++ {
		res.Plan = drift.Compute(migrate.Relabel(set, migrations), model, opts.Drift)
		index.LocateAll(&res.Plan, hints)
		edits, err := index.Edits(&res.Plan, opts.Annotations)
		if err != nil {
			return nil, err
		}
		res.Edits = edits
		if migrate.Attach(migrations, &res.Edits, labelEdits) || attempt > len(migrations) {
			break
		}
	}
	res.Plan.Migrations = migrations
	return res, nil
}

// locateNamespaces finds the label of every moving namespace in the
// checkout; those it cannot edit safely are blocked before any restart is
// planned for them.
func locateNamespaces(set *objects.Set, index *manifest.Index, paths []string, migrations []drift.Migration, hints func(drift.Workload) manifest.Hints) map[string]*migrate.LabelEdit {
	out := map[string]*migrate.LabelEdit{}
	if len(migrations) == 0 {
		return out
	}
	checkout := migrate.NewCheckout(index, paths)
	for i := range migrations {
		m := &migrations[i]
		h := hints(migrate.NamespaceAsWorkload(set, m.Namespace))
		if !m.Moves() {
			m.Manifest = checkout.Find(m.Namespace, h)
			continue
		}
		if edit := checkout.Locate(m, h); edit != nil {
			out[m.Namespace] = edit
		}
	}
	return out
}
