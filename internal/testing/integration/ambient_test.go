package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const ambientProxy = "docker.io/istio/proxyv2:1.25.0"

var (
	authorizationPolicies = schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}
	gatewaysResource      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
)

// ambientApps are two team namespaces on revision 1-25-0, each with a
// Service, its Deployment and an AuthorizationPolicy with an L7 rule that
// selects the Service's pods, and a Programmed waypoint nothing uses yet.
// kedge can carry web's policy over to the waypoint; shop's also matches on
// a port, which kedge does not carry.
var ambientApps = []struct {
	namespace, app, rules string
}{
	{"shop", "cart", "  - to:\n    - operation:\n        methods: [GET]\n        ports: [\"8080\"]\n"},
	{"web", "api", "  - to:\n    - operation:\n        methods: [GET, HEAD]\n"},
}

func selectorPolicy(namespace, app, rules string) string {
	return fmt.Sprintf(`apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: get-only
  namespace: %s
spec:
  selector:
    matchLabels:
      app: %s
  action: ALLOW
  rules:
%s`, namespace, app, rules)
}

func servicePolicy(namespace, app, rules string) string {
	return fmt.Sprintf(`apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: get-only
  namespace: %s
spec:
  targetRefs:
  - kind: Service
    group: ""
    name: %s
  action: ALLOW
  rules:
%s`, namespace, app, rules)
}

type ambientWorld struct {
	t    *testing.T
	kube kubernetes.Interface
	dyn  dynamic.Interface
	live *cluster.Live
	git  *gitserver.Server
	gh   *ghemu.Server
	cfg  *config.Config
}

// newAmbientWorld is a real API server holding ambient mode installed
// beside the sidecars (ztunnel Ready on the one node, istio-cni's ConfigMap
// in kube-system without the istio.io/rev label) and the two namespaces,
// the GitOps repository they are applied from, and kedge configured to move
// namespaces of revision 1-25-0 to ambient mode with waypoint "waypoint".
func newAmbientWorld(t *testing.T) *ambientWorld {
	t.Helper()
	plane := controlplane.StartControlPlane(t, crdDir)
	rc := plane.Config
	rc.QPS, rc.Burst = 1000, 2000
	w := &ambientWorld{t: t, kube: kubernetes.NewForConfigOrDie(rc), dyn: dynamic.NewForConfigOrDie(rc)}
	ctx := t.Context()

	_, err := w.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meshtest.IstioNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "ztunnel"}
	ds, err := w.kube.AppsV1().DaemonSets(meshtest.IstioNamespace).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ztunnel"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "docker.io/istio/ztunnel:1.25.0"}}},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1}
	_, err = w.kube.AppsV1().DaemonSets(meshtest.IstioNamespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = w.kube.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-cni-config", Labels: map[string]string{"app": "istio-cni"}},
		Data:       map[string]string{"AMBIENT_ENABLED": "true", "CHAINED_CNI_PLUGIN": "true"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	repo := t.TempDir()
	var namespaces []string
	for _, a := range ambientApps {
		w.createApp(a.namespace, a.app)
		w.apply(selectorPolicy(a.namespace, a.app, a.rules), authorizationPolicies)
		w.createWaypoint(a.namespace)
		namespaces = append(namespaces, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    istio.io/rev: 1-25-0\n", a.namespace))
		dir := filepath.Join(repo, "apps", a.namespace)
		writeFile(t, filepath.Join(dir, a.app+".yaml"), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
        - name: %[1]s
          image: registry.example.com/app:1.0
`, a.app, a.namespace))
		writeFile(t, filepath.Join(dir, "service.yaml"), fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  selector:\n    app: %s\n  ports:\n  - name: http\n    port: 8080\n", a.app, a.namespace, a.app))
		writeFile(t, filepath.Join(dir, "policy.yaml"), selectorPolicy(a.namespace, a.app, a.rules))
	}
	writeFile(t, filepath.Join(repo, "namespaces.yaml"), strings.Join(namespaces, "---\n"))

	// The injector goes in last: the API server would call its webhooks
	// for the pods above, and no istiod answers them.
	mesh := meshtest.IstiodRevision("1-25-0", ambientProxy)
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
	cfg.Migrations = []config.Migration{{From: "1-25-0", To: "ambient", Waypoint: "waypoint"}}
	require.NoError(t, cfg.Validate(config.ModeRun))
	w.cfg = cfg

	w.live, err = cluster.NewLive(cluster.LiveOptions{Config: rc})
	require.NoError(t, err)
	require.NoError(t, w.live.Start(ctx))
	require.NoError(t, w.live.WaitForSync(ctx))
	return w
}

// createApp creates the namespace on revision 1-25-0, its Service, and a
// Deployment whose Ready pod runs the 1.25.0 sidecar.
func (w *ambientWorld) createApp(namespace, app string) {
	t, ctx := w.t, w.t.Context()
	_, err := w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{"istio.io/rev": "1-25-0"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = w.kube.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": app}
	_, err = w.kube.CoreV1().Services(namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: app, Image: "registry.example.com/app:1.0"}}},
	}
	d, err := w.kube.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	rs, err := w.kube.AppsV1().ReplicaSets(namespace).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-5d9f", Labels: labels, OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment")),
		}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-5d9f-x1", Namespace: namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")),
		}},
		Spec: *template.Spec.DeepCopy(),
	}
	meshtest.InjectPod(pod, "1-25-0", ambientProxy)
	_, err = w.kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

// createWaypoint creates the namespace's waypoint Gateway and reports it
// Programmed, as istiod does once its Deployment runs.
func (w *ambientWorld) createWaypoint(namespace string) {
	t, ctx := w.t, w.t.Context()
	gw := w.apply(fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: waypoint
  namespace: %s
  labels: {istio.io/waypoint-for: service}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
`, namespace), gatewaysResource)
	now := time.Now().UTC().Format(time.RFC3339)
	gw.Object["status"] = map[string]any{"conditions": []any{
		map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": now},
		map[string]any{"type": "Programmed", "status": "True", "reason": "Programmed", "message": "", "lastTransitionTime": now},
	}}
	_, err := w.dyn.Resource(gatewaysResource).Namespace(namespace).UpdateStatus(ctx, gw, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// apply creates the object, or replaces it as a GitOps controller applying
// a changed manifest would.
func (w *ambientWorld) apply(manifest string, gvr schema.GroupVersionResource) *unstructured.Unstructured {
	t, ctx := w.t, w.t.Context()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &u.Object))
	client := w.dyn.Resource(gvr).Namespace(u.GetNamespace())
	current, err := client.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err != nil {
		created, err := client.Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
		return created
	}
	u.SetResourceVersion(current.GetResourceVersion())
	updated, err := client.Update(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err)
	return updated
}

func (w *ambientWorld) cycle() *reconcile.Report {
	w.t.Helper()
	source := func(context.Context) (*objects.Set, error) { return w.live.Set(), nil }
	svc, err := assemble.New(w.t.Context(), w.cfg, source, assemble.Options{})
	require.NoError(w.t, err)
	report, err := svc.Reconciler.RunOnce(w.t.Context())
	require.NoError(w.t, err)
	return report
}

func (w *ambientWorld) changed(branch string) []string {
	var out []string
	for _, f := range w.git.Files(w.t, repoName, branch) {
		if w.git.ReadFile(w.t, repoName, "main", f) != w.git.ReadFile(w.t, repoName, branch, f) {
			out = append(out, f)
		}
	}
	return out
}

func migrationOf(t *testing.T, report *reconcile.Report, namespace string) drift.Migration {
	t.Helper()
	for _, m := range report.Plan.Migrations {
		if m.Namespace == namespace {
			return m
		}
	}
	t.Fatalf("no migration of %s", namespace)
	return drift.Migration{}
}

// Against the real API server: a namespace whose AuthorizationPolicy
// selects pods with an L7 rule kedge cannot carry over is refused, naming
// the policy, its file and the guide's step, although a Programmed waypoint
// exists, and no pull request moves it; once a person attaches the policy
// to the waypoint's Service in Git and the cluster applies it, the next
// cycle moves the namespace. The other namespace's policy kedge carries
// over itself, in the move's pull request.
func TestAmbientMoveWaitsForTheL7PolicyToAttachToTheWaypoint(t *testing.T) {
	w := newAmbientWorld(t)

	report := w.cycle()
	shop := migrationOf(t, report, "shop")
	require.Equal(t, drift.BlockAmbientNotReady, shop.Blocked, shop.Detail)
	require.Len(t, shop.Ambient, 1, shop.Detail)
	refusal := shop.Ambient[0]
	assert.Equal(t, ambient.Ref{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "get-only"}, refusal.Object)
	assert.Equal(t, "apps/shop/policy.yaml", refusal.Path)
	assert.Equal(t, "spec.rules[0].to[0].operation.methods", refusal.Field)
	assert.Equal(t, ambient.StepAuthorization, refusal.Step)
	assert.Contains(t, refusal.Reason, "it would deny all traffic to those workloads")
	assert.Contains(t, refusal.Reason, "kedge does not carry it over: it does not carry spec.rules[0].to[0].operation.ports to a waypoint")
	assert.Contains(t, shop.Detail, "AuthorizationPolicy shop/get-only (apps/shop/policy.yaml) spec.rules[0].to[0].operation.methods: ")
	_, pushed := w.git.Branch(repoName, "kedge/prod-eu-1/shop")
	assert.False(t, pushed, "nothing moves shop")

	web := migrationOf(t, report, "web")
	require.Empty(t, web.Blocked, web.Detail)
	require.Len(t, web.Carried, 1)
	assert.Equal(t, "apps/web/policy.yaml", web.Carried[0].Path)
	assert.ElementsMatch(t, []string{"namespaces.yaml", "apps/web/policy.yaml", "apps/web/api.yaml"}, w.changed("kedge/prod-eu-1/web"))
	rules := ambientApps[1].rules
	assert.Equal(t, servicePolicy("web", "api", rules), w.git.ReadFile(t, repoName, "kedge/prod-eu-1/web", "apps/web/policy.yaml"),
		"the selector's lines become targetRefs on the Service, nothing else changes")
	var body string
	for _, pr := range w.gh.PRs() {
		if pr.GetHead().GetRef() == "kedge/prod-eu-1/web" {
			body = pr.GetBody()
		}
	}
	assert.Contains(t, body, "into **ambient mode**")
	assert.Contains(t, body, "| AuthorizationPolicy web/get-only | [apps/web/policy.yaml]")
	assert.Contains(t, body, "| `selector: app=api` | `Service api` | waypoint `web/waypoint` |")

	// A person attaches shop's policy to the cart Service in Git, and the
	// cluster applies it.
	fixed := servicePolicy("shop", "cart", ambientApps[0].rules)
	w.git.CommitAsHuman(t, repoName, "main", map[string]string{"apps/shop/policy.yaml": fixed}, "shop: enforce get-only at the waypoint")
	w.apply(fixed, authorizationPolicies)
	eventually(t, 10*time.Second, func() bool {
		for _, ap := range w.live.Set().AuthorizationPolicies {
			if ap.Namespace == "shop" && ap.Name == "get-only" {
				return ap.Spec.Selector == nil && len(ap.Spec.TargetRefs) == 1
			}
		}
		return false
	}, "the informer sees the policy attached to the Service")

	report = w.cycle()
	shop = migrationOf(t, report, "shop")
	require.Empty(t, shop.Blocked, shop.Detail)
	assert.Empty(t, shop.Ambient)
	assert.Equal(t, map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}, shop.SetLabels)
	assert.ElementsMatch(t, []string{"namespaces.yaml", "apps/shop/cart.yaml"}, w.changed("kedge/prod-eu-1/shop"))
	base := w.git.ReadFile(t, repoName, "main", "namespaces.yaml")
	assert.Equal(t,
		strings.Replace(base, "  name: shop\n  labels:\n    istio.io/rev: 1-25-0\n", "  name: shop\n  labels:\n    istio.io/dataplane-mode: \"ambient\"\n    istio.io/use-waypoint: \"waypoint\"\n", 1),
		w.git.ReadFile(t, repoName, "kedge/prod-eu-1/shop", "namespaces.yaml"))
}
