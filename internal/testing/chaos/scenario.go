package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

// Scenario breaks one cycle of a World.
type Scenario struct {
	// Name is the fault, as the table shows it.
	Name string
	// AppAuth runs the scenario with GitHub App authentication.
	AppAuth bool
	// Setup brings the world to where the fault strikes: earlier cycles,
	// changes made by people or by the cluster.
	Setup func(w *World)
	// Fault arms faults for the next cycle only.
	Fault func(w *World)
	// Kill, when set, kills the process of the faulted cycle at the first
	// request it cuts: by cancelling the cycle's context, or with Sigkill
	// by SIGKILL to a child process running the cycle.
	Kill    Rule
	Sigkill bool
	// After changes the world between the faulted cycle and recovery.
	After func(w *World)
	// Fired tells whether the fault really struck; nil uses the GitHub
	// emulation's and the wire's records.
	Fired func(w *World, faulted CycleResult) bool
	// Converges, when set, is how many cycles the scenario must take to
	// converge, counting the faulted one.
	Converges int
	// QuietAfter is how many more cycles after the first quiet one must
	// also push nothing and make no mutating call.
	QuietAfter int
	// Confined names the one repository ("owner/name") the fault strikes.
	// The faulted cycle must still open every PR of the other repository
	// and hold back one of the struck one's; the next cycle must finish
	// the struck repository's PRs without pushing to or opening a PR in
	// the other; the one after must change nothing anywhere.
	Confined string
}

// Outcome is a scenario's row in the table.
type Outcome struct {
	Scenario string
	// Cycles is how many cycles it took until a cycle after which another
	// one changes nothing, counting the faulted one; 0 when it did not
	// converge within the limit.
	Cycles int
	Damage Damage
	// FaultedErr is the faulted cycle's error, if any (expected for most).
	FaultedErr error
	// Problems are failures of the run itself: a fault that did not fire,
	// a recovery cycle that failed, requests after a kill.
	Problems []string
}

// OK is true when the scenario converged with no damage.
func (o Outcome) OK() bool { return o.Cycles > 0 && o.Damage.Zero() && len(o.Problems) == 0 }

// MaxCycles bounds recovery: the faulted cycle, the cycle that repairs it,
// and slack for faults that need a second look (a lease lost during the
// push is acknowledged on the PR in the following cycle).
const MaxCycles = 3

// Demo data the matrix runs on, relative to this package.
const (
	DemoCluster  = "../../../testdata/demo/cluster"
	DemoRepo     = "../../../testdata/demo/gitops"
	DemoTeamRepo = "../../../testdata/demo/team-reviews"
)

// Run plays a scenario on a new World and checks what it left behind.
func Run(t testing.TB, s Scenario) Outcome {
	t.Helper()
	w := NewWorld(t, Options{ClusterDir: DemoCluster, RepoDir: DemoRepo, AppAuth: s.AppAuth})
	if s.Setup != nil {
		s.Setup(w)
	}
	out := Outcome{Scenario: s.Name}
	if s.Fault != nil {
		s.Fault(w)
	}
	var faulted CycleResult
	switch {
	case s.Kill != nil && s.Sigkill:
		faulted = w.SigkillCycle(s.Kill)
	default:
		faulted = w.cycle(s.Kill)
	}
	w.Hub.SetFaultFunc(nil) // faultWhen's function, armed for one cycle
	out.FaultedErr = faulted.Err
	fired := s.Fired
	if fired == nil {
		fired = defaultFired
	}
	if !fired(w, faulted) {
		out.Problems = append(out.Problems, fmt.Sprintf("the fault never struck (the cycle made %d requests and ended with %v)", len(faulted.Steps), faulted.Err))
	}
	if s.Confined != "" {
		out.Problems = append(out.Problems, heldBackOnlyIn(w, s.Confined)...)
	}
	if n := w.PendingFaults(); n > 0 {
		out.Problems = append(out.Problems, fmt.Sprintf("%d queued faults never struck", n))
	}
	if faulted.Killed != nil && faulted.AfterDeath > 0 {
		out.Problems = append(out.Problems, fmt.Sprintf("%d requests after the kill", faulted.AfterDeath))
	}
	if s.After != nil {
		s.After(w)
	}

	cycles := 1
	quiet := faulted.Quiet()
	var recovery []CycleResult
	for !quiet && cycles <= MaxCycles {
		r := w.Cycle()
		if r.Quiet() {
			quiet = true
			break
		}
		recovery = append(recovery, r)
		if r.Err != nil {
			out.Problems = append(out.Problems, fmt.Sprintf("recovery cycle %d: %v", cycles+1, r.Err))
		}
		cycles++
	}
	if quiet && cycles <= MaxCycles {
		out.Cycles = cycles
	}
	if s.Converges > 0 && out.Cycles != s.Converges {
		out.Problems = append(out.Problems, fmt.Sprintf("converged in %d cycles, want %d", out.Cycles, s.Converges))
	}
	for i := range s.QuietAfter {
		if r := w.Cycle(); !r.Quiet() {
			out.Problems = append(out.Problems, fmt.Sprintf("cycle %d after the quiet one: %d pushes, %d mutating calls, error %v", i+1, r.Pushes, len(r.Mutating), r.Err))
		}
	}
	if s.Confined != "" {
		out.Problems = append(out.Problems, repairedOnlyIn(s.Confined, recovery)...)
	}
	out.Damage = w.Inspect()
	return out
}

// heldBackOnlyIn checks the world after a cycle whose fault struck repo
// alone: every other repository has one open PR for each namespace the
// plan edits there, and repo lacks one at least (else the fault held
// nothing back and the row proves nothing).
func heldBackOnlyIn(w *World, repo string) []string {
	var problems []string
	planned := w.PlannedEdits()
	for _, other := range Repos {
		missing := 0
		for _, p := range planned[other] {
			open := 0
			for _, pr := range w.Hub.Repo(other).PRs() {
				if pr.GetBase().GetRef() == p.Base && namespaceOf(pr) == p.Namespace && pr.GetState() == "open" {
					open++
				}
			}
			switch {
			case open == 0:
				missing++
			case open > 1:
				problems = append(problems, fmt.Sprintf("%s: %d open PRs for %s on %s after the faulted cycle", other, open, p.Namespace, p.Base))
			}
		}
		if other != repo && missing > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d PRs not opened in the faulted cycle, whose fault struck %s only", other, missing, repo))
		}
		if other == repo && missing == 0 {
			problems = append(problems, fmt.Sprintf("%s: the fault held back no PR", repo))
		}
	}
	return problems
}

// repairedOnlyIn checks the cycles after a fault that struck repo alone:
// one cycle finishes repo's PRs, and it neither pushes to nor opens a PR
// in another repository (the dashboard, which lists them all, may change).
func repairedOnlyIn(repo string, recovery []CycleResult) []string {
	if len(recovery) != 1 {
		return []string{fmt.Sprintf("%d cycles to finish %s's PRs, want 1 before a quiet one", len(recovery), repo)}
	}
	var problems []string
	r := recovery[0]
	for other, n := range r.PushesTo {
		if other != repo {
			problems = append(problems, fmt.Sprintf("%s: %d pushes in the cycle that repaired %s", other, n, repo))
		}
	}
	for _, c := range r.Mutating {
		if other := c.Repo(); other != repo && c.Route == "POST /repos/{owner}/{repo}/pulls" {
			problems = append(problems, fmt.Sprintf("%s: a PR opened in the cycle that repaired %s", other, repo))
		}
	}
	if !opensPR(r, repo) {
		problems = append(problems, fmt.Sprintf("%s: the cycle after the fault opened no PR there", repo))
	}
	return problems
}

// opensPR reports whether a cycle opened a PR in repo.
func opensPR(r CycleResult, repo string) bool {
	for _, c := range r.Mutating {
		if c.Repo() == repo && c.Route == "POST /repos/{owner}/{repo}/pulls" && c.Status == http.StatusCreated {
			return true
		}
	}
	return false
}

func defaultFired(w *World, r CycleResult) bool {
	if r.Killed != nil || r.Cuts > 0 {
		return true
	}
	for _, c := range r.Calls {
		if c.Faulted {
			return true
		}
	}
	return false
}

// Setups.

// Opened runs the first cycle: every drifted namespace has its PR.
func Opened(w *World) {
	w.T.Helper()
	if r := w.Cycle(); r.Err != nil {
		w.T.Fatalf("first cycle: %v", r.Err)
	}
}

// BaseMoved has a person commit on the base branch, so that the next cycle
// rebuilds every branch on the new base.
func BaseMoved(w *World) {
	w.CommitAsHuman("main", map[string]string{"docs/operations.md": "# Operations\n\nOn-call rota.\n"}, "Document the on-call rota")
}

// DriftGone makes namespace's drift disappear, as after a manual restart.
func DriftGone(namespace string) func(w *World) {
	return func(w *World) {
		w.ChangeCluster(func(set *objects.Set) {
			kept := set.Pods[:0:0]
			for _, p := range set.Pods {
				if p.Namespace != namespace {
					kept = append(kept, p)
				}
			}
			set.Pods = kept
		})
	}
}

// Changed is the world after the first cycle, once the base moved and one
// namespace's drift went away: the next cycle rebuilds every branch, closes
// a PR with a comment and rewrites the dashboard.
func Changed(w *World) { Then(Opened, BaseMoved, DriftGone("search"))(w) }

// Then chains setups.
func Then(steps ...func(w *World)) func(w *World) {
	return func(w *World) {
		for _, s := range steps {
			s(w)
		}
	}
}

// BaseBranch creates branch of the platform repository from main, one
// commit of its own ahead, as a long-lived environment branch is.
func BaseBranch(name string) func(w *World) {
	return func(w *World) {
		w.Git.CommitAs(w.T, RepoName, name, gitserver.PlatformTeam, gitserver.PlatformTeam,
			map[string]string{"ENVIRONMENT": name + "\n"}, "Start the "+name+" environment")
	}
}

// AppFollows points the demo's Argo CD Application app at revision of the
// platform repository.
func AppFollows(app, revision string) func(w *World) {
	return func(w *World) {
		w.ChangeCluster(func(set *objects.Set) {
			apps := slices.Clone(set.Applications)
			for i := range apps {
				if apps[i].Name == app && apps[i].Spec.Source != nil {
					source := *apps[i].Spec.Source
					source.TargetRevision = revision
					apps[i].Spec.Source = &source
				}
			}
			set.Applications = apps
		})
	}
}

// EarlierPR is what kedge did before a repository's branches got their
// own PR branch names: namespace's PR against base of the platform
// repository on the default branch's name, one commit of kedge's on base,
// its state recording neither repository nor base.
func EarlierPR(namespace, base string) func(w *World) {
	return func(w *World) {
		branch := Branch(namespace)
		w.Git.CreateBranch(w.T, RepoName, branch, base)
		kedge := gitserver.Identity{Name: w.Cfg.Git.AuthorName, Email: w.Cfg.Git.AuthorEmail}
		w.Git.CommitAs(w.T, RepoName, branch, kedge, kedge, map[string]string{"NOTES.md": "restart " + namespace + "\n"}, "Restart "+namespace)
		gh, err := forge.New(context.Background(), forge.Config{APIURL: w.Hub.URL + "/", Owner: Owner, Repo: RepoName, Token: w.Cfg.GitHub.Token, HTTPClient: w.Hub.Client(), MinMutationGap: -1})
		must(w.T, err)
		state := prstate.NewState(Cluster, namespace, nil)
		_, err = gh.CreatePR(context.Background(), forge.NewPR{Title: "Restart " + namespace, Head: branch, Base: base, Body: "An earlier kedge opened this.\n\n" + state.Block()})
		must(w.T, err)
	}
}

// DeleteBase deletes base branch name of the platform repository under its
// open PRs, which GitHub closes.
func DeleteBase(name string) func(w *World) {
	return func(w *World) {
		w.Git.DeleteBranch(w.T, RepoName, name)
		w.GH.BaseDeleted(name)
	}
}

// RenameBase renames base branch old of the platform repository; GitHub
// moves its open PRs to the new name.
func RenameBase(old, renamed string) func(w *World) {
	return func(w *World) {
		w.Git.RenameBranch(w.T, RepoName, old, renamed)
		w.GH.BaseRenamed(old, renamed)
	}
}

// Faults.

// EveryWrite answers every GitHub write (token mints aside) with fault,
// during the faulted cycle.
func EveryWrite(fault ghemu.Fault) func(w *World) {
	return func(w *World) {
		faultWhen(w, fault, func(r *http.Request) bool {
			return r.Method != http.MethodGet && !strings.HasSuffix(r.URL.Path, "/access_tokens")
		})
	}
}

// AfterN lets the first n GitHub requests through and answers every later
// one with fault, during the faulted cycle.
func AfterN(n int, fault ghemu.Fault) func(w *World) {
	return func(w *World) {
		var mu sync.Mutex
		seen := 0
		faultWhen(w, fault, func(*http.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			seen++
			return seen > n
		})
	}
}

// faultWhen answers the GitHub requests strike selects with fault, in any
// repository, until the runner removes it after the faulted cycle.
func faultWhen(w *World, fault ghemu.Fault, strike func(*http.Request) bool) {
	w.Hub.SetFaultFunc(func(r *http.Request) *ghemu.Fault {
		if !strike(r) {
			return nil
		}
		f := fault
		return &f
	})
}

// FirstN answers the first n GitHub requests matching method and pattern
// with fault, whichever repository they name.
func FirstN(n int, method, pattern string, fault ghemu.Fault) func(w *World) {
	return func(w *World) { w.Hub.QueueFault(slices.Repeat([]ghemu.Fault{fault.For(method, pattern)}, n)...) }
}

// FirstNIn is FirstN for the requests naming repository repo only.
func FirstNIn(repo string, n int, method, pattern string, fault ghemu.Fault) func(w *World) {
	return func(w *World) {
		w.Hub.Repo(repo).QueueFault(slices.Repeat([]ghemu.Fault{fault.For(method, pattern)}, n)...)
	}
}

// OnWire applies verdict to the nth request matching service, method and
// path pattern.
func OnWire(service, method, pattern string, nth int, verdict Verdict) func(w *World) {
	return func(w *World) {
		w.Wire.SetRule(nthOf(nth, verdict, func(s Step) bool {
			return s.Service == service && (method == "" || s.Method == method) && matchPath(pattern, strings.TrimPrefix(s.Path, "/api/v3"))
		}))
	}
}

// nthOf applies verdict to the nth step match selects and passes the rest.
func nthOf(nth int, verdict Verdict, match func(Step) bool) Rule {
	seen := 0
	return func(s Step) Verdict {
		if !match(s) {
			return Pass
		}
		seen++
		if seen == nth {
			return verdict
		}
		return Pass
	}
}

// PushFails makes the next push answer status without touching the
// repository.
func PushFails(status int) func(w *World) {
	return func(w *World) { w.Git.FailNextPush(status) }
}

// PushFailsIn makes the next push to repo ("owner/name") answer status;
// pushes to the other repository go through.
func PushFailsIn(repo string, status int) func(w *World) {
	return func(w *World) { w.Git.FailNextPushTo(gitName(repo), status) }
}

// PersonCommitsOn has a person commit on namespace's kedge branch.
func PersonCommitsOn(namespace string) func(w *World) {
	return func(w *World) {
		w.CommitAsHuman(Branch(namespace), map[string]string{"NOTES.md": "Hand-made change.\n"}, "A hand-made change")
	}
}

// Outage answers every GitHub request 503 for d from the start of the
// faulted cycle.
func Outage(d time.Duration) func(w *World) {
	return func(w *World) {
		var once sync.Once
		var end time.Time
		faultWhen(w, ghemu.ServerError(http.StatusServiceUnavailable), func(*http.Request) bool {
			once.Do(func() { end = time.Now().Add(d) })
			return !time.Now().After(end)
		})
	}
}

// PushRefusedOnceFor installs an update hook that refuses branch in the
// next push that updates it, as a protected-branch rule does, and lets the
// push's other branches through.
func PushRefusedOnceFor(branch string) func(w *World) {
	return func(w *World) {
		w.Git.InstallHook(w.T, RepoName, "update", "#!/bin/sh\nif [ \"$1\" = refs/heads/"+branch+" ]; then\n  rm -f \"$0\"\n  echo \"$1 is protected\" >&2\n  exit 1\nfi\nexit 0\n")
	}
}

// PushRacedOn makes a person move branch while kedge's next push is in
// flight, after kedge read the refs.
func PushRacedOn(branch string) func(w *World) {
	return func(w *World) {
		sha := w.Git.RaceNextPush(w.T, RepoName, branch, map[string]string{"NOTES.md": "Hand-made change.\n"}, "A hand-made change")
		w.RememberHuman(Repos[0], branch, sha)
	}
}

// PushRefusedOnce installs a pre-receive hook that refuses one push to
// repo, as a server-side policy does.
func PushRefusedOnce(repo string) func(w *World) {
	return func(w *World) {
		w.T.Helper()
		w.Git.InstallHook(w.T, gitName(repo), "pre-receive", "#!/bin/sh\nrm -f \"$0\"\necho 'refused by policy: try again later' >&2\nexit 1\n")
	}
}

func matchPath(pattern, p string) bool {
	if pattern == "" {
		return true
	}
	ok, err := path.Match(pattern, p)
	return err == nil && ok
}

// pushFired tells that the git server refused or failed a push to repo,
// or to any repository when repo is "".
func pushFired(repo string, status int) func(w *World, r CycleResult) bool {
	return func(w *World, r CycleResult) bool {
		for _, req := range w.Git.Requests() {
			if req.Service == "git-receive-pack" && req.Status == status &&
				(repo == "" || strings.HasPrefix(req.Path, "/"+gitName(repo)+".git/")) {
				return true
			}
		}
		return false
	}
}

// Kill rules.

// StepKind names what a request does, for the table.
func StepKind(s Step) string {
	p := strings.TrimPrefix(s.Path, "/api/v3")
	switch {
	case s.Service == "git" && strings.HasSuffix(p, "/git-receive-pack"):
		return "push"
	case s.Service == "git" && strings.HasSuffix(p, "/git-upload-pack"):
		return "git fetch"
	case s.Service == "git":
		return "git ref listing"
	}
	for _, k := range stepKinds {
		if s.Method == k.method && k.re.MatchString(p) {
			return k.re.ReplaceAllString(p, k.name)
		}
	}
	return s.Method + " " + p
}

var stepKinds = []struct {
	method string
	re     *regexp.Regexp
	name   string
}{
	{"POST", regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls$`), "open PR"},
	{"PATCH", regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls/(\d+)$`), "edit PR #$1"},
	{"POST", regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls/(\d+)/requested_reviewers$`), "request reviewers on #$1"},
	{"POST", regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/(\d+)/labels$`), "label #$1"},
	{"POST", regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/(\d+)/comments$`), "comment on #$1"},
	{"PATCH", regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/(\d+)$`), "edit issue #$1"},
	{"POST", regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues$`), "open dashboard issue"},
	{"POST", regexp.MustCompile(`^/app/installations/\d+/access_tokens$`), "mint token"},
}

var numberRE = regexp.MustCompile(`#\d+`)

// Killable is a step worth dying at: every change, and every git transfer
// that writes into the cache directory.
func Killable(s Step) bool { return s.Mutating || StepKind(s) == "git fetch" }

// KillAt kills the process at the nth killable step, before or after the
// remote side acted on it.
func KillAt(nth int, when Verdict) Rule { return nthOf(nth, when, Killable) }

// KillScenarios makes scenarios that kill the process of the cycle that
// follows setup before and after a killable step: every step when all is
// set, else the first step of each kind (the first PR's opening stands for
// every PR's). It runs that cycle once undisturbed to learn its steps.
// With sigkill the cycle runs in a child process that gets SIGKILL;
// otherwise its context is cancelled.
func KillScenarios(t testing.TB, label string, setup func(w *World), all, sigkill bool) []Scenario {
	t.Helper()
	w := NewWorld(t, Options{ClusterDir: DemoCluster, RepoDir: DemoRepo})
	if setup != nil {
		setup(w)
	}
	r := w.Cycle()
	if r.Err != nil {
		t.Fatalf("%s: undisturbed cycle: %v", label, r.Err)
	}
	how := "killed"
	if sigkill {
		how = "SIGKILL"
	}
	var out []Scenario
	n := 0
	kinds := map[string]bool{}
	for _, s := range r.Steps {
		if !Killable(s) {
			continue
		}
		n++
		kind := StepKind(s)
		class := numberRE.ReplaceAllString(kind, "#N")
		if kinds[class] && !all {
			continue
		}
		kinds[class] = true
		for i, when := range []Verdict{CutBefore, CutAfter} {
			moment := []string{"before", "after"}[i]
			out = append(out, Scenario{
				Name:    fmt.Sprintf("%s: %s %s step %d (%s)", label, how, moment, n, kind),
				Setup:   setup,
				Kill:    KillAt(n, when),
				Sigkill: sigkill,
			})
		}
	}
	return out
}

// Scenarios is the fault matrix apart from the kills.
func Scenarios() []Scenario {
	pulls := "/repos/*/*/pulls"
	issues := "/repos/*/*/issues"
	return append([]Scenario{
		{Name: "5xx burst on reads (502, 503)", Fault: FirstN(2, "GET", "", ghemu.ServerError(http.StatusBadGateway))},
		{Name: "5xx burst on opening a PR (500 ×2)", Fault: FirstN(2, "POST", pulls, ghemu.ServerError(http.StatusInternalServerError))},
		{Name: "5xx outlasting the retries (503 ×4 on opening a PR)", Fault: FirstN(4, "POST", pulls, ghemu.ServerError(http.StatusServiceUnavailable))},
		{Name: "5xx on every write for a cycle", Setup: Changed, Fault: EveryWrite(ghemu.ServerError(http.StatusBadGateway))},
		{Name: "5xx on opening the dashboard issue (not retried)", Fault: FirstN(1, "POST", issues, ghemu.ServerError(http.StatusInternalServerError))},
		{Name: "502 after GitHub opened the PR", Fault: OnWire("github", "POST", pulls, 1, Answer502After)},
		{Name: "502 after GitHub opened the dashboard issue", Fault: OnWire("github", "POST", issues, 1, Answer502After)},
		{Name: "502 after GitHub posted the closing comment", Setup: Then(Opened, DriftGone("search")),
			Fault: OnWire("github", "POST", issues+"/*/comments", 1, Answer502After)},
		{Name: "429 Retry-After 1s on opening a PR", Fault: FirstN(1, "POST", pulls, ghemu.TooManyRequests(1))},
		{Name: "429 Retry-After 1h on opening a PR", Fault: FirstN(1, "POST", pulls, ghemu.TooManyRequests(3600))},
		{Name: "403 secondary limit Retry-After 1s on labels", Fault: FirstN(1, "POST", issues+"/*/labels", ghemu.SecondaryRateLimit(1))},
		{Name: "403 secondary limit Retry-After 60s on every write", Setup: Changed, Fault: EveryWrite(ghemu.SecondaryRateLimit(60))},
		{Name: "403 primary limit exhausted mid-cycle", Fault: AfterN(6, ghemu.PrimaryRateLimit(time.Now().Add(time.Hour)))},
		{Name: "timeout: connection cut after GitHub opened the PR", Fault: OnWire("github", "POST", pulls, 2, CutAfter)},
		{Name: "timeout: connection cut after GitHub labelled the PR", Fault: OnWire("github", "POST", issues+"/*/labels", 1, CutAfter)},
		{Name: "timeout: connection cut after GitHub requested reviewers", Fault: OnWire("github", "POST", pulls+"/*/requested_reviewers", 1, CutAfter)},
		{Name: "timeout: connection cut after the dashboard update", Fault: OnWire("github", "PATCH", issues+"/*", 1, CutAfter)},
		{Name: "timeout: connection cut before GitHub saw the PR", Fault: OnWire("github", "POST", pulls, 1, CutBefore)},
		{Name: "timeout: connection cut after the closing comment", Setup: Then(Opened, DriftGone("search")),
			Fault: OnWire("github", "POST", issues+"/*/comments", 1, CutAfter)},
		{Name: "App auth: 502 on minting the installation token", AppAuth: true,
			Fault: FirstN(1, "POST", "/app/installations/*/access_tokens", ghemu.ServerError(http.StatusBadGateway))},
		{Name: "App auth: 429 on opening a PR", AppAuth: true, Fault: FirstN(1, "POST", pulls, ghemu.TooManyRequests(1))},
		{Name: "push answered 503", Fault: PushFails(http.StatusServiceUnavailable), Fired: pushFired("", http.StatusServiceUnavailable)},
		{Name: "push refused by a server hook", Fault: PushRefusedOnce(Repos[0]), Fired: hooksGone},
		{Name: "timeout: connection cut after the push landed", Fault: OnWire("git", "POST", "/*/git-receive-pack", 1, CutAfter)},
		{Name: "base moved during the first push", Fault: PushRacedOn("main"), Fired: hooksGone},
		{Name: "base moved between cycles, then during the rebuild push", Setup: Then(Opened, BaseMoved), Fault: PushRacedOn("main"), Fired: hooksGone},
		{Name: "person commits on a kedge branch during kedge's push", Setup: Then(Opened, BaseMoved),
			Fault: PushRacedOn(Branch("shop")), Fired: hooksGone},
		{Name: "person creates kedge's branch during the first push", Fault: PushRacedOn(Branch("shop")), Fired: hooksGone},
		{Name: "person commits on a kedge branch between cycles", Setup: Opened,
			Fault: func(w *World) {
				w.CommitAsHuman(Branch("orders"), map[string]string{"NOTES.md": "mine\n"}, "A hand-made change")
				BaseMoved(w)
			}, Fired: always},
		{Name: "person commits on a kedge branch, then the drift goes away", Setup: Opened,
			Fault: Then(PersonCommitsOn("payments"), DriftGone("payments")), Fired: always},
		{Name: "GitHub outage: every request answered 503 for 2s", Fault: Outage(2 * time.Second)},
		{Name: "push refused for one branch only", Fault: PushRefusedOnceFor(Branch("orders")), Fired: hooksGone},
		{Name: "killed after the push, then the drift went away", Kill: func(s Step) Verdict {
			if StepKind(s) == "push" {
				return CutAfter
			}
			return Pass
		}, After: DriftGone("payments")},
	}, append(targetScenarios(), confinedScenarios()...)...)
}

// notifications is the demo's Argo CD Application; orders' other workloads
// are applied by a Flux Kustomization of the platform repository's main.
const notifications = "orders-notifications"

// targetScenarios are the ways a cluster names the branches of one
// repository: each must leave one PR per repository branch and namespace,
// none closed by another's target, none moved onto another base, and a
// second cycle that changes nothing.
func targetScenarios() []Scenario {
	staging := Then(BaseBranch("staging"), AppFollows(notifications, "staging"))
	return []Scenario{
		{Name: "HEAD and main of one repository are one target", Setup: AppFollows(notifications, "HEAD"),
			Fired: always, Converges: 1, QuietAfter: 1},
		{Name: "an empty targetRevision and main are one target", Setup: AppFollows(notifications, ""),
			Fired: always, Converges: 1, QuietAfter: 1},
		{Name: "two branches of one repository for one namespace", Setup: staging,
			Fired: always, Converges: 1, QuietAfter: 1},
		{Name: "two branches for one namespace, a PR open under the shared name", Setup: Then(staging, EarlierPR("orders", "staging")),
			Fired: always, Converges: 1, QuietAfter: 1},
		{Name: "base branch deleted under an open PR", Setup: Then(staging, Opened), Fault: DeleteBase("staging"),
			After: AppFollows(notifications, "main"), Fired: always, Converges: 2, QuietAfter: 1},
		{Name: "base branch renamed under an open PR", Setup: Then(staging, Opened), Fault: RenameBase("staging", "stage"),
			After: AppFollows(notifications, "stage"), Fired: always, Converges: 2, QuietAfter: 1},
	}
}

// confinedScenarios strike one repository of the two, in turn: its push,
// or its PR opening beyond the retries. The other repository's work must
// not wait for it, nor be done twice when the struck one recovers.
func confinedScenarios() []Scenario {
	var out []Scenario
	for _, repo := range Repos {
		// The short name: a slash would split the subtest's name.
		in := " in " + gitName(repo) + " only"
		out = append(out,
			Scenario{Name: "push answered 503" + in, Confined: repo,
				Fault: PushFailsIn(repo, http.StatusServiceUnavailable), Fired: pushFired(repo, http.StatusServiceUnavailable)},
			Scenario{Name: "push refused by a server hook" + in, Confined: repo,
				Fault: PushRefusedOnce(repo), Fired: hooksGone},
			Scenario{Name: "5xx outlasting the retries on opening a PR (503 ×3)" + in, Confined: repo,
				Fault: FirstNIn(repo, 3, "POST", "/repos/*/*/pulls", ghemu.ServerError(http.StatusServiceUnavailable))},
		)
	}
	return out
}

func always(*World, CycleResult) bool { return true }

// hooksGone tells that the one-shot hooks ran, in every repository: each
// deletes itself.
func hooksGone(w *World, _ CycleResult) bool {
	for _, repo := range Repos {
		for _, name := range []string{"pre-receive", "update"} {
			if _, err := os.Stat(w.Git.HookPath(gitName(repo), name)); err == nil {
				return false
			}
		}
	}
	return true
}
