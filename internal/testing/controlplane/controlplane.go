// Package integration runs kedge's live cluster source against a real
// kube-apiserver and etcd (controller-runtime's envtest), built by
// internal/testing/testbin/testbin.sh. Its tests are skipped when the binaries are absent,
// unless KEDGE_REQUIRE_TESTBIN=1 says they must run.
package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubernetesVersion is the version internal/testing/testbin/testbin.sh builds; its binaries are
// cached under a directory of that name.
const KubernetesVersion = "v1.37.1"

// binaries are what envtest runs; kubectl is built too but not needed here.
var binaries = []string{"kube-apiserver", "etcd"}

// Assets returns the directory holding the control plane binaries, or ""
// and why not. KUBEBUILDER_ASSETS wins; without it, in a full (not -short)
// run, the testbin cache is used when it is filled.
func Assets() (dir, why string) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if missing := missingBinaries(dir); missing != "" {
			return "", "KUBEBUILDER_ASSETS=" + dir + " has no " + missing
		}
		return dir, ""
	}
	if testing.Short() && os.Getenv("KEDGE_REQUIRE_TESTBIN") != "1" {
		return "", "KUBEBUILDER_ASSETS is unset in a -short run"
	}
	cache := os.Getenv("KEDGE_TESTBIN_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "KUBEBUILDER_ASSETS is unset and there is no home directory to look for the testbin cache"
		}
		cache = filepath.Join(home, ".cache", "kedge-testbin")
	}
	dir = filepath.Join(cache, "bin", KubernetesVersion)
	if missing := missingBinaries(dir); missing != "" {
		return "", "KUBEBUILDER_ASSETS is unset and " + dir + " has no " + missing
	}
	return dir, ""
}

func missingBinaries(dir string) string {
	for _, name := range binaries {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return name
		}
	}
	return ""
}

// ControlPlane starts an API server with etcd for one test, installs the
// CRDs found in crdDirs, and stops it when the test ends. Without the
// binaries the test is skipped, or fails when KEDGE_REQUIRE_TESTBIN=1.
func ControlPlane(t testing.TB, crdDirs ...string) *rest.Config {
	t.Helper()
	return StartControlPlane(t, crdDirs...).Config
}

// Plane is a running control plane whose API server can be restarted.
type Plane struct {
	Config *rest.Config
	env    *envtest.Environment
}

// StartControlPlane is ControlPlane for tests that restart the API server.
func StartControlPlane(t testing.TB, crdDirs ...string) *Plane {
	t.Helper()
	assets, why := Assets()
	if assets == "" {
		msg := "no control plane binaries: " + why + "; run `make testbin` (internal/testing/testbin/testbin.sh) and set KUBEBUILDER_ASSETS to the directory it prints"
		if os.Getenv("KEDGE_REQUIRE_TESTBIN") == "1" {
			t.Fatal(msg + " (KEDGE_REQUIRE_TESTBIN=1)")
		}
		t.Skip(msg)
	}
	useExisting := false
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		// Never a developer's real cluster, whatever USE_EXISTING_CLUSTER says.
		UseExistingCluster:    &useExisting,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
	}
	// A directory of the test's own keeps the serving certificate across
	// restarts; envtest makes a new one (and a new CA) in a directory it
	// owns, which clients holding the old CA would refuse.
	env.ControlPlane.GetAPIServer().CertDir = t.TempDir()
	// With watches open, kube-apiserver can take longer than envtest's 20 s
	// to stop on SIGTERM; envtest then sends SIGKILL, which etcd survives.
	env.ControlPlane.GetAPIServer().StopTimeout = apiServerStopTimeout
	// envtest prefers KUBEBUILDER_ASSETS over BinaryAssetsDirectory; make
	// them agree when the cache was found by default.
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil && !killedAfterTimeout(err) {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	plane := &Plane{Config: cfg, env: env}
	plane.waitReady(t)
	return plane
}

// RestartAPIServer stops the API server, leaves it down for down, and
// starts it again on the same address with the same certificates; etcd
// keeps running, so every object survives and watches must resume.
func (p *Plane) RestartAPIServer(t testing.TB, down time.Duration) {
	t.Helper()
	api := p.env.ControlPlane.GetAPIServer()
	if err := api.Stop(); err != nil && !killedAfterTimeout(err) {
		t.Fatalf("stopping the API server: %v", err)
	}
	time.Sleep(down)
	if err := api.Start(); err != nil {
		t.Fatalf("restarting the API server: %v", err)
	}
	p.waitReady(t)
}

// waitReady waits for the API server's /readyz. envtest waits only for
// /healthz, which passes before the server's own informers have synced
// (readyz's informer-sync check); until they have, its RBAC authorizer
// knows no roles and forbids what a service account asks. Clients already
// running meet those refusals anyway; the test's next steps do not.
func (p *Plane) waitReady(t testing.TB) {
	t.Helper()
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		t.Fatalf("a client of the API server: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background()).Error()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server is not ready a minute after it started: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const apiServerStopTimeout = 5 * time.Second

// killedAfterTimeout tells envtest's stop timeout, after which it has sent
// SIGKILL, from a failure to stop.
func killedAfterTimeout(err error) bool {
	return strings.Contains(err.Error(), "timeout waiting for process") && !strings.Contains(err.Error(), "unable to kill")
}
