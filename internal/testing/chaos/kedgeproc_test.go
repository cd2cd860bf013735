package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kedgeBin is the kedge binary the hostile cases run, built once per test
// process from cmd/kedge as `make build` builds it.
var kedgeBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func kedgeBinary(t testing.TB) string {
	t.Helper()
	kedgeBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "kedge-hostile-bin-")
		if err != nil {
			kedgeBin.err = err
			return
		}
		kedgeBin.dir = dir
		bin := filepath.Join(dir, "kedge")
		out, err := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/kedge-io/kedge/cmd/kedge").CombinedOutput()
		if err != nil {
			kedgeBin.err = fmt.Errorf("go build: %v: %s", err, out)
			return
		}
		kedgeBin.path = bin
	})
	require.NoError(t, kedgeBin.err)
	return kedgeBin.path
}

// removeKedgeBinary removes the binary once the tests are done.
func removeKedgeBinary() {
	if kedgeBin.dir != "" {
		_ = os.RemoveAll(kedgeBin.dir)
	}
}

// canary is a loopback server a hostile repository points its URLs at:
// it counts every connection made to it (HTTP, git, SSH or anything else
// that dials its port) and every request it reads. The child process also
// has it as its HTTP and HTTPS proxy, so that a request for any other host
// would land here too instead of leaving the machine.
type canary struct {
	srv      *httptest.Server
	conns    atomic.Int64
	mu       sync.Mutex
	requests []string
}

func newCanary(t testing.TB) *canary {
	t.Helper()
	c := &canary{}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.requests = append(c.requests, r.Method+" "+r.Host+r.URL.RequestURI())
		c.mu.Unlock()
		http.Error(w, "canary", http.StatusTeapot)
	}))
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

// Addr is host:port.
func (c *canary) Addr() string { return c.srv.Listener.Addr().String() }

// URL is http://host:port.
func (c *canary) URL() string { return c.srv.URL }

// Reached says what reached the canary, "" for nothing.
func (c *canary) Reached() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns.Load() == 0 && len(c.requests) == 0 {
		return ""
	}
	return fmt.Sprintf("%d connections, requests %q", c.conns.Load(), c.requests)
}

// fakePrograms are the programs a hostile repository could hope kedge
// runs (git for a remote base, ssh for its transport, a shell, Helm or
// kustomize for plugins and chart inflation, a container runtime for a
// KRM function); each is a script first on
// the child's PATH that leaves a mark and fails.
var fakePrograms = []string{"git", "git-upload-pack", "git-remote-http", "git-remote-https", "ssh", "sh", "bash", "helm", "kustomize", "kubectl", "curl", "wget", "gpg", "docker", "podman", "nerdctl"}

// markProgram is the name of the program a hostile repository names by
// absolute path (git's --upload-pack=<command>).
const markProgram = "mark"

// installFakePrograms writes the fake programs into bin; each appends its
// name and arguments to a file named after it in marks.
func installFakePrograms(t testing.TB, bin, marks string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.MkdirAll(marks, 0o755))
	for _, name := range append([]string{markProgram}, fakePrograms...) {
		script := fmt.Sprintf("#!/bin/sh\necho \"$0 $*\" >> %q\nexit 1\n", filepath.Join(marks, name))
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
}

// marksLeft lists what the fake programs recorded: the programs some
// process ran.
func marksLeft(t testing.TB, marks string) []string {
	t.Helper()
	entries, err := os.ReadDir(marks)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(marks, e.Name()))
		out = append(out, e.Name()+": "+strings.TrimSpace(string(data)))
	}
	return out
}

// kedgeRun is one run of the kedge binary in a bounded child process.
type kedgeRun struct {
	Args []string
	Env  []string
	// Deadline kills the process (and its render workers) when it is
	// still running; MemoryLimit when the resident memory of the process
	// and its workers together exceeds it.
	Deadline    time.Duration
	MemoryLimit int64
}

// kedgeOutcome is how the child ended and what it cost.
type kedgeOutcome struct {
	Stdout, Stderr []byte
	ExitCode       int
	Wall           time.Duration
	// Peak is the largest sum, over the process and its descendants
	// alive at one moment, of each one's peak resident memory (VmHWM),
	// sampled every memoryPoll: never less than what they held together.
	Peak int64
	// Processes are the descendants seen, by executable: render workers
	// are kedge itself; anything else is a program kedge started.
	Foreign  []string
	Workers  int
	TimedOut bool
	Overran  bool
}

// run runs kedge and watches it and every process it starts.
func (r kedgeRun) run(t testing.TB, bin string) kedgeOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.Deadline)
	defer cancel()
	cmd := exec.Command(bin, r.Args...)
	cmd.Env = r.Env
	cmd.Dir = "/"
	// A group of its own, so that a runaway is killed with its workers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Start())
	watch := watchTree(cmd.Process.Pid, bin, r.MemoryLimit)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var out kedgeOutcome
	select {
	case <-done:
	case <-ctx.Done():
		out.TimedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	out.Wall = time.Since(start)
	usage := watch.stop()
	// Workers die with kedge (SIGKILL on its death); a worker that
	// outlived it would still be in the group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	out.Peak, out.Foreign, out.Workers, out.Overran = usage.peak, usage.foreign, usage.workers, usage.overran
	out.Stdout, out.Stderr = stdout.Bytes(), stderr.Bytes()
	out.ExitCode = cmd.ProcessState.ExitCode()
	return out
}

// treeWatch samples a process tree's memory and programs.
type treeWatch struct {
	done   chan struct{}
	result chan treeUsage
}

type treeUsage struct {
	peak    int64
	foreign []string
	workers int
	overran bool
}

func watchTree(root int, bin string, limit int64) *treeWatch {
	w := &treeWatch{done: make(chan struct{}), result: make(chan treeUsage, 1)}
	resolvedBin, _ := filepath.EvalSymlinks(bin)
	go func() {
		var u treeUsage
		foreign := map[string]bool{}
		workers := map[int]bool{}
		tick := time.NewTicker(memoryPoll)
		defer tick.Stop()
		for {
			var sum int64
			for _, pid := range descendants(root) {
				exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
				if err != nil {
					continue // exited, or a zombie
				}
				if exe != bin && exe != resolvedBin {
					foreign[exe] = true
				} else if pid != root {
					workers[pid] = true
				}
				sum += statusBytes(pid, "VmHWM:")
			}
			u.peak = max(u.peak, sum)
			if limit > 0 && sum > limit && !u.overran {
				u.overran = true
				_ = syscall.Kill(-root, syscall.SIGKILL)
			}
			select {
			case <-w.done:
				for exe := range foreign {
					u.foreign = append(u.foreign, exe)
				}
				sort.Strings(u.foreign)
				u.workers = len(workers)
				w.result <- u
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *treeWatch) stop() treeUsage {
	close(w.done)
	return <-w.result
}

// descendants lists root and every process below it, from each process's
// parent in /proc/<pid>/stat.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after its closing parenthesis are state, then the parent.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(data[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// statusBytes reads a size field (in kB) of /proc/<pid>/status.
func statusBytes(pid int, field string) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib << 10
		}
	}
	return 0
}

// treeState is what a directory tree holds: every entry's type, mode,
// size, modification time and content (or link target), by path.
type treeState map[string]string

// snapshotTree records the tree at root without following symbolic links
// and without opening anything that is not a regular file (a named pipe
// would block).
func snapshotTree(t testing.TB, root string, skip func(rel string) bool) treeState {
	t.Helper()
	out := treeState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if skip != nil && skip(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		out[filepath.ToSlash(rel)] = desc
		return nil
	})
	require.NoError(t, err)
	return out
}

// diff lists what changed from s to after.
func (s treeState) diff(after treeState) []string {
	var out []string
	for p, d := range s {
		switch a, ok := after[p]; {
		case !ok:
			out = append(out, "removed "+p)
		case a != d:
			out = append(out, "changed "+p+": "+d+" => "+a)
		}
	}
	for p := range after {
		if _, ok := s[p]; !ok {
			out = append(out, "created "+p)
		}
	}
	sort.Strings(out)
	return out
}

// secretFile is a credential kedge must never show: a private key in PEM
// or a token, freshly random, so that any part of it found in an output
// can only have come from reading the file.
type secretFile struct {
	Path    string
	Content string
	// body is the random part, which the scans look for.
	body string
}

// newKeySecret writes a PEM-shaped private key of random content.
func newKeySecret(t testing.TB, path string) secretFile {
	t.Helper()
	raw := make([]byte, 1190)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString(raw)
	var b strings.Builder
	b.WriteString("-----BEGIN RSA PRIVATE KEY-----\n")
	for i := 0; i < len(b64); i += 64 {
		b.WriteString(b64[i:min(i+64, len(b64))])
		b.WriteString("\n")
	}
	b.WriteString("-----END RSA PRIVATE KEY-----\n")
	return writeSecret(t, path, b.String(), b64)
}

// newTokenSecret writes a token of random content.
func newTokenSecret(t testing.TB, path, prefix string) secretFile {
	t.Helper()
	raw := make([]byte, 27)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	token := prefix + base64.RawURLEncoding.EncodeToString(raw)
	return writeSecret(t, path, token, token[len(prefix):])
}

func writeSecret(t testing.TB, path, content, body string) secretFile {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return secretFile{Path: path, Content: content, body: body}
}

// secretWindow is the length of the pieces of a secret the scans look
// for: twelve random base64 characters (72 bits) turn up by chance in no
// output.
const secretWindow = 12

// leakIn reports whether data holds any piece of the secret: the whole
// content, or any secretWindow characters of its random part, in the
// clear or with the escapes a JSON encoder adds to '/' and '+'.
func (s secretFile) leakIn(data []byte) bool {
	if bytes.Contains(data, []byte(s.Content)) {
		return true
	}
	pieces := make(map[string]bool, len(s.body))
	for i := 0; i+secretWindow <= len(s.body); i++ {
		pieces[s.body[i:i+secretWindow]] = true
	}
	for _, v := range [][]byte{data, bytes.ReplaceAll(data, []byte(`\/`), []byte("/")), bytes.ReplaceAll(data, []byte(`\u002b`), []byte("+"))} {
		for i := 0; i+secretWindow <= len(v); i++ {
			if pieces[string(v[i:i+secretWindow])] {
				return true
			}
		}
	}
	return false
}

// escape is the child side of TestHostileHarnessSeesEveryEscape: it does
// one thing a hostile repository must never get kedge to do ("kind:arg").
func escape(request string) int {
	kind, arg, _ := strings.Cut(request, ":")
	switch kind {
	case "request":
		resp, err := http.Get(arg)
		if err == nil {
			resp.Body.Close()
		}
	case "program":
		_ = exec.Command("git", "fetch", "--upload-pack=x").Run()
	case "foreign":
		_ = exec.Command("/bin/sleep", "1").Run()
	case "write":
		_ = os.WriteFile(arg, []byte("written"), 0o644)
	case "leak":
		data, _ := os.ReadFile(arg)
		// An excerpt's worth, escaped as untrusted text is.
		fmt.Printf("detail: %q\n", string(data[40:80]))
	case "memory":
		// Half the memory here, half in a child: only the sum of the
		// tree is over the limit.
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), caseEnv+"=escape:hold:"+arg)
		_ = child.Start()
		hold(arg)
	case "hold":
		hold(arg)
	case "slow":
		time.Sleep(time.Hour)
	default:
		return 2
	}
	return 0
}

// hold keeps n MiB resident until the process is killed.
func hold(n string) {
	mib, _ := strconv.Atoi(n)
	b := make([]byte, mib<<20)
	for i := range b {
		b[i] = 1
	}
	time.Sleep(time.Hour)
	runtime.KeepAlive(b)
}

// TestHostileHarnessSeesEveryEscape runs, in place of kedge, a process
// that does one forbidden thing per case, and holds each detector of the
// hostile-repository harness to seeing it: a request to the canary, a
// program run from PATH, a process other than kedge in its tree, a file
// written beside the checkout, a piece of the secret in its output, more
// memory across its process tree than the limit (half in a child), and
// running past the deadline.
func TestHostileHarnessSeesEveryEscape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	cases := []struct {
		kind  string
		arg   func(w *hostileWorld) string
		check func(t *testing.T, w *hostileWorld, before treeState, out kedgeOutcome)
	}{
		{"request", func(w *hostileWorld) string { return w.canary.URL() + "/x" }, func(t *testing.T, w *hostileWorld, _ treeState, _ kedgeOutcome) {
			assert.NotEmpty(t, w.canary.Reached())
		}},
		{"program", nil, func(t *testing.T, w *hostileWorld, _ treeState, _ kedgeOutcome) {
			assert.NotEmpty(t, marksLeft(t, w.marks))
		}},
		{"foreign", nil, func(t *testing.T, _ *hostileWorld, _ treeState, out kedgeOutcome) {
			assert.NotEmpty(t, out.Foreign)
		}},
		{"write", func(w *hostileWorld) string { return filepath.Join(w.outside, "dropped") }, func(t *testing.T, w *hostileWorld, before treeState, _ kedgeOutcome) {
			assert.Contains(t, before.diff(snapshotTree(t, w.root, w.kedgeCache)), "created outside/dropped")
		}},
		{"leak", func(w *hostileWorld) string { return w.key.Path }, func(t *testing.T, w *hostileWorld, _ treeState, out kedgeOutcome) {
			assert.True(t, w.key.leakIn(out.Stdout))
			assert.False(t, w.token.leakIn(out.Stdout))
		}},
		{"memory", func(*hostileWorld) string { return "200" }, func(t *testing.T, _ *hostileWorld, _ treeState, out kedgeOutcome) {
			assert.True(t, out.Overran, "peak %d MiB", out.Peak>>20)
			assert.GreaterOrEqual(t, out.Peak, int64(300<<20))
		}},
		{"slow", nil, func(t *testing.T, _ *hostileWorld, _ treeState, out kedgeOutcome) {
			assert.True(t, out.TimedOut)
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			w := newHostileWorld(t)
			arg := ""
			if c.arg != nil {
				arg = c.arg(w)
			}
			before := snapshotTree(t, w.root, w.kedgeCache)
			out := kedgeRun{
				Env: []string{
					"PATH=" + w.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
					caseEnv + "=escape:" + c.kind + ":" + arg,
				},
				Args:     []string{"-test.run=^$"},
				Deadline: 5 * time.Second, MemoryLimit: 300 << 20,
			}.run(t, os.Args[0])
			c.check(t, w, before, out)
		})
	}
}
