// Package route works out which Git repository and branch the cluster
// applies each workload from, read from its Flux and Argo CD objects, and
// which of those repositories kedge may write to. It is pure: it reads an
// objects.Set and the configuration's rules and returns new values.
package route

import (
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// Source is where the cluster applies a workload from.
type Source struct {
	// URL is the repository address as the GitOps object names it.
	URL string
	// Repo is "owner/name" read from URL; "" when URL has no such path.
	Repo string
	// Branch is the branch the cluster follows; "" means the repository's
	// default branch (Flux without ref, Argo CD HEAD or no targetRevision).
	Branch string
	// Pinned is set when the cluster follows a tag, a semver range or a
	// commit rather than a branch: a pull request cannot move it.
	Pinned string
	// Path is the repository directory the object applies.
	Path string
	// Via names the GitOps object, for messages.
	Via string
}

// Rule is one entry of the configuration's repos: allowlist.
type Rule struct {
	// Match is an owner/name pattern (path.Match syntax: "acme/*").
	Match string
	// BaseBranch, when set, is the branch PRs target whatever the
	// cluster follows.
	BaseBranch string
	// Paths limit the index of the repository to these sub-trees.
	Paths []string
	// CloneURL, when set, is how kedge clones the repository; "{owner}"
	// and "{name}" are replaced.
	CloneURL string
}

// Target is one repository branch kedge indexes and may open PRs against.
type Target struct {
	// Repo is "owner/name".
	Repo string
	// Branch is the PR base; "" means the repository's default branch.
	Branch string
	// URLs are the addresses the cluster's objects use for the repository.
	URLs []string
	// Rule is the allowlist entry that admits it.
	Rule Rule
}

// Outside is a repository the cluster applies from that no rule admits.
type Outside struct {
	Repo string
	URL  string
	// Via names one GitOps object applying from it.
	Via string
}

// Of returns where the cluster applies w from; false when no Flux or Argo
// CD object tracks it.
func Of(set *objects.Set, w drift.Workload) (Source, bool) {
	return Source{}, false
}

// Targets lists every repository branch the cluster's GitOps objects apply
// from that a rule admits, and those no rule admits.
func Targets(set *objects.Set, rules []Rule) ([]Target, []Outside) {
	return nil, nil
}
