// Package prstate is the vocabulary of the life of kedge's pull requests:
// the hidden state block a PR body carries (what the PR was opened for,
// and so which target owns it), where a namespace's PR stands (PRState),
// and what became of each target of a PR kedge closes unmerged (Fate). The
// reconciler decides with it and the renderer shows it; it does no I/O.
package prstate

// PRState is where a namespace's pull request stands.
type PRState string

const (
	PROpen             PRState = "open"
	PRMergedRollingOut PRState = "merged-rolling-out"
	PRRolledOut        PRState = "rolled-out"
	PRClosedIgnored    PRState = "closed-ignored"
	PREdited           PRState = "edited-by-someone-else"
	PRRateLimited      PRState = "rate-limited"
	PRNotYetOpened     PRState = "not-yet-opened"
	PRRefused          PRState = "refused"
	// PROtherRepository: the cluster applies the namespace's drifted
	// workloads from another repository than the one kedge edits.
	PROtherRepository PRState = "other-repository"
	// PRWaitingForWave: the namespace's wave has not started for the
	// target yet.
	PRWaitingForWave PRState = "waiting-for-wave"
)

// Fate is what became of a target of a PR kedge closes unmerged.
type Fate string

const (
	// FateResolved: the workload runs what the mesh injects now.
	FateResolved Fate = "resolved"
	// FateOptedOut: the workload or its namespace carries the opt-out
	// annotation.
	FateOptedOut Fate = "opted-out"
	// FateNotSelected: namespaces.include/exclude or workloads.kinds leave
	// it out now.
	FateNotSelected Fate = "not-selected"
	// FateDeleted: the workload (or its namespace) no longer exists.
	FateDeleted Fate = "deleted"
	// FateNotEditable: it still drifts, but kedge has no edit for it: the
	// manifest is no longer found, is refused, or comes from elsewhere.
	FateNotEditable Fate = "not-editable"
)
