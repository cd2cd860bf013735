package chaos

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/google/go-github/v66/github"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

// Damage is what a fault left behind after recovery. Everything in it
// must be zero.
type Damage struct {
	// Duplicates: a second PR for one branch, a second dashboard issue, a
	// comment said twice.
	Duplicates []string
	// Lost: a commit a person made that no longer is on its branch.
	Lost []string
	// Orphans: a kedge branch with no PR that the dashboard does not
	// explain.
	Orphans []string
	// Wrong: the converged state is not what the plan asks for.
	Wrong []string
}

// Zero is true when nothing was damaged.
func (d Damage) Zero() bool {
	return len(d.Duplicates)+len(d.Lost)+len(d.Orphans)+len(d.Wrong) == 0
}

var commentMarkerRE = regexp.MustCompile(`<!-- kedge:comment (\S+) -->`)

// Inspect compares each repository and GitHub with what the plan asks for
// and counts the damage.
func (w *World) Inspect() Damage {
	w.T.Helper()
	var d Damage
	dashboards := w.Dashboards()
	if len(dashboards) != 1 {
		d.Duplicates = append(d.Duplicates, fmt.Sprintf("%d dashboard issues", len(dashboards)))
	}
	dashboardBody := ""
	if len(dashboards) > 0 {
		dashboardBody = dashboards[0].GetBody()
	}
	planned := w.PlannedEdits()
	for _, repo := range Repos {
		w.inspectRepo(&d, repo, planned[repo], dashboardBody)
	}
	for _, c := range w.Calls() {
		if c.OutOfSurface {
			d.Wrong = append(d.Wrong, "call outside the REST surface: "+c.Method+" "+c.Path)
		}
	}
	sort.Strings(d.Duplicates)
	sort.Strings(d.Lost)
	sort.Strings(d.Orphans)
	sort.Strings(d.Wrong)
	return d
}

// inspectRepo adds the damage in one repository ("owner/name") to d;
// planned are the PRs the plan asks for there. Every finding names the
// repository.
func (w *World) inspectRepo(d *Damage, repo string, planned []PlannedPR, dashboardBody string) {
	gh := w.Hub.Repo(repo)
	prefix := reconcile.BranchPrefix(Cluster)
	prs := gh.PRs()

	// One PR per branch, ever: kedge never opens a second PR for a branch
	// (a new target of a PR closed unmerged is not part of any scenario).
	byHead := map[string][]*github.PullRequest{}
	for _, pr := range prs {
		if strings.HasPrefix(pr.GetHead().GetRef(), prefix) {
			byHead[pr.GetHead().GetRef()] = append(byHead[pr.GetHead().GetRef()], pr)
		}
	}
	for head, list := range byHead {
		if len(list) > 1 {
			d.Duplicates = append(d.Duplicates, fmt.Sprintf("%s: %d PRs for %s", repo, len(list), head))
		}
	}
	// Each kind of comment is said once per PR or issue.
	numbers := []int{}
	for _, pr := range prs {
		numbers = append(numbers, pr.GetNumber())
	}
	for _, is := range gh.Issues() {
		numbers = append(numbers, is.GetNumber())
	}
	for _, n := range numbers {
		said := map[string]int{}
		for _, c := range gh.Comments(n) {
			for _, m := range commentMarkerRE.FindAllStringSubmatch(c.GetBody(), -1) {
				said[m[1]]++
			}
		}
		for kind, count := range said {
			if count > 1 {
				d.Duplicates = append(d.Duplicates, fmt.Sprintf("%s#%d: comment %q %d times", repo, n, kind, count))
			}
		}
	}

	refs := w.Git.Refs(w.T, gitName(repo))
	touched := map[string]bool{}
	for _, h := range w.HumanCommits() {
		if h.Repo != repo {
			continue
		}
		touched[h.Branch] = true
		tip, ok := refs["refs/heads/"+h.Branch]
		if !ok || !w.Git.IsAncestor(gitName(repo), h.SHA, tip) {
			d.Lost = append(d.Lost, fmt.Sprintf("%s: %s on %s", repo, short(h.SHA), h.Branch))
		}
	}

	for ref := range refs {
		branch := strings.TrimPrefix(ref, "refs/heads/")
		if !strings.HasPrefix(branch, prefix) {
			continue
		}
		if len(byHead[branch]) > 0 {
			continue // its PR, open or closed, explains it
		}
		if !strings.Contains(dashboardBody, branch) {
			d.Orphans = append(d.Orphans, repo+": "+branch)
		}
	}

	wrong := w.checkConverged(repo, planned, prs, byHead, touched, dashboardBody)
	wrong = append(wrong, w.checkBases(repo, prs)...)
	wrong = append(wrong, w.checkClosings(repo, planned)...)
	for _, problem := range wrong {
		d.Wrong = append(d.Wrong, repo+": "+problem)
	}
}

// namespaceOf is the namespace a PR of kedge's is for: the one its hidden
// state records, else the one its branch names.
func namespaceOf(pr *github.PullRequest) string {
	if s, ok := prstate.ParseState(pr.GetBody()); ok {
		return s.Namespace
	}
	ns, _, _ := reconcile.ParseBranch(Cluster, pr.GetHead().GetRef())
	return ns
}

// checkBases holds every open PR of kedge's to its base: the commits its
// branch has above the base are none of another base branch's. A branch
// moved onto another base would carry that base's history into the PR.
func (w *World) checkBases(repo string, prs []*github.PullRequest) []string {
	var wrong []string
	refs := w.Git.Refs(w.T, gitName(repo))
	prefix := reconcile.BranchPrefix(Cluster)
	for _, pr := range prs {
		head, base := pr.GetHead().GetRef(), pr.GetBase().GetRef()
		if pr.GetState() != "open" || !strings.HasPrefix(head, prefix) {
			continue
		}
		if _, ok := refs["refs/heads/"+head]; !ok {
			continue
		}
		for _, c := range w.Git.Log(w.T, gitName(repo), base+".."+head) {
			for ref, tip := range refs {
				other := strings.TrimPrefix(ref, "refs/heads/")
				if other == ref || other == base || strings.HasPrefix(other, "kedge/") {
					continue
				}
				if w.Git.IsAncestor(gitName(repo), c.Hash, tip) {
					wrong = append(wrong, fmt.Sprintf("#%d (%s → %s) carries %s of %s", pr.GetNumber(), head, base, short(c.Hash), other))
				}
			}
		}
	}
	return wrong
}

// checkClosings holds every PR kedge closed to a reason its own target
// had: a PR whose base and namespace still have work in the plan was
// closed by another target, or for no reason the comment can state.
func (w *World) checkClosings(repo string, planned []PlannedPR) []string {
	var wrong []string
	gh := w.Hub.Repo(repo)
	for _, c := range w.Calls() {
		var body struct{ State string }
		if c.Repo() != strings.ToLower(repo) || c.Route != "PATCH /repos/{owner}/{repo}/pulls/{number}" || c.DecodeBody(&body) != nil || body.State != "closed" {
			continue
		}
		var number int
		if _, err := fmt.Sscanf(path.Base(c.Path), "%d", &number); err != nil {
			continue
		}
		pr, ok := gh.PR(number)
		if !ok {
			continue
		}
		for _, p := range planned {
			if p.Base == pr.GetBase().GetRef() && p.Namespace == namespaceOf(pr) && !w.duplicateOf(repo, pr) {
				wrong = append(wrong, fmt.Sprintf("#%d (%s → %s) closed while its target still has work", number, pr.GetHead().GetRef(), p.Base))
			}
		}
	}
	return wrong
}

// duplicateOf tells whether kedge closed pr as a duplicate of another open
// PR of its target, which is a reason its own target has.
func (w *World) duplicateOf(repo string, pr *github.PullRequest) bool {
	return commented(w.Hub.Repo(repo), pr.GetNumber(), dashboard.CommentDuplicate)
}

// checkConverged holds a repository's end state against the plan: every
// base and namespace with edits there has one open PR, whatever its branch
// is called, whose branch sits on the current tip of its base with exactly
// the planned content, labelled and with reviewers; a branch a person
// committed to is left to them and said to be theirs; no other PR is open.
func (w *World) checkConverged(repo string, planned []PlannedPR, prs []*github.PullRequest, byHead map[string][]*github.PullRequest, touched map[string]bool, dashboardBody string) []string {
	var wrong []string
	gh := w.Hub.Repo(repo)
	prefix := reconcile.BranchPrefix(Cluster)
	wanted := map[[2]string]bool{}
	for _, p := range planned {
		wanted[[2]string{p.Base, p.Namespace}] = true
		var open []*github.PullRequest
		for _, pr := range prs {
			if pr.GetState() == "open" && strings.HasPrefix(pr.GetHead().GetRef(), prefix) && pr.GetBase().GetRef() == p.Base && namespaceOf(pr) == p.Namespace {
				open = append(open, pr)
			}
		}
		branch := p.Branch()
		if len(open) == 1 {
			branch = open[0].GetHead().GetRef()
		}
		if touched[branch] {
			if len(open) == 1 && !commented(gh, open[0].GetNumber(), dashboard.CommentEdited) {
				wrong = append(wrong, branch+": a person's commit is not acknowledged on the PR")
			}
			if len(open) == 0 && !strings.Contains(dashboardBody, branch) {
				wrong = append(wrong, branch+": a person's branch is not explained on the dashboard")
			}
			continue
		}
		if len(open) != 1 {
			wrong = append(wrong, fmt.Sprintf("%s on %s: %d open PRs, want 1", p.Namespace, p.Base, len(open)))
			continue
		}
		pr := open[0]
		if got, base := w.parent(repo, branch), w.Git.BranchTip(w.T, gitName(repo), p.Base); got != base {
			wrong = append(wrong, fmt.Sprintf("%s: built on %s, base %s is %s", branch, short(got), p.Base, short(base)))
		}
		for path, content := range p.Files {
			if w.Git.ReadFile(w.T, gitName(repo), branch, path) != content {
				wrong = append(wrong, branch+": "+path+" differs from the plan")
			}
		}
		for _, l := range w.Cfg.PR.Labels {
			if !slices.ContainsFunc(pr.Labels, func(have *github.Label) bool { return have.GetName() == l }) {
				wrong = append(wrong, fmt.Sprintf("#%d: label %q missing", pr.GetNumber(), l))
			}
		}
		if len(pr.RequestedReviewers)+len(pr.RequestedTeams) == 0 {
			wrong = append(wrong, fmt.Sprintf("#%d: reviewers not requested", pr.GetNumber()))
		}
		if s, ok := prstate.ParseState(pr.GetBody()); !ok || s.Namespace != p.Namespace || s.Base != p.Base {
			wrong = append(wrong, fmt.Sprintf("#%d: body carries no state for %s on %s", pr.GetNumber(), p.Namespace, p.Base))
		}
	}
	for head, list := range byHead {
		for _, pr := range list {
			if pr.GetState() == "open" && !wanted[[2]string{pr.GetBase().GetRef(), namespaceOf(pr)}] {
				wrong = append(wrong, fmt.Sprintf("#%d (%s) is open with nothing to do", pr.GetNumber(), head))
			}
		}
	}
	return wrong
}

func commented(gh *ghemu.Server, number int, kind string) bool {
	marker := "<!-- kedge:comment " + kind + " -->"
	for _, c := range gh.Comments(number) {
		if strings.Contains(c.GetBody(), marker) {
			return true
		}
	}
	return false
}

// Dashboards are the cluster's dashboard issues, in any repository.
func (w *World) Dashboards() []*github.Issue {
	var out []*github.Issue
	for _, repo := range Repos {
		for _, is := range w.Hub.Repo(repo).Issues() {
			for _, l := range is.Labels {
				if l.GetName() == reconcile.DashboardLabel && strings.Contains(is.GetBody(), "kedge:dashboard cluster="+Cluster+" ") {
					out = append(out, is)
				}
			}
		}
	}
	return out
}

func (w *World) parent(repo, branch string) string {
	log := w.Git.Log(w.T, gitName(repo), branch)
	if len(log) == 0 || len(log[0].Parents) == 0 {
		return ""
	}
	return log[0].Parents[0]
}

func short(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

// Table renders outcomes as the fault matrix: fault, cycles to converge,
// duplicates, lost commits, orphan branches, and a verdict.
func Table(outcomes []Outcome) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tCYCLES TO CONVERGE\tDUPLICATES\tLOST COMMITS\tORPHAN BRANCHES\tRESULT")
	failed, ran := 0, 0
	for _, o := range outcomes {
		if o.Scenario == "" {
			continue // not run (filtered out with -run)
		}
		ran++
		cycles := "-"
		if o.Cycles > 0 {
			cycles = fmt.Sprint(o.Cycles)
		}
		result := "ok"
		if !o.OK() {
			result = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", o.Scenario, cycles, len(o.Damage.Duplicates), len(o.Damage.Lost), len(o.Damage.Orphans), result)
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\n%d faults, %d failed.\n", ran, failed)
	return b.String()
}
