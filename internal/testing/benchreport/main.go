// Command benchreport measures kedge at fleet scale and writes the report
// docs/benchmarks.md (`make bench`). Every figure is measured against its
// floor in the same run where one exists, and each is the median of
// several runs:
//
//   - `kedge plan` (the real binary, as a child process) on a synthetic
//     100,000-pod snapshot, with and without its GitOps repository, against
//     a child that only decodes the snapshot; peak RSS from getrusage;
//   - indexing a 20,000-file repository, in a child process of its own;
//   - the Go benchmarks of the packages concerned: trimmed informer memory
//     (internal/cluster/trim), reconcile cycles against a real git server and
//     the GitHub emulation (internal/reconcile), and mesh change to pull
//     request through the service against a real API server
//     (internal/testing/controlplane); a cycle over 20 repositories of 50
//     namespaces each, against the git command line pushing the same
//     branches (internal/reconcile);
//   - against a real API server holding the same 100,000-pod fleet:
//     `kedge plan` beside `kubectl get pods -A -o json` of the same
//     server, then `kedge run` as a process of its own with a real git
//     server and the GitHub emulation (steady-state RSS, an unchanged
//     cycle's CPU beside a full index build, namespace change to PR).
//     Loading the pods takes minutes; -live=false (or KEDGE_BENCH_LIVE=0)
//     leaves it out.
//
// Generated data is cached (by a hash of the generator's sources) under
// -cache, outside the repository.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

type options struct {
	out   string
	runs  int
	live  bool
	cache string
	root  string
	// scale shrinks the fleets (not the Go benchmarks) for a quick trial
	// of the tool itself; reports are made at 1.
	scale float64
	// only, when set, measures one group of figures, to try the tool.
	only string
}

func main() {
	child := flag.String("child", "", "internal: run one measured step (generic|index) on -dir")
	dir := flag.String("dir", "", "internal: the directory of a -child step")
	var opts options
	flag.StringVar(&opts.out, "out", "docs/benchmarks.md", "report to write")
	flag.IntVar(&opts.runs, "runs", envInt("KEDGE_BENCH_RUNS", 3), "runs per figure; the report quotes medians (env KEDGE_BENCH_RUNS)")
	flag.BoolVar(&opts.live, "live", os.Getenv("KEDGE_BENCH_LIVE") != "0", "measure the live plan and the service against a real API server holding the fleet (env KEDGE_BENCH_LIVE=0 leaves it out)")
	flag.StringVar(&opts.cache, "cache", defaultCache(), "where generated fleets are kept between runs (env KEDGE_BENCH_CACHE)")
	flag.Float64Var(&opts.scale, "scale", 1, "shrink the fleets by this factor, to try the tool quickly (the report says so)")
	flag.StringVar(&opts.only, "only", "", "measure only this group of figures (plan|index|go|repositories|live), to try the tool (the report says so)")
	flag.Parse()

	if *child != "" {
		if err := runChild(*child, *dir); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	opts.root = root
	if opts.runs < 1 {
		fail(errors.New("-runs must be at least 1"))
	}
	if opts.scale <= 0 || opts.scale > 1 {
		fail(errors.New("-scale must be in (0, 1]"))
	}
	if err := run(ctx, opts); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func defaultCache() string {
	if dir := os.Getenv("KEDGE_BENCH_CACHE"); dir != "" {
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "kedge-bench")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchreport %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, opts options) error {
	began := time.Now()
	r := &report{Machine: readMachine(), Runs: opts.runs, Started: began, Scale: opts.scale, Only: opts.only}
	work, err := os.MkdirTemp("", "kedge-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	logf("building kedge")
	kedge := filepath.Join(work, "kedge")
	// Built as deploy/Dockerfile builds the binary that ships: with cgo, an
	// import of package plugin (kustomize's) makes a dynamically linked
	// binary exporting every symbol, whose tables the loader reads at start.
	if _, err := measure(ctx, opts.root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", kedge, "./cmd/kedge"); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	fleet, err := prepareFleet(opts)
	if err != nil {
		return err
	}
	r.Fleet = fleet

	measures := func(group string) bool { return opts.only == "" || opts.only == group }
	if measures("plan") {
		if err := measurePlan(ctx, opts, r, kedge, self, fleet); err != nil {
			return err
		}
	}
	if measures("index") {
		if err := measureIndex(ctx, opts, r, self, fleet); err != nil {
			return err
		}
	}
	if measures("go") {
		if err := measureGoBenchmarks(ctx, opts, r); err != nil {
			return err
		}
	}
	if measures("repositories") {
		if err := measureRepositories(ctx, opts, r); err != nil {
			return err
		}
	}
	if opts.live && measures("live") {
		if err := measureLive(ctx, opts, r, kedge, self, fleet); err != nil {
			return err
		}
	}
	r.Machine.LoadAfter = loadAverage()
	r.Took = time.Since(began)
	text := r.markdown()
	if err := os.MkdirAll(filepath.Dir(opts.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(opts.out, []byte(text), 0o644); err != nil {
		return err
	}
	logf("wrote %s in %s", opts.out, r.Took.Round(time.Second))
	fmt.Print(r.table())
	return nil
}
