package mesh

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kedge-io/kedge/internal/objects"
)

// Template is what of a pod template decides injection.
type Template struct {
	Labels      map[string]string
	Annotations map[string]string
	HostNetwork bool
	// ProxyImage is the image of an istio-proxy container the template
	// defines itself, which the injector keeps; "" when it defines none or
	// leaves the image to the injector with "auto".
	ProxyImage string
}

// TemplateOf returns the injection-relevant part of a workload's template.
func TemplateOf(t *corev1.PodTemplateSpec) Template {
	return Template{
		Labels: t.Labels, Annotations: t.Annotations, HostNetwork: t.Spec.HostNetwork,
		ProxyImage: ownProxyImage(&t.Spec),
	}
}

// TemplateOfPod uses a pod as its own template, for pods whose workload is
// unknown. An injected pod's istio-proxy is the injector's; the container
// its template defined is kept in the overrides annotation.
func TemplateOfPod(p *objects.Pod) Template {
	t := Template{Labels: p.Labels, Annotations: p.Annotations, HostNetwork: p.HostNetwork}
	if _, injected := p.Annotations[AnnotationStatus]; injected {
		t.ProxyImage = overriddenProxyImage(p.Annotations[AnnotationOverrides])
	} else if p.Proxy != nil {
		t.ProxyImage = userImage(p.Proxy.Image)
	}
	return t
}

// Cause says why a Decision came out the way it did.
type Cause string

const (
	// CauseInjected: a webhook matched and the injector agrees.
	CauseInjected Cause = "injected"
	// CauseNoWebhook: no injector webhook selects the pod.
	CauseNoWebhook Cause = "no-webhook"
	// CauseConflict: webhooks of several revisions select the pod.
	CauseConflict Cause = "conflict"
	// CauseHostNetwork: the injector never injects host-network pods.
	CauseHostNetwork Cause = "host-network"
	// CauseIgnoredNamespace: the injector skips Kubernetes system namespaces.
	CauseIgnoredNamespace Cause = "ignored-namespace"
	// CauseInjectFalse: sidecar.istio.io/inject is "false" on the pod.
	CauseInjectFalse Cause = "inject-false"
	// CauseNeverInjectSelector: the injector's neverInjectSelector matched.
	CauseNeverInjectSelector Cause = "never-inject-selector"
	// CausePolicyDisabled: the injector policy is disabled and nothing on
	// the pod asks for injection.
	CausePolicyDisabled Cause = "policy-disabled"
	// CausePolicyInvalid: the injector policy is neither enabled nor
	// disabled, which the injector treats as off.
	CausePolicyInvalid Cause = "policy-invalid"
)

// Decision is what Istio would do with a pod created now.
type Decision struct {
	// Inject is true when a sidecar would be injected.
	Inject bool
	// Revision injects the sidecar ("default" for the unnamed revision);
	// "" when Inject is false.
	Revision string
	// Image is the proxy image Revision would inject; "" when not injecting
	// or when the revision's configuration is unknown.
	Image string
	// Conflict lists, sorted, the revisions whose webhooks all select the
	// pod. No outcome is guessed then: Inject is false and Revision "".
	Conflict []string
	// Matched is the revision whose webhook selected the pod even when its
	// injector then declined.
	Matched string
	// Ambient is true when no sidecar is injected and the ambient data
	// plane enrolls the pod instead.
	Ambient bool
	Cause   Cause
}

// ignoredNamespaces are the namespaces the injector refuses whatever the
// webhooks say.
var ignoredNamespaces = map[string]bool{
	"kube-system":        true,
	"kube-public":        true,
	"kube-node-lease":    true,
	"local-path-storage": true,
}

// Decide says which revision would inject a new pod with this template in
// this namespace, and with which image.
//
// Ambient labels do not stop injection: the injector ignores them and the
// ambient data plane leaves pods with a sidecar alone, so a pod selected by
// an injector webhook gets a sidecar even in an ambient namespace.
func (m *Model) Decide(namespace string, namespaceLabels map[string]string, t Template) Decision {
	// Converted to the interface once: boxing per webhook would allocate.
	var nsLabels labels.Labels = namespaceLabelSet{name: namespace, labels: namespaceLabels}
	var podLabels labels.Labels = labels.Set(t.Labels)

	// Almost always zero or one revision matches; keep that off the heap.
	var buf [2]string
	matched := buf[:0]
	for i := range m.webhooks {
		wh := &m.webhooks[i]
		if !wh.namespaceSelector.Matches(nsLabels) || !wh.objectSelector.Matches(podLabels) {
			continue
		}
		if !containsString(matched, wh.revision) {
			matched = append(matched, wh.revision)
		}
	}
	switch len(matched) {
	case 0:
		return m.noSidecar(Decision{Cause: CauseNoWebhook}, nsLabels, t)
	case 1:
	default:
		conflict := append([]string(nil), matched...)
		sort.Strings(conflict)
		return Decision{Conflict: conflict, Cause: CauseConflict}
	}

	rev := matched[0]
	rc := m.revisions[rev]
	if cause, ok := rc.injectRequired(namespace, t); !ok {
		return m.noSidecar(Decision{Matched: rev, Cause: cause}, nsLabels, t)
	}
	return Decision{
		Inject:   true,
		Revision: rev,
		Image:    m.imageFor(rc, namespace, t),
		Matched:  rev,
		Cause:    CauseInjected,
	}
}

func (m *Model) noSidecar(d Decision, ns labels.Labels, t Template) Decision {
	d.Ambient = ambientEnrolled(ns, t)
	return d
}

// ambientEnrolled follows Istio's default enrollment: the namespace or the
// pod says ambient, and the pod does not opt out with "none". Host-network
// pods cannot be captured.
func ambientEnrolled(ns labels.Labels, t Template) bool {
	if t.HostNetwork {
		return false
	}
	podMode, podSet := t.Labels[LabelDataplaneMode]
	if podSet {
		return podMode == DataplaneAmbient
	}
	return ns.Get(LabelDataplaneMode) == DataplaneAmbient
}

// injectRequired is the injector's own check once its webhook was called.
func (rc *revisionConfig) injectRequired(namespace string, t Template) (Cause, bool) {
	if t.HostNetwork {
		return CauseHostNetwork, false
	}
	if ignoredNamespaces[namespace] {
		return CauseIgnoredNamespace, false
	}

	// The label is the newer API and wins over the annotation when present,
	// even when empty.
	value := t.Annotations[AnnotationSidecarInject]
	if v, ok := t.Labels[LabelSidecarInject]; ok {
		value = v
	}
	explicit, inject := false, false
	switch value {
	case "true":
		explicit, inject = true, true
	case "false":
		explicit, inject = true, false
	}

	podLabels := labels.Set(t.Labels)
	if !explicit {
		for _, sel := range rc.never {
			if sel.Matches(podLabels) {
				explicit, inject = true, false
				break
			}
		}
	}
	if !explicit {
		for _, sel := range rc.always {
			if sel.Matches(podLabels) {
				explicit, inject = true, true
				break
			}
		}
	}

	policy := rc.policy
	if !rc.hasConfig {
		// Without the injector ConfigMap the chart default applies.
		policy = PolicyEnabled
	}
	switch policy {
	case PolicyEnabled, PolicyDisabled:
	default:
		return CausePolicyInvalid, false
	}
	if explicit {
		if inject {
			return CauseInjected, true
		}
		if value == "false" {
			return CauseInjectFalse, false
		}
		return CauseNeverInjectSelector, false
	}
	if policy == PolicyDisabled {
		return CausePolicyDisabled, false
	}
	return CauseInjected, true
}

// namespaceLabelSet adds the name label the API server guarantees on every
// namespace, without copying the label map.
type namespaceLabelSet struct {
	name   string
	labels map[string]string
}

func (n namespaceLabelSet) Has(key string) bool {
	_, ok := n.Lookup(key)
	return ok
}

func (n namespaceLabelSet) Get(key string) string {
	v, _ := n.Lookup(key)
	return v
}

func (n namespaceLabelSet) Lookup(key string) (string, bool) {
	if key == LabelNamespaceName && n.name != "" {
		return n.name, true
	}
	v, ok := n.labels[key]
	return v, ok
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
