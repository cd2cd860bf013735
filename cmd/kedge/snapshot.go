package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
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
		set, err := readCluster(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		if err := cluster.WriteSnapshot(set, out); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d namespaces, %d pods to %s\n", len(set.Namespaces), len(set.Pods), out)
		return nil
	}
	return cmd
}
