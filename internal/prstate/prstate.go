// Package prstate is the vocabulary of the life of kedge's pull requests:
// the hidden state block a PR body carries (what the PR was opened for,
// and so which target owns it), where a namespace's PR stands (PRState),
// and what became of each target of a PR kedge closes unmerged (Fate). The
// reconciler decides with it and the renderer shows it; it does no I/O.
package prstate

import "strings"

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

// closedOpen starts the hidden line kedge adds after the state block of a
// PR it closes unmerged, with the same request that closes it. A closed PR
// says nothing of who closed it (that is in its timeline, one more request
// away), and kedge must not take its own close for a person's refusal when
// the same targets come back.
const closedOpen = "<!-- kedge:closed "

// ClosedBody is body as kedge leaves it when it closes the PR unmerged
// for the reason its comment of kind gives.
func ClosedBody(body, kind string) string {
	return strings.TrimRight(body, "\n") + "\n\n" + closedOpen + kind + " -->\n"
}

// ClosedByKedge reports whether body is that of a PR kedge closed: its
// closed line follows the last state block.
func ClosedByKedge(body string) bool {
	closed := strings.LastIndex(body, closedOpen)
	return closed >= 0 && closed > strings.LastIndex(body, stateOpen)
}
