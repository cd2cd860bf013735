package sandbox

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/kedge-io/kedge/internal/render"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/untrusted"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// workerEnv, set to protocolVersion, makes a kedge process (or a test
// binary of any package that links this one) a render worker: the
// package's initialisation serves jobs on standard input and exits, before
// main or any test runs. memoryEnv carries the worker's memory budget.
const (
	workerEnv       = "KEDGE_RENDER_WORKER"
	memoryEnv       = "KEDGE_RENDER_MEMORY"
	protocolVersion = "1"
)

func init() {
	if os.Getenv(workerEnv) != protocolVersion {
		return
	}
	os.Exit(serve())
}

// maxResponseBytes bounds what one job may send back.
const maxResponseBytes = 256 << 20

// serve answers jobs until standard input closes.
func serve() int {
	out, err := protocolOutput()
	if err != nil {
		fmt.Fprintln(os.Stderr, "render worker:", err)
		return 1
	}
	memory, _ := strconv.ParseInt(os.Getenv(memoryEnv), 10, 64)
	if err := confine(memory); err != nil {
		fmt.Fprintln(os.Stderr, "render worker:", err)
		return 1
	}
	output, err := captureOutput()
	if err != nil {
		fmt.Fprintln(os.Stderr, "render worker:", err)
		return 1
	}
	w := bufio.NewWriter(out)
	enc := gob.NewEncoder(w)
	dec := gob.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "render worker: reading a job:", err)
			return 1
		}
		resp := handle(&req)
		resp.Output = output.take()
		if err := enc.Encode(resp); err != nil {
			fmt.Fprintln(os.Stderr, "render worker: writing a result:", err)
			return 1
		}
		if err := w.Flush(); err != nil {
			return 1
		}
	}
}

// jobOutput collects what the libraries a job runs print to os.Stderr or
// through the log package: it goes back with the job's result, in order,
// rather than to the worker's standard error, which the Go runtime keeps
// for its own reports.
type jobOutput struct {
	w     *os.File
	mu    sync.Mutex
	lines []string
	// mark comes back through the pipe once everything before it is read.
	mark chan struct{}
}

const outputMark = "\x00kedge-output-mark\x00"

func captureOutput() (*jobOutput, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o := &jobOutput{w: w, mark: make(chan struct{})}
	os.Stderr = w
	log.SetOutput(w)
	go func() {
		lines := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(lines, maxOutputLine)
			if line == outputMark {
				o.mark <- struct{}{}
			} else if line != "" || err == nil {
				o.mu.Lock()
				if len(o.lines) < maxOutputLines {
					o.lines = append(o.lines, line)
				}
				o.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return o, nil
}

// maxOutputLines and maxOutputLine bound what one job's output may carry
// back.
const (
	maxOutputLines = 1000
	maxOutputLine  = 4 << 10
)

// readLine reads one line, keeping at most max bytes of it: a library that
// prints a line without end never stops the reader.
func readLine(r *bufio.Reader, max int) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if len(b) < max {
			b = append(b, chunk[:min(len(chunk), max-len(b))]...)
		}
		if err != nil || !isPrefix {
			return string(b), err
		}
	}
}

// take returns the lines printed since the last take.
func (o *jobOutput) take() []string {
	fmt.Fprintln(o.w, outputMark)
	<-o.mark
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := o.lines
	o.lines = nil
	return lines
}

// confine takes from the worker everything a job has no use for: memory
// beyond its budget, the network, and writing files. The jobs run code
// paths that could fetch or execute on a repository's say-so (kustomize
// clones a remote base with git and downloads a URL named in a file
// field); in the worker there is no git to find (no PATH) and no address
// to reach.
func confine(memory int64) error {
	if memory > 0 {
		// The collector works harder as the heap nears the budget, so that
		// garbage alone never exhausts it.
		debug.SetMemoryLimit(memory * 3 / 4)
		if err := limitAddressSpace(memory); err != nil {
			return err
		}
	}
	if err := forbidFileWrites(); err != nil {
		return err
	}
	http.DefaultTransport = refusingTransport{}
	http.DefaultClient = &http.Client{Transport: refusingTransport{}}
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: refuseDial}
	return nil
}

// errNoFetch is what a render gets for any attempt to reach the network.
var errNoFetch = errors.New("kedge fetches nothing a repository names")

type refusingTransport struct{}

func (refusingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, errNoFetch }

func refuseDial(context.Context, string, string) (net.Conn, error) { return nil, errNoFetch }

func handle(req *request) (resp *response) {
	// A library that panics on hostile input fails the job, not the
	// worker.
	defer func() {
		if r := recover(); r != nil {
			failure := &Failure{Kind: FailBuild, Message: untrusted.Excerpt(fmt.Sprintf("panic: %v", r), 0)}
			switch {
			case req.Kustomize != nil:
				resp = &response{Kustomize: &KustomizeResult{Failure: failure}}
			default:
				resp = &response{Chart: &ChartResult{Failure: failure}}
			}
		}
	}()
	switch {
	case req.Kustomize != nil:
		return &response{Kustomize: buildKustomize(req.Kustomize)}
	case req.Chart != nil:
		return &response{Chart: renderChart(req.Chart)}
	default:
		return &response{}
	}
}

func buildKustomize(job *KustomizeJob) *KustomizeResult {
	fsys, err := repofs.Open(job.Root)
	if err != nil {
		return &KustomizeResult{Failure: classify(err)}
	}
	defer fsys.Close()
	replace := job.Replace
	if job.Flux != nil {
		if replace, err = fluxKustomization(fsys, job); err != nil {
			return &KustomizeResult{Failure: classify(err), Listed: map[string]bool{job.Dir: true}}
		}
	}
	b := fsys.Build(replace, verdicts.judge)
	if job.Flux != nil {
		// The generator walked the directory: a file added anywhere below
		// it can change what it lists.
		b.Listed[job.Dir] = true
	}
	objects, err := render.Kustomize(b, fsys.Abs(job.Dir))
	out := &KustomizeResult{Objects: objects, Listed: b.Listed, Refused: map[string]string{}}
	for rel := range b.Reads {
		out.Reads = append(out.Reads, rel)
	}
	sort.Strings(out.Reads)
	for rel, why := range b.Refused {
		out.Refused[rel] = why.Error()
	}
	if err == nil && objectBytes(objects) > maxResponseBytes {
		err = &render.OverBudgetError{Budget: fmt.Sprintf("the build renders more than %d bytes", maxResponseBytes)}
	}
	if err != nil {
		out.Objects = nil
		out.Failure = classify(err)
	}
	return out
}

// fluxKustomization returns the job's replacements with the kustomization
// kustomize-controller writes at the job's directory for its Kustomization.
func fluxKustomization(fsys *repofs.FS, job *KustomizeJob) (map[string][]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(job.Flux, &obj); err != nil {
		return nil, fmt.Errorf("the Flux Kustomization: %w", err)
	}
	data, rel, err := render.FluxKustomization(fsys.Dir(), fsys.Abs(job.Dir), obj)
	if err != nil {
		return nil, err
	}
	if _, replaced := job.Replace[rel]; replaced {
		return nil, fmt.Errorf("%s is both replaced and generated", rel)
	}
	out := make(map[string][]byte, len(job.Replace)+1)
	maps.Copy(out, job.Replace)
	out[rel] = data
	return out, nil
}

func objectBytes(objects [][]byte) int {
	n := 0
	for _, o := range objects {
		n += len(o)
	}
	return n
}

func renderChart(job *ChartJob) *ChartResult {
	max := job.MaxBytes
	if max <= 0 {
		max = render.DefaultMaxChartBytes
	}
	chrt, err := loadChart(job, max)
	if err != nil {
		return &ChartResult{Failure: classify(err)}
	}
	out := &ChartResult{Defaults: chrt.Values}
	total := 0
	for _, values := range job.Values {
		objects, templates, err := render.RenderChart(chrt, values, job.Release, job.Namespace)
		size := 0
		for _, o := range objects {
			size += len(o)
		}
		if err == nil && total+size > maxResponseBytes {
			err = &render.OverBudgetError{Budget: fmt.Sprintf("the renders add up to more than %d bytes", maxResponseBytes)}
		}
		if err != nil {
			out.Renders = append(out.Renders, ChartRender{Failure: classify(err)})
			continue
		}
		total += size
		out.Renders = append(out.Renders, ChartRender{Objects: objects, Templates: templates})
	}
	return out
}

func loadChart(job *ChartJob, max int64) (*chart.Chart, error) {
	if job.Archive != nil {
		return render.LoadChartArchive(job.Archive, max)
	}
	fsys, err := repofs.Open(job.Root)
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	return render.LoadChartDir(fsys, job.Dir, max, job.Replace)
}

// classify says why a job failed, its message reduced to an excerpt.
func classify(err error) *Failure {
	f := &Failure{Kind: FailBuild, Message: untrusted.Error(err)}
	var over *render.OverBudgetError
	var guard *yamlguard.Error
	var outside *render.OutsideError
	switch {
	case errors.As(err, &over):
		f.Kind, f.File = FailOverBudget, over.File
	case errors.As(err, &guard):
		f.Kind = FailOverBudget
	case errors.As(err, &outside):
		f.Kind, f.File = FailOutside, outside.File
	case repofs.IsOutside(err) || strings.Contains(err.Error(), repofs.ErrOutside.Error()):
		// kustomize quotes the errors of the resources it accumulates
		// rather than wrapping them: the refusal survives only as text.
		f.Kind = FailOutside
	case errors.Is(err, errNoFetch) || strings.Contains(err.Error(), errNoFetch.Error()):
		f.Kind = FailRemote
	case strings.Contains(err.Error(), "no 'git' program on path"):
		// kustomize took an entry for a remote repository and looked for
		// git to clone it; the worker has none to find.
		f.Kind = FailRemote
		f.Message = untrusted.Excerpt("a remote repository is not cloned: "+err.Error(), 0)
	}
	return f
}

// verdicts remembers which files passed the repository's YAML budget: a
// base read by hundreds of roots is judged once per content.
var verdicts = &verdictCache{entries: map[[sha256.Size]byte]error{}}

type verdictCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]error
}

// maxVerdicts bounds the cache; past it, it starts over.
const maxVerdicts = 1 << 16

func (c *verdictCache) judge(_ string, data []byte) error {
	key := sha256.Sum256(data)
	c.mu.Lock()
	err, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return err
	}
	err = yamlguard.Check(data, yamlguard.Repository)
	c.mu.Lock()
	if len(c.entries) >= maxVerdicts {
		clear(c.entries)
	}
	c.entries[key] = err
	c.mu.Unlock()
	return err
}
