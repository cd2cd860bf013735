// Package meshtest is the one builder of Istio fixtures, for unit tests, the
// synthetic fleets of internal/testing/synth and the demo snapshot of
// internal/testing/demodata: control-plane objects in the shapes Istio's installers
// write them (istio-discovery chart mutatingwebhook.yaml,
// revision-tags-mwc.yaml, istiod-injector-configmap.yaml, and
// `istioctl tag set default`), pods as admission and the sidecar injector
// leave them, and the metadata GitOps controllers put on what they apply.
package meshtest

import (
	"cmp"
	"encoding/json"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// IstioNamespace is where the builders put istiod's objects by default.
const IstioNamespace = "istio-system"

// Install is the injection-related objects one Helm release of istiod or
// one revision tag creates.
type Install struct {
	WebhookConfigurations []admissionregistrationv1.MutatingWebhookConfiguration
	ConfigMaps            []corev1.ConfigMap
	// ProxyConfigs are networking.istio.io ProxyConfigs applied beside it.
	ProxyConfigs []objects.ProxyConfig
}

// Merge concatenates installs, in order.
func Merge(installs ...Install) Install {
	var out Install
	for _, in := range installs {
		out.WebhookConfigurations = append(out.WebhookConfigurations, in.WebhookConfigurations...)
		out.ConfigMaps = append(out.ConfigMaps, in.ConfigMaps...)
		out.ProxyConfigs = append(out.ProxyConfigs, in.ProxyConfigs...)
	}
	return out
}

// AddTo appends the install's objects to a set.
func (in Install) AddTo(set *objects.Set) {
	set.MutatingWebhookConfigurations = append(set.MutatingWebhookConfigurations, in.WebhookConfigurations...)
	set.ConfigMaps = append(set.ConfigMaps, in.ConfigMaps...)
	set.ProxyConfigs = append(set.ProxyConfigs, in.ProxyConfigs...)
}

// Model builds the mesh model of the install.
func (in Install) Model() *mesh.Model {
	return mesh.New(in.WebhookConfigurations, in.ConfigMaps, in.ProxyConfigs...)
}

type options struct {
	namespace     string
	autoInject    bool
	variant       string
	policy        string
	never         []metav1.LabelSelector
	always        []metav1.LabelSelector
	withoutConfig bool
	withoutMesh   bool
	caBundle      []byte
	chartVersion  string
	// chart, when set, writes the chart's complete values and templates
	// with these mesh-wide settings instead of the part kedge reads.
	chart *Values
}

// Option changes what a builder installs.
type Option func(*options)

// WithNamespace installs into another namespace than istio-system; the
// chart then suffixes configuration names with it.
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithAutoInject sets sidecarInjectorWebhook.enableNamespacesByDefault: the
// auto.sidecar-injector.istio.io webhook selects every unlabelled namespace
// except Kubernetes' own.
func WithAutoInject() Option { return func(o *options) { o.autoInject = true } }

// WithVariant sets global.variant (e.g. "distroless"), which the injector
// appends to the tag.
func WithVariant(variant string) Option { return func(o *options) { o.variant = variant } }

// WithPolicy sets global.proxy.autoInject ("enabled" or "disabled").
func WithPolicy(policy string) Option { return func(o *options) { o.policy = policy } }

// WithNeverInjectSelector sets sidecarInjectorWebhook.neverInjectSelector.
func WithNeverInjectSelector(selectors ...metav1.LabelSelector) Option {
	return func(o *options) { o.never = append(o.never, selectors...) }
}

// WithAlwaysInjectSelector sets sidecarInjectorWebhook.alwaysInjectSelector.
func WithAlwaysInjectSelector(selectors ...metav1.LabelSelector) Option {
	return func(o *options) { o.always = append(o.always, selectors...) }
}

// WithoutConfigMap leaves out the injector and mesh ConfigMaps, as when only
// the webhooks of a remote control plane are visible.
func WithoutConfigMap() Option { return func(o *options) { o.withoutConfig = true } }

// WithoutMeshConfig leaves out the `istio[-<rev>]` mesh ConfigMap only.
func WithoutMeshConfig() Option { return func(o *options) { o.withoutMesh = true } }

// WithCABundle sets the CA certificate istiod patches into its webhooks.
func WithCABundle(pem []byte) Option { return func(o *options) { o.caBundle = pem } }

// WithFluxHelmRelease installs with a Flux HelmRelease of the istiod chart
// at version: the release is istiod[-<rev>], and what it renders carries
// Helm's and Flux's labels and annotations.
func WithFluxHelmRelease(version string) Option { return func(o *options) { o.chartVersion = version } }

// WithChartValues writes the injector and mesh ConfigMaps as the chart
// renders them in full, with the mesh-wide settings of v; pass the same
// Values to Inject so that pods show what the install says.
func WithChartValues(v Values) Option { return func(o *options) { o.chart = &v } }

func buildOptions(opts []Option) options {
	o := options{namespace: IstioNamespace, policy: "enabled"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// NeverMatch is the selector `istioctl tag set default` puts on the default
// revision's webhooks to deactivate them.
func NeverMatch() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"istio.io/deactivated": "never-match"}}
}

// IstiodRevision is what installing the istio-discovery chart with
// `revision: rev` creates for injection: the MutatingWebhookConfiguration
// istio-sidecar-injector[-rev], the ConfigMap of the same name (keys
// `values` and `config`) and the mesh ConfigMap istio[-rev]. rev "" or
// "default" is the unnamed default revision. image is the proxy image a
// plain pod gets, before any variant suffix.
func IstiodRevision(rev, image string, opts ...Option) Install {
	o := buildOptions(opts)
	chartRev := chartRevision(rev)
	name := suffixed("istio-sidecar-injector", chartRev, o.namespace)
	mwc := o.webhookConfiguration(name, chartRev, revisionLabel(chartRev), chartRev == "", nil)
	in := Install{WebhookConfigurations: []admissionregistrationv1.MutatingWebhookConfiguration{mwc}}
	if !o.withoutConfig {
		in.ConfigMaps = append(in.ConfigMaps, injectorConfigMap(withRev("istio-sidecar-injector", chartRev), chartRev, image, o))
		if !o.withoutMesh {
			in.ConfigMaps = append(in.ConfigMaps, meshConfigMap(withRev("istio", chartRev), chartRev, o))
		}
	}
	return in
}

// RevisionTag is the MutatingWebhookConfiguration istio-revision-tag-<tag>
// that `istioctl tag set <tag> --revision <rev>` (or the chart's
// revisionTags) creates. Tag "default" also carries the namespace./object.
// (and with WithAutoInject, auto.) webhooks.
func RevisionTag(tag, rev string, opts ...Option) Install {
	o := buildOptions(opts)
	name := suffixed("istio-revision-tag-"+tag, "", o.namespace)
	mwc := o.webhookConfiguration(name, chartRevision(rev), tag, tag == "default", map[string]string{"istio.io/tag": tag})
	return Install{WebhookConfigurations: []admissionregistrationv1.MutatingWebhookConfiguration{mwc}}
}

// ProxyConfig is a networking.istio.io/v1beta1 ProxyConfig setting
// image.imageType ("" leaves spec.image out). A nil selector leaves
// spec.selector out, which makes it namespace-wide (mesh-wide in the root
// namespace); a non-nil one, even empty, is written as spec.selector.
// Objects made earlier in a test are created earlier.
func ProxyConfig(namespace, name, imageType string, selector map[string]string) Install {
	pc := objects.ProxyConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.istio.io/v1beta1", Kind: "ProxyConfig"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			CreationTimestamp: metav1.NewTime(proxyConfigEpoch.Add(time.Duration(nextProxyConfig.Add(1)) * time.Second)),
		},
	}
	if selector != nil {
		pc.Spec.Selector = &objects.WorkloadSelector{MatchLabels: selector}
	}
	if imageType != "" {
		pc.Spec.Image = &objects.ProxyImage{ImageType: imageType}
	}
	return Install{ProxyConfigs: []objects.ProxyConfig{pc}}
}

var (
	proxyConfigEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	nextProxyConfig  atomic.Int64
)

// Deactivate returns the install with every webhook of its default-revision
// configurations given NeverMatch selectors, which is what
// `istioctl tag set default` does to the default revision.
func Deactivate(in Install) Install {
	out := Install{ConfigMaps: in.ConfigMaps, ProxyConfigs: in.ProxyConfigs}
	for _, mwc := range in.WebhookConfigurations {
		mwc = *mwc.DeepCopy()
		if mwc.Labels["istio.io/rev"] == "default" && mwc.Labels["istio.io/tag"] == "" {
			for i := range mwc.Webhooks {
				mwc.Webhooks[i].NamespaceSelector = NeverMatch()
				mwc.Webhooks[i].ObjectSelector = NeverMatch()
			}
		}
		out.WebhookConfigurations = append(out.WebhookConfigurations, mwc)
	}
	return out
}

// chartRevision is the chart's revision value for rev: "" for the default
// revision, however it is named.
func chartRevision(rev string) string {
	if rev == "default" {
		return ""
	}
	return rev
}

// withRev is base suffixed with the revision, as the chart names a
// revision's objects.
func withRev(base, chartRev string) string {
	if chartRev != "" {
		return base + "-" + chartRev
	}
	return base
}

func suffixed(base, chartRev, namespace string) string {
	base = withRev(base, chartRev)
	if namespace != IstioNamespace {
		base += "-" + namespace
	}
	return base
}

func revisionLabel(chartRev string) string { return cmp.Or(chartRev, "default") }

// chartMeta is the metadata the chart gives what it renders for a
// revision, plus extra labels.
func (o options) chartMeta(name, namespace, chartRev string, extra map[string]string) metav1.ObjectMeta {
	release := withRev("istiod", chartRev)
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
		"app.kubernetes.io/name":                    "istiod",
		"istio.io/rev":                              revisionLabel(chartRev),
		"operator.istio.io/component":               "Pilot",
		"release":                                   "istiod",
		"install.operator.istio.io/owning-resource": "unknown",
	}}
	if o.chartVersion != "" {
		meta.Labels["release"] = release
		meta.Labels["app.kubernetes.io/instance"] = release
		meta.Labels["app.kubernetes.io/managed-by"] = "Helm"
		meta.Labels["app.kubernetes.io/part-of"] = "istio"
		meta.Labels["app.kubernetes.io/version"] = o.chartVersion
		meta.Labels["helm.sh/chart"] = "istiod-" + o.chartVersion
		meta.Labels["helm.toolkit.fluxcd.io/name"] = release
		meta.Labels["helm.toolkit.fluxcd.io/namespace"] = o.namespace
		meta.Annotations = map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": o.namespace}
	}
	maps.Copy(meta.Labels, extra)
	return meta
}

// webhookConfiguration holds the rev.* webhooks selecting istio.io/rev=
// selectorValue and, withDefault, the default revision's own, all calling
// chartRev's istiod.
func (o options) webhookConfiguration(name, chartRev, selectorValue string, withDefault bool, extraLabels map[string]string) admissionregistrationv1.MutatingWebhookConfiguration {
	extra := map[string]string{"app": "sidecar-injector"}
	maps.Copy(extra, extraLabels)
	svc := withRev("istiod", chartRev)
	webhooks := revisionWebhooks(svc, o.namespace, selectorValue)
	if withDefault {
		webhooks = append(webhooks, defaultWebhooks(svc, o.namespace, o.autoInject)...)
	}
	for i := range webhooks {
		webhooks[i].ClientConfig.CABundle = o.caBundle
	}
	return admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: o.chartMeta(name, "", chartRev, extra),
		Webhooks:   webhooks,
	}
}

func coreWebhook(prefix, service, namespace string) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: prefix + "sidecar-injector.istio.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Name: service, Namespace: namespace, Path: ptr.To("/inject"), Port: ptr.To[int32](443)},
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{""},
				APIVersions: []string{"v1"},
				Resources:   []string{"pods"},
				Scope:       ptr.To(admissionregistrationv1.AllScopes),
			},
		}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func selector(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: reqs}
}

// revisionWebhooks are rev.namespace. and rev.object., selecting on
// istio.io/rev=<selectorValue> (the revision, "default", or the tag).
func revisionWebhooks(service, namespace, selectorValue string) []admissionregistrationv1.MutatingWebhook {
	revNS := coreWebhook("rev.namespace.", service, namespace)
	revNS.NamespaceSelector = selector(
		expr("istio.io/rev", metav1.LabelSelectorOpIn, selectorValue),
		expr("istio-injection", metav1.LabelSelectorOpDoesNotExist),
	)
	revNS.ObjectSelector = selector(expr("sidecar.istio.io/inject", metav1.LabelSelectorOpNotIn, "false"))

	revObj := coreWebhook("rev.object.", service, namespace)
	revObj.NamespaceSelector = selector(
		expr("istio.io/rev", metav1.LabelSelectorOpDoesNotExist),
		expr("istio-injection", metav1.LabelSelectorOpDoesNotExist),
	)
	revObj.ObjectSelector = selector(
		expr("sidecar.istio.io/inject", metav1.LabelSelectorOpNotIn, "false"),
		expr("istio.io/rev", metav1.LabelSelectorOpIn, selectorValue),
	)
	return []admissionregistrationv1.MutatingWebhook{revNS, revObj}
}

// defaultWebhooks are the default revision's namespace., object. and
// optional auto. webhooks.
func defaultWebhooks(service, namespace string, autoInject bool) []admissionregistrationv1.MutatingWebhook {
	ns := coreWebhook("namespace.", service, namespace)
	ns.NamespaceSelector = selector(expr("istio-injection", metav1.LabelSelectorOpIn, "enabled"))
	ns.ObjectSelector = selector(expr("sidecar.istio.io/inject", metav1.LabelSelectorOpNotIn, "false"))

	obj := coreWebhook("object.", service, namespace)
	obj.NamespaceSelector = selector(
		expr("istio-injection", metav1.LabelSelectorOpDoesNotExist),
		expr("istio.io/rev", metav1.LabelSelectorOpDoesNotExist),
	)
	obj.ObjectSelector = selector(
		expr("sidecar.istio.io/inject", metav1.LabelSelectorOpIn, "true"),
		expr("istio.io/rev", metav1.LabelSelectorOpDoesNotExist),
	)
	out := []admissionregistrationv1.MutatingWebhook{ns, obj}
	if autoInject {
		auto := coreWebhook("auto.", service, namespace)
		auto.NamespaceSelector = selector(
			expr("istio-injection", metav1.LabelSelectorOpDoesNotExist),
			expr("istio.io/rev", metav1.LabelSelectorOpDoesNotExist),
			expr("kubernetes.io/metadata.name", metav1.LabelSelectorOpNotIn,
				"kube-system", "kube-public", "kube-node-lease", "local-path-storage"),
		)
		auto.ObjectSelector = selector(
			expr("sidecar.istio.io/inject", metav1.LabelSelectorOpDoesNotExist),
			expr("istio.io/rev", metav1.LabelSelectorOpDoesNotExist),
		)
		out = append(out, auto)
	}
	return out
}

// SplitImage splits hub/name:tag the way the chart's values hold it.
func SplitImage(image string) (hub, name, tag string) {
	ref := image
	if at := strings.Index(ref, "@"); at >= 0 {
		ref = ref[:at]
	}
	slash := strings.LastIndex(ref, "/")
	hub, name = ref[:max(slash, 0)], ref[slash+1:]
	if colon := strings.LastIndex(name, ":"); colon >= 0 {
		name, tag = name[:colon], name[colon+1:]
	}
	return hub, name, tag
}

func injectorConfigMap(name, chartRev, image string, o options) corev1.ConfigMap {
	hub, proxyImage, tag := SplitImage(image)
	if strings.Contains(image, "@") {
		proxyImage = image
	}
	values := map[string]any{
		"global": map[string]any{
			"hub":             hub,
			"tag":             tag,
			"variant":         o.variant,
			"istioNamespace":  o.namespace,
			"imagePullPolicy": "",
			"proxy": map[string]any{
				"image":                           proxyImage,
				"autoInject":                      o.policy,
				"clusterDomain":                   "cluster.local",
				"privileged":                      false,
				"holdApplicationUntilProxyStarts": false,
			},
			"proxy_init": map[string]any{"image": proxyImage},
		},
		"revision": chartRev,
		"sidecarInjectorWebhook": map[string]any{
			"enableNamespacesByDefault": o.autoInject,
			"reinvocationPolicy":        "Never",
			"rewriteAppHTTPProbe":       true,
			"alwaysInjectSelector":      orEmpty(o.always),
			"neverInjectSelector":       orEmpty(o.never),
			"templates":                 map[string]any{},
			"defaultTemplates":          []string{},
		},
		"pilot": map[string]any{"cni": map[string]any{"enabled": false}},
	}
	var config string
	if o.chart != nil {
		values = o.chart.completeChartValues(values)
		config = "defaultTemplates: [sidecar]\npolicy: " + o.policy + "\n" +
			"alwaysInjectSelector:\n" + indentedYAML(orEmpty(o.always)) +
			"neverInjectSelector:\n" + indentedYAML(orEmpty(o.never)) + chartTemplates
	} else {
		config = mustYAML(map[string]any{
			"defaultTemplates":     []string{"sidecar"},
			"policy":               o.policy,
			"alwaysInjectSelector": orEmpty(o.always),
			"neverInjectSelector":  orEmpty(o.never),
			"injectedAnnotations":  map[string]string{},
			"template":             "{{ Template_Version_And_Istio_Version_Mismatched_Check_Installation }}",
			"templates": map[string]string{
				"sidecar": "spec:\n  containers:\n  - name: istio-proxy\n    image: \"{{ .ProxyImage }}\"\n",
				"gateway": "spec:\n  containers:\n  - name: istio-proxy\n    image: \"{{ .ProxyImage }}\"\n",
			},
		})
	}
	valuesJSON, err := json.MarshalIndent(values, "", "  ")
	if err != nil {
		panic(err)
	}
	return o.configMap(name, chartRev, map[string]string{"values": string(valuesJSON), "config": config})
}

func meshConfigMap(name, chartRev string, o options) corev1.ConfigMap {
	defaultConfig := map[string]any{
		"discoveryAddress": withRev("istiod", chartRev) + "." + o.namespace + ".svc:15012",
	}
	if o.variant != "" {
		defaultConfig["image"] = map[string]any{"imageType": o.variant}
	}
	config := map[string]any{
		"defaultConfig":         defaultConfig,
		"rootNamespace":         o.namespace,
		"trustDomain":           "cluster.local",
		"enablePrometheusMerge": true,
	}
	if o.chart != nil {
		defaultConfig["meshId"], defaultConfig["tracing"] = o.chart.MeshID, map[string]any{}
		config["defaultProviders"] = map[string]any{"metrics": []string{"prometheus"}}
	}
	mesh := mustYAML(config)
	if o.chart != nil {
		// Helm writes the block without its final newline.
		mesh = strings.TrimSuffix(mesh, "\n")
	}
	return o.configMap(name, chartRev, map[string]string{"mesh": mesh, "meshNetworks": "networks: {}"})
}

func (o options) configMap(name, chartRev string, data map[string]string) corev1.ConfigMap {
	return corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: o.chartMeta(name, o.namespace, chartRev, nil),
		Data:       data,
	}
}

func orEmpty(in []metav1.LabelSelector) []metav1.LabelSelector {
	if in == nil {
		return []metav1.LabelSelector{}
	}
	return in
}

// completeChartValues adds to the values kedge reads the rest of what the
// istio-discovery chart writes, with the mesh-wide settings of v.
func (v Values) completeChartValues(values map[string]any) map[string]any {
	global := values["global"].(map[string]any)
	proxy := global["proxy"].(map[string]any)
	delete(proxy, "holdApplicationUntilProxyStarts")
	maps.Copy(global, map[string]any{
		"caAddress":                    "",
		"caName":                       "",
		"certSigners":                  []any{},
		"configCluster":                false,
		"configValidation":             true,
		"defaultPodDisruptionBudget":   map[string]any{"enabled": true},
		"defaultResources":             map[string]any{"requests": map[string]any{"cpu": "10m"}},
		"externalIstiod":               false,
		"imagePullSecrets":             []any{},
		"istiod":                       map[string]any{"enableAnalysis": false},
		"logAsJson":                    false,
		"logging":                      map[string]any{"level": "default:info"},
		"meshID":                       v.MeshID,
		"meshNetworks":                 map[string]any{},
		"mountMtlsCerts":               false,
		"multiCluster":                 map[string]any{"clusterName": v.ClusterID, "enabled": false},
		"network":                      v.Network,
		"omitSidecarInjectorConfigMap": false,
		"operatorManageWebhooks":       false,
		"pilotCertProvider":            "istiod",
		"priorityClassName":            "",
		"remotePilotAddress":           "",
		"sds":                          map[string]any{"token": map[string]any{"aud": "istio-ca"}},
		"sts":                          map[string]any{"servicePort": 0},
	})
	maps.Copy(proxy, map[string]any{
		"componentLogLevel":            "misc:error",
		"excludeIPRanges":              "",
		"excludeInboundPorts":          "",
		"excludeOutboundPorts":         "",
		"includeIPRanges":              "*",
		"includeInboundPorts":          "*",
		"includeOutboundPorts":         "",
		"logLevel":                     "warning",
		"outlierLogPath":               "",
		"readinessFailureThreshold":    4,
		"readinessInitialDelaySeconds": 0,
		"readinessPeriodSeconds":       15,
		"resources": map[string]any{
			"limits":   map[string]any{"cpu": "2000m", "memory": "1024Mi"},
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
		},
		"startupProbe": map[string]any{"enabled": v.StartupProbe, "failureThreshold": 600},
		"statusPort":   15020,
		"tracer":       "none",
	})
	global["proxy_init"].(map[string]any)["forceApplyIptables"] = false
	values["gateways"] = map[string]any{"seccompProfile": map[string]any{}, "securityContext": map[string]any{}}
	values["pilot"] = map[string]any{"cni": map[string]any{"enabled": false, "provider": "default"}, "env": map[string]any{}}
	values["sidecarInjectorWebhook"].(map[string]any)["injectedAnnotations"] = map[string]any{}
	return values
}

// chartTemplates are the injector's templates, cut down to their metadata
// part: kedge never renders them.
const chartTemplates = `injectedAnnotations:
template: "{{ Template_Version_And_Istio_Version_Mismatched_Check_Installation }}"
templates:
  sidecar: |
    {{ $nativeSidecar := (or (and (not (isset .ObjectMeta.Annotations ` + "`sidecar.istio.io/nativeSidecar`" + `)) (eq (env "ENABLE_NATIVE_SIDECARS" "false") "true")) (eq (index .ObjectMeta.Annotations ` + "`sidecar.istio.io/nativeSidecar`" + `) "true")) }}
    metadata:
      labels:
        security.istio.io/tlsMode: {{ index .ObjectMeta.Labels ` + "`security.istio.io/tlsMode`" + ` | default "istio"  | quote }}
      annotations: {
        istio.io/rev: {{ .Revision | default "default" | quote }},
      }
    spec:
      initContainers:
      - name: istio-init
        image: "{{ .ProxyImage }}"
      {{ if not $nativeSidecar }}
      containers:
      {{ end }}
      - name: istio-proxy
        image: "{{ .ProxyImage }}"
        {{ if $nativeSidecar }}restartPolicy: Always{{end}}
  gateway: |
    metadata:
      annotations: {
        istio.io/rev: {{ .Revision | default "default" | quote }},
      }
    spec:
      containers:
      - name: istio-proxy
        image: "{{ .ProxyImage }}"
`

// indentedYAML is v as a YAML block nested two spaces under a key.
func indentedYAML(v any) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(mustYAML(v), "\n"), "\n", "\n  ") + "\n"
}

func mustYAML(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
