// Command demo runs kedge's real cycle offline: the sample cluster snapshot
// against bare copies of the two GitOps repositories it applies from (the
// platform one and the reviews team's), with GitHub played by the
// in-process REST emulation. It prints the pull requests kedge opened in
// each repository, then runs a second cycle to show that nothing changes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-github/v66/github"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

const demoToken = "demo-token-not-a-secret"

// The repositories of the demo: repo: (the platform one, which holds the
// dashboard) and the team repository repos: admits.
const (
	platformRepo = "example-org/gitops"
	teamRepo     = "example-org/team-reviews"
)

func main() {
	snapshot := flag.String("snapshot", "testdata/demo/cluster", "cluster snapshot")
	repo := flag.String("repo", "testdata/demo/gitops", "platform GitOps repository tree")
	team := flag.String("team-repo", "testdata/demo/team-reviews", "the reviews team's repository tree")
	full := flag.Bool("full", false, "print every PR body in full (default: the first one)")
	ambientTeam := flag.String("ambient", "", "with ambient mode installed, move this team's namespaces (label team) from sidecars to ambient, and show only their PRs")
	flag.Parse()
	work, err := os.MkdirTemp("", "kedge-demo-")
	if err == nil {
		err = run(os.Stdout, work, *snapshot, map[string]string{platformRepo: *repo, teamRepo: *team}, *full, *ambientTeam)
		os.RemoveAll(work)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run plays the demo into out, with the bare repositories (owner's
// repository name + ".git") and kedge's cache under work.
func run(out io.Writer, work, snapshotDir string, trees map[string]string, full bool, ambientTeam string) error {
	gh := ghemu.StartHub(ghemu.HubOptions{Tokens: map[string]string{demoToken: "kedge[bot]"}})
	defer gh.Close()
	for _, name := range []string{platformRepo, teamRepo} {
		bare, err := bareRepo(trees[name], work, path.Base(name))
		if err != nil {
			return err
		}
		owner, repo, _ := strings.Cut(name, "/")
		gh.AddRepo(ghemu.Options{Owner: owner, Repo: repo, Branches: ghemu.GitBranches(bare), Diffs: ghemu.GitDiff(bare)})
	}

	cfg, err := config.Load("", nil, nil)
	if err != nil {
		return err
	}
	cfg.Cluster = "prod-eu-1"
	cfg.Repo.Owner, cfg.Repo.Name, cfg.Repo.URL = "example-org", "gitops", "file://"+filepath.Join(work, "gitops.git")
	cfg.Repos = []config.RepoRule{{Match: "example-org/team-*", CloneURL: "file://" + filepath.Join(work, "{name}.git")}}
	cfg.GitHub.APIURL, cfg.GitHub.Token = gh.URL+"/api/v3/", demoToken
	cfg.Git.CacheDir = filepath.Join(work, "cache")
	cfg.Limits.MutationGap = 0
	cfg.Reviewers.ByNamespace = map[string][]string{"payments": {"example-org/payments-team"}}
	if ambientTeam != "" {
		cfg.Migrations = []config.Migration{{From: "1-25-0", To: "ambient", Namespaces: map[string]string{"team": ambientTeam}}}
	}
	if err := cfg.Validate(config.ModeRun); err != nil {
		return err
	}
	set, err := snapshot.Read(snapshotDir)
	if err != nil {
		return err
	}
	if ambientTeam != "" {
		set = withAmbientInstalled(set)
	}
	source := func(context.Context) (*objects.Set, error) { return set, nil }
	svc, err := assemble.New(context.Background(), cfg, source, assemble.Options{})
	if err != nil {
		return err
	}

	report, err := svc.Reconciler.RunOnce(context.Background())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cycle 1: %d drifted workloads, %d pushes, %d GitHub calls (%d mutating)\n",
		len(report.Plan.Workloads), report.Pushes, calls(gh, false), calls(gh, true))
	for _, r := range report.Repositories {
		fmt.Fprintf(out, "  %-30s pushes %d, pull requests %d\n", r.Name+"@"+r.Branch, r.Pushes, len(gh.Repo(r.Name).PRs()))
	}
	fmt.Fprintln(out)
	client, err := github.NewClient(gh.Client()).WithAuthToken(demoToken).WithEnterpriseURLs(gh.URL, gh.URL)
	if err != nil {
		return err
	}
	printed := 0
	for _, name := range []string{platformRepo, teamRepo} {
		header := "═══ " + name
		for _, pr := range gh.Repo(name).PRs() {
			ns := strings.TrimPrefix(pr.GetHead().GetRef(), "kedge/prod-eu-1/")
			if ambientTeam != "" && !migrated(report.Plan.Migrations, ns) {
				continue
			}
			if header != "" {
				fmt.Fprintln(out, header)
				header = ""
			}
			// The diff is the one GitHub shows for the pull request: the
			// pushed commit against its base, not the plan's edits.
			owner, repo, _ := strings.Cut(name, "/")
			diff, _, err := client.PullRequests.GetRaw(context.Background(), owner, repo, pr.GetNumber(), github.RawOptions{Type: github.Diff})
			if err != nil {
				return fmt.Errorf("diff of %s#%d: %w", name, pr.GetNumber(), err)
			}
			printPR(out, pr, diff, full || printed == 0)
			printed++
		}
		for _, is := range gh.Repo(name).Issues() {
			if !is.IsPullRequest() {
				fmt.Fprintf(out, "━━━ dashboard issue #%d  %s\n", is.GetNumber(), is.GetTitle())
			}
		}
	}

	if ambientTeam != "" {
		return nil
	}
	before, beforeMutating := calls(gh, false), calls(gh, true)
	report, err = svc.Reconciler.RunOnce(context.Background())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncycle 2 (nothing changed): %d pushes, %d GitHub calls, %d mutating\n",
		report.Pushes, calls(gh, false)-before, calls(gh, true)-beforeMutating)
	for _, o := range report.Outcomes {
		fmt.Fprintf(out, "  %-16s %-8s %s #%d in %s\n", o.Namespace, o.Action, o.State, o.PR, o.Repo)
	}
	return nil
}

// printPR shows one pull request, its diff, and with body its description.
func printPR(out io.Writer, pr *github.PullRequest, diff string, body bool) {
	var labels []string
	for _, l := range pr.Labels {
		labels = append(labels, l.GetName())
	}
	fmt.Fprintf(out, "━━━ PR #%d  %s\n    branch %s → %s   labels %s\n", pr.GetNumber(), pr.GetTitle(),
		pr.GetHead().GetRef(), pr.GetBase().GetRef(), strings.Join(labels, ", "))
	if diff != "" {
		fmt.Fprintln(out, indent(diff))
	}
	if body {
		fmt.Fprintf(out, "    ── description ──\n%s\n", indent(pr.GetBody()))
	}
}

// calls counts the GitHub calls made so far in every repository of the
// demo, or only the mutating ones.
func calls(gh *ghemu.Hub, mutating bool) int {
	n := 0
	for _, name := range []string{platformRepo, teamRepo} {
		for _, c := range gh.CallsTo(name) {
			if !mutating || c.Mutating() {
				n++
			}
		}
	}
	return n
}

// withAmbientInstalled is the cluster once Istio's ambient mode is
// installed beside the sidecars: ztunnel Ready on every node and istio-cni
// with ambient enabled, which kedge checks before it moves a namespace.
func withAmbientInstalled(set *objects.Set) *objects.Set {
	out := *set
	out.DaemonSets = append(slices.Clone(set.DaemonSets), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "ztunnel"},
		Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, NumberReady: 3},
	})
	out.ConfigMaps = append(slices.Clone(set.ConfigMaps), corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istio-cni-config"},
		Data:       map[string]string{"AMBIENT_ENABLED": "true"},
	})
	return &out
}

// migrated reports whether the plan moves the namespace.
func migrated(migrations []drift.Migration, namespace string) bool {
	for _, m := range migrations {
		if m.Namespace == namespace && m.Blocked == "" {
			return true
		}
	}
	return false
}

// bareRepo commits the tree as one commit on main in a bare repository,
// the shape of a GitOps repository kedge clones.
func bareRepo(tree, work, name string) (string, error) {
	src := filepath.Join(work, "src-"+name)
	bare := filepath.Join(work, name+".git")
	abs, err := filepath.Abs(tree)
	if err != nil {
		return "", err
	}
	steps := [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "--work-tree", abs, "add", "-A"},
		{"-C", src, "-c", "user.name=Platform Team", "-c", "user.email=platform@example.org", "commit", "-q", "-m", "GitOps repository"},
		{"clone", "-q", "--bare", src, bare},
	}
	for _, args := range steps {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return bare, nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
