package synth

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kedge-io/kedge/internal/mesh/meshtest"
	"github.com/kedge-io/kedge/internal/objects"
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
var profileWeights = []struct {
	profile profile
	weight  int
}{
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

// sidecar is what the injector put into a pod; the zero value is no
// sidecar.
type sidecar struct {
	present  bool
	revision string
	image    string
	// native runs istio-proxy as an init container with restartPolicy
	// Always.
	native bool
}

// sidecarOf is what a pod of a namespace with profile p runs, drifted or
// not.
func (p profile) sidecarOf(drifted, native bool) sidecar {
	switch p {
	case profileStable:
		if drifted {
			return sidecar{present: true, revision: oldRevision, image: oldImage, native: native}
		}
		return sidecar{present: true, revision: newRevision, image: newImage, native: native}
	case profileEnabled:
		if drifted {
			return sidecar{present: true, revision: defaultRevision, image: defaultPreviousImage, native: native}
		}
		return sidecar{present: true, revision: defaultRevision, image: defaultImage, native: native}
	case profilePinned:
		if drifted {
			return sidecar{}
		}
		return sidecar{present: true, revision: newRevision, image: newImage, native: native}
	default:
		if drifted {
			return sidecar{present: true, revision: oldRevision, image: oldImage, native: native}
		}
		return sidecar{}
	}
}
