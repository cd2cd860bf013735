package integration

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/testing/synth"
)

// signalBound is how soon after SIGTERM kedge must have exited.
const signalBound = 2 * time.Second

// started is a kedge process the test signals.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	exited         chan struct{}
	err            error
}

func startKedge(t *testing.T, bin string, env []string, args ...string) *started {
	t.Helper()
	p := &started{cmd: exec.Command(bin, args...), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *started) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig and returns how long the process took to exit, failing
// the test past bound.
func (p *started) signal(t *testing.T, sig syscall.Signal, bound time.Duration) time.Duration {
	t.Helper()
	sent := time.Now()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.exited:
		return time.Since(sent)
	case <-time.After(bound):
		t.Fatalf("kedge did not exit within %s of %s; stderr:\n%s", bound, sig, p.stderr.String())
		return 0
	}
}

func (p *started) exitCode(t *testing.T) int {
	t.Helper()
	var exit *exec.ExitError
	if p.err == nil {
		return 0
	}
	require.True(t, errors.As(p.err, &exit), "%v", p.err)
	return exit.ExitCode()
}

// readingUnder reports whether the process has a file below dir open: how
// the test tells that kedge is indexing the repository.
func readingUnder(pid int, dir string) bool {
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// SIGTERM while `kedge plan` indexes a large repository: it exits within
// 2 s with 143, printing no plan.
func TestSIGTERMDuringIndexing(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to see which files kedge reads")
	}
	bin := buildKedge(t)
	fleet, err := synth.New(synth.Spec{Seed: 1, Namespaces: 2000, Workloads: 4000, Pods: 4000, Drift: 0.5})
	require.NoError(t, err)
	snapshot, repo := t.TempDir(), t.TempDir()
	require.NoError(t, fleet.WriteSnapshotJSON(snapshot))
	files, err := fleet.WriteRepo(repo)
	require.NoError(t, err)
	repo, err = filepath.EvalSymlinks(repo)
	require.NoError(t, err)

	p := startKedge(t, bin, nil, "plan", "--snapshot", snapshot, "--repo", repo, "--cluster", synth.DefaultCluster, "--output", "json")
	eventually(t, time.Minute, func() bool { return !p.running() || readingUnder(p.cmd.Process.Pid, repo) }, "kedge reads the repository")
	require.True(t, p.running(), "still indexing when signalled; stderr:\n%s", p.stderr.String())
	took := p.signal(t, syscall.SIGTERM, signalBound)
	t.Logf("SIGTERM during the index of %d files: exited after %s", files, took.Round(time.Millisecond))

	assert.Equal(t, 143, p.exitCode(t), "128 + SIGTERM; stderr:\n%s", p.stderr.String())
	assert.Contains(t, p.stderr.String(), "interrupted by SIGTERM")
	assert.Empty(t, p.stdout.String(), "no plan printed")
}

// heldPushes forwards git traffic to the git server but holds every push
// until the client gives up, so a test can signal kedge mid-push.
type heldPushes struct {
	*httptest.Server
	once    sync.Once
	pushing chan struct{}
}

func holdPushes(t *testing.T, gitURL string) *heldPushes {
	t.Helper()
	target, err := url.Parse(gitURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	h := &heldPushes{pushing: make(chan struct{})}
	released := make(chan struct{})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			h.once.Do(func() { close(h.pushing) })
			// The server notices a client that went away only once the
			// body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-released:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(released)
		h.Close()
	})
	return h
}

func TestSIGTERMDuringAPush(t *testing.T) {
	bin := buildKedge(t)
	w := newWorld(t)
	held := holdPushes(t, w.git.URL)
	env := []string{"KEDGE_GITHUB_TOKEN=" + token}
	once := func(t *testing.T, extra map[string]any, args ...string) *started {
		cfg := map[string]any{"source": map[string]any{"snapshot": demoCluster}}
		for k, v := range extra {
			cfg[k] = v
		}
		cfgPath := writeRunConfig(t, w, cfg)
		// Through the proxy that holds pushes.
		data, err := os.ReadFile(cfgPath)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfgPath, bytes.ReplaceAll(data, []byte(w.git.URL), []byte(held.URL)), 0o600))
		return startKedge(t, bin, env, append(args, "--config", cfgPath)...)
	}

	t.Run("run --once stops at the first signal", func(t *testing.T) {
		p := once(t, nil, "run", "--once")
		waitForPush(t, p, held.pushing)
		took := p.signal(t, syscall.SIGTERM, signalBound)
		t.Logf("SIGTERM during a push (run --once): exited after %s", took.Round(time.Millisecond))
		assert.Equal(t, 143, p.exitCode(t), "stderr:\n%s", p.stderr.String())
		assert.Zero(t, w.git.Pushes(), "the held push never reached the server")
	})

	// The service gives the cycle in flight a short grace, then stops: a
	// push held by the server does not keep it running.
	held.once, held.pushing = sync.Once{}, make(chan struct{})
	t.Run("run: SIGTERM during a push stops the service", func(t *testing.T) {
		p := once(t, map[string]any{"server": map[string]any{"address": freeAddress(t), "leaderElection": false}}, "run")
		waitForPush(t, p, held.pushing)
		took := p.signal(t, syscall.SIGTERM, signalBound)
		t.Logf("SIGTERM during a push (run): exited after %s", took.Round(time.Millisecond))
		assert.Contains(t, p.stderr.String(), "waiting for the cycle in flight")
		assert.Zero(t, w.git.Pushes(), "the held push never reached the server")
	})
}

// waitForPush returns once kedge's push reached the held server.
func waitForPush(t *testing.T, p *started, pushing <-chan struct{}) {
	t.Helper()
	select {
	case <-pushing:
	case <-p.exited:
		t.Fatalf("exited before pushing; stderr:\n%s", p.stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("no push")
	}
}
