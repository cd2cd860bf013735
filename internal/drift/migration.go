package drift

import "github.com/kedge-io/kedge/internal/ambient"

// Migration is one namespace that a migration policy moves from one
// revision (or tag) to another by changing its istio.io/rev label. The
// drift of its workloads is computed as if the label already had the new
// value, so the restarts in the same change land on the target revision.
type Migration struct {
	Namespace string `json:"namespace"`
	// From and To are the label values as the policy writes them; To may
	// be a revision tag.
	From string `json:"from"`
	To   string `json:"to"`
	// Revision is the revision whose injector answers the namespace once it
	// carries To; "" when no single revision would.
	Revision string `json:"revision"`
	// RemoveLabels are labels the move takes off the namespace besides
	// setting To: istio-injection=enabled, which would otherwise keep the
	// default revision injecting it.
	RemoveLabels []string `json:"removeLabels,omitempty"`
	// SetLabels are the labels a move to ambient mode sets
	// (istio.io/dataplane-mode, istio.io/use-waypoint); a revision move sets
	// istio.io/rev to To instead.
	SetLabels map[string]string `json:"setLabels,omitempty"`
	// Manifest is where the label is set in the GitOps repository. Edit is
	// EditInPlace (the Namespace document's own labels),
	// EditKustomizeLabels (a kustomization's labels or commonLabels) or
	// EditLabelAlreadySet (Git already carries To).
	Manifest Manifest `json:"manifest"`
	// Workloads are the workloads restarted together with the relabel,
	// sorted by kind and name.
	Workloads []MigrationWorkload `json:"workloads"`
	// Blocked says why the namespace does not move now; empty when it
	// does. Detail explains it.
	Blocked MigrationBlock `json:"blocked,omitempty"`
	Detail  string         `json:"detail,omitempty"`
	// Ambient are, for a move into or out of ambient mode, the objects of
	// Istio's migration guide that refuse it, each with the guide's step
	// (Detail has one line for each).
	Ambient []ambient.Finding `json:"ambient,omitempty"`
	// Carried are the policies the move's pull request carries over to
	// ambient mode (ambient.Finding.Rewrite).
	Carried []ambient.Finding `json:"carried,omitempty"`
}

// MigrationWorkload names a workload of the migrated namespace.
type MigrationWorkload struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// MigrationBlock says why a namespace a policy selects is not moved. The
// values are part of the plan's JSON contract.
type MigrationBlock string

const (
	// BlockOptedOut: the namespace carries the policy's opt-out label.
	BlockOptedOut MigrationBlock = "opted-out"
	// BlockTargetNotReady: the target revision lacks its injector webhook
	// or its injector ConfigMap.
	BlockTargetNotReady MigrationBlock = "target-not-ready"
	// BlockIstioInjection: the namespace's istio-injection label wins over
	// istio.io/rev, and removing it would not move the namespace either
	// (istio-injection=disabled is a choice kedge does not undo).
	BlockIstioInjection MigrationBlock = "istio-injection"
	// BlockNotInjected: with the new label, the target revision's webhooks
	// would still not (or not alone) answer the namespace.
	BlockNotInjected MigrationBlock = "not-injected"
	// BlockAmbientNotReady: the cluster or the namespace is not ready for
	// ambient mode: Ambient lists what Istio's migration guide refuses.
	BlockAmbientNotReady MigrationBlock = "ambient-not-ready"
	// BlockSidecarNotReady: a namespace in ambient mode cannot go back to
	// sidecars yet: Ambient lists what refuses it.
	BlockSidecarNotReady MigrationBlock = "sidecar-not-ready"
	// BlockManifest: the label cannot be changed safely in Git (not found,
	// ambiguous, set by something kedge cannot edit, or Git disagrees with
	// the cluster); Manifest.Detail says which.
	BlockManifest MigrationBlock = "manifest"
)

// Edit kinds of a migration's namespace label.
const (
	EditKustomizeLabels = "kustomize-labels"
	EditLabelAlreadySet = "already-set"
)

// Ambient is the To of a migration out of sidecars into ambient mode, and
// the From of one back.
const Ambient = "ambient"

// ToAmbient reports whether the migration moves the namespace to ambient
// mode rather than to another revision.
func (m Migration) ToAmbient() bool { return m.To == Ambient }

// FromAmbient reports whether the migration moves a namespace in ambient
// mode back to sidecars, injected by To.
func (m Migration) FromAmbient() bool { return m.From == Ambient }

// Moves reports whether the namespace is relabelled by this plan.
func (m Migration) Moves() bool { return m.Blocked == "" }

// Relabels reports whether the change kedge commits carries the label edit
// itself (and not only restarts, as when Git already says To).
func (m Migration) Relabels() bool {
	return m.Moves() && m.Manifest.Status == ManifestFound && m.Manifest.Edit != EditLabelAlreadySet
}
