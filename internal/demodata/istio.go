package demodata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/mesh/meshtest"
)

// Mesh-wide settings, as set in the istiod HelmReleases of the GitOps repo.
const (
	istioNamespace = meshtest.IstioNamespace
	istioHub       = "docker.io/istio"
	meshID         = "prod-eu"
	meshNetwork    = "eu-west-1"
	trustDomain    = "cluster.local"
)

// meshValues are what those HelmReleases set that shows in injected pods.
var meshValues = meshtest.Values{
	ClusterID:             clusterName,
	MeshID:                meshID,
	Network:               meshNetwork,
	ProxyConfigFromMesh:   true,
	StartupProbe:          true,
	PrometheusMerge:       true,
	DrainOnStop:           true,
	IptablesInit:          true,
	IndentPortsAfterComma: true,
}

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

// injection is what injected a pod: the revision and the version that
// revision ran at the time.
type injection struct {
	Revision string // "default" or a revision name, never a tag
	Version  string
}

func (i injection) image() string { return istioHub + "/proxyv2:" + i.Version }

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

// addIstio stores what the istiod HelmReleases installed for injection (the
// webhook configurations and the ConfigMaps of both revisions) and the
// stable tag, as the API server keeps them.
func (c *cluster) addIstio() error {
	for _, rev := range []istioRevision{defaultRevision, canaryRevision} {
		in := meshtest.IstiodRevision(rev.label(), istioHub+"/proxyv2:"+rev.Version,
			meshtest.WithFluxHelmRelease(rev.Version), meshtest.WithCABundle(caBundle()))
		for _, mwc := range in.WebhookConfigurations {
			mwc.ObjectMeta = storedMeta("MutatingWebhookConfiguration", mwc.ObjectMeta, rev.Installed, 4)
			c.add("", "mutatingwebhookconfigurations", mwc)
		}
		values, err := json.MarshalIndent(injectorValues(rev), "", "  ")
		if err != nil {
			return err
		}
		injector, mesh := in.ConfigMaps[0], in.ConfigMaps[1]
		injector.Data = map[string]string{"config": injectorConfig, "values": string(values)}
		mesh.Data["mesh"] = meshConfig(rev)
		for _, cm := range []corev1.ConfigMap{injector, mesh} {
			cm.ObjectMeta = storedMeta("ConfigMap", cm.ObjectMeta, rev.Installed, 0)
			c.add(istioNamespace, "configmaps", cm)
		}
	}
	tag := meshtest.RevisionTag("stable", canaryRevision.Name,
		meshtest.WithFluxHelmRelease(canaryRevision.Version), meshtest.WithCABundle(caBundle()))
	for _, mwc := range tag.WebhookConfigurations {
		mwc.ObjectMeta = storedMeta("MutatingWebhookConfiguration", mwc.ObjectMeta, stableTagMoved, 2)
		c.add("", "mutatingwebhookconfigurations", mwc)
	}
	return nil
}

// meshConfig is the istio[-<rev>] ConfigMap's mesh config.
func meshConfig(rev istioRevision) string {
	istiod := "istiod"
	if rev.Name != "" {
		istiod += "-" + rev.Name
	}
	return fmt.Sprintf(`defaultConfig:
  discoveryAddress: %s.istio-system.svc:15012
  meshId: %s
  tracing: {}
defaultProviders:
  metrics:
  - prometheus
enablePrometheusMerge: true
rootNamespace: istio-system
trustDomain: %s`, istiod, meshID, trustDomain)
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
