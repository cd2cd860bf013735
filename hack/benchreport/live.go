package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedge-io/kedge/internal/synth"
	"github.com/kedge-io/kedge/internal/synth/kubeload"
)

// liveSpec is the cluster of the live figure: 20,000 pods.
var liveSpec = synth.Spec{Seed: 1, Namespaces: 1000, Workloads: 4000, Pods: 20000, Drift: 0.5}

type liveResult struct {
	Spec    synth.Spec
	Load    time.Duration
	Kubectl series
	Plan    series
}

// measureLive starts a real API server, creates the pods, and times `kedge
// plan` reading it against `kubectl get pods -A -o json` of the same
// server, taking turns.
func measureLive(ctx context.Context, opts options, r *report, kedge string) error {
	assets, err := testbin(ctx, opts)
	if err != nil {
		return err
	}
	useExisting := false
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		UseExistingCluster:    &useExisting,
		CRDDirectoryPaths:     []string{filepath.Join(opts.root, "internal/cluster/integration/testdata/crds")},
		ErrorIfCRDPathMissing: true,
	}
	// envtest prefers KUBEBUILDER_ASSETS over BinaryAssetsDirectory.
	if err := os.Setenv("KUBEBUILDER_ASSETS", assets); err != nil {
		return err
	}
	// envtest logs through controller-runtime, which otherwise complains
	// that nobody set a logger.
	ctrllog.SetLogger(logr.Discard())
	logf("live figure: starting the API server")
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			logf("stopping the API server: %v", err)
		}
	}()
	user, err := env.AddUser(envtest.User{Name: "bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfigData, err := user.KubeConfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kedge-bench-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kubeconfigData, 0o600); err != nil {
		return err
	}

	fleet, err := synth.New(scaled(liveSpec, opts.scale))
	if err != nil {
		return err
	}
	res := &liveResult{Spec: fleet.Spec}
	logf("live figure: creating %d pods and their owners", fleet.Spec.Pods)
	start := time.Now()
	if err := kubeload.Apply(ctx, cfg, fleet.Set, kubeload.Full{Pods: fleet.Pods, ReplicaSets: fleet.ReplicaSets}, kubeload.Options{}); err != nil {
		return err
	}
	res.Load = time.Since(start)
	logf("  loaded in %s", res.Load.Round(time.Second))
	fleet = nil

	kubectl := filepath.Join(assets, "kubectl")
	for round := range opts.runs {
		steps := []struct {
			name string
			into *series
			cmd  []string
		}{
			{"kubectl", &res.Kubectl, []string{kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json"}},
			{"kedge plan", &res.Plan, []string{kedge, "plan", "--kubeconfig", kubeconfig, "--output", "json"}},
		}
		for i := range steps {
			s := steps[(i+round)%len(steps)]
			run, err := measureTo(ctx, opts.root, nil, true, s.cmd[0], s.cmd[1:]...)
			if err != nil {
				return err
			}
			s.into.add(run)
			logf("live figure, run %d/%d: %s %.1f s, peak RSS %d MiB", round+1, opts.runs, s.name, run.Wall.Seconds(), run.PeakRSS>>20)
		}
	}
	r.Live = res
	return nil
}
