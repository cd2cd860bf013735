// Package dashboard renders what kedge writes for people to read: pull
// request titles, bodies and commit messages, the cluster dashboard issue,
// PR comments and `kedge plan --output markdown`. It is pure: callers build
// the data from a drift.Plan and the forge's state, and nothing here reads a
// clock, the cluster or the network.
package dashboard

import (
	"time"

	"github.com/kedge-io/kedge/internal/drift"
	istiomesh "github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// Mesh summarises the Istio control plane the data plane drifts from, as
// the plan describes it.
type Mesh = istiomesh.Summary

// Revision is one injecting revision of the mesh.
type Revision = istiomesh.RevisionSummary

// Migration says a namespace PR also moves the namespace from one revision
// (or tag) to another by relabelling it.
type Migration struct {
	From string
	To   string
	// NamespacePath is the repository file that defines the namespace and
	// carries the label the PR changes.
	NamespacePath string
	// RemovedLabels are labels the PR takes off the namespace with the
	// move (istio-injection).
	RemovedLabels []string
	// SetLabels ("key=value") are what a move to ambient mode sets; To is
	// then "ambient". From "ambient" is the way back to sidecars.
	SetLabels []string
	// Carried are the policies a move to ambient mode carries over to the
	// waypoint in the same PR.
	Carried []CarriedPolicy
}

// CarriedPolicy is one policy a move to ambient mode rewrites: attached to
// Services with targetRefs instead of its pod selector.
type CarriedPolicy struct {
	// Object is "Kind namespace/name".
	Object string
	Path   string
	// Selector is the matchLabels it had ("app=api").
	Selector string
	// Services are those its targetRefs name; Waypoints
	// ("namespace/name") enforce it from then on.
	Services  []string
	Waypoints []string
}

// NamespacePR is everything the pull request of one namespace shows.
type NamespacePR struct {
	Cluster    string
	Namespace  string
	Branch     string
	BaseBranch string
	// RepoWebURL is the repository's web address (https://github.com/o/r);
	// files link to {RepoWebURL}/blob/{Branch}/{path}.
	RepoWebURL string
	// Workloads are the namespace's drifted workloads. Those whose manifest
	// was found are what the PR restarts; the others are listed as what it
	// cannot fix.
	Workloads []drift.Workload
	// ProxyVersions counts every pod of the namespace by proxy version (see
	// ProxyVersion); the key "" counts pods without a sidecar.
	ProxyVersions map[string]int
	// Applier names who applies a merge, e.g. "Flux Kustomization
	// flux-system/apps", "Argo CD Application shop" or "your GitOps
	// controller".
	Applier           string
	OptOutAnnotation  string
	RestartAnnotation string
	DashboardURL      string
	Migration         *Migration
	// Wave is the rollout wave the namespace belongs to; nil without
	// waves.
	Wave *WaveRef
	// State is written into the body's hidden block; see prstate.NewState.
	State prstate.State
	// Now is the reference time for pod ages.
	Now time.Time
}

// WaveRef names the wave of a namespace's PR.
type WaveRef struct {
	Name string
	// Number counts from 1; Of is how many waves are configured. Number
	// Of+1 is the namespaces no wave selects, which go last.
	Number, Of int
}

// NamespaceStatus is one drifted namespace on the dashboard.
type NamespaceStatus struct {
	Namespace string
	State     prstate.PRState
	PRNumber  int // 0 when there is no PR
	PRURL     string
	// Workloads are all drifted workloads of the namespace, those kedge can
	// fix and those it cannot.
	Workloads []drift.Workload
	// Detail says more about the state: why it was refused, when the rate
	// limit lifts.
	Detail string
}

// RefusedFile is a manifest kedge found but would not edit safely.
type RefusedFile struct {
	Namespace string
	Path      string
	Reason    string
	// Workloads names the workloads ("Kind/name") the file defines.
	Workloads []string
}

// Straggler is a merged PR whose workloads still drift after the grace time.
type Straggler struct {
	Namespace string
	PRNumber  int
	PRURL     string
	MergedAt  time.Time
	Workloads []drift.Workload
}

// ForeignRepository is a repository, other than the one kedge is
// configured for, that the cluster's Flux or Argo CD sources apply drifted
// workloads from.
type ForeignRepository struct {
	// Repository is the source's address reduced to host/path
	// (github.com/acme/platform).
	Repository string
	// Namespaces are those of the drifted workloads applied from it, sorted.
	Namespaces []string
}

// Mismatch is a repository mismatch: the cluster applies drifted workloads
// from other repositories than the Configured one, so kedge's edits could
// not reach them.
type Mismatch struct {
	// Configured is the repository kedge edits, as owner/name (with an
	// allowlist, every pattern it admits).
	Configured string
	Foreign    []ForeignRepository
	// Allowlist is set when repos: admits several repositories: the
	// foreign ones are those it leaves out.
	Allowlist bool
}

// ClusterDashboard is the content of the cluster's dashboard issue.
type ClusterDashboard struct {
	Cluster string
	Mesh    Mesh
	// Mismatch, when it has Foreign repositories, heads the issue.
	Mismatch Mismatch
	// RepoWebURL and BaseBranch link files kedge cannot edit to the base
	// branch; empty leaves them unlinked.
	RepoWebURL string
	BaseBranch string
	Namespaces []NamespaceStatus
	Skipped    []drift.Skipped
	Refused    []RefusedFile
	Stragglers []Straggler
	// Rollouts are the wave plans of the targets being rolled out, and
	// ResumeLabel the namespace label that resumes a blocked one.
	Rollouts    []waves.Rollout
	ResumeLabel string
	// Migrations are the namespaces migration policies select; those held
	// back (Blocked) are listed with why.
	Migrations []drift.Migration
	LastCycle  time.Time
	// LastCycleDuration is how long the last cycle took.
	LastCycleDuration time.Duration
}

// PlanView is what `kedge plan --output markdown` prints.
type PlanView struct {
	Plan drift.Plan
	Mesh *Mesh // optional
	// ProxyVersions counts every pod of each namespace by proxy version
	// (see ProxyVersion; the key "" counts pods without a sidecar), for the
	// chart a PR body shows; a namespace without counts has no chart.
	ProxyVersions map[string]map[string]int
	// Now is the reference time for pod ages; zero hides them.
	Now time.Time
	// Snapshot is the snapshot directory an offline plan read. A snapshot
	// carries no cluster name: when the plan names none, the title names
	// the snapshot instead and says so.
	Snapshot string
}

// Comment kinds; each renders comment-<kind>.tmpl. The closing kinds say
// why kedge closes a PR unmerged; each comes from what became of the PR's
// targets (see prstate.Fate).
const (
	CommentClosed            = "closed"              // every target now runs the desired proxy, without a merge
	CommentClosedOptedOut    = "closed-opted-out"    // the namespace, or every target, opted out
	CommentClosedNotSelected = "closed-not-selected" // the configuration no longer selects the namespace or kind
	CommentClosedDeleted     = "closed-deleted"      // the targets are gone from the cluster
	CommentClosedNotEditable = "closed-not-editable" // still drifting, but kedge has no edit for them any more
	CommentClosedMixed       = "closed-mixed"        // the targets came to different ends
	CommentDuplicate         = "duplicate"           // another open PR tracks the same branch
	CommentSuperseded        = "superseded"          // merged, but a newer target replaced it before it rolled out
	CommentEdited            = "edited"              // someone else pushed to the branch
	CommentRolledOut         = "rolled-out"          // merged and every workload rolled out
	CommentStalled           = "stalled"             // merged, still drifting after the grace time
)

// ClosingKinds are the comment kinds kedge closes a PR with for a Fate.
var ClosingKinds = map[prstate.Fate]string{
	prstate.FateResolved:    CommentClosed,
	prstate.FateOptedOut:    CommentClosedOptedOut,
	prstate.FateNotSelected: CommentClosedNotSelected,
	prstate.FateDeleted:     CommentClosedDeleted,
	prstate.FateNotEditable: CommentClosedNotEditable,
}

// ClosedTarget is one target of a PR kedge closes, and what became of it.
type ClosedTarget struct {
	prstate.Target
	Fate prstate.Fate
	// Detail says more: which annotation or setting, why there is no edit.
	Detail string
}

// CommentData is what the default comment templates expect.
type CommentData struct {
	Cluster   string
	Namespace string
	Branch    string
	// Targets are what the PR set out to do, as read back from its body
	// with prstate.ParseState.
	Targets []prstate.Target
	// Closed are the Targets with what became of them (closing kinds).
	Closed []ClosedTarget
	// NamespaceOptedOut is set when the namespace itself carries
	// OptOutAnnotation (closed-opted-out).
	NamespaceOptedOut bool
	OptOutAnnotation  string
	// Successor is the PR that takes over (duplicate, superseded).
	Successor    int
	SuccessorURL string
	// Stragglers are the workloads still drifted (stalled).
	Stragglers []drift.Workload
	// Authors are who else pushed to the branch (edited).
	Authors  []string
	MergedAt time.Time
	// Grace is how long workloads may drift after a merge (stalled).
	Grace        time.Duration
	Now          time.Time
	DashboardURL string
}
