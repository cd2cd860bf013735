package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/server"
	"github.com/kedge-io/kedge/internal/service"
)

func newRunCommand() *cobra.Command {
	var configFile string
	var once, dryRun bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the service: open and maintain one pull request per drifted namespace",
		Args:  noArgs,
	}
	keys := commonFlags(cmd, &configFile)
	cmd.Flags().BoolVar(&once, "once", false, "run one full cycle and exit")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "push nothing and change nothing on GitHub; print the pull requests instead")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(configFile, cmd.Flags(), keys)
		if err != nil {
			return err
		}
		if err := cfg.Validate(config.ModeRun); err != nil {
			return err
		}
		log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
		// client-go (informers, leader election) logs through klog; one
		// JSON stream is easier to ship and search.
		klog.SetSlogLogger(log)
		if !once {
			return serve(cmd.Context(), cfg, dryRun, log)
		}
		source := func(ctx context.Context) (*objects.Set, error) { return readCluster(ctx, cfg) }
		svc, err := assemble.New(cmd.Context(), cfg, source, assemble.Options{DryRun: dryRun, Log: log})
		if err != nil {
			return err
		}
		report, err := svc.Reconciler.RunOnce(cmd.Context())
		if report != nil {
			printReport(cmd.OutOrStdout(), report, dryRun)
		}
		return err
	}
	return cmd
}

func printReport(w io.Writer, report *reconcile.Report, dryRun bool) {
	names := make([]string, 0, len(report.Namespaces))
	for ns := range report.Namespaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	if dryRun {
		for _, ns := range names {
			p, ok := report.Previews[ns]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "──── pull request for namespace %s ────\n%s\n\n%s\n", ns, p.Title, p.Body)
		}
	}
	for _, ns := range names {
		o := report.Namespaces[ns]
		line := fmt.Sprintf("%-24s %-14s %s", ns, o.Action, o.State)
		if o.PR != 0 {
			line += fmt.Sprintf(" #%d", o.PR)
		}
		if o.Detail != "" {
			line += " (" + o.Detail + ")"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%d drifted workloads, %d pushes, cycle took %s\n", len(report.Plan.Workloads), report.Pushes, report.Duration.Round(1e6))
}

// serve runs kedge as a service (DESIGN §5 `kedge run`): live informers,
// debounced cycles led by one replica, and /healthz, /readyz, /metrics.
func serve(ctx context.Context, cfg *config.Config, dryRun bool, log *slog.Logger) error {
	var (
		source  assemble.Source
		live    service.Source
		kubeCfg *rest.Config
	)
	if cfg.Source.Snapshot != "" {
		source = func(context.Context) (*objects.Set, error) { return cluster.ReadSnapshot(cfg.Source.Snapshot) }
	} else {
		var err error
		if kubeCfg, err = restConfig(cfg.Source.Kubeconfig); err != nil {
			return err
		}
		l, err := cluster.NewLive(cluster.LiveOptions{Config: kubeCfg, Resync: cfg.Cycle.Resync})
		if err != nil {
			return err
		}
		// The service reads nothing before the caches have synced.
		source = func(context.Context) (*objects.Set, error) { return l.Set(), nil }
		live = l
	}
	assembled, err := assemble.New(ctx, cfg, source, assemble.Options{DryRun: dryRun, Log: log})
	if err != nil {
		return err
	}
	var election *service.Election
	if cfg.Server.LeaderElection {
		if kubeCfg == nil {
			if kubeCfg, err = restConfig(cfg.Source.Kubeconfig); err != nil {
				return &config.Error{Key: "server.leaderElection", Msg: "needs a cluster for its Lease: " + err.Error()}
			}
		}
		ns, err := service.LeaseNamespace(cfg.Server.LeaseNamespace)
		if err != nil {
			return &config.Error{Key: "server.leaseNamespace", Msg: err.Error()}
		}
		id, err := service.Identity()
		if err != nil {
			return err
		}
		election = &service.Election{Config: kubeCfg, Namespace: ns, Name: cfg.Server.LeaseName, Identity: id}
	}
	m := metrics.New(assembled.Forge.Stats)
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
