// Package sandbox runs kustomize builds and Helm renders of repository
// content in worker processes of kedge itself, so that a hostile
// repository can cost a render, never kedge: each worker has a memory
// budget (an address-space limit it cannot lift), each job a deadline
// after which its worker is killed, and a worker has no network, no
// program to execute (no PATH) and cannot write a file. A worker that dies
// or is killed takes only its job with it; the next job gets a new one.
//
// The worker is the same executable: this package's initialisation turns a
// process started with the worker environment into a worker before main
// (or a test) runs, so every binary that renders can serve as its own
// worker.
package sandbox

import (
	"bufio"
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kedge-io/kedge/internal/untrusted"
)

// Limits bound the rendering of untrusted content.
type Limits struct {
	// Timeout bounds one job, wall clock.
	Timeout time.Duration
	// Memory bounds what one worker may allocate.
	Memory int64
	// Workers bounds how many workers run at once.
	Workers int
}

// DefaultLimits keep two workers and kedge within the 1 GiB the deployment
// gives the pod: a worker past its budget is killed long before the pod
// is.
var DefaultLimits = Limits{Timeout: 20 * time.Second, Memory: 256 << 20, Workers: min(runtime.GOMAXPROCS(0), 2)}

// idleTimeout is how long an unused worker is kept: a service cycle with
// nothing new to render holds none.
const idleTimeout = 15 * time.Second

// Pool runs jobs in workers.
type Pool struct {
	limits Limits
	slots  chan struct{}

	mu     sync.Mutex
	idle   []*worker
	reaper bool
}

// NewPool returns a pool with the limits (zero fields take the defaults).
func NewPool(l Limits) *Pool {
	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	if l.Memory <= 0 {
		l.Memory = DefaultLimits.Memory
	}
	if l.Workers <= 0 {
		l.Workers = DefaultLimits.Workers
	}
	return &Pool{limits: l, slots: make(chan struct{}, l.Workers)}
}

var (
	defaultMu   sync.Mutex
	defaultPool = NewPool(DefaultLimits)
)

// Default is the process's pool.
func Default() *Pool {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	return defaultPool
}

// SetDefault replaces the process's pool with one of the limits; workers
// of the one replaced finish their jobs and are not reused.
func SetDefault(l Limits) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	old := defaultPool
	defaultPool = NewPool(l)
	old.Close()
}

// Limits returns the pool's limits.
func (p *Pool) Limits() Limits { return p.limits }

// Kustomize builds a kustomize root in a worker.
func (p *Pool) Kustomize(ctx context.Context, job KustomizeJob) *KustomizeResult {
	resp, failure := p.do(ctx, &request{Kustomize: &job})
	if failure != nil {
		return &KustomizeResult{Failure: failure}
	}
	if resp.Kustomize == nil {
		return &KustomizeResult{Failure: &Failure{Kind: FailBuild, Message: "the render worker answered no build"}}
	}
	return resp.Kustomize
}

// Chart renders a chart in a worker.
func (p *Pool) Chart(ctx context.Context, job ChartJob) *ChartResult {
	resp, failure := p.do(ctx, &request{Chart: &job})
	if failure != nil {
		return &ChartResult{Failure: failure}
	}
	if resp.Chart == nil {
		return &ChartResult{Failure: &Failure{Kind: FailBuild, Message: "the render worker answered no render"}}
	}
	return resp.Chart
}

// do runs one job: in an idle worker, or a new one.
func (p *Pool) do(ctx context.Context, req *request) (*response, *Failure) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &Failure{Kind: FailBuild, Message: "cancelled: " + ctx.Err().Error()}
	}
	defer func() { <-p.slots }()
	w := p.take()
	if w == nil {
		var err error
		if w, err = p.start(); err != nil {
			return nil, &Failure{Kind: FailBuild, Message: "starting a render worker: " + untrusted.Error(err)}
		}
	}
	done := make(chan error, 1)
	var resp response
	go func() {
		if err := w.enc.Encode(req); err != nil {
			done <- err
			return
		}
		if err := w.out.Flush(); err != nil {
			done <- err
			return
		}
		done <- w.dec.Decode(&resp)
	}()
	timer := time.NewTimer(p.limits.Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return nil, w.died(err)
		}
		p.put(w)
		for _, line := range resp.Output {
			logWorkerLine(line)
		}
		return &resp, nil
	case <-timer.C:
		w.kill()
		<-done
		return nil, &Failure{Kind: FailOverBudget, Message: fmt.Sprintf("rendering took longer than %s", p.limits.Timeout)}
	case <-ctx.Done():
		w.kill()
		<-done
		return nil, &Failure{Kind: FailBuild, Message: "cancelled: " + ctx.Err().Error()}
	}
}

func (p *Pool) take() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return w
	}
	return nil
}

func (p *Pool) put(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.used = time.Now()
	p.idle = append(p.idle, w)
	if !p.reaper {
		p.reaper = true
		go p.reap()
	}
}

// reap ends workers left idle, and itself once none is left.
func (p *Pool) reap() {
	for {
		time.Sleep(idleTimeout / 3)
		p.mu.Lock()
		kept := p.idle[:0]
		var ended []*worker
		for _, w := range p.idle {
			if time.Since(w.used) > idleTimeout {
				ended = append(ended, w)
			} else {
				kept = append(kept, w)
			}
		}
		clear(p.idle[len(kept):])
		p.idle = kept
		stop := len(p.idle) == 0
		if stop {
			p.reaper = false
		}
		p.mu.Unlock()
		for _, w := range ended {
			w.close()
		}
		if stop {
			return
		}
	}
}

// Close ends the idle workers; workers busy with a job end after it.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.close()
	}
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Writer
	enc    *gob.Encoder
	dec    *gob.Decoder
	stderr *stderrTail
	exited chan struct{}
	used   time.Time
}

func (p *Pool) start() (*worker, error) {
	cmd := workerCommand()
	// Nothing of kedge's environment (tokens, proxies, PATH) reaches a
	// worker.
	cmd.Env = []string{
		workerEnv + "=" + protocolVersion,
		memoryEnv + "=" + strconv.FormatInt(p.limits.Memory, 10),
		"GOMAXPROCS=1",
	}
	cmd.Dir = "/"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	tail := &stderrTail{}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, stdin: stdin, out: bufio.NewWriter(stdin), stderr: tail, exited: make(chan struct{})}
	w.enc = gob.NewEncoder(w.out)
	w.dec = gob.NewDecoder(bufio.NewReader(stdout))
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	<-w.exited
}

func (w *worker) close() {
	_ = w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
		w.kill()
	}
}

// died reports why a worker stopped answering: out of memory, or a crash.
func (w *worker) died(err error) *Failure {
	w.kill()
	// The process is reaped: everything it wrote to standard error is in.
	crash := w.stderr.Crash()
	if strings.Contains(crash, "out of memory") || strings.Contains(crash, "cannot allocate memory") {
		return &Failure{Kind: FailOverBudget, Message: "rendering needed more memory than a render may use"}
	}
	if crash == "" {
		crash = err.Error()
	}
	return &Failure{Kind: FailBuild, Message: "the render worker stopped: " + untrusted.Excerpt(crash, 0)}
}

// stderrTail keeps the end of a worker's standard error and sends each of
// its lines to the debug log: kustomize prints its deprecation warnings
// there, which the index reports as problems of their own.
type stderrTail struct {
	mu   sync.Mutex
	buf  []byte
	line []byte
	// crash is the first line by which the Go runtime says why it ends the
	// process; the goroutine dump after it can be longer than the tail.
	crash string
}

const tailBytes = 8 << 10

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	for _, b := range p {
		if b != '\n' {
			if len(t.line) < 1024 {
				t.line = append(t.line, b)
			}
			continue
		}
		line := string(t.line)
		if t.crash == "" && (strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "runtime: out of memory") || strings.HasPrefix(line, "panic:")) {
			t.crash = line
		}
		logWorkerLine(line)
		t.line = t.line[:0]
	}
	return len(p), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Crash is the runtime's reason for ending the worker, if it gave one.
func (t *stderrTail) Crash() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.crash
}

// kustomizeWarning starts every warning kustomize prints about a
// kustomization.
const kustomizeWarning = "# Warning: "

func logWorkerLine(line string) {
	if w, ok := strings.CutPrefix(line, kustomizeWarning); ok {
		slog.Debug("kustomize warning", "warning", untrusted.Excerpt(w, 0))
		return
	}
	slog.Debug("render worker", "output", untrusted.Excerpt(line, 0))
}

// Kustomize builds a kustomize root in the process's pool.
func Kustomize(ctx context.Context, job KustomizeJob) *KustomizeResult {
	return Default().Kustomize(ctx, job)
}

// Chart renders a chart in the process's pool.
func Chart(ctx context.Context, job ChartJob) *ChartResult { return Default().Chart(ctx, job) }
