package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/kedge-io/kedge/internal/app"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
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
		source := func(ctx context.Context) (*objects.Set, error) { return readCluster(ctx, cfg) }
		svc, err := app.New(cmd.Context(), cfg, source, app.Options{DryRun: dryRun, Log: log})
		if err != nil {
			return err
		}
		if !once {
			return runService(cmd, cfg, svc, log)
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

// runService runs a cycle now and then every cycle.resync until the
// context ends; a cycle that fails is logged and retried at the next tick.
func runService(cmd *cobra.Command, cfg *config.Config, svc *app.Service, log *slog.Logger) error {
	ctx := cmd.Context()
	ticker := time.NewTicker(cfg.Cycle.Resync)
	defer ticker.Stop()
	for {
		report, err := svc.Reconciler.RunOnce(ctx)
		if err != nil {
			log.Error("cycle failed", "error", err)
		} else {
			log.Info("cycle done", "workloads", len(report.Plan.Workloads), "pushes", report.Pushes, "duration", report.Duration)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
