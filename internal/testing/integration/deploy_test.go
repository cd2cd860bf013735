package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yamlv3 "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/service"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

const (
	chartDir      = "../../../deploy/helm/kedge"
	configExample = "../../../config/kedge.example.yaml"
)

// kubectlPath is the kubectl internal/testing/testbin/testbin.sh builds next to the control
// plane binaries.
func kubectlPath(t *testing.T) string {
	t.Helper()
	dir, why := controlplane.Assets()
	if dir != "" {
		if p := filepath.Join(dir, "kubectl"); fileExists(p) {
			return p
		}
		why = dir + " has no kubectl"
	}
	msg := "no kubectl from internal/testing/testbin/testbin.sh: " + why
	if os.Getenv("KEDGE_REQUIRE_TESTBIN") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func fileExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// manifests are rendered objects by kind and name.
type manifests map[string]*unstructured.Unstructured

func index(objs []*unstructured.Unstructured) manifests {
	m := manifests{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetName()] = o
	}
	return m
}

func (m manifests) kinds() []string {
	var out []string
	for _, o := range m {
		out = append(out, o.GetKind())
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// one returns the only object of a kind, typed.
func one[T any](t *testing.T, m manifests, kind string) *T {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range m {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	require.Len(t, found, 1, "one %s", kind)
	var out T
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, &out))
	return &out
}

func renderKubectlKustomize(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectlPath(t), "kustomize", deployDir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "kubectl kustomize: %s", stderr.String())
	objs, err := decodeObjects(stdout.Bytes())
	require.NoError(t, err)
	return objs
}

func renderChart(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	chart, err := loader.Load(chartDir)
	require.NoError(t, err)
	vals, err := chartutil.ToRenderValues(chart, values, chartutil.ReleaseOptions{Name: "kedge", Namespace: kedgeNamespace, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	require.NoError(t, err)
	rendered, err := engine.Render(chart, vals)
	require.NoError(t, err)
	var names []string
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var all []*unstructured.Unstructured
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		objs, err := decodeObjects([]byte(rendered[name]))
		require.NoError(t, err, name)
		all = append(all, objs...)
	}
	return all
}

// checkManifests holds what both the kustomize base and the chart must
// say, whatever their templating.
func checkManifests(t *testing.T, m manifests) {
	t.Helper()
	assert.Subset(t, m.kinds(), []string{
		"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget",
		"Role", "RoleBinding", "Service", "ServiceAccount",
	})

	// The ClusterRole reads exactly what kedge reads, and nothing else.
	role := one[rbacv1.ClusterRole](t, m, "ClusterRole")
	var granted []readResource
	for _, r := range role.Rules {
		assert.ElementsMatch(t, []string{"get", "list", "watch"}, r.Verbs, "ClusterRole verbs")
		assert.Empty(t, r.ResourceNames)
		assert.Empty(t, r.NonResourceURLs)
		for _, g := range r.APIGroups {
			assert.NotEqual(t, "*", g)
			for _, res := range r.Resources {
				assert.NotContains(t, []string{"*", "secrets"}, res)
				granted = append(granted, readResource{g, res})
			}
		}
	}
	assert.ElementsMatch(t, kedgeReads, granted, "the ClusterRole grants exactly the kinds kedge reads")

	deploy := one[appsv1.Deployment](t, m, "Deployment")
	sa := one[corev1.ServiceAccount](t, m, "ServiceAccount")
	binding := one[rbacv1.ClusterRoleBinding](t, m, "ClusterRoleBinding")
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	require.Len(t, binding.Subjects, 1)
	assert.Equal(t, rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: deploy.Namespace}, binding.Subjects[0])

	// Leases, in kedge's namespace, and only the one kedge uses is renewed.
	leaseRole := one[rbacv1.Role](t, m, "Role")
	assert.Equal(t, deploy.Namespace, leaseRole.Namespace)
	for _, r := range leaseRole.Rules {
		assert.Equal(t, []string{"coordination.k8s.io"}, r.APIGroups)
		assert.Equal(t, []string{"leases"}, r.Resources)
		if slices.Contains(r.Verbs, "update") {
			assert.Equal(t, []string{"kedge"}, r.ResourceNames)
		}
	}
	roleBinding := one[rbacv1.RoleBinding](t, m, "RoleBinding")
	assert.Equal(t, leaseRole.Name, roleBinding.RoleRef.Name)
	assert.Equal(t, sa.Name, roleBinding.Subjects[0].Name)

	// Two replicas, hardened, probed, with resources.
	require.NotNil(t, deploy.Spec.Replicas)
	assert.EqualValues(t, 2, *deploy.Spec.Replicas)
	pod := deploy.Spec.Template.Spec
	assert.Equal(t, sa.Name, pod.ServiceAccountName)
	require.NotNil(t, pod.TerminationGracePeriodSeconds)
	assert.Greater(t, *pod.TerminationGracePeriodSeconds, int64(service.DefaultShutdownGrace.Seconds()),
		"the kubelet must not kill a cycle kedge is still allowed to finish")
	require.NotNil(t, pod.SecurityContext)
	assert.Equal(t, ptrTo(true), pod.SecurityContext.RunAsNonRoot)
	assert.NotEqual(t, ptrTo(int64(0)), pod.SecurityContext.RunAsUser)
	require.NotNil(t, pod.SecurityContext.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.NotNil(t, c.SecurityContext)
	assert.Equal(t, ptrTo(true), c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, ptrTo(false), c.SecurityContext.AllowPrivilegeEscalation)
	require.NotNil(t, c.SecurityContext.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.Empty(t, c.SecurityContext.Capabilities.Add)
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.False(t, c.Resources.Requests.Cpu().IsZero())
	assert.False(t, c.Resources.Requests.Memory().IsZero())
	assert.False(t, c.Resources.Limits.Memory().IsZero())
	assert.Equal(t, []string{"run", "--config", "/etc/kedge/config/kedge.yaml"}, c.Args)
	envs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			envs[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	assert.Equal(t, "metadata.namespace", envs["POD_NAMESPACE"], "the Lease's namespace")
	assert.Equal(t, "metadata.name", envs["POD_NAME"], "the replica's identity")

	// The configuration comes from the ConfigMap and is one kedge accepts.
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	cm := one[corev1.ConfigMap](t, m, "ConfigMap")
	require.NotNil(t, volumes["config"].ConfigMap)
	assert.Equal(t, cm.Name, volumes["config"].ConfigMap.Name)
	assert.Equal(t, "/etc/kedge/config", mounts["config"].MountPath)
	cfg := loadConfig(t, cm.Data["kedge.yaml"])
	assert.True(t, cfg.Server.LeaderElection)
	assert.Equal(t, "kedge", cfg.Server.LeaseName)
	assert.Empty(t, cfg.Server.LeaseNamespace, "the pod's namespace")
	require.Len(t, c.Ports, 1)
	assert.True(t, strings.HasSuffix(cfg.Server.Address, ":"+itoa(c.Ports[0].ContainerPort)), "server.address %q serves the container port", cfg.Server.Address)
	assert.Equal(t, "/var/cache/kedge", cfg.Git.CacheDir)
	assert.Equal(t, "/var/cache/kedge", mounts["cache"].MountPath, "the clone lives on a writable volume")
	require.NotNil(t, volumes["cache"].EmptyDir)

	// The GitHub App key, when configured, is a Secret volume: kedge
	// never reads Secrets through the API.
	if cfg.GitHub.PrivateKeyFile != "" {
		require.NotNil(t, volumes["github-app"].Secret)
		assert.True(t, mounts["github-app"].ReadOnly)
		assert.True(t, strings.HasPrefix(cfg.GitHub.PrivateKeyFile, mounts["github-app"].MountPath+"/"))
	}
}

func ptrTo[T any](v T) *T { return &v }

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// loadConfig reads kedge.yaml as kedge would, refusing unknown keys.
func loadConfig(t *testing.T, content string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kedge.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	cfg, err := config.Load(path, nil, nil)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate(config.ModePlan))
	return cfg
}

func TestKustomizeBaseRenders(t *testing.T) {
	objs := renderKubectlKustomize(t)
	m := index(objs)
	assert.Contains(t, m, "Namespace/kedge")
	for _, o := range objs {
		if o.GetKind() != "Namespace" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			assert.Equal(t, kedgeNamespace, o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	checkManifests(t, m)
	deploy := one[appsv1.Deployment](t, m, "Deployment")
	assert.Equal(t, "ghcr.io/kedge-io/kedge:0.1.0", deploy.Spec.Template.Spec.Containers[0].Image)
	// kubectl's kustomize and the library kedge's tests apply agree.
	assert.Equal(t, len(renderKustomize(t, deployDir)), len(objs))
}

func TestHelmChartRenders(t *testing.T) {
	chart, err := loader.Load(chartDir)
	require.NoError(t, err)
	lintResult := lint.All(chartDir, nil, kedgeNamespace, false)
	for _, msg := range lintResult.Messages {
		assert.Less(t, msg.Severity, support.WarningSev, "helm lint: %s", msg)
	}

	cases := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, m manifests, cfg *config.Config)
	}{
		{
			name: "default values",
			check: func(t *testing.T, m manifests, cfg *config.Config) {
				deploy := one[appsv1.Deployment](t, m, "Deployment")
				assert.Equal(t, "ghcr.io/kedge-io/kedge:"+chart.Metadata.AppVersion, deploy.Spec.Template.Spec.Containers[0].Image)
				assert.Empty(t, cfg.GitHub.PrivateKeyFile, "no App configured, no key mounted")
			},
		},
		{
			name: "GitHub App",
			values: map[string]any{"config": map[string]any{
				"cluster": "prod-eu-1", "repo": map[string]any{"owner": "example-org", "name": "gitops"},
				"github": map[string]any{"appID": 12345, "installationID": 678},
			}},
			check: func(t *testing.T, m manifests, cfg *config.Config) {
				assert.Equal(t, "/etc/kedge/github/private-key.pem", cfg.GitHub.PrivateKeyFile)
				assert.EqualValues(t, 12345, cfg.GitHub.AppID)
				deploy := one[appsv1.Deployment](t, m, "Deployment")
				var secret string
				for _, v := range deploy.Spec.Template.Spec.Volumes {
					if v.Secret != nil {
						secret = v.Secret.SecretName
					}
				}
				assert.Equal(t, "kedge-github-app", secret)
			},
		},
		{
			name:   "plain token from a Secret",
			values: map[string]any{"githubToken": map[string]any{"secretName": "kedge-token"}},
			check: func(t *testing.T, m manifests, cfg *config.Config) {
				assert.Empty(t, cfg.GitHub.Token, "the token is never in the ConfigMap")
				deploy := one[appsv1.Deployment](t, m, "Deployment")
				var ref *corev1.SecretKeySelector
				for _, e := range deploy.Spec.Template.Spec.Containers[0].Env {
					if e.Name == config.EnvName("github.token") {
						ref = e.ValueFrom.SecretKeyRef
					}
				}
				require.NotNil(t, ref)
				assert.Equal(t, "kedge-token", ref.Name)
			},
		},
	}
	base := index(renderKustomize(t, deployDir))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := index(renderChart(t, tc.values))
			checkManifests(t, m)
			cm := one[corev1.ConfigMap](t, m, "ConfigMap")
			tc.check(t, m, loadConfig(t, cm.Data["kedge.yaml"]))

			// Same permissions as the kustomize base.
			assert.Equal(t, one[rbacv1.ClusterRole](t, base, "ClusterRole").Rules, one[rbacv1.ClusterRole](t, m, "ClusterRole").Rules)
			assert.Equal(t, one[rbacv1.Role](t, base, "Role").Rules, one[rbacv1.Role](t, m, "Role").Rules)
		})
	}
}

// flatten lists a YAML mapping's leaves as dotted keys. Maps under keys
// that hold maps by design (reviewers.byNamespace) and lists are leaves.
func flatten(prefix string, v map[string]any, out map[string]any) {
	for k, val := range v {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := val.(map[string]any); ok && key != "reviewers.byNamespace" && key != "images.mirrors" {
			flatten(key, sub, out)
			continue
		}
		out[key] = val
	}
}

// exampleOnly lists the keys config/kedge.example.yaml marks "# example":
// their values illustrate, the chart leaves them for the user to set.
func exampleOnly(t *testing.T, content []byte) map[string]bool {
	t.Helper()
	var doc yamlv3.Node
	require.NoError(t, yamlv3.Unmarshal(content, &doc))
	out := map[string]bool{}
	var walk func(prefix string, n *yamlv3.Node)
	walk = func(prefix string, n *yamlv3.Node) {
		if n.Kind == yamlv3.DocumentNode {
			walk(prefix, n.Content[0])
			return
		}
		if n.Kind != yamlv3.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			if strings.TrimSpace(v.LineComment) == "# example" {
				out[key] = true
			}
			walk(key, v)
		}
	}
	walk("", &doc)
	return out
}

func TestConfigExampleAndChartValuesAgree(t *testing.T) {
	exampleBytes, err := os.ReadFile(configExample)
	require.NoError(t, err)
	var example map[string]any
	require.NoError(t, yaml.Unmarshal(exampleBytes, &example))
	valuesBytes, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	require.NoError(t, err)
	var values struct {
		Config map[string]any `json:"config"`
	}
	require.NoError(t, yaml.Unmarshal(valuesBytes, &values))

	exampleKeys, chartKeys := map[string]any{}, map[string]any{}
	flatten("", example, exampleKeys)
	flatten("", values.Config, chartKeys)
	keysOf := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, config.Keys(), keysOf(exampleKeys), "config/kedge.example.yaml documents every key")
	assert.Equal(t, config.Keys(), keysOf(chartKeys), "the chart's config values hold every key")

	illustrative := exampleOnly(t, exampleBytes)
	require.NotEmpty(t, illustrative)
	for key, want := range exampleKeys {
		if illustrative[key] {
			assert.Empty(t, chartKeys[key], "%s: the chart does not ship the example's value", key)
			continue
		}
		assert.Equal(t, want, chartKeys[key], "%s: the chart's default is the documented one", key)
	}

	// The kustomize base's configuration is one kedge accepts.
	base, err := os.ReadFile(filepath.Join(deployDir, "kedge.yaml"))
	require.NoError(t, err)
	loadConfig(t, string(base))
}

// The rendered manifests are accepted by a real API server, and the pod
// kedge runs in passes the restricted Pod Security Standard, which the
// namespace enforces.
func TestManifestsAreAcceptedByTheAPIServer(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	// The namespace and the ServiceAccount for real, so that admission of
	// the pod below sees them; everything else as a dry run.
	var real []*unstructured.Unstructured
	for _, o := range renderKustomize(t, deployDir) {
		if o.GetKind() == "Namespace" || o.GetKind() == "ServiceAccount" {
			real = append(real, o)
		}
	}
	applyManifests(t, cfg, real)

	ns, err := client.CoreV1().Namespaces().Get(ctx, kedgeNamespace, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])

	c := newClients(t, cfg)
	for name, objs := range map[string][]*unstructured.Unstructured{
		"kustomize": renderKustomize(t, deployDir),
		"helm":      renderChart(t, map[string]any{"config": map[string]any{"github": map[string]any{"appID": 1, "installationID": 2}}}),
	} {
		t.Run(name, func(t *testing.T) {
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					var d appsv1.Deployment
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d))
					pod := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{GenerateName: "kedge-", Namespace: kedgeNamespace, Labels: d.Spec.Template.Labels},
						Spec:       d.Spec.Template.Spec,
					}
					_, err := client.CoreV1().Pods(kedgeNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					require.NoError(t, err, "the pod template passes admission, Pod Security included")
				}
				if o.GetKind() == "Namespace" || o.GetKind() == "ServiceAccount" {
					continue
				}
				o = o.DeepCopy()
				o.SetNamespace(namespaceFor(o))
				_, err := c.resource(t, o).Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				require.NoError(t, err, "%s %s", o.GetKind(), o.GetName())
			}
		})
	}
}

func namespaceFor(o *unstructured.Unstructured) string {
	switch o.GetKind() {
	case "ClusterRole", "ClusterRoleBinding":
		return ""
	}
	return kedgeNamespace
}
