package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// benchResults maps a benchmark's name to one metric map per run
// (unit → value, "ns/op" included).
type benchResults map[string][]map[string]float64

// goBenchmark is one `go test -bench` invocation.
type goBenchmark struct {
	pkg     string
	pattern string
	env     []string
}

func measureGoBenchmarks(ctx context.Context, opts options, r *report) error {
	assets, err := testbin(ctx, opts)
	if err != nil {
		return err
	}
	r.Bench = benchResults{}
	benches := []goBenchmark{
		{pkg: "./internal/cluster/trim", pattern: "^BenchmarkTrimmedPodCache$"},
		{pkg: "./internal/reconcile", pattern: "^BenchmarkCycle(Opening500PRs|Unchanged)$"},
		{pkg: "./internal/gitops/index", pattern: "^BenchmarkIndexUpdate$"},
		{pkg: "./internal/testing/controlplane", pattern: "^BenchmarkMeshChangeToPR$",
			env: []string{"KUBEBUILDER_ASSETS=" + assets, "KEDGE_REQUIRE_TESTBIN=1"}},
	}
	for _, gb := range benches {
		logf("go benchmarks %s in %s (%d runs)", gb.pattern, gb.pkg, opts.runs)
		res, err := measure(ctx, opts.root, gb.env, "go", "test", "-run", "^$", "-bench", gb.pattern,
			"-benchtime", "1x", "-count", strconv.Itoa(opts.runs), "-timeout", "60m", gb.pkg)
		if err != nil {
			return err
		}
		parsed := parseBenchmarks(res.Stdout)
		if len(parsed) == 0 {
			return fmt.Errorf("no benchmark results from %s %s:\n%s", gb.pkg, gb.pattern, tail(string(res.Stdout), 2000))
		}
		for name, runs := range parsed {
			r.Bench[name] = append(r.Bench[name], runs...)
			logf("  %s: %v", name, runs)
		}
	}
	return nil
}

// parseBenchmarks reads `go test -bench` output: "BenchmarkName-2  1
// 123 ns/op  4.5 unit ...". The -GOMAXPROCS suffix is dropped.
func parseBenchmarks(out []byte) benchResults {
	results := benchResults{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// A benchmark that logs gets its result on a line of its own, after
	// the log: "BenchmarkName-2  <log>" ... "1  123 ns/op ...".
	pending := ""
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		name := ""
		switch {
		case strings.HasPrefix(fields[0], "Benchmark"):
			name = fields[0]
			if i := strings.LastIndex(name, "-"); i > 0 {
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i]
				}
			}
			fields = fields[1:]
			if len(fields) == 0 || !isCount(fields[0]) {
				pending = name
				continue
			}
		case pending != "" && isCount(fields[0]):
			name = pending
		default:
			continue
		}
		pending = ""
		metrics := map[string]float64{}
		for i := 1; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			metrics[fields[i+1]] = v
		}
		if len(metrics) > 0 {
			results[name] = append(results[name], metrics)
		}
	}
	return results
}

// isCount tells a benchmark's iteration count from a log line's first word.
func isCount(field string) bool {
	_, err := strconv.Atoi(field)
	return err == nil
}

// metric is the median of one unit over a benchmark's runs.
func (b benchResults) metric(name, unit string) (float64, bool) {
	var values []float64
	for _, run := range b[name] {
		if v, ok := run[unit]; ok {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return 0, false
	}
	return median(values), true
}

// testbin builds (once) and locates the control plane binaries.
func testbin(ctx context.Context, opts options) (string, error) {
	logf("locating the test control plane (internal/testing/testbin/testbin.sh builds it on a fresh machine)")
	res, err := measure(ctx, opts.root, nil, "bash", "internal/testing/testbin/testbin.sh")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}
