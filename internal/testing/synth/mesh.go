package synth

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// The control planes of the fleet: a revision-based upgrade half done. The
// unnamed default revision was patched in place (its pods may still run the
// previous patch image); revision 1-24-3 is the old named control plane and
// 1-25-1 the new one, to which the "stable" tag already points.
const (
	istioHub = "docker.io/istio"

	defaultRevision = "default"
	oldRevision     = "1-24-3"
	newRevision     = "1-25-1"
	stableTag       = "stable"

	defaultImage         = istioHub + "/proxyv2:1.24.4"
	defaultPreviousImage = istioHub + "/proxyv2:1.24.3"
	oldImage             = istioHub + "/proxyv2:1.24.3"
	newImage             = istioHub + "/proxyv2:1.25.1"
)

// installIstio adds the webhook configurations and ConfigMaps of the three
// control planes and the tag, as their charts and istioctl write them.
func installIstio(set *objects.Set) {
	meshtest.Merge(
		meshtest.IstiodRevision(defaultRevision, defaultImage),
		meshtest.IstiodRevision(oldRevision, oldImage),
		meshtest.IstiodRevision(newRevision, newImage),
		meshtest.RevisionTag(stableTag, newRevision),
	).AddTo(set)
}

// fleetValues are the control planes' injection settings: small proxy
// requests, probes rewritten through the agent, the token mounted into the
// injected containers, and istio-ca-crl listed in the status annotation.
var fleetValues = meshtest.Values{
	ProxyRequests:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40Mi")},
	RewriteAppProbes: true,
	MountToken:       true,
	CRLInStatus:      true,
}

// profile is how a namespace asks for injection, and what its pods run
// when they drift.
type profile int

const (
	// profileStable: istio.io/rev=stable. Drifted pods were injected by the
	// old revision before the tag moved (reason revision).
	profileStable profile = iota
	// profileEnabled: istio-injection=enabled, the default revision.
	// Drifted pods run the image from before the in-place patch (reason
	// proxy-image).
	profileEnabled
	// profilePinned: istio.io/rev=1-25-1. Drifted pods were created before
	// the namespace was enrolled and have no sidecar (missing-sidecar).
	profilePinned
	// profileAmbient: istio.io/dataplane-mode=ambient. Drifted pods still
	// carry the sidecar they had before the move (unwanted-sidecar).
	profileAmbient
	// profileNone: no injection label. Drifted pods carry a sidecar from a
	// label since removed (unwanted-sidecar).
	profileNone
)

// profileWeights are the shares of namespaces per profile, in percent.
var profileWeights = []weighted[profile]{
	{profileStable, 45},
	{profileEnabled, 25},
	{profilePinned, 10},
	{profileAmbient, 10},
	{profileNone, 10},
}

func (p profile) labels() map[string]string {
	switch p {
	case profileStable:
		return map[string]string{"istio.io/rev": stableTag}
	case profileEnabled:
		return map[string]string{"istio-injection": "enabled"}
	case profilePinned:
		return map[string]string{"istio.io/rev": newRevision}
	case profileAmbient:
		return map[string]string{"istio.io/dataplane-mode": "ambient"}
	}
	return nil
}

// sidecarOf is what the injector put into a pod of a namespace with
// profile p, drifted or not; nil is no sidecar. native runs istio-proxy as
// an init container with restartPolicy Always.
func (p profile) sidecarOf(drifted, native bool) *meshtest.Sidecar {
	rev, image := "", ""
	switch {
	case p == profileEnabled && drifted:
		rev, image = defaultRevision, defaultPreviousImage
	case p == profileEnabled:
		rev, image = defaultRevision, defaultImage
	case p == profilePinned && drifted:
		return nil
	case p == profilePinned, p == profileStable && !drifted:
		rev, image = newRevision, newImage
	case drifted:
		// Stable before the tag moved; ambient and none from before the
		// label changed.
		rev, image = oldRevision, oldImage
	default:
		return nil
	}
	return &meshtest.Sidecar{Revision: rev, Image: image, Native: native}
}
