// Package route works out which Git repository and branch the cluster
// applies each workload from, read from its Flux and Argo CD objects, and
// which of those repositories kedge may write to. It is pure: it reads an
// objects.Set and the configuration's rules and returns new values.
package route

import (
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

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
	// default branch (Argo CD HEAD or no targetRevision), which Resolve
	// names. A Flux GitRepository without a ref follows the branch named
	// master, whatever the default branch is (see fluxRef).
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
	// Branch is the PR base; "" means the repository's default branch
	// until Resolve names it.
	Branch string
	// Default is set by Resolve when Branch is the repository's default
	// branch: it then also answers the sources that follow HEAD.
	Default bool
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
// CD object tracks it. For an Argo CD Application with several Git
// sources, it is the first one with a path: which of them holds the
// workload only the checkouts tell (SourcesOf lists them all). A workload
// a Flux HelmRelease renders is not routed here: the HelmRelease, not the
// workload, is what is written in Git, and the cluster's objects do not say
// which repository holds it.
func Of(set *objects.Set, w drift.Workload) (Source, bool) {
	sources := SourcesOf(set, w)
	if len(sources) == 0 {
		return Source{}, false
	}
	return sources[0], true
}

// SourcesOf lists every Git source that may apply w: one for a Flux
// Kustomization, each Git source with a path of an Argo CD Application
// (its chart sources are not Git), none when nothing tracks w.
func SourcesOf(set *objects.Set, w drift.Workload) []Source {
	if set == nil || w.Labels[FluxHelmNameLabel] != "" {
		return nil
	}
	if k := KustomizationOf(set, w); k != nil {
		return []Source{FluxSource(set, k)}
	}
	if app := ApplicationOf(set, w); app != nil {
		return gitSources(app)
	}
	return nil
}

// FluxSource is where a Flux Kustomization applies from. Its URL is ""
// when its source is not a GitRepository of the cluster.
func FluxSource(set *objects.Set, k *objects.Kustomization) Source {
	s := Source{Path: CleanPath(k.Spec.Path), Via: KustomizationVia(k)}
	if g := GitRepositoryOf(set, k); g != nil {
		s.URL, s.Repo = g.Spec.URL, RepoOf(g.Spec.URL)
		s.Branch, s.Pinned = fluxRef(g.Spec.Ref)
	}
	return s
}

// fluxRef reads what a GitRepository follows, in source-controller's order
// of precedence: commit, then name, then semver, then tag, then branch.
// Without a ref, or with one that sets none of them, source-controller
// checks out the branch named master, not the repository's default
// branch: its API says ".spec.ref ... defaults to the 'master' branch"
// (fluxcd/source-controller api/v1/gitrepository_types.go and
// docs/spec/v1/gitrepositories.md, "Reference"), and the go-git client it
// clones with falls back to git.DefaultBranch = "master" when no branch is
// given (fluxcd/pkg git/gogit/client.go, git/options.go). Such a source is
// the same target as the default branch only when that branch is master.
func fluxRef(ref *objects.GitRepositoryRef) (branch, pinned string) {
	if ref == nil {
		return "master", ""
	}
	switch {
	case ref.Commit != "":
		return "", "commit " + ref.Commit
	case ref.Name != "":
		if b, ok := strings.CutPrefix(ref.Name, "refs/heads/"); ok {
			return b, ""
		}
		return "", "ref " + ref.Name
	case ref.SemVer != "":
		return "", "semver range " + ref.SemVer
	case ref.Tag != "":
		return "", "tag " + ref.Tag
	case ref.Branch != "":
		return ref.Branch, ""
	}
	return "master", ""
}

// ArgoSource is where one source of an Application applies from.
func ArgoSource(app *objects.Application, src objects.ApplicationSource) Source {
	s := Source{URL: src.RepoURL, Repo: RepoOf(src.RepoURL), Path: CleanPath(src.Path), Via: ApplicationVia(app)}
	s.Branch, s.Pinned = argoRevision(src.TargetRevision)
	return s
}

// commitSHA is a full Git commit hash, which Argo CD checks out as is.
var commitSHA = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)

// argoRevision reads an Application's targetRevision: "" and HEAD follow
// the default branch; a commit SHA or a semver constraint (resolved
// against the repository's tags) pin it; any other name is taken for a
// branch, since only the repository tells a branch from a tag.
func argoRevision(rev string) (branch, pinned string) {
	rev = strings.TrimSpace(rev)
	switch {
	case rev == "" || rev == "HEAD":
		return "", ""
	case commitSHA.MatchString(rev):
		return "", "commit " + rev
	case isSemver(rev):
		return "", "version " + rev
	}
	if b, ok := strings.CutPrefix(rev, "refs/heads/"); ok {
		return b, ""
	}
	if strings.HasPrefix(rev, "refs/") {
		return "", "ref " + rev
	}
	return rev, ""
}

// isSemver reports whether a revision is a version or a version range, as
// Argo CD resolves them against tags (github.com/Masterminds/semver, the
// library it uses). A branch name never starts with a digit, an operator
// or "v" followed by one in practice.
func isSemver(rev string) bool {
	if _, err := semver.NewConstraint(rev); err != nil {
		return false
	}
	first := strings.TrimPrefix(rev, "v")
	return first != "" && strings.ContainsAny(first[:1], "0123456789*^~<>=!")
}

// gitSources are the Git sources of an Application that apply a
// directory; when none names a path, every Git source (a ref-only source
// still names the repository).
func gitSources(app *objects.Application) []Source {
	var withPath, all []Source
	for _, src := range ApplicationSources(app) {
		if src.Chart != "" || src.RepoURL == "" {
			continue
		}
		s := ArgoSource(app, src)
		all = append(all, s)
		if src.Path != "" {
			withPath = append(withPath, s)
		}
	}
	if len(withPath) > 0 {
		return withPath
	}
	return all
}

// CleanPath turns a tool's path ("./apps/shop/", "apps/shop") into the
// repository-relative form ("apps/shop"; "." for the root).
func CleanPath(p string) string {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return "."
	}
	return path.Clean(p)
}

// Admit returns the first rule whose pattern matches repo ("owner/name"),
// compared without case.
func Admit(rules []Rule, repo string) (Rule, bool) {
	if repo == "" {
		return Rule{}, false
	}
	repo = strings.ToLower(repo)
	for _, r := range rules {
		if ok, err := path.Match(strings.ToLower(r.Match), repo); err == nil && ok {
			return r, true
		}
	}
	return Rule{}, false
}

// Branch is the branch a rule's pull requests for s target: the rule's
// BaseBranch when it sets one, else the branch the cluster follows.
func (r Rule) Branch(s Source) string {
	if r.BaseBranch != "" {
		return r.BaseBranch
	}
	return s.Branch
}

// Targets lists every repository branch the cluster's GitOps objects apply
// from that a rule admits, and those no rule admits. A source following
// HEAD gives a target whose Branch is "": Resolve names it, so that HEAD
// and the default branch by name are one target. A source pinned to a
// tag, a version or a commit is neither: no pull request can move it, and
// the plan says so for each of its workloads. Both lists are sorted.
func Targets(set *objects.Set, rules []Rule) ([]Target, []Outside) {
	targets := map[[2]string]*Target{}
	outside := map[string]*Outside{}
	for _, s := range ClusterSources(set) {
		if s.URL == "" || s.Pinned != "" {
			continue
		}
		rule, ok := Admit(rules, s.Repo)
		if !ok {
			key := s.Repo
			if key == "" {
				key = NormalizeURL(s.URL)
			}
			if o := outside[key]; o == nil || s.Via < o.Via {
				outside[key] = &Outside{Repo: s.Repo, URL: s.URL, Via: s.Via}
			}
			continue
		}
		key := [2]string{s.Repo, rule.Branch(s)}
		t := targets[key]
		if t == nil {
			t = &Target{Repo: s.Repo, Branch: key[1], Rule: rule}
			targets[key] = t
		}
		if !slices.Contains(t.URLs, s.URL) {
			t.URLs = append(t.URLs, s.URL)
		}
	}
	return sortedTargets(targets), sortedOutside(outside)
}

// Resolve names the default branch of the targets following HEAD and
// merges each with the target of that branch by name, if any: the cluster
// applying a repository's default branch through HEAD in one object and by
// name in another is one repository branch, with one checkout and one pull
// request per namespace. defaults maps a repository ("owner/name", any
// case) to its default branch; a target whose repository has none is kept
// as it is, for the caller to hold back. The result is sorted as Targets
// sorts, with Default set on every default branch.
func Resolve(targets []Target, defaults map[string]string) []Target {
	merged := map[[2]string]*Target{}
	var order [][2]string
	for _, t := range targets {
		def, known := defaults[strings.ToLower(t.Repo)]
		if known && t.Branch == "" {
			t.Branch = def
		}
		t.Default = known && t.Branch == def
		key := [2]string{t.Repo, t.Branch}
		m := merged[key]
		if m == nil {
			t.URLs = slices.Clone(t.URLs)
			merged[key] = &t
			order = append(order, key)
			continue
		}
		for _, u := range t.URLs {
			if !slices.Contains(m.URLs, u) {
				m.URLs = append(m.URLs, u)
			}
		}
	}
	out := make(map[[2]string]*Target, len(order))
	for _, key := range order {
		out[key] = merged[key]
	}
	return sortedTargets(out)
}

// ClusterSources lists every Git source the cluster's Flux Kustomizations
// and Argo CD Applications apply from, one per object and source.
func ClusterSources(set *objects.Set) []Source {
	if set == nil {
		return nil
	}
	var out []Source
	for i := range set.Kustomizations {
		out = append(out, FluxSource(set, &set.Kustomizations[i]))
	}
	for i := range set.Applications {
		app := &set.Applications[i]
		for _, src := range ApplicationSources(app) {
			if src.Chart == "" && src.RepoURL != "" {
				out = append(out, ArgoSource(app, src))
			}
		}
	}
	return out
}

func sortedTargets(m map[[2]string]*Target) []Target {
	out := make([]Target, 0, len(m))
	for _, t := range m {
		sort.Strings(t.URLs)
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repo != out[j].Repo {
			return out[i].Repo < out[j].Repo
		}
		return out[i].Branch < out[j].Branch
	})
	return out
}

func sortedOutside(m map[string]*Outside) []Outside {
	out := make([]Outside, 0, len(m))
	for _, o := range m {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repo != out[j].Repo {
			return out[i].Repo < out[j].Repo
		}
		return out[i].URL < out[j].URL
	})
	return out
}

// CloneURLFor is the rule's clone address for repo ("owner/name"), its
// placeholders filled; "" when the rule sets none.
func (r Rule) CloneURLFor(repo string) string {
	if r.CloneURL == "" {
		return ""
	}
	owner, name, _ := strings.Cut(repo, "/")
	return strings.NewReplacer("{owner}", owner, "{name}", name).Replace(r.CloneURL)
}
