package snapshot

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/objects"
)

// snapshotFile is one kind of a snapshot: its file name, the apiVersion and
// kind written on items that carry none, and the items.
type snapshotFile struct {
	name       string
	apiVersion string
	kind       string
	items      []snapshotItem
}

// snapshotItem is a pointer to one object of a Set with its type metadata.
type snapshotItem interface {
	GetNamespace() string
	GetName() string
	GetObjectKind() schema.ObjectKind
}

// Write writes set to dir in the snapshot format Read reads:
// one `kind: List` file per kind, every item with apiVersion and kind, items
// sorted by namespace and name. Every kind gets a file, even an empty one, so
// a file left from an earlier snapshot in dir is always replaced.
func Write(set *objects.Set, dir string) error {
	if set == nil {
		return errors.New("write snapshot: no objects")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	files := []snapshotFile{
		{"namespaces.yaml", "v1", "Namespace", items(set.Namespaces)},
		{"pods.yaml", "v1", "Pod", writtenPods(set.Pods)},
		{"configmaps.yaml", "v1", "ConfigMap", items(set.ConfigMaps)},
		{"replicasets.yaml", "apps/v1", "ReplicaSet", pointed(set.ReplicaSets)},
		{"deployments.yaml", "apps/v1", "Deployment", pointed(set.Deployments)},
		{"statefulsets.yaml", "apps/v1", "StatefulSet", pointed(set.StatefulSets)},
		{"daemonsets.yaml", "apps/v1", "DaemonSet", pointed(set.DaemonSets)},
		{"jobs.yaml", "batch/v1", "Job", pointed(set.Jobs)},
		{"cronjobs.yaml", "batch/v1", "CronJob", pointed(set.CronJobs)},
		{"mutatingwebhookconfigurations.yaml", "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", items(set.MutatingWebhookConfigurations)},
		{"rollouts.yaml", "argoproj.io/v1alpha1", "Rollout", pointed(set.Rollouts)},
		{"applications.yaml", "argoproj.io/v1alpha1", "Application", items(set.Applications)},
		{"kustomizations.yaml", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", items(set.Kustomizations)},
		{"gitrepositories.yaml", "source.toolkit.fluxcd.io/v1", "GitRepository", items(set.GitRepositories)},
		{"helmrepositories.yaml", "source.toolkit.fluxcd.io/v1", "HelmRepository", items(set.HelmRepositories)},
		{"proxyconfigs.yaml", "networking.istio.io/v1beta1", "ProxyConfig", items(set.ProxyConfigs)},
		{"canaries.yaml", "flagger.app/v1beta1", "Canary", items(set.Canaries)},
		{"nodes.yaml", "v1", "Node", items(set.Nodes)},
		{"authorizationpolicies.yaml", "security.istio.io/v1", "AuthorizationPolicy", items(set.AuthorizationPolicies)},
		{"gateways.yaml", "gateway.networking.k8s.io/v1", "Gateway", items(set.Gateways)},
		{"ocirepositories.yaml", "source.toolkit.fluxcd.io/v1", "OCIRepository", items(set.OCIRepositories)},
		{"appprojects.yaml", "argoproj.io/v1alpha1", "AppProject", items(set.AppProjects)},
		{"peerauthentications.yaml", "security.istio.io/v1", "PeerAuthentication", items(set.PeerAuthentications)},
		{"requestauthentications.yaml", "security.istio.io/v1", "RequestAuthentication", items(set.RequestAuthentications)},
		{"envoyfilters.yaml", "networking.istio.io/v1alpha3", "EnvoyFilter", items(set.EnvoyFilters)},
		{"wasmplugins.yaml", "extensions.istio.io/v1alpha1", "WasmPlugin", items(set.WasmPlugins)},
		{"virtualservices.yaml", "networking.istio.io/v1", "VirtualService", items(set.VirtualServices)},
		{"httproutes.yaml", "gateway.networking.k8s.io/v1", "HTTPRoute", items(set.HTTPRoutes)},
		{"services.yaml", "v1", "Service", items(set.Services)},
	}
	for _, f := range files {
		if err := f.write(dir); err != nil {
			return fmt.Errorf("write snapshot %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

// items points at every element of objs, in namespace/name order, without
// reordering the caller's slice.
func items[T any, P interface {
	*T
	snapshotItem
}](objs []T) []snapshotItem {
	out := make([]snapshotItem, len(objs))
	for i := range objs {
		out[i] = P(&objs[i])
	}
	return sortedItems(out)
}

// pointed is items for the kinds a Set points at.
func pointed[T any, P interface {
	*T
	snapshotItem
}](objs []*T) []snapshotItem {
	out := make([]snapshotItem, len(objs))
	for i, o := range objs {
		out[i] = P(o)
	}
	return sortedItems(out)
}

func sortedItems(out []snapshotItem) []snapshotItem {
	slices.SortStableFunc(out, func(a, b snapshotItem) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out
}

// writtenPod writes a pod as the API spells one, a pod at a time, so writing
// a large cluster never holds a full corev1.Pod for each of its pods.
type writtenPod objects.Pod

func writtenPods(pods []*objects.Pod) []snapshotItem {
	out := make([]snapshotItem, len(pods))
	for i, p := range pods {
		out[i] = (*writtenPod)(p)
	}
	return sortedItems(out)
}

func (p *writtenPod) GetNamespace() string { return p.Namespace }
func (p *writtenPod) GetName() string      { return p.Name }

func (p *writtenPod) GetObjectKind() schema.ObjectKind {
	return &metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
}

func (p *writtenPod) MarshalJSON() ([]byte, error) {
	return json.Marshal((*objects.Pod)(p).CoreV1())
}

// write streams the file item by item, so a large cluster never needs the
// whole document in memory, and renames it into place so a reader never
// sees half a file.
func (f snapshotFile) write(dir string) (err error) {
	tmp, err := os.CreateTemp(dir, "."+f.name+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	fmt.Fprintf(w, "apiVersion: v1\nkind: List\n")
	if len(f.items) == 0 {
		fmt.Fprintf(w, "items: []\n")
	} else {
		fmt.Fprintf(w, "items:\n")
	}
	gvk := schema.FromAPIVersionAndKind(f.apiVersion, f.kind)
	for _, item := range f.items {
		doc, err := marshalItem(item, gvk)
		if err != nil {
			return fmt.Errorf("%s %s: %w", f.kind, key(item), err)
		}
		writeListItem(w, doc)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, f.name))
}

// marshalItem renders one object as YAML with its apiVersion and kind,
// keeping what the object already names (a Flux v1beta2 resource stays
// v1beta2). The object is only read: a Set may be shared.
func marshalItem(item snapshotItem, fallback schema.GroupVersionKind) ([]byte, error) {
	raw, err := json.Marshal(item)
	if err != nil {
		return nil, err
	}
	var typeMeta metav1.TypeMeta
	if tm, ok := item.GetObjectKind().(*metav1.TypeMeta); ok {
		typeMeta = *tm
	}
	// Empty type fields are omitted from the JSON, so the missing ones can
	// be put in front without duplicating a key.
	var head []string
	if typeMeta.APIVersion == "" {
		head = append(head, fmt.Sprintf("%q:%q", "apiVersion", fallback.GroupVersion().String()))
	}
	if typeMeta.Kind == "" {
		head = append(head, fmt.Sprintf("%q:%q", "kind", fallback.Kind))
	}
	if len(head) > 0 {
		body := bytes.TrimSpace(raw[1:])
		sep := ","
		if bytes.Equal(body, []byte("}")) {
			sep = ""
		}
		raw = slices.Concat([]byte("{"), []byte(strings.Join(head, ",")), []byte(sep), body)
	}
	return yaml.JSONToYAML(raw)
}

// writeListItem writes one YAML mapping as an element of a block sequence.
// Shifting every line by the same amount keeps block scalars (a ConfigMap's
// multi-line values) intact; empty lines stay empty.
func writeListItem(w *bufio.Writer, doc []byte) {
	lines := bytes.Split(bytes.TrimRight(doc, "\n"), []byte("\n"))
	for i, line := range lines {
		switch {
		case i == 0:
			w.WriteString("- ")
		case len(line) > 0:
			w.WriteString("  ")
		}
		w.Write(line)
		w.WriteByte('\n')
	}
}

func key(item snapshotItem) string {
	if item.GetNamespace() == "" {
		return item.GetName()
	}
	return item.GetNamespace() + "/" + item.GetName()
}
