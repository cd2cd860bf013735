package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/doctor"
)

// doctorFailed is a doctor run with checks that did not pass: exit 1,
// the lines above say which and how to fix them.
type doctorFailed struct{ failed, of int }

func (e doctorFailed) Error() string {
	return fmt.Sprintf("doctor: %d of %d checks did not pass", e.failed, e.of)
}

func newDoctorCommand() *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check, changing nothing, that kedge can run with this configuration: exit 0 when every check passes",
		Long: "Checks, one line each and with the fix for any that fails: the configuration; the Kubernetes permissions\n" +
			"for everything kedge reads; the Istio it finds; the leader Lease; the GitHub credentials and, for a GitHub App,\n" +
			"the installation's permissions; each repository kedge writes to; the repository of the dashboard issue.\n" +
			"It changes nothing in the cluster, the repositories or on GitHub. Exit 0 when every check passes, 1 otherwise.",
		Args: noArgs,
	}
	keys := commonFlags(cmd, &configFile)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		env := doctorEnv(cmd, configFile, keys)
		results := doctor.Run(cmd.Context(), env)
		if err := doctor.Write(cmd.OutOrStdout(), results); err != nil {
			return err
		}
		if n := doctor.Failed(results); n > 0 {
			return doctorFailed{failed: n, of: len(results)}
		}
		return nil
	}
	return cmd
}

// doctorEnv assembles what doctor checks as `kedge run` assembles the
// service; what cannot be assembled is kept as the error a check reports.
func doctorEnv(cmd *cobra.Command, configFile string, keys map[string]string) doctor.Env {
	env := doctor.Env{ConfigFile: configFile}
	cfg, err := config.Load(configFile, cmd.Flags(), keys)
	if err == nil {
		err = cfg.Validate(config.ModeRun)
	}
	if err != nil {
		env.ConfigErr = err
		return env
	}
	env.Config = cfg
	if cfg.Source.Snapshot != "" {
		return env
	}
	kube, err := restConfig(cfg.Source.Kubeconfig)
	if err != nil {
		env.KubeErr = err
		return env
	}
	env.Kube = kube
	live, err := newLive(cfg, kube)
	if err != nil {
		env.KubeErr = err
		return env
	}
	env.ClusterPermissions = live.MissingPermissions
	if cfg.Server.LeaderElection {
		election, err := newElection(cfg)
		if err != nil {
			env.LeaseErr = err
			return env
		}
		env.Lease = &doctor.Lease{Namespace: election.Namespace, Name: election.Name, Permissions: election.Permissions()}
	}
	return env
}
