package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The bad-input corpus: one directory per case, each with a case.yaml that
// says what the case is and what kedge must do with it.
const corpus = "../../../testdata/bad"

// generated is a file a case needs that cannot live in Git: huge or binary
// content, and symlinks that leave the checkout.
type generated struct {
	Path string `json:"path"`
	// Binary is a size: bytes that are not text (a PNG header, NULs).
	Binary int `json:"binary"`
	// HugeYAML is a size: a valid manifest of about that many bytes.
	HugeYAML int `json:"hugeYAML"`
	// Symlink is the absolute target of a link.
	Symlink string `json:"symlink"`
	// SymlinkOutside names a file of the checkout whose copy, made outside
	// the checkout, Path becomes a link to.
	SymlinkOutside string `json:"symlinkOutside"`
}

// caseDirs lists the case directories under corpus/kind.
func caseDirs(t *testing.T, kind string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(corpus, kind))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	require.NotEmpty(t, out, "no %s cases", kind)
	return out
}

func readCase(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, into), path)
}

// generate makes the files a case cannot keep in Git, inside root.
func generate(t *testing.T, root string, files []generated) {
	t.Helper()
	for _, g := range files {
		full := filepath.Join(root, filepath.FromSlash(g.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		var original []byte
		if g.SymlinkOutside != "" {
			var err error
			original, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(g.SymlinkOutside)))
			require.NoError(t, err)
		}
		require.NoError(t, os.RemoveAll(full))
		switch {
		case g.Binary > 0:
			require.NoError(t, os.WriteFile(full, binaryContent(g.Binary), 0o644))
		case g.HugeYAML > 0:
			require.NoError(t, os.WriteFile(full, hugeYAML(g.HugeYAML), 0o644))
		case g.Symlink != "":
			require.NoError(t, os.Symlink(g.Symlink, full))
		case g.SymlinkOutside != "":
			outside := filepath.Join(t.TempDir(), filepath.Base(full))
			require.NoError(t, os.WriteFile(outside, original, 0o644))
			require.NoError(t, os.Symlink(outside, full))
		default:
			t.Fatalf("generate %s: nothing to make", g.Path)
		}
	}
}

// binaryContent is n bytes that are no text: a PNG signature, then bytes
// of every value, NULs included.
func binaryContent(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for i := 16; i < n; i++ {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// hugeYAML is a ConfigMap of about n bytes of generated data.
func hugeYAML(n int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: generated-data\n  namespace: analytics\ndata:\n")
	line := strings.Repeat("0123456789abcdef", 6)
	for i := 0; b.Len() < n; i++ {
		b.WriteString("  key-")
		b.WriteString(strings.Repeat("k", 1+i%7))
		b.WriteString(strconv.Itoa(i))
		b.WriteString(": ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// The bounds of every bad-input case: hostile input must be refused, not
// chewed on, and must not take the process down with it. A case runs in a
// child process so that its memory is its own and a runaway is stopped.
const (
	caseDeadline = 10 * time.Second
	caseMemory   = 512 << 20
	// caseGoMemLimit makes the child's collector work hard before the
	// bound, so only memory kedge really holds can exceed it.
	caseGoMemLimit = "448MiB"
	// memoryPoll is how often the child's RSS is looked at while it runs.
	memoryPoll = 10 * time.Millisecond
)

// caseEnv tells a test binary to run one bad-input case ("op:path")
// instead of tests and print its outcome as JSON (see TestMain).
const caseEnv = "KEDGE_BAD_INPUT_CASE"

// runBounded runs the case op on path in a child process and decodes its
// outcome into out. The child must end by itself within caseDeadline, with
// a peak RSS within caseMemory; one growing past it is killed at once.
func runBounded(t *testing.T, op, path string, out any) {
	t.Helper()
	run, err := startBounded(op, path, caseDeadline, caseMemory)
	require.NoError(t, err)
	require.False(t, run.timedOut, "the case was still running after %s", caseDeadline)
	require.False(t, run.overran, "the case grew past %d MiB and was killed", caseMemory>>20)
	assert.LessOrEqual(t, run.peak, int64(caseMemory), "peak RSS of the case")
	require.NoError(t, run.err, "the case failed: %s", run.stderr)
	require.NoError(t, json.Unmarshal(run.stdout, out), "outcome: %s", run.stdout)
}

// boundedRun is how a bounded child ended.
type boundedRun struct {
	timedOut, overran bool
	peak              int64 // bytes
	err               error
	stdout, stderr    []byte
}

func startBounded(op, path string, deadline time.Duration, memory int64) (boundedRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), caseEnv+"="+op+":"+path, "GOMEMLIMIT="+caseGoMemLimit)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return boundedRun{}, err
	}
	overran := watchMemory(cmd.Process, memory)
	err := cmd.Wait()
	return boundedRun{
		timedOut: ctx.Err() != nil,
		overran:  overran(),
		peak:     cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10, // KiB on Linux
		err:      err, stdout: stdout.Bytes(), stderr: stderr.Bytes(),
	}, nil
}

// TestBoundedCaseIsStopped: a case that grows without end is killed at the
// memory bound, and one that never ends at the deadline, each reported as
// such rather than taking the machine or the test run down.
func TestBoundedCaseIsStopped(t *testing.T) {
	cases := []struct {
		op                string
		deadline          time.Duration
		memory            int64
		timedOut, overran bool
	}{
		{op: "grow", deadline: time.Minute, memory: 128 << 20, overran: true},
		{op: "hang", deadline: time.Second, memory: caseMemory, timedOut: true},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			run, err := startBounded(c.op, "", c.deadline, c.memory)
			require.NoError(t, err)
			assert.Equal(t, c.timedOut, run.timedOut)
			assert.Equal(t, c.overran, run.overran)
			assert.Error(t, run.err, "the child was killed")
		})
	}
}

// grow allocates and keeps memory until it is killed.
func grow() {
	var kept [][]byte
	for {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = byte(i)
		}
		kept = append(kept, b)
	}
}

// watchMemory kills p as soon as its resident memory exceeds limit; the
// function it returns stops watching and tells whether it did.
func watchMemory(p *os.Process, limit int64) func() bool {
	done := make(chan struct{})
	killed := make(chan bool, 1)
	go func() {
		tick := time.NewTicker(memoryPoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				killed <- false
				return
			case <-tick.C:
				if rss, ok := residentBytes(p.Pid); ok && rss > limit {
					_ = p.Kill()
					<-done
					killed <- true
					return
				}
			}
		}
	}()
	return func() bool {
		close(done)
		return <-killed
	}
}

// residentBytes reads a process's resident set size from /proc.
func residentBytes(pid int) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib << 10, err == nil
		}
	}
	return 0, false
}

// runCase is the child side of runBounded: it runs one case and prints its
// outcome; the exit code is 2 for a request it does not know.
func runCase(request string) int {
	op, path, _ := strings.Cut(request, ":")
	var out any
	switch op {
	case "repo":
		out = planRepository(path)
	case "snapshot":
		out = readSnapshotCase(path)
	case "config":
		out = loadConfigCase(path)
	case "templates":
		out = loadTemplatesCase(path)
	case "grow":
		grow()
	case "hang":
		time.Sleep(time.Hour)
	case "escape":
		return escape(path)
	default:
		fmt.Fprintf(os.Stderr, "unknown case operation %q\n", op)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
