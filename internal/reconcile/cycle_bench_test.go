package reconcile_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

const (
	// benchNamespaces is how many namespace branches one cycle changes.
	benchNamespaces = 500
	benchToken      = "ghs_benchToken00000000000000000000000000"
	benchRepo       = "gitops"
)

// benchFleet is a kedge deployment against the real git server and the
// GitHub emulation, for a synthetic fleet whose every namespace drifts.
type benchFleet struct {
	git *gitserver.Server
	gh  *ghemu.Server
	svc *assemble.Service
	set *objects.Set
	// repo is the fleet's repository as written, for the full index build
	// a cycle is measured against.
	repo string
}

func newBenchFleet(b *testing.B, namespaces int) *benchFleet {
	return newBenchFleetSpec(b, namespaces, 2*namespaces, 4*namespaces, 1)
}

func newBenchFleetSpec(b *testing.B, namespaces, workloads, pods int, drift float64) *benchFleet {
	b.Helper()
	fleet, err := synth.New(synth.Spec{
		Seed: 1, Namespaces: namespaces, Workloads: workloads, Pods: pods, Drift: drift,
	})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, err := fleet.WriteRepo(dir); err != nil {
		b.Fatal(err)
	}
	f := &benchFleet{git: gitserver.New(b), set: fleet.Set, repo: dir}
	f.git.SetToken(benchToken)
	f.git.CreateRepo(b, benchRepo, dir)
	f.gh = ghemu.New(b, ghemu.Options{
		Owner: "example-org", Repo: benchRepo,
		Tokens:   map[string]string{benchToken: "kedge-bot"},
		Branches: ghemu.GitBranches(f.git.RepoPath(benchRepo)),
	})
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Cluster = fleet.Spec.Cluster
	cfg.Repo.Owner, cfg.Repo.Name = "example-org", benchRepo
	cfg.Repo.URL = f.git.RepoURL(benchRepo)
	cfg.GitHub.APIURL = f.gh.URL + "/"
	cfg.GitHub.Token = benchToken
	cfg.Git.CacheDir = b.TempDir()
	// The limits would spread 500 new PRs over 50 cycles, and the write
	// spacing over 25 minutes; what is measured here is the work a cycle
	// does, not the pacing GitHub asks for.
	cfg.Limits.MaxOpenPRs = 0
	cfg.Limits.MaxNewPRsPerCycle = 0
	cfg.Limits.MutationGap = 0
	if err := cfg.Validate(config.ModeRun); err != nil {
		b.Fatal(err)
	}
	// The same Set every cycle, as kedge run's source hands it while no
	// informer event changed the cluster.
	source := func(context.Context) (*objects.Set, error) { return f.set, nil }
	// One service for every cycle: its GitHub client keeps the ETags that
	// make an unchanged cycle's reads free.
	f.svc, err = assemble.New(context.Background(), cfg, source, assemble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return f
}

func (f *benchFleet) cycle(b *testing.B) *reconcile.Report {
	b.Helper()
	report, err := f.svc.Reconciler.RunOnce(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return report
}

// BenchmarkCycleOpening500PRs measures the first cycle of a fleet whose
// 500 namespaces all drift: every namespace branch is pushed in one push,
// and each new PR costs a handful of REST calls.
func BenchmarkCycleOpening500PRs(b *testing.B) {
	var pushes, calls, mutating, opened int
	for b.Loop() {
		b.StopTimer()
		f := newBenchFleet(b, benchNamespaces)
		b.StartTimer()
		report := f.cycle(b)
		b.StopTimer()
		pushes = f.git.Pushes()
		if report.Pushes != pushes {
			b.Fatalf("report says %d pushes, the server saw %d", report.Pushes, pushes)
		}
		opened = len(f.gh.PRs())
		calls = len(f.gh.Calls())
		mutating = len(f.gh.MutatingCalls())
		for _, c := range f.gh.OutOfSurfaceCalls() {
			b.Errorf("call outside the REST surface: %s %s", c.Method, c.Path)
		}
		b.StartTimer()
	}
	if opened != benchNamespaces {
		b.Fatalf("opened %d PRs, want %d", opened, benchNamespaces)
	}
	b.ReportMetric(float64(pushes), "pushes")
	b.ReportMetric(float64(opened), "new-PRs")
	b.ReportMetric(float64(calls)/float64(opened), "REST-calls/new-PR")
	b.ReportMetric(float64(mutating)/float64(opened), "mutating-calls/new-PR")
}

// BenchmarkCycleUnchanged measures a cycle in which nothing changed,
// neither in the cluster nor on GitHub since the previous cycle read it:
// no push, no write, and every read a conditional request GitHub answers
// 304 without charging it. The first cycle opens every PR; the second
// reads them (their listing changed); the third is the steady state.
func BenchmarkCycleUnchanged(b *testing.B) {
	f := newBenchFleet(b, benchNamespaces)
	f.cycle(b)
	f.cycle(b)
	indexCPU := cpuOf(b, func() {
		if _, err := index.Read(f.repo, index.Options{}); err != nil {
			b.Fatal(err)
		}
	})
	var pushes, mutating, reads, notModified int
	var cycleCPU time.Duration
	for b.Loop() {
		b.StopTimer()
		before := f.git.Pushes()
		f.gh.ResetCalls()
		var report *reconcile.Report
		cycleCPU += cpuOf(b, func() {
			b.StartTimer()
			report = f.cycle(b)
			b.StopTimer()
		})
		pushes = f.git.Pushes() - before + report.Pushes
		mutating = len(f.gh.MutatingCalls())
		reads, notModified = 0, 0
		for _, c := range f.gh.Calls() {
			if c.Method != http.MethodGet {
				continue
			}
			reads++
			if c.Status == http.StatusNotModified {
				notModified++
			}
		}
		for _, c := range f.gh.MutatingCalls() {
			b.Logf("mutating call: %s %s", c.Method, strings.TrimPrefix(c.Path, "/repos/example-org/"+benchRepo))
		}
		b.StartTimer()
	}
	perCycle := cycleCPU / time.Duration(b.N)
	b.ReportMetric(float64(perCycle.Microseconds())/1000, "cycle-cpu-ms")
	b.ReportMetric(float64(indexCPU.Microseconds())/1000, "index-build-cpu-ms")
	b.ReportMetric(100*float64(perCycle)/float64(indexCPU), "cycle/index-%")
	b.ReportMetric(float64(pushes), "pushes")
	b.ReportMetric(float64(mutating), "mutating-calls")
	b.ReportMetric(float64(reads), "reads")
	b.ReportMetric(float64(notModified), "reads-304")
}

// cpuOf is the CPU time the process spent while fn ran (every goroutine,
// the in-process servers' included), after collecting the garbage of what
// ran before.
func cpuOf(b *testing.B, fn func()) time.Duration {
	runtime.GC()
	start := processCPU(b)
	fn()
	return processCPU(b) - start
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
