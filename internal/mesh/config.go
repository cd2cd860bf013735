package mesh

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/image"
)

// defaultProxyImage is the proxy image name Istio's charts default to.
const defaultProxyImage = "proxyv2"

// Injection policies of the injector ConfigMap's `config` key.
const (
	PolicyEnabled  = "enabled"
	PolicyDisabled = "disabled"
)

// injectorValues is the part of the `values` key the proxy image and the
// revision name come from.
type injectorValues struct {
	Revision string `json:"revision"`
	Global   struct {
		Hub      string          `json:"hub"`
		Tag      json.RawMessage `json:"tag"`
		Variant  string          `json:"variant"`
		Revision string          `json:"revision"`
		Proxy    struct {
			Image   string `json:"image"`
			Variant string `json:"variant"`
		} `json:"proxy"`
	} `json:"global"`
}

// tag renders global.tag the way the injector does: Helm may have written
// it as a number.
func (v *injectorValues) tag() string {
	raw := bytes.TrimSpace(v.Global.Tag)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

type injectorConfig struct {
	Policy               string                 `json:"policy"`
	NeverInjectSelector  []metav1.LabelSelector `json:"neverInjectSelector"`
	AlwaysInjectSelector []metav1.LabelSelector `json:"alwaysInjectSelector"`
}

type proxyConfig struct {
	Image *struct {
		ImageType string `json:"imageType"`
	} `json:"image"`
}

type meshConfig struct {
	DefaultConfig proxyConfig `json:"defaultConfig"`
	// RootNamespace is nil when the key is absent, which Istio reads as
	// its default.
	RootNamespace *string `json:"rootNamespace"`
}

func isInjectorConfigMap(cm *corev1.ConfigMap) bool {
	if cm.Name != injectorConfigMapName && !strings.HasPrefix(cm.Name, injectorConfigMapName+"-") {
		return false
	}
	_, hasValues := cm.Data["values"]
	_, hasConfig := cm.Data["config"]
	return hasValues || hasConfig
}

func isMeshConfigMap(cm *corev1.ConfigMap) bool {
	if cm.Name != meshConfigMapName && !strings.HasPrefix(cm.Name, meshConfigMapName+"-") {
		return false
	}
	_, ok := cm.Data["mesh"]
	return ok
}

func (m *Model) addConfigMaps(configMaps []corev1.ConfigMap) {
	var injectors, meshes []*corev1.ConfigMap
	for i := range configMaps {
		cm := &configMaps[i]
		switch {
		case isInjectorConfigMap(cm):
			injectors = append(injectors, cm)
		case isMeshConfigMap(cm):
			meshes = append(meshes, cm)
		}
	}
	byNamespaceName := func(list []*corev1.ConfigMap) {
		sort.Slice(list, func(i, j int) bool {
			if list[i].Namespace != list[j].Namespace {
				return list[i].Namespace < list[j].Namespace
			}
			return list[i].Name < list[j].Name
		})
	}
	byNamespaceName(injectors)
	byNamespaceName(meshes)
	for _, cm := range injectors {
		m.addInjectorConfigMap(cm)
	}
	for _, cm := range meshes {
		m.addMeshConfigMap(cm)
	}
}

func (m *Model) addInjectorConfigMap(cm *corev1.ConfigMap) {
	id := cm.Namespace + "/" + cm.Name
	var values *injectorValues
	if raw := cm.Data["values"]; strings.TrimSpace(raw) != "" {
		values = &injectorValues{}
		if err := yaml.Unmarshal([]byte(raw), values); err != nil {
			m.warnf("configmap %s: values: %v; proxy image unknown", id, err)
			values = nil
		}
	}
	rev := configMapRevision(values, cm)
	rc := m.revision(rev)
	if rc.configMap != "" {
		m.warnf("configmap %s: revision %q is already configured by %s; ignored", id, rev, rc.configMap)
		return
	}
	rc.configMap = id
	rc.values = values
	if values != nil {
		rc.tag = values.tag()
	}
	if raw, ok := cm.Data["config"]; ok {
		var cfg injectorConfig
		if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
			m.warnf("configmap %s: config: %v; injection policy assumed %s", id, err, PolicyEnabled)
			return
		}
		rc.hasConfig = true
		rc.policy = cfg.Policy
		rc.never = m.compileSelectors(id, "neverInjectSelector", cfg.NeverInjectSelector)
		rc.always = m.compileSelectors(id, "alwaysInjectSelector", cfg.AlwaysInjectSelector)
	}
}

// configMapRevision follows the precedence the installers write: the values'
// own revision first, the label last.
func configMapRevision(values *injectorValues, cm *corev1.ConfigMap) string {
	if values != nil {
		if values.Revision != "" {
			return values.Revision
		}
		if values.Global.Revision != "" {
			return values.Global.Revision
		}
	}
	if rev := cm.Labels[LabelRev]; rev != "" {
		return rev
	}
	return DefaultRevision
}

// compileSelectors keeps Istio's treatment of the injector selectors: an
// invalid or empty selector never matches.
func (m *Model) compileSelectors(id, field string, in []metav1.LabelSelector) []labels.Selector {
	var out []labels.Selector
	for i := range in {
		sel, err := metav1.LabelSelectorAsSelector(&in[i])
		if err != nil {
			m.warnf("configmap %s: %s[%d]: %v; ignored", id, field, i, err)
			continue
		}
		if sel.Empty() {
			continue
		}
		out = append(out, sel)
	}
	return out
}

func (m *Model) addMeshConfigMap(cm *corev1.ConfigMap) {
	rev := cm.Labels[LabelRev]
	if rev == "" {
		rev = DefaultRevision
		if suffix, ok := strings.CutPrefix(cm.Name, meshConfigMapName+"-"); ok {
			rev = suffix
		}
	}
	rc, ok := m.revisions[rev]
	if !ok || rc.hasMeshConfig {
		return
	}
	var mc meshConfig
	if err := yaml.Unmarshal([]byte(cm.Data["mesh"]), &mc); err != nil {
		m.warnf("configmap %s/%s: mesh: %v; ignored", cm.Namespace, cm.Name, err)
		return
	}
	rc.hasMeshConfig = true
	if mc.DefaultConfig.Image != nil {
		rc.meshImageType = mc.DefaultConfig.Image.ImageType
	}
	rc.meshRootNamespace = defaultRootNamespace
	if mc.RootNamespace != nil {
		rc.meshRootNamespace = *mc.RootNamespace
	}
}

// rootNamespace is where the revision's istiod reads mesh-wide
// ProxyConfigs. Without the mesh ConfigMap, the chart's choice is assumed:
// it writes global.istioNamespace, where istiod and its injector ConfigMap
// live.
func (rc *revisionConfig) rootNamespace() string {
	if rc.hasMeshConfig {
		return rc.meshRootNamespace
	}
	if ns, _, ok := strings.Cut(rc.configMap, "/"); ok && ns != "" {
		return ns
	}
	return defaultRootNamespace
}

// defaultImageType is the mesh config's defaultConfig.image.imageType.
func (rc *revisionConfig) defaultImageType() string {
	if !rc.hasMeshConfig && rc.values != nil {
		// Helm renders global.proxy.variant into the mesh config's
		// defaultConfig; without that ConfigMap the values still say it.
		return rc.values.Global.Proxy.Variant
	}
	return rc.meshImageType
}

// imageFor renders the istio-proxy image the revision's injector gives a
// pod made from t in namespace ("" for no namespace in particular).
func (m *Model) imageFor(rc *revisionConfig, namespace string, t Template) string {
	// The injector lays the template's own istio-proxy container over the
	// injected one (pkg/kube/inject/webhook.go reapplyOverwrittenContainers),
	// so its image wins over everything below; "auto" was cleared already.
	if t.ProxyImage != "" {
		return t.ProxyImage
	}
	if rc.values == nil {
		return ""
	}
	annotations := t.Annotations
	g := &rc.values.Global
	name := g.Proxy.Image
	// The template's first branch: an image reference with a registry path
	// (annotation or values) is used verbatim, so digests survive.
	verbatim, annotated := annotations[AnnotationProxyImage]
	if !annotated {
		verbatim = name
	}
	if strings.Contains(verbatim, "/") {
		return verbatim
	}
	if name == "" {
		name = defaultProxyImage
	}
	// pkg/kube/inject/inject.go proxyImageURL: the ProxyConfig's image
	// type, else global.variant; the pod's proxyImageType annotation
	// overrides both.
	imageType := m.proxyConfigImageType(rc, namespace, t)
	if imageType == "" {
		imageType = g.Variant
	}
	if it, ok := annotations[AnnotationProxyImageType]; ok {
		imageType = it
	}
	return g.Hub + "/" + name + ":" + image.TagWithVariant(rc.tag, imageType)
}

// annotatedImageType reads image.imageType from a pod's proxy.istio.io/config
// annotation.
func annotatedImageType(annotations map[string]string) string {
	raw, ok := annotations[AnnotationProxyConfig]
	if !ok || strings.TrimSpace(raw) == "" {
		return ""
	}
	var pc proxyConfig
	if err := yaml.Unmarshal([]byte(raw), &pc); err != nil || pc.Image == nil {
		return ""
	}
	return pc.Image.ImageType
}
