package service

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/reconcile"
)

// fakeSource stands in for cluster.Live at the service's boundary: what
// it lacks, whether it starts, and the changes it reports.
type fakeSource struct {
	mu        sync.Mutex
	missing   []cluster.Permission
	checks    int
	startErr  error
	started   context.Context
	listeners []func(string)
	stale     error
	healthFns []func()
}

func (f *fakeSource) Stale(time.Duration, time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stale
}

func (f *fakeSource) OnHealthChange(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.healthFns = append(f.healthFns, fn)
}

// setStale makes the caches stale (or fresh again, with nil) and says so
// as cluster.Live does.
func (f *fakeSource) setStale(err error) {
	f.mu.Lock()
	f.stale = err
	fns := f.healthFns
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// revoke takes permissions away while the service runs.
func (f *fakeSource) revoke(missing ...cluster.Permission) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.missing = missing
}

func (f *fakeSource) MissingPermissions(context.Context) ([]cluster.Permission, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	return f.missing, nil
}

func (f *fakeSource) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = ctx
	return f.startErr
}

func (f *fakeSource) WaitForSync(context.Context) error { return nil }

func (f *fakeSource) OnMeshChange(fn func(string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listeners = append(f.listeners, fn)
}

func (f *fakeSource) change(reason string) {
	f.mu.Lock()
	listeners := f.listeners
	f.mu.Unlock()
	for _, fn := range listeners {
		fn(reason)
	}
}

func (f *fakeSource) grant() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.missing = nil
}

func (f *fakeSource) startedCtx() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

func (f *fakeSource) checkCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

// fakeReconciler hands each cycle's context to the test and ends the
// cycle at once.
type fakeReconciler struct{ cycles chan context.Context }

func (r *fakeReconciler) RunOnce(ctx context.Context) (*reconcile.Report, error) {
	r.cycles <- ctx
	return &reconcile.Report{}, nil
}

// fakeGitHub refuses the credentials as many times as told.
type fakeGitHub struct {
	mu       sync.Mutex
	failures int
}

func (g *fakeGitHub) DefaultBranch(context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failures > 0 {
		g.failures--
		return "", errors.New("GET /repos/example-org/gitops: 401 Bad credentials")
	}
	return "main", nil
}

func (g *fakeGitHub) Stats() forge.Stats { return forge.Stats{Calls: map[string]int64{}} }

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// composed is a Service running on fakes and a fake clock.
type composed struct {
	svc        *Service
	source     *fakeSource
	github     *fakeGitHub
	reconciler *fakeReconciler
	clock      *clocktesting.FakeClock
	logs       *lockedBuffer
	cancel     context.CancelFunc
	done       chan error
}

func runComposed(t *testing.T, source *fakeSource, github *fakeGitHub) *composed {
	t.Helper()
	c := &composed{
		source: source, github: github, reconciler: &fakeReconciler{cycles: make(chan context.Context, 16)},
		clock: clocktesting.NewFakeClock(epoch), logs: &lockedBuffer{}, done: make(chan error, 1),
	}
	cfg := Config{
		Reconciler: c.reconciler, GitHub: github, Clock: c.clock,
		Log:               slog.New(slog.NewTextHandler(c.logs, nil)),
		PermissionRecheck: time.Minute,
	}
	if source != nil {
		cfg.Source = source
	}
	svc, err := New(cfg)
	require.NoError(t, err)
	c.svc = svc
	ctx, cancel := context.WithCancel(t.Context())
	c.cancel = cancel
	go func() { c.done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		case <-time.After(hangGuard):
			t.Error("Run did not return after its context ended")
		}
	})
	return c
}

// cycle returns the context of the next cycle the reconciler runs.
func (c *composed) cycle(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-c.reconciler.cycles:
		return ctx
	case err := <-c.done:
		t.Fatalf("Run returned %v before a cycle", err)
	case <-time.After(hangGuard):
		t.Fatal("no cycle ran")
	}
	return nil
}

// waitingOnClock returns once the service waits on the fake clock.
func (c *composed) waitingOnClock(t *testing.T) {
	t.Helper()
	require.Eventually(t, c.clock.HasWaiters, hangGuard, time.Millisecond, "the service never waited on its clock")
}

func (c *composed) failing() string {
	_, failing := c.svc.Readiness().Ready()
	return strings.Join(failing, "\n")
}

func TestServiceRunsTheReconcilerForTheSourcesChanges(t *testing.T) {
	source := &fakeSource{}
	c := runComposed(t, source, &fakeGitHub{})

	c.cycle(t)
	assert.NotNil(t, source.startedCtx(), "the source started before the first cycle")
	ready, failing := c.svc.Readiness().Ready()
	assert.True(t, ready, "ready once permissions, caches and GitHub pass: %v", failing)

	// No debounce is configured: the change is answered at once.
	source.change("Namespace shop labels changed")
	c.cycle(t)

	c.cancel()
	require.NoError(t, <-c.done, "a clean shutdown")
	c.done <- nil
	assert.Error(t, source.startedCtx().Err(), "the source stops with the service")
}

func TestServiceStaysUnreadyUntilPermissionsAreGranted(t *testing.T) {
	listPods := cluster.Permission{Verb: "list", Resource: "pods", GrantedBy: cluster.ReadRBAC}
	watchPods := cluster.Permission{Verb: "watch", Resource: "pods", GrantedBy: cluster.ReadRBAC}
	source := &fakeSource{missing: []cluster.Permission{listPods, watchPods}}
	c := runComposed(t, source, &fakeGitHub{})

	for check := 1; check <= 3; check++ {
		c.waitingOnClock(t)
		require.Equal(t, check, source.checkCount())
		assert.Contains(t, c.failing(), "permissions: the cluster credentials lack permissions kedge needs")
		assert.Contains(t, c.failing(), "list pods cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)")
		assert.Nil(t, source.startedCtx(), "no informer starts without its permissions")
		c.clock.Step(time.Minute)
	}
	// Each missing permission is logged once, not at every check.
	assert.Equal(t, 2, strings.Count(c.logs.String(), "missing permission"))
	assert.Contains(t, c.logs.String(), `permission="watch pods cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)"`)

	c.waitingOnClock(t)
	source.grant()
	c.clock.Step(time.Minute)
	c.cycle(t)
	ready, failing := c.svc.Readiness().Ready()
	assert.True(t, ready, "ready without a restart once granted: %v", failing)
	assert.Contains(t, c.logs.String(), "the missing permissions were granted")
}

func TestServiceStaysUnreadyWhileGitHubRefusesTheCredentials(t *testing.T) {
	c := runComposed(t, &fakeSource{}, &fakeGitHub{failures: 2})
	for range 2 {
		c.waitingOnClock(t)
		assert.Contains(t, c.failing(), "github: GET /repos/example-org/gitops: 401 Bad credentials")
		c.clock.Step(authRetryMax)
	}
	c.cycle(t)
	assert.Empty(t, c.failing())
	assert.Equal(t, 2, strings.Count(c.logs.String(), "GitHub authentication check failed"))
}

func TestServiceFailsWhenTheSourceCannotStart(t *testing.T) {
	c := runComposed(t, &fakeSource{startErr: errors.New("discovery: connection refused")}, &fakeGitHub{})
	select {
	case err := <-c.done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "start cluster source: discovery: connection refused")
		c.done <- err
	case <-c.reconciler.cycles:
		t.Fatal("a cycle ran without a cluster source")
	case <-time.After(hangGuard):
		t.Fatal("Run did not return")
	}
}

func TestServiceWithoutALiveSourceNeedsNoPermissions(t *testing.T) {
	c := runComposed(t, nil, &fakeGitHub{})
	c.cycle(t)
	ready, failing := c.svc.Readiness().Ready()
	assert.True(t, ready, "%v", failing)
	assert.NotContains(t, c.logs.String(), "permission")
}

func TestNewRejectsAnIncompleteConfig(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no reconciler", cfg: Config{GitHub: &fakeGitHub{}}, wantErr: "no reconciler"},
		{name: "no GitHub client", cfg: Config{Reconciler: &fakeReconciler{}}, wantErr: "no GitHub client"},
		{name: "negative debounce", cfg: Config{Reconciler: &fakeReconciler{}, GitHub: &fakeGitHub{}, Scheduler: SchedulerOptions{Debounce: -time.Second}}, wantErr: "negative debounce"},
		{name: "a Lease without a namespace", cfg: Config{Reconciler: &fakeReconciler{}, GitHub: &fakeGitHub{}, Election: &Election{Name: "kedge", Identity: "a"}}, wantErr: "no API server configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

var _ Source = (*cluster.Live)(nil)
