package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
)

func newSnapshotCommand() *cobra.Command {
	var configFile, out string
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Write the objects kedge reads from the live cluster to a snapshot directory",
		Args:  noArgs,
	}
	keys := commonFlags(cmd, &configFile)
	cmd.Flags().StringVar(&out, "out", "", "directory to write (required)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if out == "" {
			return usageError{fmt.Errorf("--out is required")}
		}
		cfg, err := config.Load(configFile, cmd.Flags(), keys)
		if err != nil {
			return err
		}
		set, err := untilCancelled(cmd.Context(), func() (*objects.Set, error) { return readCluster(cmd.Context(), cfg) })
		if err != nil {
			return err
		}
		// Writing takes no context; a signal leaves the directory
		// incomplete, and the error says so.
		if _, err := untilCancelled(cmd.Context(), func() (struct{}, error) { return struct{}{}, snapshot.Write(set, out) }); err != nil {
			return fmt.Errorf("snapshot %s left incomplete: %w", out, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d namespaces, %d pods to %s\n", len(set.Namespaces), len(set.Pods), out)
		return nil
	}
	return cmd
}
