package controlplane_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/service"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/synth"
	"github.com/kedge-io/kedge/internal/testing/synth/kubeload"
)

const (
	changeBenchToken = "ghs_changeBenchToken000000000000000000000"
	changeBenchRepo  = "gitops"
)

// cycleSignal wraps the reconciler so the benchmark knows when a cycle
// ended.
type cycleSignal struct {
	next *reconcile.Reconciler
	done chan error
}

func (c *cycleSignal) RunOnce(ctx context.Context) (*reconcile.Report, error) {
	report, err := c.next.RunOnce(ctx)
	c.done <- err
	return report, err
}

// changeWorld is the kedge service (live source, debounced scheduler,
// reconcile cycles) against a real API server holding a synthetic fleet
// without drift, a real git server and the GitHub emulation.
type changeWorld struct {
	kube   kubernetes.Interface
	gh     *ghemu.Server
	set    *objects.Set
	cycles chan error
	// debounce is the service's cycle.debounce (the configuration's
	// default).
	debounce time.Duration
}

func newChangeWorld(b *testing.B) *changeWorld {
	b.Helper()
	restCfg := controlplane.ControlPlane(b, "testdata/crds")
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	fleet, err := synth.New(synth.Spec{Seed: 3, Namespaces: 16, Workloads: 32, Pods: 64})
	if err != nil {
		b.Fatal(err)
	}
	if err := kubeload.Apply(ctx, restCfg, fleet.Set, kubeload.Full{Pods: fleet.Pods, ReplicaSets: fleet.ReplicaSets}, kubeload.Options{}); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, err := fleet.WriteRepo(dir); err != nil {
		b.Fatal(err)
	}
	git := gitserver.New(b)
	git.SetToken(changeBenchToken)
	git.CreateRepo(b, changeBenchRepo, dir)
	w := &changeWorld{set: fleet.Set, cycles: make(chan error, 16)}
	w.gh = ghemu.New(b, ghemu.Options{
		Owner: "example-org", Repo: changeBenchRepo,
		Tokens:   map[string]string{changeBenchToken: "kedge-bot"},
		Branches: ghemu.GitBranches(git.RepoPath(changeBenchRepo)),
	})
	if w.kube, err = kubernetes.NewForConfig(restCfg); err != nil {
		b.Fatal(err)
	}

	// The service's own defaults (debounce, write spacing, PR limits);
	// only the addresses are the test's.
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Cluster = fleet.Spec.Cluster
	cfg.Repo.Owner, cfg.Repo.Name = "example-org", changeBenchRepo
	cfg.Repo.URL = git.RepoURL(changeBenchRepo)
	cfg.GitHub.APIURL = w.gh.URL + "/"
	cfg.GitHub.Token = changeBenchToken
	cfg.Git.CacheDir = b.TempDir()
	if err := cfg.Validate(config.ModeRun); err != nil {
		b.Fatal(err)
	}
	w.debounce = cfg.Cycle.Debounce

	live, err := cluster.NewLive(cluster.LiveOptions{Config: restCfg})
	if err != nil {
		b.Fatal(err)
	}
	source := func(context.Context) (*objects.Set, error) { return live.Set(), nil }
	kedge, err := assemble.New(ctx, cfg, source, assemble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := service.New(service.Config{
		Source:     live,
		Reconciler: &cycleSignal{next: kedge.Reconciler, done: w.cycles},
		GitHub:     kedge.Forge,
		Scheduler:  service.SchedulerOptions{Debounce: cfg.Cycle.Debounce},
	})
	if err != nil {
		b.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := svc.Run(ctx); err != nil {
			b.Error(err)
		}
	}()
	b.Cleanup(func() {
		cancel()
		<-stopped
	})
	w.awaitCycle(b)
	if prs := w.gh.PRs(); len(prs) != 0 {
		b.Fatalf("the fleet drifts before any change: %d PRs", len(prs))
	}
	return w
}

func (w *changeWorld) awaitCycle(b *testing.B) {
	b.Helper()
	select {
	case err := <-w.cycles:
		if err != nil {
			b.Fatalf("cycle: %v", err)
		}
	case <-time.After(3 * time.Minute):
		b.Fatal("no cycle within 3 minutes")
	}
}

// namespaceWith returns the first namespace (by name) whose labels have
// key=value.
func (w *changeWorld) namespaceWith(b *testing.B, key, value string) string {
	b.Helper()
	var names []string
	for _, ns := range w.set.Namespaces {
		if ns.Labels[key] == value {
			names = append(names, ns.Name)
		}
	}
	if len(names) == 0 {
		b.Fatalf("no namespace labelled %s=%s in the fleet", key, value)
	}
	slices.Sort(names)
	return names[0]
}

// untilPR measures from now until kedge opened a PR for namespace, then
// lets the cycle finish.
func (w *changeWorld) untilPR(b *testing.B, namespace string, change func(context.Context) error) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := change(ctx); err != nil {
		b.Fatal(err)
	}
	branch := reconcile.BranchPrefix(synth.DefaultCluster) + namespace
	deadline := start.Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, pr := range w.gh.PRs() {
			if pr.GetHead().GetRef() == branch {
				took := time.Since(start)
				w.awaitCycle(b)
				return took
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("no PR for %s within 3 minutes of the change", namespace)
	return 0
}

// BenchmarkMeshChangeToPR measures, against a real API server, the time
// from a change of the mesh to the pull request for an affected namespace
// being open, through the live source's change notification, the
// service's debounce (the default cycle.debounce) and a full cycle, for
// each kind of change kedge watches.
func BenchmarkMeshChangeToPR(b *testing.B) {
	var relabel, tagMove, imageBump time.Duration
	for b.Loop() {
		b.StopTimer()
		w := newChangeWorld(b)
		b.StartTimer()

		// A namespace moves from the default revision to 1-25-1.
		enabled := w.namespaceWith(b, "istio-injection", "enabled")
		relabel = w.untilPR(b, enabled, func(ctx context.Context) error {
			ns, err := w.kube.CoreV1().Namespaces().Get(ctx, enabled, metav1.GetOptions{})
			if err != nil {
				return err
			}
			delete(ns.Labels, "istio-injection")
			ns.Labels["istio.io/rev"] = "1-25-1"
			_, err = w.kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
			return err
		})

		// The stable tag moves back to 1-24-3 (its webhook configuration
		// is rewritten, as `istioctl tag set stable --revision 1-24-3
		// --overwrite` does).
		stable := w.namespaceWith(b, "istio.io/rev", "stable")
		tagMove = w.untilPR(b, stable, func(ctx context.Context) error {
			mwcs := w.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
			mwc, err := mwcs.Get(ctx, "istio-revision-tag-stable", metav1.GetOptions{})
			if err != nil {
				return err
			}
			mwc.Labels["istio.io/rev"] = "1-24-3"
			for i := range mwc.Webhooks {
				mwc.Webhooks[i].ClientConfig.Service.Name = "istiod-1-24-3"
			}
			_, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{})
			return err
		})

		// Revision 1-25-1 is patched in place to a new proxy image, as the
		// Sail Operator's InPlace strategy does.
		pinned := w.namespaceWith(b, "istio.io/rev", "1-25-1")
		imageBump = w.untilPR(b, pinned, func(ctx context.Context) error {
			cms := w.kube.CoreV1().ConfigMaps("istio-system")
			cm, err := cms.Get(ctx, "istio-sidecar-injector-1-25-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			var values map[string]any
			if err := json.Unmarshal([]byte(cm.Data["values"]), &values); err != nil {
				return err
			}
			values["global"].(map[string]any)["tag"] = "1.25.2"
			data, err := json.Marshal(values)
			if err != nil {
				return err
			}
			cm.Data["values"] = string(data)
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		})
		b.StopTimer()
		for _, pr := range w.gh.PRs() {
			b.Logf("PR #%d %s", pr.GetNumber(), strings.TrimPrefix(pr.GetHead().GetRef(), reconcile.BranchPrefix(synth.DefaultCluster)))
		}
		b.ReportMetric(w.debounce.Seconds(), "debounce-s")
		b.StartTimer()
	}
	b.ReportMetric(relabel.Seconds(), "namespace-label-s")
	b.ReportMetric(tagMove.Seconds(), "tag-MWC-s")
	b.ReportMetric(imageBump.Seconds(), "injector-ConfigMap-s")
}
