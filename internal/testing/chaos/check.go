package chaos

import (
	"fmt"
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
// planned are its namespaces' edits. Every finding names the repository.
func (w *World) inspectRepo(d *Damage, repo string, planned map[string]map[string]string, dashboardBody string) {
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

	for _, wrong := range w.checkConverged(repo, planned, byHead, touched, dashboardBody) {
		d.Wrong = append(d.Wrong, repo+": "+wrong)
	}
}

// checkConverged holds a repository's end state against the plan: every
// namespace with edits there has one open PR whose branch sits on the
// current base with exactly the planned content, labelled and with
// reviewers; a branch a person committed to is left to them and said to
// be theirs; no other PR is open.
func (w *World) checkConverged(repo string, planned map[string]map[string]string, byHead map[string][]*github.PullRequest, touched map[string]bool, dashboardBody string) []string {
	var wrong []string
	gh := w.Hub.Repo(repo)
	base := w.Git.BranchTip(w.T, gitName(repo), "main")
	for ns, files := range planned {
		branch := Branch(ns)
		var open *github.PullRequest
		for _, pr := range byHead[branch] {
			if pr.GetState() == "open" {
				open = pr
			}
		}
		if touched[branch] {
			if open != nil && !commented(gh, open.GetNumber(), dashboard.CommentEdited) {
				wrong = append(wrong, branch+": a person's commit is not acknowledged on the PR")
			}
			if open == nil && !strings.Contains(dashboardBody, branch) {
				wrong = append(wrong, branch+": a person's branch is not explained on the dashboard")
			}
			continue
		}
		if open == nil {
			wrong = append(wrong, branch+": no open PR")
			continue
		}
		if got := w.parent(repo, branch); got != base {
			wrong = append(wrong, fmt.Sprintf("%s: built on %s, base is %s", branch, short(got), short(base)))
		}
		for path, content := range files {
			if w.Git.ReadFile(w.T, gitName(repo), branch, path) != content {
				wrong = append(wrong, branch+": "+path+" differs from the plan")
			}
		}
		for _, l := range w.Cfg.PR.Labels {
			if !slices.ContainsFunc(open.Labels, func(have *github.Label) bool { return have.GetName() == l }) {
				wrong = append(wrong, fmt.Sprintf("#%d: label %q missing", open.GetNumber(), l))
			}
		}
		if len(open.RequestedReviewers)+len(open.RequestedTeams) == 0 {
			wrong = append(wrong, fmt.Sprintf("#%d: reviewers not requested", open.GetNumber()))
		}
		if s, ok := prstate.ParseState(open.GetBody()); !ok || s.Namespace != ns {
			wrong = append(wrong, fmt.Sprintf("#%d: body carries no state for %s", open.GetNumber(), ns))
		}
	}
	for head, list := range byHead {
		ns := strings.TrimPrefix(head, reconcile.BranchPrefix(Cluster))
		if _, want := planned[ns]; want {
			continue
		}
		for _, pr := range list {
			if pr.GetState() == "open" {
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
