package demodata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Mesh-wide settings, as set in the istiod HelmReleases of the GitOps repo.
const (
	istioNamespace = "istio-system"
	istioHub       = "docker.io/istio"
	meshID         = "prod-eu"
	meshNetwork    = "eu-west-1"
	trustDomain    = "cluster.local"
)

// istioRevision is one installed control plane.
type istioRevision struct {
	Name      string // "" for the default revision
	Version   string // chart and image version it runs now
	Installed time.Time
}

func (r istioRevision) label() string {
	if r.Name == "" {
		return "default"
	}
	return r.Name
}

func (r istioRevision) suffix() string {
	if r.Name == "" {
		return ""
	}
	return "-" + r.Name
}

func (r istioRevision) istiod() string  { return "istiod" + r.suffix() }
func (r istioRevision) release() string { return "istiod" + r.suffix() }

// helmLabels are the labels the istiod chart, installed by a Flux
// HelmRelease, puts on what it renders.
func (r istioRevision) helmLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/instance":                r.release(),
		"app.kubernetes.io/managed-by":              "Helm",
		"app.kubernetes.io/name":                    "istiod",
		"app.kubernetes.io/part-of":                 "istio",
		"app.kubernetes.io/version":                 r.Version,
		"helm.sh/chart":                             "istiod-" + r.Version,
		"helm.toolkit.fluxcd.io/name":               r.release(),
		"helm.toolkit.fluxcd.io/namespace":          istioNamespace,
		"install.operator.istio.io/owning-resource": "unknown",
		"istio.io/rev":                              r.label(),
		"operator.istio.io/component":               "Pilot",
		"release":                                   r.release(),
	}
}

func (r istioRevision) helmAnnotations() map[string]string {
	return map[string]string{
		"meta.helm.sh/release-name":      r.release(),
		"meta.helm.sh/release-namespace": istioNamespace,
	}
}

// injection is what injected a pod: the revision and the version that
// revision ran at the time.
type injection struct {
	Revision string // "default" or a revision name, never a tag
	Version  string
}

func (i injection) image() string { return istioHub + "/proxyv2:" + i.Version }

func (i injection) caAddress() string {
	if i.Revision == "default" {
		return "istiod.istio-system.svc:15012"
	}
	return "istiod-" + i.Revision + ".istio-system.svc:15012"
}

// --- control plane objects -------------------------------------------------

func selector(exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: exprs}
}

func in(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
}

func notIn(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: values}
}

func doesNotExist(key string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}
}

// caBundle stands in for the istiod CA certificate istiod patches into its
// webhooks.
func caBundle() []byte {
	body := ""
	for i := 0; i < 5; i++ {
		body += hexDigest(fmt.Sprint("istio-ca ", i))
	}
	der := base64.StdEncoding.EncodeToString([]byte(body))
	var b strings.Builder
	b.WriteString("-----BEGIN CERTIFICATE-----\n")
	for len(der) > 64 {
		b.WriteString(der[:64] + "\n")
		der = der[64:]
	}
	b.WriteString(der + "\n-----END CERTIFICATE-----\n")
	return []byte(b.String())
}

// webhook is one injector webhook as the API server stores it, defaults
// included.
func webhook(name string, rev istioRevision, ns, obj *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{
				Name: rev.istiod(), Namespace: istioNamespace, Path: ptr.To("/inject"), Port: ptr.To[int32](443),
			},
			CABundle: caBundle(),
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionregistrationv1.AllScopes),
			},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       ns,
		ObjectSelector:          obj,
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
	}
}

// revisionWebhooks are the webhooks of the istiod chart's
// mutatingwebhook.yaml for one revision.
func revisionWebhooks(rev istioRevision) admissionregistrationv1.MutatingWebhookConfiguration {
	l := rev.label()
	hooks := []admissionregistrationv1.MutatingWebhook{
		webhook("rev.namespace.sidecar-injector.istio.io", rev,
			selector(in("istio.io/rev", l), doesNotExist("istio-injection")),
			selector(notIn("sidecar.istio.io/inject", "false"))),
		webhook("rev.object.sidecar-injector.istio.io", rev,
			selector(doesNotExist("istio.io/rev"), doesNotExist("istio-injection")),
			selector(notIn("sidecar.istio.io/inject", "false"), in("istio.io/rev", l))),
	}
	if rev.Name == "" {
		hooks = append(hooks,
			webhook("namespace.sidecar-injector.istio.io", rev,
				selector(in("istio-injection", "enabled")),
				selector(notIn("sidecar.istio.io/inject", "false"))),
			webhook("object.sidecar-injector.istio.io", rev,
				selector(doesNotExist("istio-injection"), doesNotExist("istio.io/rev")),
				selector(in("sidecar.istio.io/inject", "true"), doesNotExist("istio.io/rev"))),
		)
	}
	name := "istio-sidecar-injector" + rev.suffix()
	meta := objectMeta("MutatingWebhookConfiguration", "", name, rev.Installed, 4)
	meta.Labels = rev.helmLabels()
	meta.Labels["app"] = "sidecar-injector"
	meta.Annotations = rev.helmAnnotations()
	return admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: meta,
		Webhooks:   hooks,
	}
}

// tagWebhooks are the webhooks of the istiod chart's revision-tags.yaml for
// a tag other than "default".
func tagWebhooks(tag string, rev istioRevision, created time.Time) admissionregistrationv1.MutatingWebhookConfiguration {
	hooks := []admissionregistrationv1.MutatingWebhook{
		webhook("rev.namespace.sidecar-injector.istio.io", rev,
			selector(in("istio.io/rev", tag), doesNotExist("istio-injection")),
			selector(notIn("sidecar.istio.io/inject", "false"))),
		webhook("rev.object.sidecar-injector.istio.io", rev,
			selector(doesNotExist("istio.io/rev"), doesNotExist("istio-injection")),
			selector(notIn("sidecar.istio.io/inject", "false"), in("istio.io/rev", tag))),
	}
	name := "istio-revision-tag-" + tag
	meta := objectMeta("MutatingWebhookConfiguration", "", name, created, 2)
	meta.Labels = rev.helmLabels()
	meta.Labels["app"] = "sidecar-injector"
	meta.Labels["istio.io/tag"] = tag
	meta.Annotations = rev.helmAnnotations()
	return admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: meta,
		Webhooks:   hooks,
	}
}

// injectorConfigMap is the istio-sidecar-injector[-<rev>] ConfigMap istiod
// reads its injection policy, templates and values from.
func injectorConfigMap(rev istioRevision) (corev1.ConfigMap, error) {
	values, err := json.MarshalIndent(injectorValues(rev), "", "  ")
	if err != nil {
		return corev1.ConfigMap{}, err
	}
	name := "istio-sidecar-injector" + rev.suffix()
	meta := objectMeta("ConfigMap", istioNamespace, name, rev.Installed, 0)
	meta.Labels = rev.helmLabels()
	meta.Annotations = rev.helmAnnotations()
	return corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
		Data:       map[string]string{"config": injectorConfig, "values": string(values)},
	}, nil
}

// meshConfigMap is the istio[-<rev>] ConfigMap holding the mesh config.
func meshConfigMap(rev istioRevision) corev1.ConfigMap {
	name := "istio" + rev.suffix()
	meta := objectMeta("ConfigMap", istioNamespace, name, rev.Installed, 0)
	meta.Labels = rev.helmLabels()
	meta.Annotations = rev.helmAnnotations()
	mesh := fmt.Sprintf(`defaultConfig:
  discoveryAddress: %s.istio-system.svc:15012
  meshId: %s
  tracing: {}
defaultProviders:
  metrics:
  - prometheus
enablePrometheusMerge: true
rootNamespace: istio-system
trustDomain: %s`, rev.istiod(), meshID, trustDomain)
	return corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
		Data:       map[string]string{"mesh": mesh, "meshNetworks": "networks: {}"},
	}
}

// injectorConfig is the ConfigMap's `config` key. The templates are cut
// down to their metadata part: kedge never renders them.
const injectorConfig = `defaultTemplates: [sidecar]
policy: enabled
alwaysInjectSelector:
  []
neverInjectSelector:
  []
injectedAnnotations:
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

// injectorValues is the ConfigMap's `values` key: the chart values istiod
// renders injection templates with (global, sidecarInjectorWebhook,
// revision, and the pilot/gateways parts the templates read).
func injectorValues(rev istioRevision) map[string]any {
	return map[string]any{
		"gateways": map[string]any{"seccompProfile": map[string]any{}, "securityContext": map[string]any{}},
		"global": map[string]any{
			"caAddress":                    "",
			"caName":                       "",
			"certSigners":                  []any{},
			"configCluster":                false,
			"configValidation":             true,
			"defaultPodDisruptionBudget":   map[string]any{"enabled": true},
			"defaultResources":             map[string]any{"requests": map[string]any{"cpu": "10m"}},
			"externalIstiod":               false,
			"hub":                          istioHub,
			"imagePullPolicy":              "",
			"imagePullSecrets":             []any{},
			"istioNamespace":               istioNamespace,
			"istiod":                       map[string]any{"enableAnalysis": false},
			"logAsJson":                    false,
			"logging":                      map[string]any{"level": "default:info"},
			"meshID":                       meshID,
			"meshNetworks":                 map[string]any{},
			"mountMtlsCerts":               false,
			"multiCluster":                 map[string]any{"clusterName": clusterName, "enabled": false},
			"network":                      meshNetwork,
			"omitSidecarInjectorConfigMap": false,
			"operatorManageWebhooks":       false,
			"pilotCertProvider":            "istiod",
			"priorityClassName":            "",
			"proxy": map[string]any{
				"autoInject":                   "enabled",
				"clusterDomain":                "cluster.local",
				"componentLogLevel":            "misc:error",
				"excludeIPRanges":              "",
				"excludeInboundPorts":          "",
				"excludeOutboundPorts":         "",
				"image":                        "proxyv2",
				"includeIPRanges":              "*",
				"includeInboundPorts":          "*",
				"includeOutboundPorts":         "",
				"logLevel":                     "warning",
				"outlierLogPath":               "",
				"privileged":                   false,
				"readinessFailureThreshold":    4,
				"readinessInitialDelaySeconds": 0,
				"readinessPeriodSeconds":       15,
				"resources": map[string]any{
					"limits":   map[string]any{"cpu": "2000m", "memory": "1024Mi"},
					"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				},
				"startupProbe": map[string]any{"enabled": true, "failureThreshold": 600},
				"statusPort":   15020,
				"tracer":       "none",
			},
			"proxy_init":         map[string]any{"forceApplyIptables": false, "image": "proxyv2"},
			"remotePilotAddress": "",
			"sds":                map[string]any{"token": map[string]any{"aud": "istio-ca"}},
			"sts":                map[string]any{"servicePort": 0},
			"tag":                rev.Version,
			"variant":            "",
		},
		"pilot":    map[string]any{"cni": map[string]any{"enabled": false, "provider": "default"}, "env": map[string]any{}},
		"revision": rev.Name,
		"sidecarInjectorWebhook": map[string]any{
			"alwaysInjectSelector":      []any{},
			"defaultTemplates":          []any{},
			"enableNamespacesByDefault": false,
			"injectedAnnotations":       map[string]any{},
			"neverInjectSelector":       []any{},
			"reinvocationPolicy":        "Never",
			"rewriteAppHTTPProbe":       true,
			"templates":                 map[string]any{},
		},
	}
}

// --- injection -----------------------------------------------------------

var cronJobName = regexp.MustCompile(`^(.+)-\d{8,10}$`)

// ownerMeta is how the injector names a pod's workload (ISTIO_META_OWNER,
// ISTIO_META_WORKLOAD_NAME): from the controller reference alone.
func ownerMeta(pod *corev1.Pod) (apiVersion, kind, name string) {
	apiVersion, kind, name = "v1", "Pod", pod.Name
	if pod.GenerateName == "" {
		return
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		apiVersion, kind, name = ref.APIVersion, ref.Kind, ref.Name
		switch {
		case kind == "ReplicaSet" && pod.Labels["pod-template-hash"] != "":
			kind, name = "Deployment", strings.TrimSuffix(name, "-"+pod.Labels["pod-template-hash"])
		case kind == "ReplicaSet" && pod.Labels["rollouts-pod-template-hash"] != "":
			apiVersion, kind, name = "v1alpha1", "Rollout", strings.TrimSuffix(name, "-"+pod.Labels["rollouts-pod-template-hash"])
		case kind == "Job":
			if m := cronJobName.FindStringSubmatch(name); m != nil {
				apiVersion, kind, name = "batch/v1", "CronJob", m[1]
			}
		}
		return
	}
	return
}

var injectedVolumes = []corev1.Volume{
	{Name: "workload-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	{Name: "credential-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	{Name: "workload-certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	{Name: "istio-envoy", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	{Name: "istio-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	{Name: "istio-podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		DefaultMode: ptr.To[int32](420),
		Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations"}},
		},
	}}},
	{Name: "istio-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](420),
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: "istio-ca", ExpirationSeconds: ptr.To[int64](43200), Path: "istio-token",
		}}},
	}}},
	{Name: "istiod-ca-cert", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "istio-ca-root-cert"},
		DefaultMode:          ptr.To[int32](420),
	}}},
}

var proxyMounts = []corev1.VolumeMount{
	{Name: "workload-socket", MountPath: "/var/run/secrets/workload-spiffe-uds"},
	{Name: "credential-socket", MountPath: "/var/run/secrets/credential-uds"},
	{Name: "workload-certs", MountPath: "/var/run/secrets/workload-spiffe-credentials"},
	{Name: "istiod-ca-cert", MountPath: "/var/run/secrets/istio"},
	{Name: "istio-data", MountPath: "/var/lib/istio/data"},
	{Name: "istio-envoy", MountPath: "/etc/istio/proxy"},
	{Name: "istio-token", MountPath: "/var/run/secrets/tokens"},
	{Name: "istio-podinfo", MountPath: "/etc/istio/pod"},
}

func proxyResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func resourceEnv(name, res string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res}}}
}

// proxyEnv is the istio-proxy environment the sidecar and gateway
// templates render.
func proxyEnv(pod *corev1.Pod, inj injection, appContainers []string, promAnnotations string) []corev1.EnvVar {
	var ports []string
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			data, _ := json.Marshal(p)
			ports = append(ports, "    "+string(data))
		}
	}
	podPorts := "[\n]"
	if len(ports) > 0 {
		podPorts = "[\n" + strings.Join(ports, "\n    ,") + "\n]"
	}
	apiVersion, kind, name := ownerMeta(pod)
	env := []corev1.EnvVar{
		{Name: "PILOT_CERT_PROVIDER", Value: "istiod"},
		{Name: "CA_ADDR", Value: inj.caAddress()},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("INSTANCE_IP", "status.podIP"),
		fieldEnv("SERVICE_ACCOUNT", "spec.serviceAccountName"),
		fieldEnv("HOST_IP", "status.hostIP"),
		resourceEnv("ISTIO_CPU_LIMIT", "limits.cpu"),
		{Name: "PROXY_CONFIG", Value: fmt.Sprintf("{\"discoveryAddress\":\"%s\",\"meshId\":\"%s\",\"tracing\":{}}\n", inj.caAddress(), meshID)},
		{Name: "ISTIO_META_POD_PORTS", Value: podPorts},
		{Name: "ISTIO_META_APP_CONTAINERS", Value: strings.Join(appContainers, ",")},
		resourceEnv("GOMEMLIMIT", "limits.memory"),
		resourceEnv("GOMAXPROCS", "limits.cpu"),
		{Name: "ISTIO_META_CLUSTER_ID", Value: clusterName},
		fieldEnv("ISTIO_META_NODE_NAME", "spec.nodeName"),
		{Name: "ISTIO_META_INTERCEPTION_MODE", Value: "REDIRECT"},
		{Name: "ISTIO_META_NETWORK", Value: meshNetwork},
		{Name: "ISTIO_META_WORKLOAD_NAME", Value: name},
		{Name: "ISTIO_META_OWNER", Value: fmt.Sprintf("kubernetes://apis/%s/namespaces/%s/%ss/%s", apiVersion, pod.Namespace, strings.ToLower(kind), name)},
		{Name: "ISTIO_META_MESH_ID", Value: meshID},
		{Name: "TRUST_DOMAIN", Value: trustDomain},
	}
	if promAnnotations != "" {
		env = append(env, corev1.EnvVar{Name: "ISTIO_PROMETHEUS_ANNOTATIONS", Value: promAnnotations})
	}
	return env
}

func readyProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready", Port: intstr.FromInt32(15021)}},
		PeriodSeconds:    15,
		TimeoutSeconds:   3,
		FailureThreshold: 4,
	}
}

func startupProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz/ready", Port: intstr.FromInt32(15021)}},
		PeriodSeconds:    1,
		TimeoutSeconds:   3,
		FailureThreshold: 600,
	}
}

// injectPod does to an admitted pod what the injector webhook of revision
// inj.Revision did: the sidecar template, or the gateway template when the
// pod asks for it, with native sidecars when the pod opts in.
func injectPod(pod *corev1.Pod, inj injection) {
	gateway := pod.Annotations["inject.istio.io/templates"] == "gateway"
	native := pod.Annotations["sidecar.istio.io/nativeSidecar"] == "true"

	var appContainers []string
	for _, c := range pod.Spec.Containers {
		if c.Name != "istio-proxy" {
			appContainers = append(appContainers, c.Name)
		}
	}

	// Prometheus merge: the proxy serves the merged metrics and keeps the
	// application's own scrape settings in an environment variable.
	promAnnotations := ""
	if pod.Annotations["prometheus.io/scrape"] != "" {
		data, _ := json.Marshal(struct {
			Scrape string `json:"scrape"`
			Path   string `json:"path"`
			Port   string `json:"port"`
		}{pod.Annotations["prometheus.io/scrape"], pod.Annotations["prometheus.io/path"], pod.Annotations["prometheus.io/port"]})
		promAnnotations = string(data)
	}

	env := proxyEnv(pod, inj, appContainers, promAnnotations)
	proxy := corev1.Container{
		Name:           "istio-proxy",
		Image:          inj.image(),
		Args:           []string{"proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"},
		Env:            env,
		Ports:          []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: readyProbe(),
		StartupProbe:   startupProbe(),
		Resources:      proxyResources(),
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			Privileged:               ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsGroup:               ptr.To[int64](1337),
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](1337),
		},
		VolumeMounts: append([]corev1.VolumeMount(nil), proxyMounts...),
	}
	if native {
		proxy.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		proxy.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"pilot-agent", "request", "--debug-port=15020", "POST", "drain"},
		}}}
	}
	defaultContainer(&proxy)

	var status struct {
		InitContainers   []string `json:"initContainers"`
		Containers       []string `json:"containers"`
		Volumes          []string `json:"volumes"`
		ImagePullSecrets []string `json:"imagePullSecrets"`
		Revision         string   `json:"revision"`
	}
	status.Revision = inj.Revision
	for _, v := range injectedVolumes {
		status.Volumes = append(status.Volumes, v.Name)
	}

	labels, annotations := pod.Labels, pod.Annotations
	if gateway {
		// The gateway template fills in the pod's own istio-proxy container
		// (image "auto") instead of adding one, and adds no init container.
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if c.Name != "istio-proxy" {
				continue
			}
			c.Image = inj.image()
			c.Args = []string{"proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"}
			c.Env = append(c.Env, env...)
			c.ReadinessProbe = readyProbe()
			c.VolumeMounts = append(append([]corev1.VolumeMount(nil), proxyMounts...), c.VolumeMounts...)
			defaultContainer(c)
		}
		status.Containers = []string{"istio-proxy"}
	} else {
		labels["security.istio.io/tlsMode"] = "istio"
		init := corev1.Container{
			Name:  "istio-init",
			Image: inj.image(),
			Args: []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT",
				"-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020", "--log_output_level=default:info"},
			Resources: proxyResources(),
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}, Drop: []corev1.Capability{"ALL"}},
				Privileged:               ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(false),
				RunAsGroup:               ptr.To[int64](0),
				RunAsNonRoot:             ptr.To(false),
				RunAsUser:                ptr.To[int64](0),
			},
		}
		defaultContainer(&init)
		if native {
			pod.Spec.InitContainers = append([]corev1.Container{init, proxy}, pod.Spec.InitContainers...)
			status.InitContainers = []string{"istio-init", "istio-proxy"}
		} else {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, init)
			pod.Spec.Containers = append(pod.Spec.Containers, proxy)
			status.InitContainers = []string{"istio-init"}
			status.Containers = []string{"istio-proxy"}
		}
		if len(appContainers) > 0 {
			setDefault(annotations, "kubectl.kubernetes.io/default-container", appContainers[0])
			setDefault(annotations, "kubectl.kubernetes.io/default-logs-container", appContainers[0])
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, injectedVolumes...)

	setDefault(labels, "service.istio.io/canonical-name", firstNonEmpty(labels["app.kubernetes.io/name"], labels["app"], ownerName(pod)))
	setDefault(labels, "service.istio.io/canonical-revision", firstNonEmpty(labels["app.kubernetes.io/version"], labels["version"], "latest"))
	labels["topology.istio.io/network"] = meshNetwork

	annotations["istio.io/rev"] = inj.Revision
	annotations["prometheus.io/path"] = "/stats/prometheus"
	annotations["prometheus.io/port"] = "15020"
	annotations["prometheus.io/scrape"] = "true"
	data, _ := json.Marshal(status)
	annotations["sidecar.istio.io/status"] = string(data)
}

func ownerName(pod *corev1.Pod) string {
	_, _, name := ownerMeta(pod)
	return name
}

func setDefault(m map[string]string, key, value string) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
