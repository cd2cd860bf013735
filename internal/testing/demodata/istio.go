package demodata

import (
	"encoding/pem"
	"fmt"
	"time"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const istioHub = "docker.io/istio"

// meshValues are the mesh-wide settings of the istiod HelmReleases in the
// GitOps repo: the injector ConfigMaps carry them, and injected pods show
// them.
var meshValues = meshtest.Values{
	ClusterID:             clusterName,
	MeshID:                "prod-eu",
	Network:               "eu-west-1",
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

// caBundle stands in for the istiod CA certificate istiod patches into its
// webhooks.
func caBundle() []byte {
	body := ""
	for i := 0; i < 5; i++ {
		body += meshtest.HexDigest(fmt.Sprint("istio-ca ", i))
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(body)})
}

// addIstio stores what the istiod HelmReleases installed for injection (the
// webhook configurations and the ConfigMaps of both revisions) and the
// stable tag, as the API server keeps them.
func (c *cluster) addIstio() {
	for _, rev := range []istioRevision{defaultRevision, canaryRevision} {
		in := meshtest.IstiodRevision(rev.label(), istioHub+"/proxyv2:"+rev.Version,
			meshtest.WithFluxHelmRelease(rev.Version), meshtest.WithCABundle(caBundle()), meshtest.WithChartValues(meshValues))
		for _, mwc := range in.WebhookConfigurations {
			mwc.ObjectMeta = c.kube.Stored("MutatingWebhookConfiguration", mwc.ObjectMeta, rev.Installed, 4)
			c.add("", "mutatingwebhookconfigurations", mwc)
		}
		for _, cm := range in.ConfigMaps {
			cm.ObjectMeta = c.kube.Stored("ConfigMap", cm.ObjectMeta, rev.Installed, 0)
			c.add(meshtest.IstioNamespace, "configmaps", cm)
		}
	}
	tag := meshtest.RevisionTag("stable", canaryRevision.Name,
		meshtest.WithFluxHelmRelease(canaryRevision.Version), meshtest.WithCABundle(caBundle()))
	for _, mwc := range tag.WebhookConfigurations {
		mwc.ObjectMeta = c.kube.Stored("MutatingWebhookConfiguration", mwc.ObjectMeta, stableTagMoved, 2)
		c.add("", "mutatingwebhookconfigurations", mwc)
	}
}
