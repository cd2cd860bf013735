package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
)

// readCluster reads the objects kedge needs once: from the snapshot
// directory when one is configured, else from the live cluster.
func readCluster(ctx context.Context, cfg *config.Config) (*objects.Set, error) {
	if cfg.Source.Snapshot != "" {
		return snapshot.Read(cfg.Source.Snapshot)
	}
	live, err := startLive(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return live.Set(), nil
}

// startLive fails at once, naming each permission, when the credentials
// may not read everything kedge reads: informers would retry a forbidden
// list forever.
func startLive(ctx context.Context, cfg *config.Config) (*cluster.Live, error) {
	restConfig, err := restConfig(cfg.Source.Kubeconfig)
	if err != nil {
		return nil, err
	}
	live, err := newLive(cfg, restConfig)
	if err != nil {
		return nil, err
	}
	if err := live.Preflight(ctx); err != nil {
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

// newLive leaves the informers' own resync off: a replay of the caches
// tells the handlers nothing the watch did not (they ignore replays), and
// with 100k pods it is a pass over every object. cycle.resync is the
// scheduler's periodic cycle, which reads the caches as they are.
func newLive(cfg *config.Config, restConfig *rest.Config) (*cluster.Live, error) {
	return cluster.NewLive(cluster.LiveOptions{
		Config: restConfig, OptOutAnnotation: cfg.Workloads.OptOutAnnotation, IstioNamespaces: cfg.Source.IstioNamespaces,
	})
}

// kubeconfigNamespace is the namespace of the kubeconfig's current context,
// or "" when it names none (or there is no kubeconfig).
func kubeconfigNamespace(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	raw, err := rules.Load()
	if err != nil {
		return ""
	}
	if c, ok := raw.Contexts[raw.CurrentContext]; ok {
		return c.Namespace
	}
	return ""
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
