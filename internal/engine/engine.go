// Package engine turns what kedge read from a cluster (and, optionally, a
// checkout of the GitOps repository) into the drift plan and the edits that
// answer it. `kedge plan` prints its result; a reconcile cycle commits it.
package engine

import (
	"fmt"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/manifest"
	"github.com/kedge-io/kedge/internal/mesh"
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
// drifted workload. Nothing is written anywhere.
func Build(set *objects.Set, opts Options) (*Result, error) {
	if err := opts.Drift.Validate(); err != nil {
		return nil, err
	}
	model := mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps)
	res := &Result{Mesh: model, Plan: drift.Compute(set, model, opts.Drift)}
	if opts.RepoRoot == "" {
		return res, nil
	}
	index, err := manifest.BuildIndex(opts.RepoRoot, manifest.IndexOptions{Paths: opts.Paths})
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", opts.RepoRoot, err)
	}
	res.Index = index
	index.LocateAll(&res.Plan, manifest.HintsFor(set, opts.RepoURLs...))
	edits, err := index.Edits(&res.Plan, opts.Annotations)
	if err != nil {
		return nil, err
	}
	res.Edits = edits
	return res, nil
}
