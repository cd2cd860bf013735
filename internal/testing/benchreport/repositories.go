package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// reposBenchmark is the cycle over many repositories: 20 repositories of
// two accounts, 50 drifted namespaces each.
const reposBenchmark = "BenchmarkCycle20Repositories"

// reposRun is the machine's load around that benchmark, which the section
// quotes: its wall times are only as good as the machine was quiet.
type reposRun struct {
	LoadBefore, LoadAfter string
}

func measureRepositories(ctx context.Context, opts options, r *report) error {
	logf("go benchmark %s in ./internal/reconcile (%d runs)", reposBenchmark, opts.runs)
	run := &reposRun{LoadBefore: loadAverage()}
	res, err := measure(ctx, opts.root, nil, "go", "test", "-run", "^$", "-bench", "^"+reposBenchmark+"$",
		"-benchtime", "1x", "-count", strconv.Itoa(opts.runs), "-timeout", "60m", "./internal/reconcile")
	if err != nil {
		return err
	}
	run.LoadAfter = loadAverage()
	parsed := parseBenchmarks(res.Stdout)
	if len(parsed[reposBenchmark]) == 0 {
		return fmt.Errorf("no results from %s:\n%s", reposBenchmark, tail(string(res.Stdout), 2000))
	}
	if r.Bench == nil {
		r.Bench = benchResults{}
	}
	r.Bench[reposBenchmark] = parsed[reposBenchmark]
	logf("  %s: %v", reposBenchmark, parsed[reposBenchmark])
	r.Repos = run
	return nil
}

// reposSection is the report's section on the cycle over many
// repositories; empty when it was not measured.
func (r *report) reposSection() string {
	runs := r.Bench[reposBenchmark]
	if r.Repos == nil || len(runs) == 0 {
		return ""
	}
	m := func(unit string) float64 {
		v, _ := r.Bench.metric(reposBenchmark, unit)
		return v
	}
	var b strings.Builder
	b.WriteString("## Many repositories\n\n")
	fmt.Fprintf(&b, "`"+reposBenchmark+"` (`internal/reconcile`): one kedge (`assemble.New`, a GitHub App) over a cluster whose %.0f namespaces "+
		"are applied from 20 repositories, 50 each, by one Flux `GitRepository` and `Kustomization` per repository; every "+
		"namespace drifts. The repositories belong to two accounts (10 each), the App is installed on both, and `repos:` admits "+
		"both. A real git server (`git http-backend`) hosts the repositories and the GitHub emulation's Hub serves them, "+
		"recording every call per repository. `limits.mutationGap` is 0, as are `limits.maxOpenPRs` and "+
		"`limits.maxNewPRsPerCycle`: the emulation has no secondary rate limit, and with the defaults the 2000 writes "+
		"are spread over many cycles, one a second. Medians of %d runs; per-repository figures are the mean over the 20 "+
		"repositories and, after the slash, the highest.\n\n", m("new-PRs"), len(runs))
	b.WriteString("| cycle | pushes per repository | reads per repository (answered 304) | mutating calls per repository | App calls | wall time |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, c := range []struct{ prefix, what string }{
		{"first", "first: clones, opens 1000 PRs"},
		{"second", "second: nothing changed"},
	} {
		fmt.Fprintf(&b, "| %s | %.0f–%.0f | %.2f / %.0f (%.2f) | %.1f / %.0f | %.0f | %.1f s |\n", c.what,
			m(c.prefix+"-pushes/repo-min"), m(c.prefix+"-pushes/repo-max"),
			m(c.prefix+"-reads/repo"), m(c.prefix+"-reads/repo-max"), m(c.prefix+"-reads-304/repo"),
			m(c.prefix+"-mutating/repo"), m(c.prefix+"-mutating/repo-max"), m(c.prefix+"-app-calls"), m(c.prefix+"-s"))
	}
	floor := m("floor-push-s")
	fmt.Fprintf(&b, "\n**Floor**: the git command line pushing the same branches (50 per repository, copied out of the "+
		"server untimed) to fresh copies of the 20 repositories on the same server, one push per repository: %.1f s; the "+
		"first cycle takes %.1f× that, cloning, indexing, editing and opening the PRs included.\n\n", floor, m("first-s")/floor)
	b.WriteString("Runs (first cycle / second cycle / floor): ")
	parts := make([]string, len(runs))
	for i, run := range runs {
		parts[i] = fmt.Sprintf("%.1f s / %.1f s / %.1f s", run["first-s"], run["second-s"], run["floor-push-s"])
	}
	b.WriteString(strings.Join(parts, "; "))
	fmt.Fprintf(&b, ". Load average (1 / 5 / 15 min) before: %s; after: %s. The machine's 2 cores are shared with other "+
		"work, so wall times are stretched by its load; the counts are not.\n\n", r.Repos.LoadBefore, r.Repos.LoadAfter)
	return b.String()
}
