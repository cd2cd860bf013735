package integration

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/server"
	"github.com/kedge-io/kedge/internal/service"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

const (
	token    = "ghs_serviceTestToken00000000000000000000"
	owner    = "example-org"
	repoName = "gitops"
)

// world is the outside of kedge: a real git server holding the demo GitOps
// repository and the GitHub emulation, shared by every replica.
type world struct {
	git *gitserver.Server
	gh  *ghemu.Server
	cfg *config.Config
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{git: gitserver.New(t)}
	w.git.SetToken(token)
	abs, err := filepath.Abs(demoRepo)
	require.NoError(t, err)
	w.git.CreateRepo(t, repoName, abs)
	w.gh = ghemu.New(t, ghemu.Options{
		Owner: owner, Repo: repoName,
		Tokens:   map[string]string{token: "kedge-bot"},
		Branches: ghemu.GitBranches(w.git.RepoPath(repoName)),
	})
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	cfg.Repo.Owner, cfg.Repo.Name = owner, repoName
	cfg.Repo.URL = w.git.RepoURL(repoName)
	cfg.GitHub.APIURL = w.gh.URL + "/"
	cfg.GitHub.Token = token
	cfg.Limits.MutationGap = 0
	require.NoError(t, cfg.Validate(config.ModeRun))
	w.cfg = cfg
	return w
}

// openPRsByBranch counts every PR ever opened per head branch.
func (w *world) prsByBranch() map[string]int {
	out := map[string]int{}
	for _, pr := range w.gh.PRs() {
		out[pr.GetHead().GetRef()]++
	}
	return out
}

// cycleRun is one cycle as the reconciler ran it.
type cycleRun struct {
	start, end time.Time
	report     *reconcile.Report
	err        error
}

// recorder passes cycles to the real reconciler and remembers them.
type recorder struct {
	next service.Reconciler

	mu   sync.Mutex
	runs []cycleRun
}

func (r *recorder) RunOnce(ctx context.Context) (*reconcile.Report, error) {
	start := time.Now()
	r.mu.Lock()
	r.runs = append(r.runs, cycleRun{start: start})
	i := len(r.runs) - 1
	r.mu.Unlock()
	report, err := r.next.RunOnce(ctx)
	r.mu.Lock()
	r.runs[i].end, r.runs[i].report, r.runs[i].err = time.Now(), report, err
	r.mu.Unlock()
	return report, err
}

func (r *recorder) all() []cycleRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cycleRun(nil), r.runs...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// finished counts cycles that have ended.
func (r *recorder) finished() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.runs {
		if !c.end.IsZero() {
			n++
		}
	}
	return n
}

// replica is one running kedge service.
type replica struct {
	name     string
	svc      *service.Service
	metrics  *metrics.Metrics
	ready    *server.Readiness
	recorder *recorder
	logs     *syncBuffer
	cancel   context.CancelFunc
	done     chan error
}

type replicaOptions struct {
	// kube reaches the API server; nil reads the demo snapshot instead.
	kube *rest.Config
	// informerResync replays the caches this often (never a mesh change).
	informerResync time.Duration
	election       *service.Election
	scheduler      service.SchedulerOptions
	grace          time.Duration
	syncReport     time.Duration
	// permissionRecheck is how often missing permissions are asked for
	// again.
	permissionRecheck time.Duration
	// staleAfter bounds how long a cache may fail to refresh.
	staleAfter time.Duration
	// token overrides the GitHub token.
	token string
}

// startReplica assembles kedge as `kedge run` does and runs it until the
// test ends or stop is called.
func (w *world) startReplica(t *testing.T, name string, opts replicaOptions) *replica {
	t.Helper()
	cfg := *w.cfg
	cfg.Git.CacheDir = t.TempDir()
	if opts.token != "" {
		cfg.GitHub.Token = opts.token
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(logs, t.Output()), nil)).With("replica", name)

	var source assemble.Source
	var live service.Source
	if opts.kube == nil {
		source = func(context.Context) (*objects.Set, error) { return snapshot.Read(demoCluster) }
	} else {
		l, err := cluster.NewLive(cluster.LiveOptions{Config: opts.kube, Resync: opts.informerResync, OptOutAnnotation: cfg.Workloads.OptOutAnnotation})
		require.NoError(t, err)
		source = func(context.Context) (*objects.Set, error) { return l.Set(), nil }
		live = l
	}
	assembled, err := assemble.New(t.Context(), &cfg, source, assemble.Options{Log: log})
	require.NoError(t, err)
	rec := &recorder{next: assembled.Reconciler}
	m := metrics.New(assembled.Forge.Stats)
	ready := server.NewReadiness(server.CheckInformers, server.CheckGitHub)
	svc, err := service.New(service.Config{
		Source: live, Reconciler: rec, GitHub: assembled.Forge,
		Metrics: m, Readiness: ready, Log: log, Election: opts.election,
		Scheduler: opts.scheduler, ShutdownGrace: opts.grace, SyncReport: opts.syncReport,
		PermissionRecheck: opts.permissionRecheck, StaleAfter: opts.staleAfter,
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, svc: svc, metrics: m, ready: ready, recorder: rec, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	t.Cleanup(func() { r.stop(t, time.Minute) })
	return r
}

// stop is SIGTERM: it returns once the service has shut down.
func (r *replica) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(within):
		t.Fatalf("replica %s did not stop within %s", r.name, within)
		return nil
	}
}

// leading reads the replica's kedge_leader gauge.
func (r *replica) leading(t *testing.T) bool {
	t.Helper()
	families, err := r.metrics.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "kedge_leader" {
			return f.GetMetric()[0].GetGauge().GetValue() == 1
		}
	}
	return false
}

func (r *replica) isReady() bool {
	ok, _ := r.ready.Ready()
	return ok
}

// syncBuffer collects log lines from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
