package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
)

// readCluster reads the objects kedge needs once: from the snapshot
// directory when one is configured, else from the live cluster.
func readCluster(ctx context.Context, cfg *config.Config) (*objects.Set, error) {
	if cfg.Source.Snapshot != "" {
		return cluster.ReadSnapshot(cfg.Source.Snapshot)
	}
	live, err := startLive(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return live.Set(), nil
}

func startLive(ctx context.Context, cfg *config.Config) (*cluster.Live, error) {
	restConfig, err := restConfig(cfg.Source.Kubeconfig)
	if err != nil {
		return nil, err
	}
	live, err := cluster.NewLive(cluster.LiveOptions{Config: restConfig, Resync: cfg.Cycle.Resync})
	if err != nil {
		return nil, err
	}
	if err := live.Start(ctx); err != nil {
		return nil, err
	}
	if err := live.WaitForSync(ctx); err != nil {
		return nil, err
	}
	return live, nil
}

// restConfig prefers an explicit kubeconfig, then the in-cluster service
// account, then the usual kubeconfig loading rules ($KUBECONFIG, ~/.kube).
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return c, nil
}
