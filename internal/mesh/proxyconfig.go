package mesh

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kedge-io/kedge/internal/objects"
)

// defaultRootNamespace is Istio's mesh config default for rootNamespace
// (pkg/config/mesh/mesh.go DefaultMeshConfig).
const defaultRootNamespace = "istio-system"

// proxyConfigResource is one networking.istio.io ProxyConfig, reduced to
// what decides a proxy's image type.
type proxyConfigResource struct {
	// revision is the object's istio.io/rev label: "" when every istiod
	// reads it, otherwise only the istiod of that revision does.
	revision string
	// namespaceWide is true when spec.selector is absent.
	namespaceWide bool
	// selector is spec.selector.matchLabels; nil when it selects nothing.
	selector  labels.Selector
	imageType string
}

// addProxyConfigs keeps the ProxyConfigs per namespace in the order istiod
// consults them: oldest first, then by name and namespace
// (pilot/pkg/model/config.go sortConfigByCreationTime), because the first
// match of each level wins.
func (m *Model) addProxyConfigs(pcs []objects.ProxyConfig) {
	sorted := make([]*objects.ProxyConfig, 0, len(pcs))
	for i := range pcs {
		sorted = append(sorted, &pcs[i])
	}
	slices.SortFunc(sorted, func(a, b *objects.ProxyConfig) int {
		return cmp.Or(
			a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Namespace, b.Namespace),
		)
	})
	m.proxyConfigs = map[string][]proxyConfigResource{}
	for _, pc := range sorted {
		r := proxyConfigResource{revision: pc.Labels[LabelRev], namespaceWide: pc.Spec.Selector == nil}
		if sel := pc.Spec.Selector; sel != nil && len(sel.MatchLabels) > 0 {
			r.selector = labels.SelectorFromSet(sel.MatchLabels)
		}
		if pc.Spec.Image != nil {
			r.imageType = pc.Spec.Image.ImageType
		}
		m.proxyConfigs[pc.Namespace] = append(m.proxyConfigs[pc.Namespace], r)
	}
}

// readBy follows istiod's config filter (pkg/config/model.go
// LabelsInRevision): an unlabelled object is everyone's, a labelled one
// only its revision's.
func (r *proxyConfigResource) readBy(revision string) bool {
	return r.revision == "" || r.revision == revision
}

// namespaceImageType is the image type of the first namespace-wide
// ProxyConfig the revision reads in namespace (pilot/pkg/model/
// proxy_config.go mergedNamespaceConfig). Later ones are not merged in,
// even when the first leaves the image unset.
func (m *Model) namespaceImageType(revision, namespace string) string {
	for i := range m.proxyConfigs[namespace] {
		r := &m.proxyConfigs[namespace][i]
		if r.namespaceWide && r.readBy(revision) {
			return r.imageType
		}
	}
	return ""
}

// workloadImageType is the image type of the first ProxyConfig in the pod's
// namespace whose matchLabels the pod carries (mergedWorkloadConfig).
func (m *Model) workloadImageType(revision, namespace string, podLabels map[string]string) string {
	set := labels.Set(podLabels)
	for i := range m.proxyConfigs[namespace] {
		r := &m.proxyConfigs[namespace][i]
		if r.selector != nil && r.readBy(revision) && r.selector.Matches(set) {
			return r.imageType
		}
	}
	return ""
}

// proxyConfigImageType is image.imageType of the ProxyConfig istiod
// computes for a pod (pilot/pkg/model/proxy_config.go EffectiveProxyConfig,
// which the injector asks for in pkg/kube/inject/webhook.go inject):
// highest first, a workload-selecting ProxyConfig, the pod's
// proxy.istio.io/config annotation, the namespace's ProxyConfig (outside the
// root namespace), the root namespace's, then the mesh config's
// defaultConfig. An empty image type at one level leaves the lower one in
// force, as the proto merge does. "" means none is set.
func (m *Model) proxyConfigImageType(rc *revisionConfig, namespace string, t Template) string {
	if it := m.workloadImageType(rc.name, namespace, t.Labels); it != "" {
		return it
	}
	if it := annotatedImageType(t.Annotations); it != "" {
		return it
	}
	root := rc.rootNamespace()
	if namespace != root {
		if it := m.namespaceImageType(rc.name, namespace); it != "" {
			return it
		}
	}
	if root != "" {
		if it := m.namespaceImageType(rc.name, root); it != "" {
			return it
		}
	}
	return rc.defaultImageType()
}
