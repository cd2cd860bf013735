package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

// names flattens a set into "Kind ns/name" strings so cases can state what
// they expect in one line.
func names(set *objects.Set) []string {
	var out []string
	add := func(kind, ns, name string) { out = append(out, kind+" "+ns+"/"+name) }
	for _, o := range set.Namespaces {
		add("Namespace", o.Namespace, o.Name)
	}
	for _, o := range set.Pods {
		add("Pod", o.Namespace, o.Name)
	}
	for _, o := range set.ConfigMaps {
		add("ConfigMap", o.Namespace, o.Name)
	}
	for _, o := range set.ReplicaSets {
		add("ReplicaSet", o.Namespace, o.Name)
	}
	for _, o := range set.Deployments {
		add("Deployment", o.Namespace, o.Name)
	}
	for _, o := range set.StatefulSets {
		add("StatefulSet", o.Namespace, o.Name)
	}
	for _, o := range set.DaemonSets {
		add("DaemonSet", o.Namespace, o.Name)
	}
	for _, o := range set.Jobs {
		add("Job", o.Namespace, o.Name)
	}
	for _, o := range set.CronJobs {
		add("CronJob", o.Namespace, o.Name)
	}
	for _, o := range set.Rollouts {
		add("Rollout", o.Namespace, o.Name)
	}
	for _, o := range set.MutatingWebhookConfigurations {
		add("MutatingWebhookConfiguration", o.Namespace, o.Name)
	}
	for _, o := range set.Applications {
		add("Application", o.Namespace, o.Name)
	}
	for _, o := range set.Kustomizations {
		add("Kustomization", o.Namespace, o.Name)
	}
	for _, o := range set.GitRepositories {
		add("GitRepository", o.Namespace, o.Name)
	}
	for _, o := range set.ProxyConfigs {
		add("ProxyConfig", o.Namespace, o.Name)
	}
	return out
}

func TestReadSnapshot(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "single object",
			files: map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"},
			want:  []string{"Namespace /shop"},
		},
		{
			name:  "multi-document stream with comments, empty documents and CRLF",
			files: map[string]string{"all.yml": "# header\r\n---\r\napiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: a\r\n  namespace: shop\r\n---\r\n# only a comment\r\n---\r\napiVersion: apps/v1\r\nkind: Deployment\r\nmetadata:\r\n  name: cart\r\n  namespace: shop\r\n"},
			want:  []string{"Pod shop/a", "Deployment shop/cart"},
		},
		{
			name: "kubectl List",
			files: map[string]string{"pods.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a, namespace: shop}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: cart-5d8f, namespace: shop}
metadata:
  resourceVersion: ""
`},
			want: []string{"Pod shop/a", "ReplicaSet shop/cart-5d8f"},
		},
		{
			name: "JSON object and typed list",
			files: map[string]string{
				"cm.json":   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"istio-sidecar-injector","namespace":"istio-system"}}`,
				"jobs.json": `{"apiVersion":"batch/v1","kind":"JobList","items":[{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"batch"}}]}`,
			},
			want: []string{"ConfigMap istio-system/istio-sidecar-injector", "Job batch/j"},
		},
		{
			name: "recursive with CRDs, BOM, and unknown kinds ignored",
			files: map[string]string{
				"a/b/rollout.yaml": "\xef\xbb\xbfapiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, namespace: shop}\nspec:\n  template:\n    metadata:\n      labels: {app: r}\n",
				"a/flux.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [a.yaml]
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: "https://github.com/example-org/gitops", ref: {branch: main}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd}
spec: {source: {repoURL: "https://github.com/example-org/gitops", path: apps/shop}}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: debug, namespace: shop}
spec: {selector: {matchLabels: {app: cart}}, image: {imageType: debug}}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop}
`,
				"mwc.yaml":  "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: istio-sidecar-injector}\n",
				"notes.txt": "not read",
				"sts.yaml":  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: data}\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: data}\n---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: data}\n",
			},
			want: []string{"StatefulSet data/db", "DaemonSet data/agent", "CronJob data/nightly", "Rollout shop/r",
				"MutatingWebhookConfiguration /istio-sidecar-injector", "Application argocd/shop",
				"Kustomization flux-system/apps", "GitRepository flux-system/flux-system", "ProxyConfig shop/debug"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Read(writeTree(t, tt.files))
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.want, names(set))
		})
	}
}

func TestReadSnapshotKeepsFieldsKedgeReads(t *testing.T) {
	dir := writeTree(t, map[string]string{"pod.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: cart-1
  namespace: shop
  annotations:
    sidecar.istio.io/status: '{"containers":["istio-proxy"],"revision":"1-24-0"}'
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: cart-5d8f, uid: u1, controller: true}
spec:
  hostNetwork: true
  initContainers:
  - {name: istio-proxy, image: "docker.io/istio/proxyv2:1.24.0", restartPolicy: Always}
  containers:
  - {name: app, image: shop/cart:1}
status: {phase: Running}
`})
	set, err := Read(dir)
	require.NoError(t, err)
	require.Len(t, set.Pods, 1)
	pod := set.Pods[0]
	assert.Equal(t, `{"containers":["istio-proxy"],"revision":"1-24-0"}`, pod.Annotations["sidecar.istio.io/status"])
	assert.Equal(t, "cart-5d8f", pod.OwnerReferences[0].Name)
	assert.True(t, pod.HostNetwork)
	require.NotNil(t, pod.Proxy)
	assert.True(t, pod.Proxy.Native, "restartPolicy Always")
	assert.Equal(t, "Running", string(pod.Phase))
}

func TestReadSnapshotErrorsNameFileAndDocument(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{
			name:    "malformed YAML in the second document",
			files:   map[string]string{"dir/bad.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: [unclosed\n"},
			wantErr: "snapshot dir/bad.yaml: document 2:",
		},
		{
			name:    "wrong field type",
			files:   map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: 3}\n"},
			wantErr: "snapshot pod.yaml: document 1: Pod:",
		},
		{
			name:    "document without kind",
			files:   map[string]string{"x.yaml": "metadata: {name: a}\n"},
			wantErr: "snapshot x.yaml: document 1: object has no kind",
		},
		{
			name:    "scalar document",
			files:   map[string]string{"x.yaml": "just text\n"},
			wantErr: "snapshot x.yaml: document 1: not an object",
		},
		{
			name:    "bad item in a List",
			files:   map[string]string{"l.json": `{"kind":"List","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":1}}]}`},
			wantErr: "snapshot l.json: document 1: items[0]: Pod:",
		},
		{
			name:    "truncated JSON",
			files:   map[string]string{"t.json": `{"kind":"Pod",`},
			wantErr: "snapshot t.json: document 1:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(writeTree(t, tt.files))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestBadSnapshotAliasesAreRefusedUnexpanded: a List whose aliases nest
// ("billion laughs") is refused by the alias budget before any decoder
// expands it, whether the file is read whole or streamed item by item.
func TestBadSnapshotAliasesAreRefusedUnexpanded(t *testing.T) {
	laughs := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data:\n" +
		"    a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		prev := string(rune('a' + i))
		laughs += "    " + name + ": &" + name + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", ") + "]\n"
	}
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			if streamed {
				old := streamThreshold
				streamThreshold = 0
				defer func() { streamThreshold = old }()
			}
			_, err := Read(writeTree(t, map[string]string{"shop/laughs.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n" + laughs}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "snapshot shop/laughs.yaml: document 2: excessive aliasing")
			assert.True(t, yamlguard.IsOverBudget(err))
		})
	}
}

func TestReadSnapshotRejectsMissingDirectory(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "absent")
}
