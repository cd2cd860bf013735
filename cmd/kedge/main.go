// Command kedge keeps Istio's data plane in step with its control plane
// through Git: it finds workloads whose sidecars drift from what Istio would
// inject now and opens one pull request per namespace restarting them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/memlimit"
)

// version is set at build time (-X main.version=…).
var version = "dev"

// Exit codes (docs/design.md, "Contracts"). A command cut short by SIGINT or SIGTERM exits
// 128 + the signal's number, as shells report it: 130 after Ctrl-C, 143
// after SIGTERM. `kedge run` as a service gives the cycle in flight
// service.DefaultShutdownGrace, then exits 0; a second signal exits at once.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// usageError marks a mistake in how kedge was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	memlimit.Apply()
	ctx, stop := context.WithCancelCause(context.Background())
	interrupted := onSignals(stop, os.Stderr)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if sig := interrupted(); sig != nil && code != exitOK {
		code = signalExit(sig)
	}
	os.Exit(code)
}

// onSignals cancels the commands' context on the first SIGINT or SIGTERM
// and exits at once on the second, whatever is still running. It returns
// the first signal, once one came.
func onSignals(cancel context.CancelCauseFunc, stderr io.Writer) func() os.Signal {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	var first atomic.Value
	go func() {
		sig := <-signals
		first.Store(sig)
		cancel(fmt.Errorf("interrupted by %s", signalName(sig)))
		sig = <-signals
		fmt.Fprintf(stderr, "kedge: %s again: exiting at once\n", signalName(sig))
		os.Exit(signalExit(sig))
	}()
	return func() os.Signal {
		sig, _ := first.Load().(os.Signal)
		return sig
	}
}

func signalExit(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitRuntime
}

func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "kedge:", err)
	var cfgErr *config.Error
	var usage usageError
	switch {
	case errors.As(err, &cfgErr), errors.As(err, &usage):
		return exitUsage
	default:
		return exitRuntime
	}
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kedge",
		Short:         "Restart Istio workloads whose sidecars drift, through GitOps pull requests",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCommand(), newPlanCommand(), newRunCommand(), newSnapshotCommand(), newDoctorCommand())
	return root
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", cmd.CommandPath(), args[0])}
	}
	return nil
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kedge's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "kedge", version)
			return err
		},
	}
}
