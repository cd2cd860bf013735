package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/server"
	"github.com/kedge-io/kedge/internal/service"
)

func newRunCommand() *cobra.Command {
	var configFile string
	var once, dryRun, force bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the service: open and maintain one pull request per drifted namespace",
		Args:  noArgs,
	}
	keys := commonFlags(cmd, &configFile)
	cmd.Flags().BoolVar(&once, "once", false, "run one full cycle and exit")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "push nothing and change nothing on GitHub; print the pull requests instead")
	cmd.Flags().BoolVar(&force, "force", false, "with --once: take the Lease over from a holder that no longer renews it (a kedge that died) instead of refusing; a holder that renews it still refuses")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(configFile, cmd.Flags(), keys)
		if err != nil {
			return err
		}
		if err := cfg.Validate(config.ModeRun); err != nil {
			return err
		}
		level, err := cfg.Server.SlogLevel()
		if err != nil {
			return err
		}
		log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
		// Packages that log on their own (the manifest index's kustomize
		// warnings) write to the same stream at the same level.
		slog.SetDefault(log)
		// client-go (informers, leader election) logs through klog; one
		// JSON stream is easier to ship and search, and an API server
		// outage is one warning there, not an error per retry.
		klog.SetSlogLogger(slog.New(service.QuietAPIErrors(log.Handler(), service.DefaultOutageQuiet, nil)))
		if !once {
			return serve(cmd.Context(), cfg, dryRun, log)
		}
		return runOnce(cmd, cfg, onceOptions{dryRun: dryRun, force: force}, log)
	}
	return cmd
}

type onceOptions struct{ dryRun, force bool }

// runOnce runs one cycle. Unless it writes nothing (--dry-run), it takes
// the service's Lease first when it reads the live cluster, so that it is
// never a second writer beside a running kedge; with --force it takes the
// Lease over from a holder that stopped renewing it, and still refuses
// while the holder is alive.
func runOnce(cmd *cobra.Command, cfg *config.Config, opts onceOptions, log *slog.Logger) error {
	ctx := cmd.Context()
	source := func(ctx context.Context) (*objects.Set, error) { return readCluster(ctx, cfg) }
	svc, err := assemble.New(ctx, cfg, source, assemble.Options{DryRun: opts.dryRun, Log: log})
	if err != nil {
		return err
	}
	cycle := func(ctx context.Context) error {
		// Indexing takes no context: on a signal the cycle is abandoned
		// after stopGrace; a push cut short changes no branch.
		report, err := untilCancelled(ctx, func() (*reconcile.Report, error) { return svc.Reconciler.RunOnce(ctx) })
		if report != nil {
			printReport(cmd.OutOrStdout(), report, opts.dryRun)
		}
		return err
	}
	if opts.dryRun || !cfg.Server.LeaderElection || cfg.Source.Snapshot != "" {
		return cycle(ctx)
	}
	election, err := newElection(cfg)
	if err != nil {
		return err
	}
	if !opts.force {
		return service.WithLease(ctx, *election, cycle)
	}
	log.Info("--force: taking the Lease over unless its holder renews it meanwhile", "lease", election.Namespace+"/"+election.Name,
		"within", service.DefaultLeaseDuration.String())
	return service.SeizeLease(ctx, *election, cycle)
}

// newElection configures the Lease from server.leaseNamespace and
// server.leaseName.
func newElection(cfg *config.Config) (*service.Election, error) {
	kubeCfg, err := restConfig(cfg.Source.Kubeconfig)
	if err != nil {
		return nil, &config.Error{Key: "server.leaderElection", Msg: "needs a cluster for its Lease: " + err.Error()}
	}
	ns, err := service.LeaseNamespace(cfg.Server.LeaseNamespace, kubeconfigNamespace(cfg.Source.Kubeconfig))
	if err != nil {
		return nil, &config.Error{Key: "server.leaseNamespace", Msg: err.Error()}
	}
	id, err := service.Identity()
	if err != nil {
		return nil, err
	}
	return &service.Election{Config: kubeCfg, Namespace: ns, Name: cfg.Server.LeaseName, Identity: id}, nil
}

func printReport(w io.Writer, report *reconcile.Report, dryRun bool) {
	// The repository is named only where there is more than one: a
	// namespace applied from two has a pull request in each.
	repos := map[string]bool{}
	for _, o := range report.Outcomes {
		repos[o.Repo] = true
	}
	where := func(repo string) string {
		if len(repos) > 1 {
			return " in " + repo
		}
		return ""
	}
	if dryRun {
		for _, p := range report.Previews {
			fmt.Fprintf(w, "──── pull request for namespace %s%s ────\n%s\n\n%s\n\n", p.Namespace, where(p.Repo), p.Title, p.Body)
		}
	}
	for _, o := range report.Outcomes {
		line := fmt.Sprintf("%-24s %-14s %s", o.Namespace, o.Action, o.State)
		if o.PR != 0 {
			line += fmt.Sprintf(" #%d", o.PR)
		}
		line += where(o.Repo)
		if o.Detail != "" {
			line += " (" + o.Detail + ")"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%d drifted workloads, %d pushes, cycle took %s\n", len(report.Plan.Workloads), report.Pushes, report.Duration.Round(1e6))
}

// unchangedOrCopy reads the live caches for each cycle: the Set it
// returned last, while no event has changed what they hold since (the
// reconciler only reads a Set; it then knows the cluster's side of the
// plan is the same), or a new copy.
func unchangedOrCopy(l *cluster.Live) assemble.Source {
	var (
		mu      sync.Mutex
		last    *objects.Set
		version uint64
	)
	return func(context.Context) (*objects.Set, error) {
		mu.Lock()
		defer mu.Unlock()
		v := l.Version()
		if last == nil || v != version {
			// The old copy goes before the new one is made.
			last = nil
			last, version = l.Set(), v
		}
		return last, nil
	}
}

// serve runs kedge as a service (docs/design.md, "Contracts"): live informers,
// debounced cycles led by one replica, and /healthz, /readyz, /metrics.
func serve(ctx context.Context, cfg *config.Config, dryRun bool, log *slog.Logger) error {
	var (
		source  assemble.Source
		live    service.Source
		kubeCfg *rest.Config
	)
	if cfg.Source.Snapshot != "" {
		source = func(context.Context) (*objects.Set, error) { return snapshot.Read(cfg.Source.Snapshot) }
	} else {
		var err error
		if kubeCfg, err = restConfig(cfg.Source.Kubeconfig); err != nil {
			return err
		}
		l, err := newLive(cfg, kubeCfg)
		if err != nil {
			return err
		}
		// The service reads nothing before the caches have synced.
		source = unchangedOrCopy(l)
		live = l
	}
	// The GitHub client's counters are read at scrape time, once the
	// endpoint serves, after assembly.
	var assembled *assemble.Service
	m := metrics.New(func() forge.Stats { return assembled.Forge.Stats() })
	assembled, err := assemble.New(ctx, cfg, source, assemble.Options{DryRun: dryRun, Log: log, ObservePush: m.ObservePush})
	if err != nil {
		return err
	}
	var election *service.Election
	if cfg.Server.LeaderElection {
		if election, err = newElection(cfg); err != nil {
			return err
		}
	}
	ready := server.NewReadiness(server.CheckInformers, server.CheckGitHub)
	svc, err := service.New(service.Config{
		Source: live, Reconciler: assembled.Reconciler, GitHub: assembled.Forge,
		Metrics: m, Readiness: ready, Log: log, Election: election,
		Scheduler: service.SchedulerOptions{Debounce: cfg.Cycle.Debounce, Resync: cfg.Cycle.Resync},
	})
	if err != nil {
		return err
	}
	ln, err := server.Listen(cfg.Server.Address)
	if err != nil {
		return &config.Error{Key: "server.address", Msg: err.Error()}
	}
	// The endpoint outlives the service's drain, so probes keep answering
	// while the last cycle finishes.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	serverErr := make(chan error, 1)
	go func() {
		err := server.New(ready, m.Handler(), log).Serve(serverCtx, ln)
		if err != nil {
			stopRun()
		}
		serverErr <- err
	}()
	runErr := svc.Run(runCtx)
	stopServer()
	return errors.Join(runErr, <-serverErr)
}
