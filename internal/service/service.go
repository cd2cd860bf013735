// Package service runs kedge as a long-lived service: it starts the live
// cluster source, checks GitHub authentication, campaigns for the leader
// Lease, and, while it leads, runs reconcile cycles when the mesh changes
// (debounced), periodically, and never two at once. On shutdown it starts
// no new cycle, lets the one in flight finish within a grace period, and
// only then releases the Lease.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/memlimit"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/server"
)

// Source is the live cluster source (cluster.Live) as the service drives
// it: the reconciler reads its objects, the service checks it may read
// them, starts it and listens for mesh changes.
type Source interface {
	MissingPermissions(ctx context.Context) ([]cluster.Permission, error)
	Start(ctx context.Context) error
	WaitForSync(ctx context.Context) error
	OnMeshChange(fn func(reason string))
	// Stale and OnHealthChange say whether the synced caches still
	// refresh (see cluster.Live.Stale).
	Stale(bound time.Duration, now time.Time) error
	OnHealthChange(fn func())
}

// Reconciler runs one cycle (reconcile.Reconciler).
type Reconciler interface {
	RunOnce(ctx context.Context) (*reconcile.Report, error)
}

// GitHub is what the service asks of the GitHub client (forge.Client):
// an authenticated read that proves the credentials work, and counters
// for the cycle log.
type GitHub interface {
	DefaultBranch(ctx context.Context) (string, error)
	Stats() forge.Stats
}

// DefaultShutdownGrace is how long a cycle in flight may run on after
// SIGTERM before it is abandoned. It is short because abandoning a cycle is
// safe at every step (pushes are leased, pull requests are found again by
// branch, the next leader redoes what is missing), and an operator asking
// kedge to stop expects it to. The Deployment's
// terminationGracePeriodSeconds must exceed it.
const DefaultShutdownGrace = time.Second

// Config assembles a Service.
type Config struct {
	// Source is the live cluster source; nil when cycles read a snapshot,
	// which needs no informers.
	Source     Source
	Reconciler Reconciler
	GitHub     GitHub
	// Metrics, Readiness and Log are optional.
	Metrics   *metrics.Metrics
	Readiness *server.Readiness
	Log       *slog.Logger
	// Election, when set, runs cycles only while holding the Lease; nil
	// means this instance always leads (a single replica).
	Election *Election
	// Scheduling: cycle.debounce and cycle.resync.
	Scheduler SchedulerOptions
	// ShutdownGrace bounds the cycle in flight after shutdown begins; zero
	// means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// SyncReport is how often a slow first cache sync is logged and shown
	// in /readyz with its cause; zero means DefaultSyncReport.
	SyncReport time.Duration
	// PermissionRecheck is how often permissions are asked for again:
	// while some are missing at startup, and all of them while the
	// service runs; zero means DefaultPermissionRecheck.
	PermissionRecheck time.Duration
	// StaleAfter is how long a synced cache may fail to refresh for a
	// reason other than a permission before the service is unready and
	// its cycles stale; zero means DefaultStaleAfter.
	StaleAfter time.Duration
	// Clock runs the scheduler and the retries; nil means the real one.
	Clock clock.Clock
}

// Service is a running kedge.
type Service struct {
	cfg       Config
	clock     clock.Clock
	log       *slog.Logger
	metrics   *metrics.Metrics
	ready     *server.Readiness
	scheduler *Scheduler
	cycles    atomic.Int64
	// healthChanged wakes watchHealth when the source reports a cache
	// failing or refreshing again.
	healthChanged chan struct{}
	healthMu      sync.Mutex
	health        healthState
}

// New checks cfg and prepares the service; nothing runs until Run.
func New(cfg Config) (*Service, error) {
	if cfg.Reconciler == nil {
		return nil, errors.New("service: no reconciler")
	}
	if cfg.GitHub == nil {
		return nil, errors.New("service: no GitHub client")
	}
	if cfg.Scheduler.Debounce < 0 || cfg.Scheduler.Resync < 0 {
		return nil, errors.New("service: negative debounce or resync period")
	}
	if cfg.Election != nil {
		e := cfg.Election.withDefaults()
		if err := e.validate(); err != nil {
			return nil, err
		}
		cfg.Election = &e
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.SyncReport <= 0 {
		cfg.SyncReport = DefaultSyncReport
	}
	if cfg.PermissionRecheck <= 0 {
		cfg.PermissionRecheck = DefaultPermissionRecheck
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.Scheduler.Clock = cfg.Clock
	s := &Service{cfg: cfg, clock: cfg.Clock, log: cfg.Log, metrics: cfg.Metrics, ready: cfg.Readiness, healthChanged: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = metrics.New(nil)
	}
	if s.ready == nil {
		s.ready = server.NewReadiness(server.CheckInformers, server.CheckGitHub)
	}
	s.scheduler = NewScheduler(s.runCycle, cfg.Scheduler)
	return s, nil
}

// Readiness is what /readyz reports.
func (s *Service) Readiness() *server.Readiness { return s.ready }

// Run runs the service until ctx ends, then shuts down safely: no new
// cycle starts, the one in flight gets ShutdownGrace to finish (then its
// context is cancelled), and the Lease is released last. It returns nil
// after a clean shutdown and an error only when the service cannot start.
func (s *Service) Run(ctx context.Context) error {
	// life outlives ctx by the drain: informers, the Lease and the cycle
	// in flight keep going until the cycle has ended.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		select {
		case <-ctx.Done():
		case <-life.Done():
			return
		}
		s.log.Info("shutting down: no new cycle starts; waiting for the cycle in flight", "grace", s.cfg.ShutdownGrace.String())
		graceCtx, cancel := context.WithTimeout(life, s.cfg.ShutdownGrace)
		if err := s.scheduler.Drain(graceCtx); err != nil {
			s.log.Warn("shutdown grace period over: cancelling the cycle in flight", "grace", s.cfg.ShutdownGrace.String())
		}
		cancel()
		stop()
	}()

	err := s.prepare(ctx, life)
	if err == nil {
		if s.cfg.Source != nil || s.cfg.Election != nil {
			go s.watchHealth(life)
		}
		if s.cfg.Election == nil {
			s.metrics.SetLeader(true)
			s.scheduler.Run(life)
			s.metrics.SetLeader(false)
		} else {
			err = s.campaign(life)
		}
	}
	if ctx.Err() != nil {
		// Shutting down: whatever failed, failed because of it.
		<-drained
		s.log.Info("stopped")
		return nil
	}
	stop()
	<-drained
	return err
}

// prepare waits until the cluster credentials hold every permission kedge
// needs, starts the cluster source, and waits until its caches are full and
// GitHub accepts kedge's credentials; /readyz follows all three.
func (s *Service) prepare(ctx, life context.Context) error {
	if err := s.awaitPermissions(ctx); err != nil {
		return err
	}
	if s.cfg.Source == nil {
		s.ready.Set(server.CheckInformers, nil)
	} else {
		s.cfg.Source.OnMeshChange(func(reason string) {
			s.metrics.ObserveMeshChange()
			s.log.Debug("mesh change", "change", reason)
			s.scheduler.Trigger(reason)
		})
		s.cfg.Source.OnHealthChange(func() {
			select {
			case s.healthChanged <- struct{}{}:
			default:
			}
		})
		if err := s.cfg.Source.Start(life); err != nil {
			return fmt.Errorf("start cluster source: %w", err)
		}
		start := time.Now()
		// Caches that never fill (RBAC, an API server away) wait forever;
		// say why in the log and in /readyz while waiting.
		for {
			waitCtx, cancel := context.WithTimeout(ctx, s.cfg.SyncReport)
			err := s.cfg.Source.WaitForSync(waitCtx)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.ready.Set(server.CheckInformers, err)
			s.log.Warn("cluster caches not synced yet", "waited", time.Since(start).String(), "error", err.Error())
		}
		s.ready.Set(server.CheckInformers, nil)
		s.log.Info("cluster caches synced", "took", time.Since(start).String())
	}
	return s.checkGitHub(ctx)
}

// DefaultSyncReport is how often a cache sync that takes long is reported.
const DefaultSyncReport = 30 * time.Second

// DefaultPermissionRecheck is how often permissions are asked for again:
// granting a missing one takes effect within this period, without a
// restart, and one taken away while kedge runs is found within it.
const DefaultPermissionRecheck = 30 * time.Second

// awaitPermissions returns once the credentials may read what the cluster
// source reads and take the Lease. Until then /readyz names what is
// missing, and each missing permission is logged once, when first found
// missing: informers would instead retry a forbidden list forever, one
// error line each time.
func (s *Service) awaitPermissions(ctx context.Context) error {
	if s.cfg.Source == nil && s.cfg.Election == nil {
		return nil
	}
	for {
		missing, err := s.missingPermissions(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			s.ready.Set(server.CheckPermissions, err)
			s.log.Warn("cannot check kedge's permissions yet; retrying", "error", err.Error(), "retryIn", s.cfg.PermissionRecheck.String())
		default:
			s.healthMu.Lock()
			s.reportPermissions(&s.health, missing, false)
			s.healthMu.Unlock()
			if len(missing) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.clock.After(s.cfg.PermissionRecheck):
		}
	}
}

// missingPermissions asks what the cluster source and the Lease need.
func (s *Service) missingPermissions(ctx context.Context) ([]cluster.Permission, error) {
	var missing []cluster.Permission
	if s.cfg.Source != nil {
		m, err := s.cfg.Source.MissingPermissions(ctx)
		if err != nil {
			return nil, err
		}
		missing = append(missing, m...)
	}
	if e := s.cfg.Election; e != nil {
		m, err := cluster.CheckPermissions(ctx, e.Config, e.Permissions())
		if err != nil {
			return nil, err
		}
		missing = append(missing, m...)
	}
	return missing, nil
}

// GitHub auth check backoff: a wrong key or an outage should not spin.
const (
	authRetryFirst = time.Second
	authRetryMax   = time.Minute
)

// checkGitHub retries an authenticated read until it succeeds or ctx ends.
func (s *Service) checkGitHub(ctx context.Context) error {
	wait := authRetryFirst
	for {
		branch, err := s.cfg.GitHub.DefaultBranch(ctx)
		if err == nil {
			s.ready.Set(server.CheckGitHub, nil)
			s.log.Info("GitHub authentication works", "defaultBranch", branch)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.ready.Set(server.CheckGitHub, err)
		s.log.Error("GitHub authentication check failed; retrying", "error", err.Error(), "retryIn", wait.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.clock.After(wait):
		}
		wait = min(2*wait, authRetryMax)
	}
}

// campaign competes for the Lease until life ends; while this instance
// leads, the scheduler runs under the leadership context, so losing the
// Lease cancels the cycle in flight at once.
func (s *Service) campaign(life context.Context) error {
	e := *s.cfg.Election
	client, err := leaseClient(e.Config, e.RenewDeadline)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	log := s.log.With("lease", e.Namespace+"/"+e.Name, "identity", e.Identity)
	for life.Err() == nil {
		lead := make(chan context.Context)
		elector, err := e.newElector(client, lead,
			func() { s.metrics.SetLeader(false) },
			func(holder string) {
				if holder != e.Identity {
					log.Info("another replica leads", "leader", holder)
				}
			})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			elector.Run(life)
		}()
		select {
		case leading := <-lead:
			s.metrics.SetLeader(true)
			log.Info("leading: this replica runs the cycles")
			s.scheduler.Run(leading)
			<-ended
			if life.Err() == nil {
				log.Warn("lost the Lease: stopped running cycles; campaigning again")
			} else {
				log.Info("released the Lease")
			}
		case <-ended:
		}
	}
	return nil
}

// runCycle runs one cycle and records it in the log and the metrics.
func (s *Service) runCycle(ctx context.Context, c Cycle) {
	id := s.cycles.Add(1)
	log := s.log.With("cycle", id, "trigger", c.Trigger)
	start := time.Now()
	attrs := []any{}
	if c.Changes > 0 {
		waited := start.Sub(c.FirstChange)
		s.metrics.ObserveMeshChangeLatency(waited)
		attrs = append(attrs, "changes", c.Changes, "reasons", c.Reasons, "sinceFirstChange", waited.String())
	}
	log.Info("cycle started", attrs...)
	if id == 1 {
		// The first cycle builds the index, plan and listings the next
		// ones update and keep (memlimit.Packed says why that is paced).
		defer memlimit.Packed()()
	}
	before := s.cfg.GitHub.Stats()
	// What the cycle reads is as fresh as the caches are now; a cycle on
	// caches that cannot refresh ends stale, not successful.
	stale := s.checkHealth(ctx, true)

	report, err := s.cfg.Reconciler.RunOnce(ctx)
	if err == nil && stale != nil {
		err = staleCycle(stale)
	}

	end := time.Now()
	took := end.Sub(start)
	s.metrics.ObserveCycle(c.Trigger, report, err, took, end)
	after := s.cfg.GitHub.Stats()
	attrs = []any{
		"result", metrics.Result(err),
		"duration", took.String(),
		"githubRequests", sum(after.Calls) - sum(before.Calls),
		"githubMutations", after.Mutating - before.Mutating,
	}
	if after.RateLimit >= 0 {
		attrs = append(attrs, "githubRateRemaining", after.RateRemaining)
	}
	if report != nil {
		drifted := 0
		for _, w := range report.Plan.Workloads {
			drifted += w.Pods.Drifted
		}
		attrs = append(attrs,
			"driftedWorkloads", len(report.Plan.Workloads),
			"driftedPods", drifted,
			"skipped", len(report.Plan.Skipped),
			"pushes", report.Pushes,
			"refusedFiles", len(report.Refused),
			"pullRequests", prStates(report),
			"stages", report.Stages.String())
	}
	switch {
	case err == nil:
		log.Info("cycle finished", attrs...)
	case isStale(err):
		log.Warn("cycle finished on stale cluster caches", append(attrs, "error", err.Error())...)
	default:
		log.Error("cycle failed", append(attrs, "error", err.Error())...)
	}
	releaseCycleMemory()
}

// releaseCycleMemory hands the memory a cycle used back to the system. A
// cycle reads the whole cluster and plans it: at fleet scale hundreds of
// megabytes that are garbage once it ends, and that the runtime would
// otherwise keep until the scavenger returns them, minutes later. Between
// cycles kedge then holds what it keeps (informer caches, the index),
// which is what a memory limit has to be sized for. One extra collection
// per cycle is cheap beside the cycle.
func releaseCycleMemory() { debug.FreeOSMemory() }

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// prStates counts namespaces by pull request state, for the log.
func prStates(report *reconcile.Report) map[string]int {
	out := map[string]int{}
	for _, o := range report.Outcomes {
		if o.State != "" {
			out[string(o.State)]++
		}
	}
	return out
}
