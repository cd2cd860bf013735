package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kedge-io/kedge/internal/testing/synth"
	"github.com/kedge-io/kedge/internal/testing/synth/kubeload"
)

type liveResult struct {
	Spec    synth.Spec
	Load    time.Duration
	Workers int
	// KubectlCap is the resident set kubectl was stopped at, if it went
	// over it.
	KubectlCap int64
	Kubectl    series
	Plan       series
	Service    *serviceResult
}

// kubectlCap bounds kubectl's memory: it keeps every pod it reads several
// times over (5.5 GiB for 20,000 pods), which at 100,000 pods is more than
// the machine has.
func kubectlCap() int64 {
	return min(8<<30, memAvailable()/2)
}

// measureLive starts a real API server, creates the fleet's objects in it,
// and times `kedge plan` reading it against `kubectl get pods -A -o json`
// of the same server, taking turns; then it measures the kedge service on
// the same server (measureService).
func measureLive(ctx context.Context, opts options, r *report, kedge, self string, f *fleetData) error {
	assets, err := testbin(ctx, opts)
	if err != nil {
		return err
	}
	useExisting := false
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		UseExistingCluster:    &useExisting,
		CRDDirectoryPaths:     []string{filepath.Join(opts.root, "internal/testing/controlplane/testdata/crds")},
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

	// The fleet of the snapshot figures, generated again (it is
	// deterministic) because the API server takes objects, not files.
	fleet, err := synth.New(f.Spec)
	if err != nil {
		return err
	}
	res := &liveResult{Spec: fleet.Spec, Workers: liveWorkers}
	var enabled []string
	for _, ns := range fleet.Set.Namespaces {
		if ns.Labels["istio-injection"] == "enabled" {
			enabled = append(enabled, ns.Name)
		}
	}
	slices.Sort(enabled)
	logf("live figure: creating %d pods and their owners", fleet.Spec.Pods)
	start := time.Now()
	if err := kubeload.Apply(ctx, cfg, fleet.Set, kubeload.Full{Pods: fleet.Pods, ReplicaSets: fleet.ReplicaSets}, kubeload.Options{Workers: liveWorkers}); err != nil {
		return err
	}
	res.Load = time.Since(start)
	logf("  loaded in %s", res.Load.Round(time.Second))
	fleet = nil
	// The generated fleet is gigabytes the measured processes need more.
	debug.FreeOSMemory()
	// After the load, so the API server's own memory is counted out.
	res.KubectlCap = kubectlCap()

	kubectl := filepath.Join(assets, "kubectl")
	for round := range opts.runs {
		steps := []struct {
			name  string
			into  *series
			limit int64
			cmd   []string
		}{
			{"kubectl", &res.Kubectl, res.KubectlCap, []string{kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json"}},
			{"kedge plan", &res.Plan, 0, []string{kedge, "plan", "--kubeconfig", kubeconfig, "--output", "json"}},
		}
		for i := range steps {
			s := steps[(i+round)%len(steps)]
			run, err := measureCapped(ctx, opts.root, nil, true, s.limit, s.cmd[0], s.cmd[1:]...)
			if err != nil {
				return err
			}
			s.into.add(run)
			stopped := ""
			if run.Stopped {
				stopped = " (stopped: over its memory cap)"
			}
			logf("live figure, run %d/%d: %s %.1f s, peak RSS %d MiB%s", round+1, opts.runs, s.name, run.Wall.Seconds(), run.PeakRSS>>20, stopped)
		}
	}
	if res.Service, err = measureService(ctx, opts, kedge, self, kubeconfig, cfg, f, enabled); err != nil {
		return err
	}
	r.Live = res
	return nil
}

// liveWorkers is how many creates run at once while loading the fleet:
// more than the API server's cores, so that it, not the client, is the
// limit.
const liveWorkers = 64
