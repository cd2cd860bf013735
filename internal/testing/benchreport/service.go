package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

const (
	serviceToken = "ghs_serviceBenchToken0000000000000000000"
	serviceOwner = "example-org"
	serviceRepo  = "gitops"
	// serviceResync is the service's cycle.resync: the unchanged cycles
	// measured are resync cycles, so it is short.
	serviceResync = 30 * time.Second
	// serviceDebounce is the configuration's default cycle.debounce.
	serviceDebounce = 10 * time.Second
	// rssSampling is how often the service's resident set is read.
	rssSampling = 500 * time.Millisecond
)

// serviceResult is `kedge run` at fleet scale.
type serviceResult struct {
	// Sync is from the process's start to its caches being synced.
	Sync time.Duration
	// SyncRSS is the resident set when the caches synced.
	SyncRSS int64
	// FirstCycle opened the fleet's pull requests.
	FirstCycle time.Duration
	OpenPRs    int
	// RSS are the resident set samples of the steady state: from the end
	// of the first cycle to the end of the measurement.
	RSS []int64
	// HWM is the peak resident set of the whole run.
	HWM int64
	// CycleCPU and CycleWall are the unchanged cycles'.
	CycleCPU  []time.Duration
	CycleWall []time.Duration
	// Index is the floor of CycleCPU: full builds of the same repository's
	// index, each run in a process of its own while the service waits
	// for its next cycle.
	Index series
	// ChangeToPR is from a namespace label change to its PR being open.
	ChangeToPR []time.Duration
	// ChangeTimedOut is set when a change had no PR within
	// changeDeadline; the last ChangeToPR is then that deadline, a bound.
	ChangeTimedOut bool
	Debounce       time.Duration
}

// serviceEvent is one line of the service's JSON log that the measurement
// follows, with the process's CPU time when it was read.
type serviceEvent struct {
	Msg       string `json:"msg"`
	Trigger   string `json:"trigger"`
	Pushes    int    `json:"pushes"`
	Mutations int    `json:"githubMutations"`
	Error     string `json:"error"`
	// Stages says how long each step of the cycle took.
	Stages string `json:"stages"`
	at     time.Time
	cpu    time.Duration
}

// kedgeProcess is a running `kedge run` whose log is followed.
type kedgeProcess struct {
	cmd    *exec.Cmd
	events chan serviceEvent
	done   chan error

	mu     sync.Mutex
	stderr []string // the log's last lines, for errors
}

// measureService runs the kedge service as a process of its own against
// the API server (already loaded with the fleet), a real git server holding
// the fleet's repository and the GitHub emulation. It measures the steady
// state's resident memory, the CPU of cycles in which nothing changed,
// and the time from a namespace label change to its pull request.
func measureService(ctx context.Context, opts options, kedge, self, kubeconfig string, restCfg *rest.Config, f *fleetData, enabled []string) (*serviceResult, error) {
	git, err := gitserver.Start()
	if err != nil {
		return nil, err
	}
	defer git.Close()
	git.SetToken(serviceToken)
	logf("service figure: importing the %d-file repository into the git server", f.RepoFiles)
	if _, err := git.Import(serviceRepo, f.Repo); err != nil {
		return nil, err
	}
	gh := ghemu.NewServer(ghemu.Options{
		Owner: serviceOwner, Repo: serviceRepo,
		Tokens:   map[string]string{serviceToken: "kedge-bot"},
		Branches: ghemu.GitBranches(git.RepoPath(serviceRepo)),
		// Every drifted namespace of the fleet gets its PR in the first
		// cycle; GitHub's hourly budget is not what is measured.
		RateLimit: 1 << 30,
	})
	defer gh.Close()

	dir, err := os.MkdirTemp("", "kedge-bench-service-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "kedge.yaml")
	if err := os.WriteFile(config, []byte(serviceConfig(f, git.RepoURL(serviceRepo), gh.URL, kubeconfig, filepath.Join(dir, "git"))), 0o600); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}

	res := &serviceResult{Debounce: serviceDebounce}
	p, err := startKedge(ctx, opts.root, kedge, config)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	started := time.Now()
	if _, err := p.await(ctx, "cluster caches synced", 15*time.Minute); err != nil {
		return nil, err
	}
	res.Sync = time.Since(started)
	res.SyncRSS = readStatus(p.cmd.Process.Pid, "VmRSS:")
	logf("  caches synced in %s, RSS %d MiB", res.Sync.Round(time.Second), res.SyncRSS>>20)

	first, err := p.awaitCycle(ctx, 30*time.Minute)
	if err != nil {
		return nil, err
	}
	res.FirstCycle = first.wall
	res.OpenPRs = len(gh.PRs())
	logf("  first cycle: %s, %d PRs open, RSS %d MiB", first.wall.Round(time.Second), res.OpenPRs, readStatus(p.cmd.Process.Pid, "VmRSS:")>>20)

	sampler := startSampling(p.cmd.Process.Pid)
	// The second cycle reads the listings the first one changed; the ones
	// after it find nothing to do.
	if _, err := p.awaitCycle(ctx, 10*time.Minute); err != nil {
		return nil, err
	}
	for round := range opts.runs {
		c, err := p.awaitCycle(ctx, 10*time.Minute)
		if err != nil {
			return nil, err
		}
		if c.end.Pushes != 0 || c.end.Mutations != 0 {
			return nil, fmt.Errorf("an unchanged cycle pushed %d times and made %d mutating calls", c.end.Pushes, c.end.Mutations)
		}
		res.CycleCPU = append(res.CycleCPU, c.cpu)
		res.CycleWall = append(res.CycleWall, c.wall)
		logf("service figure, unchanged cycle %d/%d: %s wall, %d ms CPU, RSS %d MiB (%s)", round+1, opts.runs, c.wall.Round(time.Millisecond), c.cpu.Milliseconds(), readStatus(p.cmd.Process.Pid, "VmRSS:")>>20, c.end.Stages)
		full, err := measure(ctx, opts.root, nil, self, "-child", "index", "-dir", f.Repo)
		if err != nil {
			return nil, err
		}
		res.Index.add(full)
		logf("service figure, full index build %d/%d: %d ms CPU", round+1, opts.runs, full.CPU.Milliseconds())
	}

	drifting := map[string]bool{}
	for _, pr := range gh.PRs() {
		drifting[strings.TrimPrefix(pr.GetHead().GetRef(), reconcile.BranchPrefix(f.Spec.Cluster))] = true
	}
	candidates := slices.DeleteFunc(slices.Clone(enabled), func(ns string) bool { return drifting[ns] })
	if len(candidates) < opts.runs {
		return nil, fmt.Errorf("only %d namespaces without drift to change", len(candidates))
	}
	for round := range opts.runs {
		took, err := changeToPR(ctx, p, kube, gh, f.Spec.Cluster, candidates[round])
		if errors.Is(err, errNoPR) {
			// Later changes would wait as long: report the bound.
			res.ChangeToPR = append(res.ChangeToPR, changeDeadline)
			res.ChangeTimedOut = true
			logf("service figure, change → PR %d/%d: none within %s", round+1, opts.runs, changeDeadline)
			break
		}
		if err != nil {
			return nil, err
		}
		res.ChangeToPR = append(res.ChangeToPR, took)
		logf("service figure, change → PR %d/%d: %.1f s", round+1, opts.runs, took.Seconds())
	}
	res.RSS = sampler.stop()
	res.HWM = readStatus(p.cmd.Process.Pid, "VmHWM:")
	logf("  steady-state RSS median %d MiB, highest %d MiB; peak of the run %d MiB", median(res.RSS)>>20, slices.Max(res.RSS)>>20, res.HWM>>20)
	return res, nil
}

// serviceConfig is kedge's configuration for the measurement: the
// defaults, but for the addresses, a short resync, and PR limits lifted so
// that the first cycle opens every PR (with the defaults the fleet's 2,500
// take 250 cycles) and a change is never held back by them.
func serviceConfig(f *fleetData, repoURL, apiURL, kubeconfig, cache string) string {
	return fmt.Sprintf(`cluster: %s
repo:
  owner: %s
  name: %s
  url: %s
github:
  apiURL: %s/
  token: %s
source:
  kubeconfig: %s
git:
  cacheDir: %s
server:
  address: 127.0.0.1:0
  leaseNamespace: default
cycle:
  debounce: %s
  resync: %s
limits:
  maxOpenPRs: 1000000
  maxNewPRsPerCycle: 1000000
  mutationGap: 0s
`, f.Spec.Cluster, serviceOwner, serviceRepo, repoURL, apiURL, serviceToken, kubeconfig, cache, serviceDebounce, serviceResync)
}

// changeToPR moves namespace from the default revision to another one
// right after a cycle ended, and measures until its PR is open; then it
// lets that cycle end. When cycles last longer than cycle.resync, the next
// one is already in flight, and the change waits for it too.
func changeToPR(ctx context.Context, p *kedgeProcess, kube kubernetes.Interface, gh *ghemu.Server, cluster, namespace string) (time.Duration, error) {
	start := time.Now()
	ns, err := kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	delete(ns.Labels, "istio-injection")
	ns.Labels["istio.io/rev"] = "1-25-1"
	if _, err := kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	branch := reconcile.BranchPrefix(cluster) + namespace
	deadline := start.Add(changeDeadline)
	for time.Now().Before(deadline) {
		if _, ok := gh.PRWithHead(branch); ok {
			took := time.Since(start)
			c, err := p.awaitCycle(ctx, 10*time.Minute)
			if err == nil {
				logf("  the cycle that opened it: %s", c.end.Stages)
			}
			return took, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case err := <-p.done:
			return 0, p.exited(err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("namespace %s: %w", namespace, errNoPR)
}

// changeDeadline is how long a change may take to become a PR before the
// measurement gives up on it.
const changeDeadline = 5 * time.Minute

var errNoPR = fmt.Errorf("no PR within %s of the change", changeDeadline)

// startKedge starts `kedge run` and follows its log.
func startKedge(ctx context.Context, dir, kedge, config string) (*kedgeProcess, error) {
	cmd := exec.CommandContext(ctx, kedge, "run", "--config", config)
	cmd.Dir = dir
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &kedgeProcess{cmd: cmd, events: make(chan serviceEvent, 64), done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go p.follow(stderr)
	return p, nil
}

// follow reads the log, reading the process's CPU time at each event of
// interest as soon as its line arrives.
func (p *kedgeProcess) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var ev serviceEvent
		if json.Unmarshal([]byte(line), &ev) != nil {
			p.remember(line)
			continue
		}
		switch ev.Msg {
		case "cluster caches synced", "cycle started", "cycle finished", "cycle failed":
			ev.at = time.Now()
			ev.cpu = processCPU(p.cmd.Process.Pid)
			p.events <- ev
		default:
			p.remember(line)
		}
	}
	p.done <- p.cmd.Wait()
}

func (p *kedgeProcess) remember(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stderr = append(p.stderr, line)
	if len(p.stderr) > 40 {
		p.stderr = p.stderr[len(p.stderr)-40:]
	}
}

func (p *kedgeProcess) exited(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Errorf("kedge run exited (%v):\n%s", err, strings.Join(p.stderr, "\n"))
}

// await waits for the log line msg.
func (p *kedgeProcess) await(ctx context.Context, msg string, limit time.Duration) (serviceEvent, error) {
	timeout := time.After(limit)
	for {
		select {
		case ev := <-p.events:
			if ev.Msg == "cycle failed" {
				return ev, fmt.Errorf("cycle failed: %s", ev.Error)
			}
			if ev.Msg == msg {
				return ev, nil
			}
		case err := <-p.done:
			return serviceEvent{}, p.exited(err)
		case <-ctx.Done():
			return serviceEvent{}, ctx.Err()
		case <-timeout:
			return serviceEvent{}, fmt.Errorf("no %q from kedge run within %s", msg, limit)
		}
	}
}

// cycle is one cycle of the service as its log shows it.
type cycle struct {
	end  serviceEvent
	wall time.Duration
	cpu  time.Duration
}

// awaitCycle waits for the next cycle to start and end.
func (p *kedgeProcess) awaitCycle(ctx context.Context, limit time.Duration) (cycle, error) {
	start, err := p.await(ctx, "cycle started", limit)
	if err != nil {
		return cycle{}, err
	}
	end, err := p.await(ctx, "cycle finished", limit)
	if err != nil {
		return cycle{}, err
	}
	return cycle{end: end, wall: end.at.Sub(start.at), cpu: end.cpu - start.cpu}, nil
}

// stop ends the service as Kubernetes would, with SIGTERM.
func (p *kedgeProcess) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times; Linux
// fixes it at 100 on every architecture Go runs on.
const clockTick = 10 * time.Millisecond

// processCPU is the user and system CPU time of every thread of pid.
func processCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces; fields count
	// from after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15 of the line, 12 and 13 here.
	if len(fields) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0
	}
	return time.Duration(utime+stime) * clockTick
}

// readStatus reads one size (kB) line of /proc/<pid>/status, in bytes.
func readStatus(pid int, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// treeRSS is the resident set of a process and of every process below it:
// the service's render workers are children of its own, and the pod's
// memory limit counts them all.
func treeRSS(pid int) int64 {
	total := readStatus(pid, "VmRSS:")
	for _, child := range childrenOf(pid) {
		total += treeRSS(child)
	}
	return total
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// The command may hold spaces and parentheses: the fields start
		// after the last ')'.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// sampler reads a process tree's resident set at a fixed pace.
type sampler struct {
	stopped chan struct{}
	samples chan []int64
}

func startSampling(pid int) *sampler {
	s := &sampler{stopped: make(chan struct{}), samples: make(chan []int64, 1)}
	go func() {
		var out []int64
		tick := time.NewTicker(rssSampling)
		defer tick.Stop()
		for {
			if v := treeRSS(pid); v > 0 {
				out = append(out, v)
			}
			select {
			case <-s.stopped:
				s.samples <- out
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() []int64 {
	close(s.stopped)
	return <-s.samples
}
