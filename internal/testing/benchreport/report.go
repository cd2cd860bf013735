package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// report is everything measured in one run.
type report struct {
	Machine machine
	Runs    int
	Scale   float64
	Only    string
	Started time.Time
	Took    time.Duration
	Fleet   *fleetData

	Decode, Plan, IndexFleet, PlanRepo series

	Index        series
	IndexSeconds []float64
	IndexObjects int

	Bench benchResults
	Live  *liveResult
	Repos *reposRun
}

// row is one line of the summary table.
type row struct {
	figure, measured, floor, ratio, target string
	met                                    *bool
}

func yes(ok bool) *bool { return &ok }

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
func mib(b int64) string             { return fmt.Sprintf("%d MiB", b>>20) }
func gib(b int64) string             { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func ratio(a, b time.Duration) (string, float64) {
	if b <= 0 {
		return "–", 0
	}
	r := a.Seconds() / b.Seconds()
	return fmt.Sprintf("%.2f×", r), r
}

func (r *report) rows() []row {
	var rows []row
	f := r.Fleet
	size := fmt.Sprintf("%dk-pod / %dk-namespace / %dk-workload snapshot", f.Spec.Pods/1000, f.Spec.Namespaces/1000, f.Spec.Workloads/1000)

	if len(r.Decode.wall) > 0 {
		decode, plan, planRepo, index := r.Decode.medianWall(), r.Plan.medianWall(), r.PlanRepo.medianWall(), r.IndexFleet.medianWall()
		text, x := ratio(plan, decode)
		rows = append(rows, row{"`kedge plan` on the " + size, seconds(plan), "generic decode: " + seconds(decode), text, "≤ 1.0×", yes(x <= 1.0)})
		text, x = ratio(planRepo, decode+index)
		rows = append(rows, row{fmt.Sprintf("`kedge plan --repo` on the same snapshot and its %d-file repository", f.RepoFiles),
			seconds(planRepo), "generic decode + index: " + seconds(decode+index), text, "≤ 1.5×", yes(x <= 1.5)})
		peak, peakRepo := r.Plan.maxRSS(), r.PlanRepo.maxRSS()
		rows = append(rows, row{"`kedge plan` peak RSS (highest run)", mib(peak), "generic decode: " + mib(r.Decode.maxRSS()), "–", "≤ 600 MiB", yes(peak <= 600<<20)})
		rows = append(rows, row{"`kedge plan --repo` peak RSS (highest run)", mib(peakRepo), "–", "–", "≤ 1 GiB", yes(peakRepo <= 1<<30)})
	}

	if l := r.Live; l != nil {
		rows = append(rows, r.liveRows(l)...)
	} else {
		rows = append(rows, row{"live `kedge plan` and `kedge run` against a real API server",
			"not run (left out with `KEDGE_BENCH_LIVE=0`)", "–", "–", "–", nil})
	}

	if v, ok := r.Bench.metric("BenchmarkTrimmedPodCache", "trimmed-B/pod"); ok {
		untrimmed, _ := r.Bench.metric("BenchmarkTrimmedPodCache", "untrimmed-B/pod")
		rows = append(rows, row{"informer memory per pod after trimming", fmt.Sprintf("%.0f B", v),
			fmt.Sprintf("untrimmed: %.0f B", untrimmed), "–", "≤ 2 KiB", yes(v <= 2048)})
	}

	if len(r.IndexSeconds) > 0 {
		idx := median(r.IndexSeconds)
		rows = append(rows, row{fmt.Sprintf("index of a %d-file repository: time", f.IndexRepoFiles), fmt.Sprintf("%.1f s", idx), "–", "–", "≤ 5 s", yes(idx <= 5)})
		rows = append(rows, row{"index of the same repository: peak RSS (highest run)", mib(r.Index.maxRSS()), "–", "–", "≤ 500 MiB", yes(r.Index.maxRSS() <= 500<<20)})
	}

	if pushes, ok := r.Bench.metric("BenchmarkCycleOpening500PRs", "pushes"); ok {
		calls, _ := r.Bench.metric("BenchmarkCycleOpening500PRs", "REST-calls/new-PR")
		prs, _ := r.Bench.metric("BenchmarkCycleOpening500PRs", "new-PRs")
		rows = append(rows, row{fmt.Sprintf("a cycle that changes %.0f namespace branches: git pushes", prs), fmt.Sprintf("%.0f", pushes), "–", "–", "1 push", yes(pushes == 1)})
		rows = append(rows, row{"the same cycle: REST calls per new PR (all calls of the cycle ÷ PRs opened)", fmt.Sprintf("%.2f", calls), "–", "–", "≤ 4", yes(calls <= 4)})
	}
	if pushes, ok := r.Bench.metric("BenchmarkCycleUnchanged", "pushes"); ok {
		mutating, _ := r.Bench.metric("BenchmarkCycleUnchanged", "mutating-calls")
		reads, _ := r.Bench.metric("BenchmarkCycleUnchanged", "reads")
		notModified, _ := r.Bench.metric("BenchmarkCycleUnchanged", "reads-304")
		rows = append(rows, row{"a cycle in which nothing changed: pushes / mutating REST calls",
			fmt.Sprintf("%.0f / %.0f", pushes, mutating), "–", "–", "0 / 0", yes(pushes == 0 && mutating == 0)})
		rows = append(rows, row{"the same cycle: reads answered 304", fmt.Sprintf("%.0f of %.0f", notModified, reads), "–", "–", "all", yes(reads > 0 && notModified == reads)})
	}
	rows = append(rows, r.indexUpdateRows()...)
	debounce, _ := r.Bench.metric("BenchmarkMeshChangeToPR", "debounce-s")
	for _, c := range []struct{ unit, what string }{
		{"namespace-label-s", "namespace label"},
		{"tag-MWC-s", "revision tag (MutatingWebhookConfiguration)"},
		{"injector-ConfigMap-s", "injector ConfigMap (proxy image)"},
	} {
		if v, ok := r.Bench.metric("BenchmarkMeshChangeToPR", c.unit); ok {
			rows = append(rows, row{fmt.Sprintf("%s change → PR opened (debounce %.0f s included)", c.what, debounce),
				fmt.Sprintf("%.1f s", v), fmt.Sprintf("debounce: %.0f s", debounce), "–", "≤ 60 s", yes(v <= 60)})
		}
	}
	return rows
}

// kubectlFloor is kubectl's median time, or how long it ran before it was
// stopped at its memory cap, and whether it was.
func (l *liveResult) kubectlFloor() (time.Duration, bool) {
	stopped := slices.Contains(l.Kubectl.stopped, true)
	return l.Kubectl.medianWall(), stopped
}

func (l *liveResult) kubectlText() string {
	wall, stopped := l.kubectlFloor()
	if stopped {
		return fmt.Sprintf("`kubectl get pods -A -o json`: > %s (stopped at its %s memory cap)", seconds(wall), gib(l.KubectlCap))
	}
	return "`kubectl get pods -A -o json`: " + seconds(wall)
}

// liveRows are the figures read from the real API server: `kedge plan`
// and the service.
func (r *report) liveRows(l *liveResult) []row {
	var rows []row
	floor, stopped := l.kubectlFloor()
	plan := l.Plan.medianWall()
	text, x := ratio(plan, floor)
	if stopped {
		// kubectl would have taken longer than it ran: the ratio is a
		// bound.
		text = "< " + text
	}
	pods := fmt.Sprintf("%dk pods", l.Spec.Pods/1000)
	rows = append(rows, row{"live `kedge plan` against a real API server holding " + pods,
		seconds(plan), l.kubectlText(), text, "≤ 1.5×", yes(x <= 1.5)})
	s := l.Service
	if s == nil {
		return rows
	}
	kubectlRSS := "`kubectl get pods -A -o json` peak: " + mib(l.Kubectl.maxRSS())
	if stopped {
		kubectlRSS = "`kubectl get pods -A -o json`: stopped at " + mib(l.Kubectl.maxRSS())
	}
	steady := median(s.RSS)
	rows = append(rows, row{fmt.Sprintf("`kedge run` steady-state RSS with %s and the %d-file repository (median of the samples)", pods, r.Fleet.RepoFiles),
		mib(steady), kubectlRSS, "–", "≤ 400 MiB", yes(steady <= 400<<20)})
	rows = append(rows, row{"the same: highest steady-state sample / peak of the whole run (VmHWM)",
		mib(slices.Max(s.RSS)) + " / " + mib(s.HWM), "–", "–", "–", nil})
	rows = append(rows, row{"`kedge run` start to caches synced (the live read)", seconds(s.Sync), l.kubectlText(), "–", "–", nil})
	if full := s.Index.medianCPU(); full > 0 {
		cpu := median(s.CycleCPU)
		rows = append(rows, row{fmt.Sprintf("unchanged service cycle at %s / %d files: CPU of the whole cycle", pods, r.Fleet.RepoFiles),
			fmt.Sprintf("%d ms", cpu.Milliseconds()), fmt.Sprintf("full index build: %d ms", full.Milliseconds()),
			fmt.Sprintf("%.1f%%", 100*cpu.Seconds()/full.Seconds()), "≤ 5%", yes(cpu.Seconds() <= 0.05*full.Seconds())})
	}
	change := median(s.ChangeToPR)
	measured := seconds(change)
	if s.ChangeTimedOut {
		measured = "> " + seconds(changeDeadline) + " (no PR by then)"
	}
	rows = append(rows, row{fmt.Sprintf("namespace label change → PR opened at %s (debounce %s included)", pods, seconds(s.Debounce)),
		measured, "debounce: " + seconds(s.Debounce), "–", "≤ debounce + 5 s", yes(!s.ChangeTimedOut && change <= s.Debounce+5*time.Second)})
	return rows
}

// indexUpdateRows are the CPU a service cycle spends on its index, set
// against a full index build of the same repository in the same run.
func (r *report) indexUpdateRows() []row {
	full, ok := r.Bench.metric("BenchmarkIndexUpdate/full-build", "cpu-ms/op")
	if !ok || full <= 0 {
		return nil
	}
	var rows []row
	floor := fmt.Sprintf("full index build: %.0f ms", full)
	if v, ok := r.Bench.metric("BenchmarkIndexUpdate/unchanged", "cpu-ms/op"); ok {
		rows = append(rows, row{"unchanged service cycle: index update CPU vs full index build",
			fmt.Sprintf("%.1f ms", v), floor, fmt.Sprintf("%.1f%%", 100*v/full), "≤ 5%", yes(v <= 0.05*full)})
	}
	if v, ok := r.Bench.metric("BenchmarkIndexUpdate/one-file-edited", "cpu-ms/op"); ok {
		rows = append(rows, row{"service cycle after a commit editing one workload: index update CPU",
			fmt.Sprintf("%.0f ms", v), floor, fmt.Sprintf("%.1f%%", 100*v/full), "–", nil})
	}
	return rows
}

func (r *report) table() string {
	var b strings.Builder
	b.WriteString("| figure | measured (median) | floor | ratio | target | met? |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, row := range r.rows() {
		met := "–"
		if row.met != nil {
			met = "no"
			if *row.met {
				met = "yes"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", row.figure, row.measured, row.floor, row.ratio, row.target, met)
	}
	return b.String()
}

func runsOf(s series) string {
	parts := make([]string, len(s.wall))
	for i := range s.wall {
		parts[i] = fmt.Sprintf("%.1f s / %d MiB", s.wall[i].Seconds(), s.rss[i]>>20)
	}
	return strings.Join(parts, "; ")
}

func (r *report) markdown() string {
	var b strings.Builder
	m := r.Machine
	f := r.Fleet
	b.WriteString("# kedge performance at fleet scale\n\n")
	b.WriteString("Generated by `make bench` (`go run ./internal/testing/benchreport`); do not edit by hand. ")
	fmt.Fprintf(&b, "Every figure is the median of %d runs; each is set against its floor measured in the same run, "+
		"taking turns with it, so the load of a shared machine stretches both alike.\n\n", r.Runs)
	if r.Scale != 1 {
		fmt.Fprintf(&b, "**Trial run: the fleets are scaled down by %g; these are not the figures of record.**\n\n", r.Scale)
	}
	if r.Only != "" {
		fmt.Fprintf(&b, "**Only the %s figures were measured in this run (`-only %s`).**\n\n", r.Only, r.Only)
	}
	b.WriteString("## Machine\n\n")
	fmt.Fprintf(&b, "- %d cores (%s), %.1f GiB memory, %s, %s\n", m.Cores, m.CPU, m.MemoryGiB, m.Kernel, m.Go)
	fmt.Fprintf(&b, "- load average (1 / 5 / 15 min) at the start: %s; at the end: %s\n", m.LoadStart, m.LoadAfter)
	fmt.Fprintf(&b, "- run on %s, took %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Took.Round(time.Second))
	b.WriteString("## Results\n\n")
	b.WriteString(r.table())
	b.WriteString("\n## What was measured\n\n")
	fmt.Fprintf(&b, "**The fleet** (`internal/testing/synth`, seed %d): %d pods in %d namespaces and %d workloads (Deployments, StatefulSets, "+
		"DaemonSets, Argo Rollouts) with their ReplicaSets, three Istio control planes and a revision tag; %d namespaces "+
		"(%d workloads) drift. Pods are full API objects as `kubectl get -o json` prints them (about 10 KiB each, sidecar "+
		"containers, volumes and status included). The snapshot is %d MiB of JSON Lists. Its GitOps repository has %d files: "+
		"Flux overlays per namespace (some on bases shared by hundreds of namespaces), Argo CD directories and plain files.\n\n",
		f.Spec.Seed, f.Spec.Pods, f.Spec.Namespaces, f.Spec.Workloads, len(f.Expect.DriftedNamespaces), f.Expect.DriftedWorkloads,
		f.SnapshotBytes>>20, f.RepoFiles)
	b.WriteString("**`kedge plan`** is the real binary, built as deploy/Dockerfile builds it (`CGO_ENABLED=0`, `-trimpath`, `-ldflags \"-s -w\"`), run as a child process (`--output json`); its output is checked to hold " +
		"every drifted workload, and with `--repo` every one found in a file. The floor *generic decode* is a child process " +
		"that knows nothing of Kubernetes: it decodes every object of the same JSON files into `any` with `encoding/json` " +
		"on one core (GOMAXPROCS=1), List items one by one; *index* is one that indexes the same repository with `index.Read`. " +
		"Peak RSS is the child program's VmHWM, read from /proc while it runs (getrusage would report the parent's peak: Go starts children with vfork), or, when higher, the sampled resident set of kedge and its render workers together. Runs (wall time / peak RSS):\n\n")
	fmt.Fprintf(&b, "- generic decode: %s\n- `kedge plan`: %s\n- index of the fleet's repository: %s\n- `kedge plan --repo`: %s\n\n",
		runsOf(r.Decode), runsOf(r.Plan), runsOf(r.IndexFleet), runsOf(r.PlanRepo))
	fmt.Fprintf(&b, "**Index of a %d-file repository**: `index.Read` in a child process on the repository of a fleet "+
		"of %d namespaces (%d workloads indexed); the time is the child's own measurement of the call, the memory its peak RSS. Runs: %s.\n\n",
		f.IndexRepoFiles, f.IndexSpec.Namespaces, r.IndexObjects, indexRuns(r))
	b.WriteString("**Index updates** are `BenchmarkIndexUpdate` (`internal/gitops/index`) on the fleet's repository: the CPU time " +
		"(user and system, every core) of a full `index.Read` against that of the `Index.Update` a service cycle makes " +
		"from the files Git changed since the last cycle's commit: none, or one workload's file.\n\n")
	b.WriteString("**Informer memory** is `BenchmarkTrimmedPodCache` (`internal/cluster/trim`): 10,000 of the fleet's pods decoded " +
		"one by one and added through the live source's transform to an informer's indexer; the heap it keeps, per pod.\n\n")
	b.WriteString("**Cycles** are `BenchmarkCycleOpening500PRs` and `BenchmarkCycleUnchanged` (`internal/reconcile`): the whole " +
		"service (`assemble.New`) against a real git server (`git http-backend`) and the GitHub emulation, on a fleet of 500 " +
		"namespaces that all drift, with `limits.maxNewPRsPerCycle`, `limits.maxOpenPRs` and `limits.mutationGap` lifted so one " +
		"cycle does all the work (with the defaults the same work is spread over 50 cycles, one write a second). REST calls " +
		"per new PR counts every call of the cycle, listing and dashboard included. The unchanged cycle is the third: the " +
		"first opens the PRs, the second reads the listings they changed.\n\n")
	b.WriteString("**Mesh change → PR** is `BenchmarkMeshChangeToPR` (`internal/testing/controlplane`): the service " +
		"(`internal/service`: live source, debounced scheduler with the default `cycle.debounce`, reconcile cycles, default " +
		"write spacing and PR limits) against a real kube-apiserver holding a 16-namespace fleet without drift; from the API " +
		"write to the PR being open on the emulated GitHub.\n\n")
	if l := r.Live; l != nil {
		r.liveMarkdown(&b, l)
	} else {
		b.WriteString("**Live plan and service** were left out of this run (`KEDGE_BENCH_LIVE=0`).\n\n")
	}
	b.WriteString(r.reposSection())
	return b.String()
}

func indexRuns(r *report) string {
	parts := make([]string, len(r.IndexSeconds))
	for i, s := range r.IndexSeconds {
		parts[i] = fmt.Sprintf("%.1f s / %d MiB", s, r.Index.rss[i]>>20)
	}
	return strings.Join(parts, "; ")
}

func (r *report) liveMarkdown(b *strings.Builder, l *liveResult) {
	fmt.Fprintf(b, "**Live plan**: a real kube-apiserver and etcd (`internal/testing/testbin/testbin.sh`) holding the fleet above: %d pods, %d namespaces, "+
		"%d workloads and their owners, created in %s (%d creates at a time, built-in types as protobuf). "+
		"`kedge plan --kubeconfig` (informers, protobuf, trimmed caches) against `kubectl get pods -A -o json` (the kubectl of the same build), "+
		"output to /dev/null. kubectl keeps several copies of every pod it reads, so it is stopped once its resident set passes %s "+
		"(half the memory available once the fleet was loaded, at most 8 GiB); then its time is how long it ran, and the ratio a bound. "+
		"Runs: kubectl %s; kedge %s.\n\n",
		l.Spec.Pods, l.Spec.Namespaces, l.Spec.Workloads, l.Load.Round(time.Second), l.Workers, gib(l.KubectlCap),
		runsOf(l.Kubectl), runsOf(l.Plan))
	s := l.Service
	if s == nil {
		return
	}
	fmt.Fprintf(b, "**Service**: `kedge run` as a process of its own on the same API server (over its kubeconfig, leader election on), "+
		"with a real git server (`git http-backend`) holding the fleet's %d-file repository and the GitHub emulation. "+
		"Its configuration is the default but for the addresses, `cycle.resync: %s` (the unchanged cycles measured are resync cycles) "+
		"and the PR limits lifted, so that the first cycle opens every drifted namespace's PR (%d, in %s) and no change waits on a limit. "+
		"The caches synced %s after the start, at %s resident. "+
		"The steady state runs from the end of the first cycle to the end of the measurement (%d unchanged cycles, then %d changes, %s in all); "+
		"VmRSS of kedge and its render workers together is read from /proc every %s (%d samples: median %s, highest %s); VmHWM, the peak of kedge's own process over the whole run including the first sync "+
		"and the first cycle, is %s. "+
		"An unchanged cycle's CPU is the process's user and system time (/proc/<pid>/stat, 10 ms ticks) from its \"cycle started\" to its "+
		"\"cycle finished\" log line, the third cycle on (the second reads the listings the first changed); each pushed nothing and made no mutating call. "+
		"Its floor is the CPU (user and system, every core) of a full index build of the same repository in a process of its own, "+
		"run after each measured cycle while the service waits for the next. The service collects its garbage and returns it to the system after each cycle "+
		"(after the \"cycle finished\" line, so outside the window measured), and runs its first cycle, and builds each new plan, with the "+
		"collector paced at GOGC=25 (`memlimit.Packed`; GOGC is not set in its environment), at the default pace otherwise. "+
		"Runs: cycles %s (wall %s); full index builds %s. "+
		"**Change → PR**: right after a cycle ends, a namespace with the default revision and no drift is moved to revision 1-25-1 "+
		"(its label written through the API server), and the time is taken until its PR is open on the emulated GitHub, through the "+
		"informers, the %s debounce and a whole cycle over the fleet. Runs: %s.\n\n",
		r.Fleet.RepoFiles, serviceResync, s.OpenPRs, s.FirstCycle.Round(time.Second),
		s.Sync.Round(time.Second), mib(s.SyncRSS),
		len(s.CycleCPU), len(s.ChangeToPR), (time.Duration(len(s.RSS)) * rssSampling).Round(time.Second),
		rssSampling, len(s.RSS), mib(median(s.RSS)), mib(slices.Max(s.RSS)), mib(s.HWM),
		durations(s.CycleCPU, time.Millisecond), durations(s.CycleWall, 10*time.Millisecond), durations(s.Index.cpu, time.Millisecond),
		seconds(s.Debounce), durations(s.ChangeToPR, 100*time.Millisecond))
}

func durations(ds []time.Duration, unit time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Round(unit).String()
	}
	return strings.Join(parts, "; ")
}
