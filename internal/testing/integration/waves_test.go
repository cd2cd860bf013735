package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
	"github.com/kedge-io/kedge/internal/waves"
)

const (
	oldProxy = "docker.io/istio/proxyv2:1.24.0"
	newProxy = "docker.io/istio/proxyv2:1.25.0"
	waveSoak = 10 * time.Minute
)

// waveNamespaces are six namespaces in three waves: two canaries by name,
// two non-critical by label, and the rest.
var waveNamespaces = []struct {
	name   string
	labels map[string]string
	wave   int
}{
	{"canary-a", nil, 0},
	{"canary-b", nil, 0},
	{"orders", map[string]string{"tier": "non-critical"}, 1},
	{"reviews", map[string]string{"tier": "non-critical"}, 1},
	{"payments", nil, 2},
	{"shop", nil, 2},
}

// clock is the time kedge and the GitHub emulation read; the test moves
// it instead of waiting.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// waveWorld is a cluster of six namespaces whose pods run proxy 1.24.0
// while the mesh injects 1.25.0, the GitOps repository with their
// Deployments, and kedge configured with three waves.
type waveWorld struct {
	t     *testing.T
	kube  kubernetes.Interface
	live  *cluster.Live
	git   *gitserver.Server
	gh    *ghemu.Server
	cfg   *config.Config
	clock *clock
}

func newWaveWorld(t *testing.T) *waveWorld {
	t.Helper()
	plane := controlplane.StartControlPlane(t)
	rc := plane.Config
	rc.QPS, rc.Burst = 1000, 2000
	w := &waveWorld{t: t, clock: &clock{now: time.Now().UTC().Truncate(time.Second)}}
	w.kube = kubernetes.NewForConfigOrDie(rc)

	repo := t.TempDir()
	for _, ns := range waveNamespaces {
		w.createNamespace(ns.name, ns.labels)
		writeFile(t, filepath.Join(repo, "apps", ns.name, "app.yaml"), deploymentManifest(ns.name))
	}
	// The injector goes in last: the API server would call its webhooks
	// for the pods above, and no istiod answers them.
	mesh := meshtest.IstiodRevision("default", newProxy)
	ctx := t.Context()
	_, err := w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meshtest.IstioNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, cm := range mesh.ConfigMaps {
		cm.ResourceVersion = ""
		_, err := w.kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, &cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, mwc := range mesh.WebhookConfigurations {
		_, err := w.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &mwc, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	w.git = gitserver.New(t)
	w.git.SetToken(token)
	w.git.CreateRepo(t, repoName, repo)
	w.gh = ghemu.New(t, ghemu.Options{
		Owner: owner, Repo: repoName,
		Tokens:   map[string]string{token: "kedge-bot"},
		Branches: ghemu.GitBranches(w.git.RepoPath(repoName)),
		Clock:    w.clock.Now,
	})
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	cfg.Repo.Owner, cfg.Repo.Name = owner, repoName
	cfg.Repo.URL = w.git.RepoURL(repoName)
	cfg.GitHub.APIURL = w.gh.URL + "/"
	cfg.GitHub.Token = token
	cfg.Git.CacheDir = t.TempDir()
	cfg.Limits.MutationGap = 0
	cfg.Waves = []config.Wave{
		{Name: "canary", Namespaces: []string{"canary-*"}, Soak: waveSoak},
		{Name: "non-critical", NamespaceSelector: map[string]string{"tier": "non-critical"}, Soak: waveSoak},
		{Name: "everything-else", Soak: waveSoak},
	}
	require.NoError(t, cfg.Validate(config.ModeRun))
	w.cfg = cfg

	w.live, err = cluster.NewLive(cluster.LiveOptions{Config: rc})
	require.NoError(t, err)
	require.NoError(t, w.live.Start(ctx))
	require.NoError(t, w.live.WaitForSync(ctx))
	return w
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func deploymentManifest(namespace string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: %s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
        - name: app
          image: registry.example.com/app:1.0
`, namespace)
}

// createNamespace creates a namespace with istio-injection=enabled and its
// Deployment, ReplicaSet and pod as the controllers and the injector of
// proxy 1.24.0 left them: available and Ready.
func (w *waveWorld) createNamespace(name string, labels map[string]string) {
	t, ctx := w.t, w.t.Context()
	all := map[string]string{"istio-injection": "enabled"}
	for k, v := range labels {
		all[k] = v
	}
	_, err := w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = w.kube.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "app"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1.0"}}},
	}
	d, err := w.kube.AppsV1().Deployments(name).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}, Template: template,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1}
	_, err = w.kube.AppsV1().Deployments(name).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)

	rsTemplate := *template.DeepCopy()
	rsTemplate.Labels["pod-template-hash"] = "5d9f"
	rs, err := w.kube.AppsV1().ReplicaSets(name).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app-5d9f", Labels: rsTemplate.Labels, OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment")),
		}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: rsTemplate.Labels}, Template: rsTemplate},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-5d9f-x1", Namespace: name, Labels: rsTemplate.Labels, OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")),
		}},
		Spec: *rsTemplate.Spec.DeepCopy(),
	}
	meshtest.InjectPod(pod, "default", oldProxy)
	created, err := w.kube.CoreV1().Pods(name).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	w.setPodStatus(created, w.clock.Now().Add(-time.Hour), 0)
}

// setPodStatus reports the pod Running and Ready since readySince, with
// the proxy restarted restarts times, as a kubelet would.
func (w *waveWorld) setPodStatus(pod *corev1.Pod, readySince time.Time, restarts int32) {
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &metav1.Time{Time: readySince},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: readySince}},
		},
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true), RestartCount: map[bool]int32{true: restarts}[c.Name == "istio-proxy"],
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: readySince}}},
		})
	}
	_, err := w.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(w.t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(w.t, err)
}

// rollOut does what the Deployment controller and the kubelet do once
// GitOps applied a merged PR: the namespace's pod runs the new proxy and
// turns Ready now. Pods are changed in place, since no istiod answers the
// injector webhook for new ones.
func (w *waveWorld) rollOut(namespace string, proxyRestarts int32) {
	t, ctx := w.t, w.t.Context()
	pod, err := w.kube.CoreV1().Pods(namespace).Get(ctx, "app-5d9f-x1", metav1.GetOptions{})
	require.NoError(t, err)
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "istio-proxy" {
			pod.Spec.Containers[i].Image = newProxy
		}
	}
	pod, err = w.kube.CoreV1().Pods(namespace).Update(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	readySince := w.clock.Now()
	w.setPodStatus(pod, readySince, proxyRestarts)
	eventually(t, 10*time.Second, func() bool {
		for _, p := range w.live.Set().Pods {
			if p.Namespace == namespace && p.Name == pod.Name {
				return p.Proxy != nil && p.Proxy.Image == newProxy && p.Ready != "" && p.ReadySince.Equal(&metav1.Time{Time: readySince})
			}
		}
		return false
	}, "the informer sees the rolled-out pod of %s", namespace)
}

func (w *waveWorld) cycle() *reconcile.Report {
	w.t.Helper()
	source := func(context.Context) (*objects.Set, error) { return w.live.Set(), nil }
	svc, err := assemble.New(w.t.Context(), w.cfg, source, assemble.Options{Now: w.clock.Now})
	require.NoError(w.t, err)
	report, err := svc.Reconciler.RunOnce(w.t.Context())
	require.NoError(w.t, err)
	return report
}

// opened lists the namespaces with an open kedge PR, and their numbers.
func (w *waveWorld) opened() map[string]int {
	out := map[string]int{}
	for _, pr := range w.gh.PRs() {
		if pr.GetState() == "open" {
			out[strings.TrimPrefix(pr.GetHead().GetRef(), "kedge/prod-eu-1/")] = pr.GetNumber()
		}
	}
	return out
}

func namesOf(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (w *waveWorld) mergeAll(prs map[string]int) {
	for _, n := range prs {
		require.NoError(w.t, w.gh.MergePR(n, ghemu.GitFastForward(w.git.RepoPath(repoName))))
	}
}

func (w *waveWorld) dashboard() string {
	issues := w.gh.Issues()
	for _, is := range issues {
		for _, l := range is.Labels {
			if l.GetName() == reconcile.DashboardLabel {
				return is.GetBody()
			}
		}
	}
	w.t.Fatal("no dashboard issue")
	return ""
}

func waveStates(report *reconcile.Report) []waves.State {
	var out []waves.State
	for _, r := range report.Rollouts {
		for _, s := range r.Waves {
			out = append(out, s.State)
		}
	}
	return out
}

// Three waves over six namespaces, against the API server and the GitHub
// emulation: the second wave's PRs open only once the first wave's PRs are
// merged and its pods, updated through the API server, have been Ready for
// the soak time; an unhealthy pod of the second wave stops the third, and
// the dashboard names it until the namespace is labelled to resume.
func TestWavesOpenInOrderGatedOnHealth(t *testing.T) {
	w := newWaveWorld(t)
	target := waves.TargetKey("default", newProxy)

	report := w.cycle()
	first := w.opened()
	require.Equal(t, []string{"canary-a", "canary-b"}, namesOf(first), "only the first wave opens")
	assert.Equal(t, []waves.State{waves.StateInProgress, waves.StateWaiting, waves.StateWaiting}, waveStates(report))
	assert.Equal(t, prstate.PRWaitingForWave, onlyOutcome(t, report, "orders").State)
	_, pushed := w.git.Branch(repoName, "kedge/prod-eu-1/orders")
	assert.False(t, pushed, "a waiting namespace's branch is not pushed")
	pr, _ := w.gh.PR(first["canary-a"])
	assert.Contains(t, pr.GetBody(), "wave **1 of 3** (canary)")
	board := w.dashboard()
	assert.Contains(t, board, "## Rollout waves: `"+target+"`")
	assert.Contains(t, board, "| 1 canary | canary-a, canary-b | in progress: pull requests open |")
	assert.Contains(t, board, "| 2 non-critical | orders, reviews | waiting for the waves before it |")

	// Merged, not yet applied: the pods still run 1.24.0.
	w.mergeAll(first)
	report = w.cycle()
	assert.Empty(t, w.opened())
	assert.Equal(t, []waves.State{waves.StateSoaking, waves.StateWaiting, waves.StateWaiting}, waveStates(report))

	// Applied: the pods run 1.25.0 and are Ready from now on.
	w.clock.advance(time.Minute)
	w.rollOut("canary-a", 0)
	w.rollOut("canary-b", 0)
	soakEnds := w.clock.Now().Add(waveSoak)
	report = w.cycle()
	assert.Empty(t, w.opened(), "the first wave soaks")
	require.Equal(t, []waves.State{waves.StateSoaking, waves.StateWaiting, waves.StateWaiting}, waveStates(report))
	assert.Equal(t, soakEnds, report.Rollouts[0].Waves[0].SoakEnds.UTC())
	assert.Contains(t, w.dashboard(), "soaking until "+soakEnds.UTC().Format("2006-01-02 15:04 UTC"))

	w.clock.advance(waveSoak - time.Second)
	w.cycle()
	assert.Empty(t, w.opened(), "a second before the soak time ends")

	w.clock.advance(time.Second)
	report = w.cycle()
	second := w.opened()
	require.Equal(t, []string{"orders", "reviews"}, namesOf(second), "the second wave opens once the first soaked")
	assert.Equal(t, []waves.State{waves.StateDone, waves.StateInProgress, waves.StateWaiting}, waveStates(report))
	pr, _ = w.gh.PR(second["orders"])
	assert.Contains(t, pr.GetBody(), "wave **2 of 3** (non-critical)")

	// The second wave rolls out, but reviews' proxy keeps restarting.
	w.mergeAll(second)
	w.clock.advance(time.Minute)
	w.rollOut("orders", 0)
	w.rollOut("reviews", 3)
	w.clock.advance(waveSoak)
	report = w.cycle()
	assert.Empty(t, w.opened(), "an unhealthy workload blocks the third wave")
	require.Equal(t, []waves.State{waves.StateDone, waves.StateBlocked, waves.StateWaiting}, waveStates(report))
	assert.Equal(t, []waves.Blocker{{Namespace: "reviews", Kind: "Deployment", Name: "app", Why: "istio-proxy of pod app-5d9f-x1 restarted 3 times (max 0)"}},
		report.Rollouts[0].Waves[1].Blocking)
	board = w.dashboard()
	assert.Contains(t, board, "stopped at wave 2 (non-critical)")
	assert.Contains(t, board, "- reviews/Deployment/app: istio-proxy of pod app-5d9f-x1 restarted 3 times (max 0)")
	resume := w.cfg.Rollout.ResumeLabel + "=" + waves.TargetID(target)
	assert.Contains(t, board, "`"+resume+"`")

	// A person accepts it by labelling the namespace.
	ns, err := w.kube.CoreV1().Namespaces().Get(t.Context(), "reviews", metav1.GetOptions{})
	require.NoError(t, err)
	ns.Labels[w.cfg.Rollout.ResumeLabel] = waves.TargetID(target)
	_, err = w.kube.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		for _, n := range w.live.Set().Namespaces {
			if n.Name == "reviews" {
				return n.Labels[w.cfg.Rollout.ResumeLabel] != ""
			}
		}
		return false
	}, "the informer sees the resume label")
	w.cycle()
	assert.Equal(t, []string{"payments", "shop"}, namesOf(w.opened()), "resumed: the third wave opens")
}

// onlyOutcome is the outcome of a namespace that has a pull request in one
// repository.
func onlyOutcome(t *testing.T, report *reconcile.Report, ns string) reconcile.Outcome {
	t.Helper()
	outcomes := report.Of(ns)
	require.Len(t, outcomes, 1, "outcomes of %s", ns)
	return outcomes[0]
}
