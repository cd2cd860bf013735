package drift_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/image"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	digestOld = "registry.example.com/istio/proxyv2@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestNew = "registry.example.com/istio/proxyv2@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	fipsImage = "registry.example.com/mesh/proxyv2:1.24.1-fips"
	mirror124 = "mirror.corp/istio/proxyv2:1.24.1"
	digest64  = "sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
)

var enabled = map[string]string{"istio-injection": "enabled"}

func reasons(r ...drift.Reason) []drift.Reason { return r }

func current(revisions, images []string) drift.Current {
	if revisions == nil {
		revisions = []string{}
	}
	if images == nil {
		images = []string{}
	}
	return drift.Current{Revisions: revisions, Images: images}
}

func workload(ns, kind, name string, total, drifted int, r []drift.Reason, cur drift.Current, desired drift.Desired) drift.Workload {
	apiVersion := "apps/v1"
	if kind == "Rollout" {
		apiVersion = "argoproj.io/v1alpha1"
	}
	return drift.Workload{
		Namespace: ns, Kind: kind, Name: name,
		Reasons:    r,
		Pods:       drift.PodCount{Total: total, Drifted: drifted},
		Current:    cur,
		Desired:    desired,
		Manifest:   drift.Manifest{Status: drift.ManifestNoRepo},
		APIVersion: apiVersion,
	}
}

func via(w drift.Workload, v drift.Via) drift.Workload {
	w.Via = &v
	return w
}

func rolloutVia(name string) drift.Via {
	return drift.Via{Kind: "Rollout", Name: name, APIVersion: "argoproj.io/v1alpha1"}
}

func canaryVia(name, primary string) drift.Via {
	return drift.Via{Kind: "Canary", Name: name, APIVersion: "flagger.app/v1beta1", Primary: primary}
}

func skipped(ns, kind, name string, reason drift.SkipReason, detail string) drift.Skipped {
	return drift.Skipped{Namespace: ns, Kind: kind, Name: name, Reason: reason, Detail: detail}
}

// comparable drops what the table does not spell out: object metadata and
// start times are checked by their own tests.
func comparable(p drift.Plan) drift.Plan {
	for i := range p.Workloads {
		p.Workloads[i].Labels = nil
		p.Workloads[i].Annotations = nil
		p.Workloads[i].OldestDriftedPodStart = nil
	}
	return p
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name          string
		build         func(c *cluster)
		opts          drift.Options
		wantWorkloads []drift.Workload
		wantSkipped   []drift.Skipped
	}{
		{
			name: "in-place image change of the default revision",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 3, &cart, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 3, 3, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "namespace moved to another revision",
			build: func(c *cluster) {
				c.namespace("shop", map[string]string{"istio.io/rev": "1-25-0"})
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonRevision),
				current([]string{"default"}, []string{image124}), drift.Desired{Revision: "1-25-0", Image: image125})},
		},
		{
			name: "tag moved to a new revision",
			build: func(c *cluster) {
				c.installs = []meshtest.Install{
					meshtest.IstiodRevision("1-24-1", image124),
					meshtest.IstiodRevision("1-25-0", image125),
					meshtest.RevisionTag("stable", "1-25-0"),
				}
				c.namespace("shop", map[string]string{"istio.io/rev": "stable"})
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart-old", 2, &cart, injected("1-24-1", image124))
				c.pod("shop", "cart-new", &cart, injected("1-25-0", image125))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 3, 2, reasons(drift.ReasonRevision),
				current([]string{"1-24-1"}, []string{image124}), drift.Desired{Revision: "1-25-0", Image: image125})},
		},
		{
			name: "istio-injection=enabled beats istio.io/rev",
			build: func(c *cluster) {
				c.namespace("shop", map[string]string{"istio-injection": "enabled", "istio.io/rev": "1-25-0"})
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("1-25-0", image125))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonRevision),
				current([]string{"1-25-0"}, []string{image125}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "istio-injection=disabled leaves sidecars unwanted",
			build: func(c *cluster) {
				c.namespace("legacy", map[string]string{"istio-injection": "disabled"})
				api := c.deployment("legacy", "api", tmpl{})
				c.pods("legacy", "api", 2, &api, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{workload("legacy", "Deployment", "api", 2, 2, reasons(drift.ReasonUnwantedSidecar),
				current([]string{"default"}, []string{image124}), drift.Desired{})},
		},
		{
			name: "pod template opts out with sidecar.istio.io/inject=false, as label or annotation",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				byLabel := c.deployment("shop", "by-label", tmpl{labels: map[string]string{"sidecar.istio.io/inject": "false"}})
				c.pod("shop", "by-label-0", &byLabel, injected("default", image124))
				byAnnotation := c.deployment("shop", "by-annotation", tmpl{annotations: map[string]string{"sidecar.istio.io/inject": "false"}})
				c.pod("shop", "by-annotation-0", &byAnnotation, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{
				workload("shop", "Deployment", "by-annotation", 1, 1, reasons(drift.ReasonUnwantedSidecar),
					current([]string{"default"}, []string{image124}), drift.Desired{}),
				workload("shop", "Deployment", "by-label", 1, 1, reasons(drift.ReasonUnwantedSidecar),
					current([]string{"default"}, []string{image124}), drift.Desired{}),
			},
		},
		{
			name: "object selector alone injects in an unlabelled namespace",
			build: func(c *cluster) {
				c.namespace("tools", nil)
				api := c.deployment("tools", "api", tmpl{labels: map[string]string{"istio.io/rev": "stable"}})
				c.pods("tools", "api", 2, &api)
				plain := c.deployment("tools", "plain", tmpl{})
				c.pods("tools", "plain", 2, &plain)
			},
			wantWorkloads: []drift.Workload{workload("tools", "Deployment", "api", 2, 2, reasons(drift.ReasonMissingSidecar),
				current(nil, nil), drift.Desired{Revision: "1-25-0", Image: image125})},
		},
		{
			name: "deactivated default webhooks with a default tag",
			build: func(c *cluster) {
				c.installs = []meshtest.Install{
					meshtest.Deactivate(meshtest.IstiodRevision("default", image124)),
					meshtest.IstiodRevision("1-25-0", image125),
					meshtest.RevisionTag("default", "1-25-0"),
				}
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", image124))
				c.namespace("pay", map[string]string{"istio.io/rev": "default"})
				pay := c.deployment("pay", "api", tmpl{})
				c.pods("pay", "api", 1, &pay, injected("1-25-0", image125))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonRevision),
				current([]string{"default"}, []string{image124}), drift.Desired{Revision: "1-25-0", Image: image125})},
		},
		{
			name: "missing sidecar on pods created before the namespace was labelled",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart-old", 2, &cart)
				c.pod("shop", "cart-new", &cart, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 3, 2, reasons(drift.ReasonMissingSidecar),
				current(nil, nil), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "host-network pods are never injected",
			build: func(c *cluster) {
				c.namespace("infra", enabled)
				agent := c.daemonSet("infra", "node-agent", tmpl{hostNetwork: true})
				c.pods("infra", "node-agent", 3, &agent)
			},
		},
		{
			name: "sidecars left in an ambient namespace are unwanted",
			build: func(c *cluster) {
				c.namespace("mesh-ambient", map[string]string{"istio.io/dataplane-mode": "ambient"})
				api := c.deployment("mesh-ambient", "api", tmpl{})
				c.pods("mesh-ambient", "api", 2, &api, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("mesh-ambient", "Deployment", "api", 2, 2, reasons(drift.ReasonUnwantedSidecar),
				current([]string{"default"}, []string{image123}), drift.Desired{})},
		},
		{
			name: "native sidecars are read from init containers",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pod("shop", "cart-0", &cart, native("default", image123))
				c.pod("shop", "cart-1", &cart, native("default", image124))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "digest-pinned proxy image",
			build: func(c *cluster) {
				c.installs = []meshtest.Install{meshtest.IstiodRevision("default", digestNew)}
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", digestOld))
				web := c.deployment("shop", "web", tmpl{})
				c.pods("shop", "web", 2, &web, injected("default", digestNew))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{digestOld}), drift.Desired{Revision: "default", Image: digestNew})},
		},
		{
			// Kyverno's verifyImages (mutateDigest, on by default) and
			// google/k8s-digester append the digest after injection.
			name: "a digest appended after injection is the injected image; another tag under a digest still drifts",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", image124+"@"+digest64))
				web := c.deployment("shop", "web", tmpl{})
				c.pods("shop", "web", 2, &web, injected("default", image123+"@"+digest64))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "web", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123 + "@" + digest64}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "a registry mirror a policy rewrites to is the injected image once configured",
			opts: drift.Options{Images: image.Identity{Mirrors: map[string]string{"mirror.corp/istio": "docker.io/istio"}}},
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", mirror124+"@"+digest64))
				web := c.deployment("shop", "web", tmpl{})
				c.pods("shop", "web", 1, &web, injected("default", "mirror.corp/istio/proxyv2:1.23.2"))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "web", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{"mirror.corp/istio/proxyv2:1.23.2"}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "a registry mirror that is not configured drifts, shown as the pods run it",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", mirror124))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{mirror124}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "images.compareRegistry false compares the image name and tag alone",
			opts: drift.Options{Images: image.Identity{IgnoreRegistry: true}},
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", "gcr.io/istio-release/proxyv2:1.24.1"))
				web := c.deployment("shop", "web", tmpl{})
				c.pods("shop", "web", 1, &web, injected("default", "gcr.io/istio-release/proxyv2:1.23.2"))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "web", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{"gcr.io/istio-release/proxyv2:1.23.2"}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "proxyImage annotation on the template overrides the revision's image",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				fips := tmpl{annotations: map[string]string{"sidecar.istio.io/proxyImage": fipsImage}}
				cart := c.deployment("shop", "cart", fips)
				c.pods("shop", "cart", 2, &cart, injected("default", image124))
				web := c.deployment("shop", "web", fips)
				c.pods("shop", "web", 2, &web, injected("default", fipsImage))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image124}), drift.Desired{Revision: "default", Image: fipsImage})},
		},
		{
			// Istio lays the template's own istio-proxy container over the
			// injected one; a restart can never bring the revision's image.
			name: "a template's own istio-proxy image is what its pods should run",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{ownProxy: fipsImage})
				c.pods("shop", "cart", 2, &cart, injected("default", fipsImage))
				web := c.deployment("shop", "web", tmpl{ownProxy: fipsImage,
					annotations: map[string]string{"sidecar.istio.io/proxyImage": "mirror.local/istio/proxyv2:1.24.1"}})
				c.pods("shop", "web", 2, &web, injected("default", image124))
				auto := c.deployment("shop", "auto", tmpl{ownProxy: "auto"})
				c.pods("shop", "auto", 1, &auto, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "web", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image124}), drift.Desired{Revision: "default", Image: fipsImage})},
		},
		{
			name: "ProxyConfigs set the image type per namespace and per workload",
			build: func(c *cluster) {
				c.installs = append(standardMesh(),
					meshtest.ProxyConfig("debugging", "all-debug", "debug", nil),
					meshtest.ProxyConfig("debugging", "cart-distroless", "distroless", map[string]string{"app": "cart"}),
				)
				c.namespace("debugging", enabled)
				cart := c.deployment("debugging", "cart", tmpl{})
				c.pods("debugging", "cart", 2, &cart, injected("default", image124+"-debug"))
				web := c.deployment("debugging", "web", tmpl{})
				c.pods("debugging", "web", 2, &web, injected("default", image124+"-debug"))
				api := c.deployment("debugging", "api", tmpl{})
				c.pods("debugging", "api", 1, &api, injected("default", image124))
				c.namespace("shop", enabled)
				shop := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 1, &shop, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{
				workload("debugging", "Deployment", "api", 1, 1, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image124}), drift.Desired{Revision: "default", Image: image124 + "-debug"}),
				workload("debugging", "Deployment", "cart", 2, 2, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image124 + "-debug"}), drift.Desired{Revision: "default", Image: image124 + "-distroless"}),
			},
		},
		{
			name: "variant suffix",
			build: func(c *cluster) {
				c.installs = []meshtest.Install{meshtest.IstiodRevision("default", image124, meshtest.WithVariant("distroless"))}
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", image124))
				web := c.deployment("shop", "web", tmpl{})
				c.pods("shop", "web", 2, &web, injected("default", image124+"-distroless"))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image124}), drift.Desired{Revision: "default", Image: image124 + "-distroless"})},
		},
		{
			name: "StatefulSet, DaemonSet, Rollout and Rollout with workloadRef",
			build: func(c *cluster) {
				c.namespace("data", enabled)
				db := c.statefulSet("data", "db", tmpl{})
				c.pods("data", "db", 3, &db, injected("default", image123))
				logs := c.daemonSet("data", "logs", tmpl{})
				c.pods("data", "logs", 2, &logs, injected("default", image123))
				web := c.rollout("data", "web", tmpl{})
				c.pods("data", "web", 2, &web, injected("default", image123))
				// The referenced Deployment opts its pods out; the Rollout's
				// pods must be judged by that template, not the Rollout's empty one.
				ref := c.rolloutWithWorkloadRef("data", "api", "api-template", tmpl{labels: map[string]string{"sidecar.istio.io/inject": "false"}})
				c.pods("data", "api", 2, &ref, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{
				workload("data", "DaemonSet", "logs", 2, 2, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}),
				via(workload("data", "Deployment", "api-template", 2, 2, reasons(drift.ReasonUnwantedSidecar),
					current([]string{"default"}, []string{image124}), drift.Desired{}), rolloutVia("api")),
				workload("data", "Rollout", "web", 2, 2, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}),
				workload("data", "StatefulSet", "db", 3, 3, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}),
			},
		},
		{
			name: "Job and CronJob pods are named by their top owner and not restarted",
			build: func(c *cluster) {
				c.namespace("batch", enabled)
				nightly := c.cronJob("batch", "nightly", tmpl{})
				c.pod("batch", "nightly-29000000-abcde", &nightly, injected("default", image123))
				c.pod("batch", "nightly-29000000-fghij", &nightly, injected("default", image123))
				migrate := c.job("batch", "migrate", nil, tmpl{}.spec("migrate"))
				c.pod("batch", "migrate-xyz12", &migrate)
				hourly := c.cronJob("batch", "hourly", tmpl{})
				c.pod("batch", "hourly-29000000-abcde", &hourly, injected("default", image124))
			},
			wantSkipped: []drift.Skipped{
				skipped("batch", "CronJob", "nightly", drift.SkipNotRestartable, ""),
				skipped("batch", "Job", "migrate", drift.SkipNotRestartable, ""),
			},
		},
		{
			name: "a ReplicaSet without a Deployment, and other controllers, are named by their top owner and not restarted",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				legacy := c.bareReplicaSet("shop", "legacy", tmpl{})
				c.pods("shop", "legacy", 2, &legacy, injected("default", image123))
				inSync := c.bareReplicaSet("shop", "in-sync", tmpl{})
				c.pod("shop", "in-sync-0", &inSync, injected("default", image124))
				yes := true
				operated := c.ownedByReplicaSetOf("shop", "engine",
					&metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Engine", Name: "engine", UID: c.uid(), Controller: &yes}, tmpl{})
				c.pod("shop", "engine-0", &operated)
				rc := c.ownedBy("v1", "ReplicationController", "old-web", tmpl{})
				c.pod("shop", "old-web-abcde", &rc, injected("1-25-0", image125))
			},
			wantSkipped: []drift.Skipped{
				skipped("shop", "Engine", "engine", drift.SkipNotRestartable,
					"owned by Engine (example.com/v1), which kedge cannot restart through a pod template"),
				skipped("shop", "ReplicaSet", "legacy", drift.SkipNotRestartable,
					"a ReplicaSet with no Deployment or Rollout above it: a template change restarts none of its pods"),
				skipped("shop", "ReplicationController", "old-web", drift.SkipNotRestartable,
					"owned by ReplicationController (v1), which kedge cannot restart through a pod template"),
			},
		},
		{
			name: "the pods of a Flagger Canary's primary belong to the Canary's target, judged by the primary's template",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				target := c.deployment("shop", "podinfo", tmpl{})
				primary := c.flaggerCanary("shop", "podinfo", "podinfo", tmpl{})
				c.pods("shop", "podinfo-primary", 3, &primary, injected("default", image123), startedDaysAgo(9))
				// An analysis under way: the target's own pods already
				// run the new proxy.
				c.pod("shop", "podinfo-7d9f8b6c5-x2x4q", &target, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{via(workload("shop", "Deployment", "podinfo", 4, 3, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}), canaryVia("podinfo", "podinfo-primary"))},
		},
		{
			name: "a Flagger primary promoted onto the new proxy no longer drifts",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				c.deployment("shop", "podinfo", tmpl{})
				primary := c.flaggerCanary("shop", "podinfo", "podinfo", tmpl{})
				c.pods("shop", "podinfo-primary", 3, &primary, injected("default", image124))
			},
		},
		{
			name: "a primary whose Canary kedge did not read is skipped, naming the Canary",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				c.deployment("shop", "podinfo", tmpl{})
				primary := c.flaggerCanary("shop", "podinfo", "podinfo", tmpl{})
				c.pods("shop", "podinfo-primary", 2, &primary, injected("default", image123))
				c.set.Canaries = nil
			},
			wantSkipped: []drift.Skipped{skipped("shop", "Canary", "podinfo", drift.SkipNotRestartable,
				"Deployment podinfo-primary is controlled by Flagger Canary podinfo (flagger.app/v1beta1), which kedge did not read: "+
					"Flagger promotes the template of the Canary's target to its primary, and that template is where the restart belongs")},
		},
		{
			name: "a primary whose Canary's target kedge did not read is skipped, naming the target",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				primary := c.flaggerCanary("shop", "podinfo", "podinfo", tmpl{})
				c.pods("shop", "podinfo-primary", 2, &primary, injected("default", image123))
			},
			wantSkipped: []drift.Skipped{skipped("shop", "Canary", "podinfo", drift.SkipNotRestartable,
				"Deployment podinfo-primary is controlled by Flagger Canary podinfo (flagger.app/v1beta1), whose target Deployment podinfo kedge did not read: "+
					"Flagger promotes the template of the Canary's target to its primary, and that template is where the restart belongs")},
		},
		{
			name: "a Rollout taking its template from a Deployment is restarted through the Deployment; the configured kinds select the Rollout",
			opts: drift.Options{Kinds: []string{"Deployment"}},
			build: func(c *cluster) {
				c.namespace("data", enabled)
				ref := c.rolloutWithWorkloadRef("data", "api", "api-template", tmpl{})
				c.pods("data", "api", 2, &ref, injected("default", image123))
				web := c.deployment("data", "web", tmpl{})
				c.pods("data", "web", 1, &web, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("data", "Deployment", "web", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "a workload an operator's resource owns, controller or not, is skipped naming the resource",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				engine := c.deployment("shop", "engine-api", tmpl{})
				c.ownedWorkload("Deployment", c.operatorRef("example.com/v1", "Engine", "engine", true))
				c.pods("shop", "engine-api", 2, &engine, injected("default", image123))
				// The Dragonfly operator owns its StatefulSets without the
				// controller flag, and updates them OnDelete itself.
				cache := c.statefulSet("shop", "cache", tmpl{})
				c.ownedWorkload("StatefulSet", c.operatorRef("dragonflydb.io/v1alpha1", "Dragonfly", "cache", false))
				c.onDelete("StatefulSet")
				c.pods("shop", "cache", 2, &cache, injected("default", image123))
				inSync := c.statefulSet("shop", "in-sync", tmpl{})
				c.ownedWorkload("StatefulSet", c.operatorRef("dragonflydb.io/v1alpha1", "Dragonfly", "in-sync", false))
				c.pods("shop", "in-sync", 1, &inSync, injected("default", image124))
			},
			wantSkipped: []drift.Skipped{
				skipped("shop", "Dragonfly", "cache", drift.SkipNotRestartable,
					"StatefulSet cache owned by Dragonfly cache (dragonflydb.io/v1alpha1, owner reference without controller: true): "+
						"the operator behind Dragonfly cache writes the pod template, which kedge cannot restart through Git"),
				skipped("shop", "Engine", "engine", drift.SkipNotRestartable,
					"Deployment engine-api owned by Engine engine (example.com/v1, controller): "+
						"the operator behind Engine engine writes the pod template, which kedge cannot restart through Git"),
			},
		},
		{
			name: "an operator's workload that opts out is opted out; one the configured kinds leave out is not reported",
			opts: drift.Options{Kinds: []string{"Deployment"}},
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				engine := c.deployment("shop", "engine-api", tmpl{}, map[string]string{"kedge.io/ignore": "true"})
				c.ownedWorkload("Deployment", c.operatorRef("example.com/v1", "Engine", "engine", true))
				c.pods("shop", "engine-api", 1, &engine, injected("default", image123))
				cache := c.statefulSet("shop", "cache", tmpl{})
				c.ownedWorkload("StatefulSet", c.operatorRef("dragonflydb.io/v1alpha1", "Dragonfly", "cache", false))
				c.pods("shop", "cache", 1, &cache, injected("default", image123))
			},
			wantSkipped: []drift.Skipped{skipped("shop", "Engine", "engine", drift.SkipOptedOut, "annotation kedge.io/ignore=true")},
		},
		{
			name: "StatefulSets and DaemonSets updated OnDelete are skipped: their pods must be deleted",
			build: func(c *cluster) {
				c.namespace("data", enabled)
				db := c.statefulSet("data", "db", tmpl{})
				c.onDelete("StatefulSet")
				c.pods("data", "db", 3, &db, injected("default", image123))
				logs := c.daemonSet("data", "logs", tmpl{})
				c.onDelete("DaemonSet")
				c.pods("data", "logs", 2, &logs, injected("default", image123))
				rolling := c.statefulSet("data", "queue", tmpl{})
				c.set.StatefulSets[len(c.set.StatefulSets)-1].Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
				c.pods("data", "queue", 1, &rolling, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("data", "StatefulSet", "queue", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
			wantSkipped: []drift.Skipped{
				skipped("data", "DaemonSet", "logs", drift.SkipOnDelete,
					"updateStrategy OnDelete: a new pod template reaches a pod only when the pod is deleted; delete the pods of DaemonSet logs to restart them"),
				skipped("data", "StatefulSet", "db", drift.SkipOnDelete,
					"updateStrategy OnDelete: a new pod template reaches a pod only when the pod is deleted; delete the pods of StatefulSet db to restart them"),
			},
		},
		{
			name: "workload kinds left out of the configured kinds are not reported at all",
			opts: drift.Options{Kinds: []string{"Deployment"}},
			build: func(c *cluster) {
				c.namespace("data", enabled)
				db := c.statefulSet("data", "db", tmpl{})
				c.pods("data", "db", 1, &db, injected("default", image123))
			},
		},
		{
			name: "bare pods have no owner to restart",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				c.pod("shop", "debug", nil, injected("default", image123))
				c.pod("shop", "in-sync", nil, injected("default", image124))
			},
			wantSkipped: []drift.Skipped{skipped("shop", "Pod", "debug", drift.SkipNoOwner, "")},
		},
		{
			name: "terminating and finished pods are ignored",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pod("shop", "cart-live", &cart, injected("default", image124))
				c.pod("shop", "cart-terminating", &cart, injected("default", image123), terminating())
				c.pod("shop", "cart-succeeded", &cart, injected("default", image123), phase("Succeeded"))
				c.pod("shop", "cart-failed", &cart, injected("default", image123), phase("Failed"))
				web := c.deployment("shop", "web", tmpl{})
				c.pod("shop", "web-live", &web, injected("default", image123))
				c.pod("shop", "web-terminating", &web, injected("default", image123), terminating())
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "web", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "several revisions would inject: skipped whatever the pods run",
			build: func(c *cluster) {
				c.installs = []meshtest.Install{
					meshtest.IstiodRevision("default", image124),
					meshtest.IstiodRevision("1-25-0", image125),
					meshtest.RevisionTag("default", "1-25-0"),
				}
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", image124))
				c.pod("shop", "bare", nil)
			},
			wantSkipped: []drift.Skipped{
				skipped("shop", "Deployment", "cart", drift.SkipConflict, "several revisions would inject: 1-25-0, default"),
				skipped("shop", "Pod", "bare", drift.SkipConflict, "several revisions would inject: 1-25-0, default"),
			},
		},
		{
			name: "opt-out on the workload, its template or its namespace",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				optOut := map[string]string{"kedge.io/ignore": "true"}
				onObject := c.deployment("shop", "on-object", tmpl{}, optOut)
				c.pods("shop", "on-object", 1, &onObject, injected("default", image123))
				onTemplate := c.deployment("shop", "on-template", tmpl{annotations: optOut})
				c.pods("shop", "on-template", 1, &onTemplate, injected("default", image123))
				notTrue := c.deployment("shop", "not-true", tmpl{}, map[string]string{"kedge.io/ignore": "false"})
				c.pods("shop", "not-true", 1, &notTrue, injected("default", image123))
				inSync := c.deployment("shop", "in-sync", tmpl{}, optOut)
				c.pods("shop", "in-sync", 1, &inSync, injected("default", image124))
				c.namespace("frozen", enabled, optOut)
				api := c.deployment("frozen", "api", tmpl{})
				c.pods("frozen", "api", 1, &api, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "not-true", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
			wantSkipped: []drift.Skipped{
				skipped("frozen", "Deployment", "api", drift.SkipOptedOut, "annotation kedge.io/ignore=true"),
				skipped("shop", "Deployment", "on-object", drift.SkipOptedOut, "annotation kedge.io/ignore=true"),
				skipped("shop", "Deployment", "on-template", drift.SkipOptedOut, "annotation kedge.io/ignore=true"),
			},
		},
		{
			name: "custom opt-out annotation",
			opts: drift.Options{OptOutAnnotation: "example.com/hands-off"},
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				a := c.deployment("shop", "a", tmpl{}, map[string]string{"example.com/hands-off": "true"})
				c.pods("shop", "a", 1, &a, injected("default", image123))
			},
			wantSkipped: []drift.Skipped{skipped("shop", "Deployment", "a", drift.SkipOptedOut, "annotation example.com/hands-off=true")},
		},
		{
			name: "include and exclude namespace globs",
			opts: drift.Options{IncludeNamespaces: []string{"team-*"}, ExcludeNamespaces: []string{"team-b*"}},
			build: func(c *cluster) {
				for _, ns := range []string{"team-a", "team-b", "team-bravo", "other"} {
					c.namespace(ns, enabled)
					api := c.deployment(ns, "api", tmpl{})
					c.pods(ns, "api", 1, &api, injected("default", image123))
				}
			},
			wantWorkloads: []drift.Workload{workload("team-a", "Deployment", "api", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "auto-injection webhook skips kube-system",
			build: func(c *cluster) {
				c.installs = []meshtest.Install{meshtest.IstiodRevision("default", image124, meshtest.WithAutoInject())}
				c.namespace("tools", nil)
				api := c.deployment("tools", "api", tmpl{})
				c.pods("tools", "api", 2, &api)
				c.namespace("kube-system", nil)
				dns := c.deployment("kube-system", "coredns", tmpl{})
				c.pods("kube-system", "coredns", 2, &dns)
			},
			wantWorkloads: []drift.Workload{workload("tools", "Deployment", "api", 2, 2, reasons(drift.ReasonMissingSidecar),
				current(nil, nil), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "only the configured kinds are acted on",
			opts: drift.Options{Kinds: []string{"Deployment"}},
			build: func(c *cluster) {
				c.namespace("data", enabled)
				db := c.statefulSet("data", "db", tmpl{})
				c.pods("data", "db", 1, &db, injected("default", image123))
				api := c.deployment("data", "api", tmpl{})
				c.pods("data", "api", 1, &api, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("data", "Deployment", "api", 1, 1, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "owners missing from the set are still grouped by name",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pods("shop", "cart", 2, &cart, injected("default", image123))
				web := c.rollout("shop", "web", tmpl{})
				c.pods("shop", "web", 1, &web, injected("default", image123))
				// Neither ReplicaSet was captured: the hash labels still name
				// their owners.
				c.set.ReplicaSets = nil
				api := c.deployment("shop", "api", tmpl{})
				c.pods("shop", "api", 1, &api, injected("default", image123))
				// The ReplicaSet is there, its Deployment is not.
				c.set.Deployments = c.set.Deployments[:len(c.set.Deployments)-1]
			},
			wantWorkloads: []drift.Workload{
				workload("shop", "Deployment", "api", 1, 1, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}),
				workload("shop", "Deployment", "cart", 2, 2, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}),
				workload("shop", "Rollout", "web", 1, 1, reasons(drift.ReasonProxyImage),
					current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124}),
			},
		},
		{
			name: "classic ingress gateway injected through the gateway template",
			build: func(c *cluster) {
				c.namespace("istio-ingress", nil)
				gw := c.deployment("istio-ingress", "istio-ingressgateway", tmpl{
					labels:      map[string]string{"sidecar.istio.io/inject": "true", "istio": "ingressgateway"},
					annotations: map[string]string{"inject.istio.io/templates": "gateway"},
				})
				c.pods("istio-ingress", "istio-ingressgateway", 2, &gw, injected("default", image123))
			},
			wantWorkloads: []drift.Workload{workload("istio-ingress", "Deployment", "istio-ingressgateway", 2, 2, reasons(drift.ReasonProxyImage),
				current([]string{"default"}, []string{image123}), drift.Desired{Revision: "default", Image: image124})},
		},
		{
			name: "gateways istiod deploys itself are left to istiod",
			build: func(c *cluster) {
				c.namespace("istio-ingress", enabled)
				gw := c.deployment("istio-ingress", "public-istio", tmpl{labels: map[string]string{
					"gateway.istio.io/managed": "istio.io-gateway-controller",
					"sidecar.istio.io/inject":  "false",
				}})
				c.pods("istio-ingress", "public-istio", 2, &gw, injected("default", image123))
			},
		},
		{
			name: "mixed reasons within one workload are merged and sorted",
			build: func(c *cluster) {
				c.namespace("shop", enabled)
				cart := c.deployment("shop", "cart", tmpl{})
				c.pod("shop", "cart-a", &cart, injected("1-25-0", image125))
				c.pod("shop", "cart-b", &cart, injected("default", image123))
				c.pod("shop", "cart-c", &cart)
				c.pod("shop", "cart-d", &cart, injected("default", image124))
			},
			wantWorkloads: []drift.Workload{workload("shop", "Deployment", "cart", 4, 3,
				reasons(drift.ReasonMissingSidecar, drift.ReasonProxyImage, drift.ReasonRevision),
				current([]string{"1-25-0", "default"}, []string{image123, image125}),
				drift.Desired{Revision: "default", Image: image124})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster()
			tt.build(c)
			tt.opts.Cluster = "prod-eu-1"
			got := comparable(c.compute(tt.opts))

			want := drift.Plan{Cluster: "prod-eu-1", Workloads: tt.wantWorkloads, Skipped: tt.wantSkipped}
			if want.Workloads == nil {
				want.Workloads = []drift.Workload{}
			}
			if want.Skipped == nil {
				want.Skipped = []drift.Skipped{}
			}
			assert.Equal(t, want, got)
		})
	}
}
