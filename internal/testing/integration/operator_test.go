package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/service"
)

// buildKedge builds the kedge binary for one test.
func buildKedge(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the kedge binary")
	}
	bin := filepath.Join(t.TempDir(), "kedge")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kedge-io/kedge/cmd/kedge").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// writeKubeconfigAs is writeKubeconfig for a user the admin impersonates.
func writeKubeconfigAs(t *testing.T, cfg *rest.Config, user string, groups []string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Impersonate: user, ImpersonateGroups: groups}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// kedgeRun is one run of the binary.
type kedgeRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runKedge runs the binary to its end; hangGuard only stops a hung process
// (the test then fails), no assertion depends on it.
func runKedge(t *testing.T, bin string, hangGuard time.Duration, env []string, args ...string) kedgeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	run := kedgeRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	require.NoError(t, ctx.Err(), "kedge %s hung; stderr:\n%s", strings.Join(args, " "), run.stderr)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		run.code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return run
}

// limitedReader is a ServiceAccount bound to a copy of deploy/'s
// ClusterRole without pods; grant gives them back.
type limitedReader struct {
	user   string
	groups []string
	admin  kubernetes.Interface
	role   string
}

func newLimitedReader(t *testing.T, admin *rest.Config) *limitedReader {
	t.Helper()
	client, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	deployed, err := client.RbacV1().ClusterRoles().Get(t.Context(), "kedge", metav1.GetOptions{})
	require.NoError(t, err)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kedge-without-pods"}}
	for _, r := range deployed.Rules {
		r = *r.DeepCopy()
		r.Resources = slices.DeleteFunc(r.Resources, func(res string) bool { return res == "pods" })
		role.Rules = append(role.Rules, r)
	}
	_, err = client.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{})
	require.NoError(t, err)
	l := &limitedReader{user: serviceAccountUser(kedgeNamespace, "limited"), admin: client, role: role.Name,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + kedgeNamespace, "system:authenticated"}}
	_, err = client.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: l.user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return l
}

func (l *limitedReader) restConfig(admin *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.Impersonate = rest.ImpersonationConfig{UserName: l.user, Groups: l.groups}
	return cfg
}

func (l *limitedReader) grantPods(t *testing.T) {
	t.Helper()
	patch := `[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]}}]`
	_, err := l.admin.RbacV1().ClusterRoles().Patch(t.Context(), l.role, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// An identity that may not list pods: `kedge plan` and `kedge snapshot`
// exit 1 at once naming the permission and the RBAC that grants it; the
// service stays unready, says why once, and becomes ready without a
// restart when the permission is granted.
func TestMissingPermissionIsNamedAtOnce(t *testing.T) {
	admin := controlPlane(t)
	limited := newLimitedReader(t, admin)
	bin := buildKedge(t)
	kubeconfig := writeKubeconfigAs(t, admin, limited.user, limited.groups)

	commands := [][]string{
		{"plan", "--kubeconfig", kubeconfig, "--cluster", "prod-eu-1"},
		{"snapshot", "--kubeconfig", kubeconfig, "--out", filepath.Join(t.TempDir(), "snapshot")},
	}
	for _, args := range commands {
		t.Run(args[0], func(t *testing.T) {
			run := runKedge(t, bin, 10*time.Second, nil, args...)
			t.Logf("kedge %s without list pods: exit %d after %s", args[0], run.code, run.took.Round(time.Millisecond))
			assert.Equal(t, 1, run.code, run.stderr)
			for _, want := range []string{
				"the cluster credentials lack permissions kedge needs",
				"list pods cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)",
				"watch pods cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)",
			} {
				assert.Contains(t, run.stderr, want)
			}
			assert.NotContains(t, run.stderr, "list deployments", "only what is missing")
			assert.NotContains(t, run.stderr, "Failed to watch")
		})
	}

	t.Run("run", func(t *testing.T) {
		w := newWorld(t)
		r := w.startReplica(t, "kedge", replicaOptions{kube: limited.restConfig(admin), permissionRecheck: 200 * time.Millisecond})
		eventually(t, 10*time.Second, func() bool {
			_, failing := r.ready.Ready()
			return strings.Contains(strings.Join(failing, "\n"), "list pods cluster-wide")
		}, "/readyz names the missing permission")
		// Several rechecks pass while the permission is missing.
		eventually(t, 10*time.Second, func() bool {
			return strings.Count(r.logs.String(), "missing permission") == 2
		}, "one log line per missing permission")
		assert.False(t, r.isReady())
		assert.Zero(t, r.recorder.count(), "no cycle without the permission")

		limited.grantPods(t)
		eventually(t, 30*time.Second, r.isReady, "ready once granted, without a restart")
		eventually(t, time.Minute, func() bool { return r.recorder.finished() == 1 }, "the start cycle")
		require.NoError(t, r.recorder.all()[0].err)
		logs := r.logs.String()
		assert.Equal(t, 1, strings.Count(logs, `"permission":"list pods cluster-wide (granted by ClusterRole kedge in deploy/rbac.yaml)"`), "logged once, not at every recheck")
		assert.Contains(t, logs, "the missing permissions were granted")
		assert.NotContains(t, logs, "Failed to watch")
	})
}

// The opt-out annotation, on a namespace or a workload, starts a
// debounced cycle like a relabel does; other annotations do not.
func TestOptOutAnnotationStartsACycle(t *testing.T) {
	admin := controlPlane(t)
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{
		kube: identity{asServiceAccount: true}.restConfigFor(admin), informerResync: informerResync,
		scheduler: service.SchedulerOptions{Debounce: debounce},
	})
	eventually(t, 30*time.Second, func() bool { return r.recorder.finished() == 1 }, "the start cycle")
	require.NoError(t, r.recorder.all()[0].err)
	require.NotEmpty(t, workloadsIn(r.recorder.all()[0].report.Plan, "shop"))

	annotate := func(patchTarget func(ctx context.Context, patch []byte) error, key, value string) func(t *testing.T) {
		return func(t *testing.T) {
			patch := []byte(`{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`)
			require.NoError(t, patchTarget(t.Context(), patch))
		}
	}
	namespace := func(name string) func(ctx context.Context, patch []byte) error {
		return func(ctx context.Context, patch []byte) error {
			_, err := adminClient.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}
	}
	deployment := func(ns, name string) func(ctx context.Context, patch []byte) error {
		return func(ctx context.Context, patch []byte) error {
			_, err := adminClient.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}
	}
	steps := []struct {
		name       string
		change     func(t *testing.T)
		wantCycle  bool
		wantReason string
	}{
		{name: "an unrelated namespace annotation", change: annotate(namespace("shop"), "example.com/owner", "storefront")},
		{name: "the namespace opts out", change: annotate(namespace("shop"), "kedge.io/ignore", "true"), wantCycle: true, wantReason: "Namespace shop annotation kedge.io/ignore changed"},
		{name: "an unrelated workload annotation", change: annotate(deployment("catalog", "catalog-api"), "example.com/owner", "catalog")},
		{name: "a workload opts out", change: annotate(deployment("catalog", "catalog-api"), "kedge.io/ignore", "true"), wantCycle: true, wantReason: "Deployment catalog/catalog-api annotation kedge.io/ignore changed"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := r.recorder.count()
			st.change(t)
			if !st.wantCycle {
				time.Sleep(quiet)
				assert.Equal(t, before, r.recorder.count(), "no cycle")
				return
			}
			eventually(t, debounce+10*time.Second, func() bool { return r.recorder.finished() > before }, "a cycle after the change")
			run := r.recorder.all()[before]
			require.NoError(t, run.err)
			assert.Contains(t, r.logs.String(), st.wantReason)
		})
	}
	assert.Empty(t, workloadsIn(r.recorder.all()[r.recorder.count()-1].report.Plan, "shop"), "the opted-out namespace is no longer planned")
}

// writeRunConfig writes a `kedge run` configuration for the world, reading
// the live cluster through kubeconfig.
func writeRunConfig(t *testing.T, w *world, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"cluster": w.cfg.Cluster,
		"repo":    map[string]any{"owner": owner, "name": repoName, "url": w.cfg.Repo.URL},
		"github":  map[string]any{"apiURL": w.cfg.GitHub.APIURL},
		"git":     map[string]any{"cacheDir": t.TempDir()},
		"limits":  map[string]any{"mutationGap": "0s"},
		"server":  map[string]any{"leaseNamespace": kedgeNamespace},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	data, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kedge.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// `kedge run --once` beside a running service is not a second writer: it
// is refused naming the Lease's holder, with --force too (the holder keeps
// renewing the Lease: it is alive), unless --dry-run.
func TestRunOnceBesideALeader(t *testing.T) {
	admin := controlPlane(t)
	bin := buildKedge(t)
	w := newWorld(t)
	sa := identity{asServiceAccount: true}.restConfigFor(admin)
	leader := w.startReplica(t, "replica-a", replicaOptions{
		kube: sa,
		election: &service.Election{
			Config: sa, Namespace: kedgeNamespace, Name: "kedge", Identity: "replica-a",
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		},
	})
	eventually(t, 30*time.Second, func() bool { return leader.leading(t) }, "the service leads")
	eventually(t, time.Minute, func() bool { return leader.recorder.finished() == 1 }, "the leader's start cycle")

	cfgPath := writeRunConfig(t, w, map[string]any{"source": map[string]any{"kubeconfig": writeKubeconfig(t, admin)}})
	env := []string{"KEDGE_GITHUB_TOKEN=" + token, "POD_NAME=kedge-once"}
	cases := []struct {
		name     string
		flags    []string
		wantCode int
		want     string
	}{
		{name: "refused", wantCode: 1, want: "the Lease kedge/kedge is held by replica-a"},
		{name: "--force refuses while the holder renews the Lease", flags: []string{"--force"}, wantCode: 1, want: "is held by replica-a, which keeps renewing it"},
		{name: "--dry-run writes nothing and needs no Lease", flags: []string{"--dry-run"}, wantCode: 0, want: "drifted workloads"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pushes := w.git.Pushes()
			run := runKedge(t, bin, 2*time.Minute, env, append([]string{"run", "--once", "--config", cfgPath}, tc.flags...)...)
			assert.Equal(t, tc.wantCode, run.code, "stderr:\n%s", run.stderr)
			assert.Contains(t, run.stdout+run.stderr, tc.want)
			if tc.wantCode != 0 {
				assert.Equal(t, pushes, w.git.Pushes(), "a refused run pushes nothing")
				assert.NotContains(t, run.stdout, "drifted workloads", "a refused run runs no cycle")
			}
		})
	}
	assert.True(t, leader.leading(t), "the service still leads")
}
