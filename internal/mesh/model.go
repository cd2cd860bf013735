// Package mesh models what Istio's control plane would inject into a pod
// created now: which revision's injector webhook answers, whether the
// injector agrees to inject, and which proxy image it would write.
//
// The model is built from the cluster's MutatingWebhookConfigurations and
// the injector ConfigMaps only. It answers by evaluating the webhooks'
// selectors the way the API server does, so revision tags, deactivated
// webhooks and label precedence follow from the objects themselves rather
// than from a re-statement of Istio's rules.
package mesh

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kedge-io/kedge/internal/objects"
)

// Label, annotation and name conventions Istio uses.
const (
	LabelRev           = "istio.io/rev"
	LabelTag           = "istio.io/tag"
	LabelInjection     = "istio-injection"
	LabelSidecarInject = "sidecar.istio.io/inject"
	LabelDataplaneMode = "istio.io/dataplane-mode"
	// LabelGatewayManaged marks workloads istiod's gateway controller renders
	// and rolls itself (Gateway API gateways, waypoints).
	LabelGatewayManaged = "gateway.istio.io/managed"

	AnnotationSidecarInject  = "sidecar.istio.io/inject"
	AnnotationStatus         = "sidecar.istio.io/status"
	AnnotationRev            = "istio.io/rev"
	AnnotationProxyImage     = "sidecar.istio.io/proxyImage"
	AnnotationProxyImageType = "sidecar.istio.io/proxyImageType"
	AnnotationProxyConfig    = "proxy.istio.io/config"
	// AnnotationOverrides records, on an injected pod, the containers its
	// template defined that the injector laid over its own.
	AnnotationOverrides = "proxy.istio.io/overrides"

	// LabelNamespaceName is set by the API server on every namespace and is
	// what namespace selectors see even when a stored object lacks it.
	LabelNamespaceName = "kubernetes.io/metadata.name"

	// DefaultRevision names the unnamed revision.
	DefaultRevision = "default"
	// DataplaneAmbient is the istio.io/dataplane-mode value enrolling pods in
	// ambient mode.
	DataplaneAmbient = "ambient"
	// ProxyContainerName is the container the injector adds.
	ProxyContainerName = "istio-proxy"
	// autoImage in a template's own istio-proxy container leaves the image
	// to the injector (pkg/kube/inject/webhook.go AutoImage).
	autoImage = "auto"

	injectorWebhookSuffix = "sidecar-injector.istio.io"
	injectorConfigMapName = "istio-sidecar-injector"
	meshConfigMapName     = "istio"
)

// Revision is one control-plane revision that has an injector webhook, an
// injector ConfigMap, or both.
type Revision struct {
	Name string
	// Tags are the revision tags pointing at this revision, sorted.
	Tags []string
	// Image is the proxy image a pod without image annotations gets, mesh-wide
	// ProxyConfigs applied (namespace and workload ones may differ); "" when
	// the revision's injector ConfigMap is absent or unreadable.
	Image string
	// HasWebhooks is true when at least one injector webhook belongs to the
	// revision (deactivated ones included).
	HasWebhooks bool
	// ConfigMap is the namespace/name of the injector ConfigMap read.
	ConfigMap string
	// Policy is the injector's `config` policy; "" when unknown.
	Policy string
}

// Model is the mesh's injection configuration. It is immutable once built
// and safe for concurrent use.
type Model struct {
	webhooks  []webhook
	revisions map[string]*revisionConfig
	tags      map[string]string
	// proxyConfigs are the ProxyConfig resources by namespace, in the
	// order istiod consults them.
	proxyConfigs map[string][]proxyConfigResource
	warnings     []string
}

type webhook struct {
	config            string
	name              string
	revision          string
	namespaceSelector labels.Selector
	objectSelector    labels.Selector
}

// revisionConfig is what the injector of one revision would apply.
type revisionConfig struct {
	name        string
	hasWebhooks bool
	configMap   string
	// values is nil when no injector ConfigMap was found or it is unreadable.
	values *injectorValues
	// tag is values.global.tag rendered once.
	tag string
	// meshImageType is meshConfig.defaultConfig.image.imageType.
	meshImageType string
	// meshRootNamespace is meshConfig.rootNamespace.
	meshRootNamespace string
	hasMeshConfig     bool
	// hasConfig is false when the `config` key is absent or unreadable.
	hasConfig bool
	policy    string
	never     []labels.Selector
	always    []labels.Selector
}

// New builds the model. Objects that are not Istio injector objects are
// ignored; malformed ones are reported by Warnings and treated as absent.
// The ProxyConfig resources set the proxy image type per mesh, namespace or
// workload.
func New(configs []admissionregistrationv1.MutatingWebhookConfiguration, configMaps []corev1.ConfigMap, proxyConfigs ...objects.ProxyConfig) *Model {
	m := &Model{
		revisions: map[string]*revisionConfig{},
		tags:      map[string]string{},
	}
	sorted := make([]*admissionregistrationv1.MutatingWebhookConfiguration, 0, len(configs))
	for i := range configs {
		sorted = append(sorted, &configs[i])
	}
	// The API server calls configurations in name order; keeping that order
	// makes warnings and webhook listings stable.
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, mwc := range sorted {
		m.addWebhookConfiguration(mwc)
	}
	m.addConfigMaps(configMaps)
	m.addProxyConfigs(proxyConfigs)
	return m
}

func (m *Model) warnf(format string, args ...any) {
	m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
}

func (m *Model) revision(name string) *revisionConfig {
	r, ok := m.revisions[name]
	if !ok {
		r = &revisionConfig{name: name}
		m.revisions[name] = r
	}
	return r
}

// IsInjectorWebhook reports whether a webhook is one of Istio's sidecar
// injector webhooks (rev.namespace., rev.object., namespace., object.,
// auto. prefixes).
func IsInjectorWebhook(name string) bool {
	return strings.HasSuffix(name, injectorWebhookSuffix)
}

func (m *Model) addWebhookConfiguration(mwc *admissionregistrationv1.MutatingWebhookConfiguration) {
	injector := false
	for i := range mwc.Webhooks {
		if IsInjectorWebhook(mwc.Webhooks[i].Name) {
			injector = true
			break
		}
	}
	if !injector {
		return
	}
	rev := webhookRevision(mwc)
	if tag := mwc.Labels[LabelTag]; tag != "" {
		if prev, ok := m.tags[tag]; ok && prev != rev {
			m.warnf("revision tag %q is claimed by several webhook configurations (%s, %s); using %s", tag, prev, rev, prev)
		} else {
			m.tags[tag] = rev
		}
	}
	m.revision(rev).hasWebhooks = true
	for i := range mwc.Webhooks {
		wh := &mwc.Webhooks[i]
		if !IsInjectorWebhook(wh.Name) || !createsPods(wh.Rules) {
			continue
		}
		nsSel, err := selectorOf(wh.NamespaceSelector)
		if err != nil {
			m.warnf("webhook %s/%s: namespaceSelector: %v; treated as matching nothing", mwc.Name, wh.Name, err)
			continue
		}
		objSel, err := selectorOf(wh.ObjectSelector)
		if err != nil {
			m.warnf("webhook %s/%s: objectSelector: %v; treated as matching nothing", mwc.Name, wh.Name, err)
			continue
		}
		m.webhooks = append(m.webhooks, webhook{
			config:            mwc.Name,
			name:              wh.Name,
			revision:          rev,
			namespaceSelector: nsSel,
			objectSelector:    objSel,
		})
	}
}

// webhookRevision is the revision whose istiod answers a configuration. Tag
// configurations carry the target revision in the same label, so resolving a
// tag needs no further lookup.
func webhookRevision(mwc *admissionregistrationv1.MutatingWebhookConfiguration) string {
	if rev := mwc.Labels[LabelRev]; rev != "" {
		return rev
	}
	// Configurations written by hand or by old installers may lack the
	// label; the service name istiod[-<rev>] still says who answers.
	for i := range mwc.Webhooks {
		svc := mwc.Webhooks[i].ClientConfig.Service
		if svc == nil || !IsInjectorWebhook(mwc.Webhooks[i].Name) {
			continue
		}
		if svc.Name == "istiod" {
			return DefaultRevision
		}
		if rev, ok := strings.CutPrefix(svc.Name, "istiod-"); ok && rev != "" {
			return rev
		}
	}
	return DefaultRevision
}

// selectorOf converts a webhook selector. The API server defaults an absent
// selector to {}, which matches everything; LabelSelectorAsSelector would
// treat nil as matching nothing.
func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// createsPods reports whether the rules send pod CREATE requests to the
// webhook. No rules at all means the webhook is never called.
func createsPods(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		if containsAny(operationsOf(r.Operations), "CREATE", "*") &&
			containsAny(r.APIGroups, "", "*") &&
			containsAny(r.APIVersions, "v1", "*") &&
			containsAny(r.Resources, "pods", "*") {
			return true
		}
	}
	return false
}

func operationsOf(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = string(op)
	}
	return out
}

func containsAny(list []string, wanted ...string) bool {
	for _, v := range list {
		for _, w := range wanted {
			if v == w {
				return true
			}
		}
	}
	return false
}

// Revisions lists every revision the model knows, sorted by name.
func (m *Model) Revisions() []Revision {
	out := make([]Revision, 0, len(m.revisions))
	for name := range m.revisions {
		r, _ := m.Revision(name)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Revision describes one revision.
func (m *Model) Revision(name string) (Revision, bool) {
	rc, ok := m.revisions[name]
	if !ok {
		return Revision{}, false
	}
	tags := []string{}
	for tag, rev := range m.tags {
		if rev == name {
			tags = append(tags, tag)
		}
	}
	sort.Strings(tags)
	return Revision{
		Name:        name,
		Tags:        tags,
		Image:       m.imageFor(rc, "", Template{}),
		HasWebhooks: rc.hasWebhooks,
		ConfigMap:   rc.configMap,
		Policy:      rc.policy,
	}, true
}

// HasRevision reports whether a revision of that name exists.
func (m *Model) HasRevision(name string) bool {
	_, ok := m.revisions[name]
	return ok
}

// Tags maps every revision tag to the revision it points at.
func (m *Model) Tags() map[string]string {
	out := make(map[string]string, len(m.tags))
	for k, v := range m.tags {
		out[k] = v
	}
	return out
}

// ResolveTag returns the revision a tag points at.
func (m *Model) ResolveTag(tag string) (string, bool) {
	rev, ok := m.tags[tag]
	return rev, ok
}

// Image is the proxy image the given revision would inject into a pod with
// these annotations, in no namespace in particular (mesh-wide ProxyConfigs
// apply, namespace and workload ones do not); "" when the revision's
// injector configuration is unknown.
func (m *Model) Image(revision string, podAnnotations map[string]string) string {
	rc, ok := m.revisions[revision]
	if !ok {
		return ""
	}
	return m.imageFor(rc, "", Template{Annotations: podAnnotations})
}

// Webhooks lists the injector webhooks as "configuration/webhook ->
// revision", in evaluation order.
func (m *Model) Webhooks() []string {
	out := make([]string, len(m.webhooks))
	for i, wh := range m.webhooks {
		out[i] = wh.config + "/" + wh.name + " -> " + wh.revision
	}
	return out
}

// Warnings lists objects the model could not read and how they were treated.
func (m *Model) Warnings() []string {
	return append([]string(nil), m.warnings...)
}

// RootNamespace is the mesh's root namespace as the revision's istiod
// reads it (meshConfig.rootNamespace); istio-system, Istio's default, for
// a revision the model does not know.
func (m *Model) RootNamespace(revision string) string {
	if rc, ok := m.revisions[revision]; ok {
		return rc.rootNamespace()
	}
	return defaultRootNamespace
}
