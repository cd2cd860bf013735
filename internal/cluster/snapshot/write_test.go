package snapshot

import (
	"cmp"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata")

// snapshotWriteSet has one object of every kind a snapshot holds, without
// type metadata, as the live source's Set and hand-built sets may have them. The
// ConfigMap value is shaped like Istio's injector config: a block scalar
// with blank lines and indented lines, the part of YAML most easily broken
// by re-indenting.
func snapshotWriteSet() *objects.Set {
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}
	}
	// A template as the live source keeps it (trim.Template): what the
	// injection decision reads.
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kedge.io/restartedAt": "rev-1-24-0"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "registry.example.com/mesh/proxyv2:1.24.3"}}},
	}
	return &objects.Set{
		Namespaces: []corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"istio.io/rev": "1-24-0"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "billing", Labels: map[string]string{"istio-injection": "enabled"}}},
		},
		Pods: objects.Pods(
			corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-1", Annotations: map[string]string{
					"sidecar.istio.io/status": `{"revision":"1-24-0"}`,
				}},
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.24.0"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			},
			corev1.Pod{ObjectMeta: meta("billing", "batch-0")},
		),
		ConfigMaps: []corev1.ConfigMap{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istio-sidecar-injector"},
			Data: map[string]string{
				"values":   `{"global":{"hub":"docker.io/istio","tag":"1.24.0"}}`,
				"config":   "policy: enabled\n\ntemplates:\n  sidecar: |\n    spec:\n\n      containers:\n      - name: istio-proxy\n",
				"indented": "  first line indented\n\nlast\n",
			},
		}},
		ReplicaSets:  []*objects.ReplicaSet{{ObjectMeta: meta("shop", "cart-7d9c8b6f5d")}},
		Deployments:  []*appsv1.Deployment{{ObjectMeta: meta("shop", "cart"), Spec: appsv1.DeploymentSpec{Template: template}}},
		StatefulSets: []*appsv1.StatefulSet{{ObjectMeta: meta("billing", "payments"), Spec: appsv1.StatefulSetSpec{Template: template}}},
		DaemonSets:   []*appsv1.DaemonSet{{ObjectMeta: meta("monitoring", "node-agent"), Spec: appsv1.DaemonSetSpec{Template: template}}},
		Jobs:         []*batchv1.Job{{ObjectMeta: meta("billing", "nightly-29000000")}},
		CronJobs:     []*batchv1.CronJob{{ObjectMeta: meta("billing", "nightly")}},
		MutatingWebhookConfigurations: []admissionregistrationv1.MutatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector", Labels: map[string]string{"istio.io/rev": "default"}},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "rev.namespace.sidecar-injector.istio.io",
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "istio.io/rev", Operator: metav1.LabelSelectorOpIn, Values: []string{"default"}},
				}},
			}},
		}},
		Rollouts: []*objects.Rollout{{ObjectMeta: meta("shop", "checkout"), Spec: objects.RolloutSpec{
			WorkloadRef: &objects.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout"},
		}}},
		Applications: []objects.Application{{ObjectMeta: meta("argocd", "shop"), Spec: objects.ApplicationSpec{
			Project: "team-a",
			Source:  &objects.ApplicationSource{RepoURL: "https://github.com/example/fleet", Path: "apps/shop", TargetRevision: "main"},
		}}},
		Kustomizations: []objects.Kustomization{{
			// A resource that names its version keeps it.
			TypeMeta:   metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1beta2", Kind: "Kustomization"},
			ObjectMeta: meta("flux-system", "shop"),
			Spec:       objects.KustomizationSpec{Path: "./apps/shop", SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: "fleet"}},
		}},
		GitRepositories: []objects.GitRepository{{ObjectMeta: meta("flux-system", "fleet"), Spec: objects.GitRepositorySpec{
			URL: "https://github.com/example/fleet", Ref: &objects.GitRepositoryRef{Branch: "main"},
		}}},
		HelmRepositories: []objects.HelmRepository{
			{ObjectMeta: meta("flux-system", "charts"), Spec: objects.HelmRepositorySpec{URL: "https://charts.example.com"}},
			{ObjectMeta: meta("flux-system", "registry"), Spec: objects.HelmRepositorySpec{URL: "oci://registry.example.com/charts", Type: "oci"}},
		},
		ProxyConfigs: []objects.ProxyConfig{
			{ObjectMeta: meta("istio-system", "mesh-wide"), Spec: objects.ProxyConfigSpec{Image: &objects.ProxyImage{ImageType: "distroless"}}},
			// An empty selector differs from none and must stay empty.
			{ObjectMeta: meta("shop", "nothing"), Spec: objects.ProxyConfigSpec{Selector: &objects.WorkloadSelector{}}},
		},
		Canaries: []objects.Canary{{ObjectMeta: meta("shop", "cart"), Spec: objects.CanarySpec{
			TargetRef: objects.CanaryTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "cart"},
		}}},
		Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}},
		AuthorizationPolicies: []objects.AuthorizationPolicy{{ObjectMeta: meta("shop", "get-only"), Spec: objects.AuthorizationPolicySpec{
			Rules: []objects.AuthorizationRule{{To: []objects.RuleTo{{Operation: objects.RuleOperation{Methods: []string{"GET"}}}}}},
		}}},
		Gateways: []objects.Gateway{{ObjectMeta: meta("shop", "waypoint"), Spec: objects.GatewaySpec{GatewayClassName: "istio-waypoint"},
			Status: objects.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"}}}}},
		OCIRepositories: []objects.OCIRepository{{ObjectMeta: meta("flux-system", "podinfo"), Spec: objects.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts/podinfo"}}},
		AppProjects: []objects.AppProject{{ObjectMeta: meta("argocd", "team-a"), Spec: objects.AppProjectSpec{
			SourceRepos: []string{"https://charts.example.com/*", "!https://charts.example.com/private/*"},
		}}},
		PeerAuthentications: []objects.PeerAuthentication{{ObjectMeta: meta("shop", "legacy"), Spec: objects.PeerAuthenticationSpec{
			Mtls: &objects.MutualTLS{Mode: "STRICT"}, PortLevelMtls: map[string]objects.MutualTLS{"9090": {Mode: "DISABLE"}},
		}}},
		RequestAuthentications: []objects.RequestAuthentication{{ObjectMeta: meta("shop", "jwt"), Spec: objects.AttachedPolicySpec{
			TargetRefs: []objects.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "waypoint"}},
		}}},
		EnvoyFilters: []objects.EnvoyFilter{{ObjectMeta: meta("shop", "lua"), Spec: objects.EnvoyFilterSpec{
			ConfigPatches: []objects.EnvoyConfigPatch{{ApplyTo: "HTTP_FILTER", Match: &objects.EnvoyPatchMatch{Context: "SIDECAR_INBOUND"}}},
		}}},
		WasmPlugins: []objects.WasmPlugin{{ObjectMeta: meta("shop", "headers"), Spec: objects.AttachedPolicySpec{
			Selector: &objects.WorkloadSelector{MatchLabels: map[string]string{"app": "cart"}},
		}}},
		VirtualServices: []objects.VirtualService{{ObjectMeta: meta("shop", "cart"), Spec: objects.VirtualServiceSpec{Hosts: []string{"cart"}}}},
		HTTPRoutes: []objects.HTTPRoute{{ObjectMeta: meta("shop", "cart"), Spec: objects.HTTPRouteSpec{
			ParentRefs: []objects.ParentReference{{Group: new(string), Kind: ptr("Service"), Name: "cart"}},
		}}},
		Services: []corev1.Service{{ObjectMeta: meta("shop", "cart"), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "cart"}, ClusterIP: "10.0.0.7"}}},
	}
}

func ptr[T any](v T) *T { return &v }

// withTypeMeta returns what reading a written set back must give: every
// object with its apiVersion and kind, in namespace/name order.
func withTypeMeta(set *objects.Set) *objects.Set {
	tm := func(apiVersion, kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
	}
	out := &objects.Set{}
	for _, o := range set.Namespaces {
		o.TypeMeta = tm("v1", "Namespace")
		out.Namespaces = append(out.Namespaces, o)
	}
	sortByKey(out.Namespaces, func(n *corev1.Namespace) *metav1.ObjectMeta { return &n.ObjectMeta })
	out.Pods = slices.SortedFunc(slices.Values(set.Pods), func(a, b *objects.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, o := range set.ConfigMaps {
		o.TypeMeta = tm("v1", "ConfigMap")
		out.ConfigMaps = append(out.ConfigMaps, o)
	}
	for _, o := range set.ReplicaSets {
		c := *o
		c.TypeMeta = tm("apps/v1", "ReplicaSet")
		out.ReplicaSets = append(out.ReplicaSets, &c)
	}
	for _, o := range set.Deployments {
		c := *o
		c.TypeMeta = tm("apps/v1", "Deployment")
		out.Deployments = append(out.Deployments, &c)
	}
	for _, o := range set.StatefulSets {
		c := *o
		c.TypeMeta = tm("apps/v1", "StatefulSet")
		out.StatefulSets = append(out.StatefulSets, &c)
	}
	for _, o := range set.DaemonSets {
		c := *o
		c.TypeMeta = tm("apps/v1", "DaemonSet")
		out.DaemonSets = append(out.DaemonSets, &c)
	}
	for _, o := range set.Jobs {
		c := *o
		c.TypeMeta = tm("batch/v1", "Job")
		out.Jobs = append(out.Jobs, &c)
	}
	for _, o := range set.CronJobs {
		c := *o
		c.TypeMeta = tm("batch/v1", "CronJob")
		out.CronJobs = append(out.CronJobs, &c)
	}
	for _, o := range set.MutatingWebhookConfigurations {
		o.TypeMeta = tm("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
		out.MutatingWebhookConfigurations = append(out.MutatingWebhookConfigurations, o)
	}
	for _, o := range set.Rollouts {
		c := *o
		c.TypeMeta = tm("argoproj.io/v1alpha1", "Rollout")
		out.Rollouts = append(out.Rollouts, &c)
	}
	for _, o := range set.Applications {
		o.TypeMeta = tm("argoproj.io/v1alpha1", "Application")
		out.Applications = append(out.Applications, o)
	}
	out.Kustomizations = append(out.Kustomizations, set.Kustomizations...)
	for _, o := range set.GitRepositories {
		o.TypeMeta = tm("source.toolkit.fluxcd.io/v1", "GitRepository")
		out.GitRepositories = append(out.GitRepositories, o)
	}
	for _, o := range set.HelmRepositories {
		o.TypeMeta = tm("source.toolkit.fluxcd.io/v1", "HelmRepository")
		out.HelmRepositories = append(out.HelmRepositories, o)
	}
	for _, o := range set.ProxyConfigs {
		o.TypeMeta = tm("networking.istio.io/v1beta1", "ProxyConfig")
		out.ProxyConfigs = append(out.ProxyConfigs, o)
	}
	for _, o := range set.Canaries {
		o.TypeMeta = tm("flagger.app/v1beta1", "Canary")
		out.Canaries = append(out.Canaries, o)
	}
	for _, o := range set.Nodes {
		o.TypeMeta = tm("v1", "Node")
		out.Nodes = append(out.Nodes, o)
	}
	for _, o := range set.AuthorizationPolicies {
		o.TypeMeta = tm("security.istio.io/v1", "AuthorizationPolicy")
		out.AuthorizationPolicies = append(out.AuthorizationPolicies, o)
	}
	for _, o := range set.Gateways {
		o.TypeMeta = tm("gateway.networking.k8s.io/v1", "Gateway")
		out.Gateways = append(out.Gateways, o)
	}
	for _, o := range set.OCIRepositories {
		o.TypeMeta = tm("source.toolkit.fluxcd.io/v1", "OCIRepository")
		out.OCIRepositories = append(out.OCIRepositories, o)
	}
	for _, o := range set.AppProjects {
		o.TypeMeta = tm("argoproj.io/v1alpha1", "AppProject")
		out.AppProjects = append(out.AppProjects, o)
	}
	for _, o := range set.PeerAuthentications {
		o.TypeMeta = tm("security.istio.io/v1", "PeerAuthentication")
		out.PeerAuthentications = append(out.PeerAuthentications, o)
	}
	for _, o := range set.RequestAuthentications {
		o.TypeMeta = tm("security.istio.io/v1", "RequestAuthentication")
		out.RequestAuthentications = append(out.RequestAuthentications, o)
	}
	for _, o := range set.EnvoyFilters {
		o.TypeMeta = tm("networking.istio.io/v1alpha3", "EnvoyFilter")
		out.EnvoyFilters = append(out.EnvoyFilters, o)
	}
	for _, o := range set.WasmPlugins {
		o.TypeMeta = tm("extensions.istio.io/v1alpha1", "WasmPlugin")
		out.WasmPlugins = append(out.WasmPlugins, o)
	}
	for _, o := range set.VirtualServices {
		o.TypeMeta = tm("networking.istio.io/v1", "VirtualService")
		out.VirtualServices = append(out.VirtualServices, o)
	}
	for _, o := range set.HTTPRoutes {
		o.TypeMeta = tm("gateway.networking.k8s.io/v1", "HTTPRoute")
		out.HTTPRoutes = append(out.HTTPRoutes, o)
	}
	for _, o := range set.Services {
		o.TypeMeta = tm("v1", "Service")
		out.Services = append(out.Services, o)
	}
	return out
}

func TestWriteSnapshotRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		set  *objects.Set
	}{
		{name: "every kind", set: snapshotWriteSet()},
		{name: "empty set", set: &objects.Set{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, Write(tc.set, dir))

			got, err := Read(dir)
			require.NoError(t, err)
			assert.Equal(t, withTypeMeta(tc.set), got)

			files, err := filepath.Glob(filepath.Join(dir, "*"))
			require.NoError(t, err)
			assert.Len(t, files, 29, "one file per kind, and no temporary files left")
		})
	}
}

func TestWriteSnapshotLeavesTheSetAlone(t *testing.T) {
	set := snapshotWriteSet()
	before := snapshotWriteSet()
	require.NoError(t, Write(set, t.TempDir()))
	assert.Equal(t, before, set)
}

// A snapshot written over an older one must not keep the older one's
// objects of kinds the new set lacks.
func TestWriteSnapshotReplacesOlderFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(snapshotWriteSet(), dir))
	require.NoError(t, Write(&objects.Set{Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "only"}}}}, dir))

	got, err := Read(dir)
	require.NoError(t, err)
	require.Len(t, got.Namespaces, 1)
	assert.Equal(t, "only", got.Namespaces[0].Name)
	assert.Empty(t, got.Pods)
	assert.Empty(t, got.Rollouts)
	assert.Empty(t, got.Kustomizations)
}

// TestWriteSnapshotFormat pins the file format against a golden file, so a
// change in what kubectl-compatible tooling would see is deliberate.
func TestWriteSnapshotFormat(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Write(snapshotWriteSet(), dir))
	for _, name := range []string{"pods.yaml", "configmaps.yaml", "kustomizations.yaml"} {
		t.Run(name, func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			golden := filepath.Join("testdata", "snapshot-write", name)
			if *updateGolden {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

func TestWriteSnapshotErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	cases := []struct {
		name string
		set  *objects.Set
		dir  string
	}{
		{name: "nil set", set: nil, dir: t.TempDir()},
		{name: "directory is a file", set: &objects.Set{}, dir: file},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Error(t, Write(tc.set, tc.dir))
		})
	}
}

func sortByKey[T any](items []T, meta func(*T) *metav1.ObjectMeta) {
	slices.SortFunc(items, func(a, b T) int {
		ma, mb := meta(&a), meta(&b)
		return cmp.Or(cmp.Compare(ma.Namespace, mb.Namespace), cmp.Compare(ma.Name, mb.Name))
	})
}
