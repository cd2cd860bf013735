package demodata

import (
	"time"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// The story of prod-eu-1, oldest first (all times UTC):
//
//	2024-06-12  Istio installed with Helm (default revision); tag "stable" points at it.
//	2025-03-04  08:30  default revision upgraded in place 1.23.2 -> 1.24.1.
//	2025-03-05         some teams restart (fraud-check, currency, analytics);
//	                   search turns on native sidecars (indexer rolls).
//	2025-03-06  10:02  canary revision 1-25-0 (istiod-1-25-0) installed.
//	2025-03-07  09:00  search moves from istio-injection=enabled to istio.io/rev=1-25-0;
//	                   orders briefly carries only istio.io/rev=1-25-0 (orders-api restarted,
//	                   orders-db-0 recreated by a node drain),
//	2025-03-10         then istio-injection=enabled is back next to it (orders-worker restarted).
//	2025-03-11  14:02  tag "stable" moved to 1-25-0 (payments uses the tag).
//	2025-03-12  09:00  analytics switches to ambient; ledger restarted onto 1-25-0.
//	2025-03-13  09:00  catalog labelled istio-injection=enabled.
//	            09:37  checkout restarted; its last old pod is still terminating.
//	            09:40  snapshot taken.
const clusterName = "prod-eu-1"

var snapshotTime = mustTime("2025-03-13T09:40:00Z")

var (
	defaultRevision = istioRevision{
		Name: "", Version: "1.24.1",
		Installed: mustTime("2024-06-12T09:14:27Z"),
	}
	canaryRevision = istioRevision{
		Name: "1-25-0", Version: "1.25.0",
		Installed: mustTime("2025-03-06T10:02:51Z"),
	}
	stableTagMoved = mustTime("2025-03-11T14:02:09Z")
)

// What injected a pod: the revision that injected it and its version then.
var (
	defaultBeforeUpgrade = &meshtest.Sidecar{Revision: "default", Image: istioHub + "/proxyv2:1.23.2"}
	defaultAfterUpgrade  = &meshtest.Sidecar{Revision: "default", Image: istioHub + "/proxyv2:1.24.1"}
	canary               = &meshtest.Sidecar{Revision: "1-25-0", Image: istioHub + "/proxyv2:1.25.0"}
)

func pods(n int, first string, sidecar *meshtest.Sidecar) []meshtest.PodPlan {
	return meshtest.PodsFrom(n, mustTime(first), sidecar)
}

func restarted(at string, n int, sidecar *meshtest.Sidecar) meshtest.Template {
	t := mustTime(at)
	return meshtest.Template{RestartedAt: t, Pods: meshtest.PodsFrom(n, t.Add(3*time.Second), sidecar)}
}

func current(p ...meshtest.PodPlan) []meshtest.Template {
	return []meshtest.Template{{Pods: p}}
}

// stories is keyed by namespace/kind/name. Every workload in the snapshot
// must have one, so nothing about a pod is left to chance.
var stories = map[string]meshtest.Story{
	"kube-system/Deployment/coredns": {
		Created: mustTime("2024-06-10T08:03:15Z"), Revision: 3,
		Templates: current(pods(2, "2025-02-03T06:12:40Z", nil)...),
	},
	"istio-system/Deployment/istiod": {
		Created: defaultRevision.Installed, Revision: 9,
		Templates: current(pods(2, "2025-03-04T08:30:25Z", nil)...),
	},
	"istio-system/Deployment/istiod-1-25-0": {
		Created: canaryRevision.Installed, Revision: 1,
		Templates: current(pods(2, "2025-03-06T10:03:01Z", nil)...),
	},
	"istio-ingress/Deployment/istio-ingressgateway": {
		Created: mustTime("2024-06-12T09:40:11Z"), Revision: 6,
		Templates: current(pods(2, "2025-02-18T13:20:07Z", defaultBeforeUpgrade)...),
	},

	"shop/Deployment/frontend": {
		Created: mustTime("2024-07-01T10:00:04Z"), Revision: 14,
		Templates: current(pods(3, "2025-02-25T10:02:13Z", defaultBeforeUpgrade)...),
	},
	"shop/Deployment/cart": {
		Created: mustTime("2024-07-01T10:00:04Z"), Revision: 9,
		Templates: current(pods(2, "2025-02-27T15:44:31Z", defaultBeforeUpgrade)...),
	},
	"shop/Deployment/checkout": {
		Created: mustTime("2024-07-01T10:00:05Z"), Revision: 12,
		Templates: []meshtest.Template{
			{Pods: []meshtest.PodPlan{{Started: mustTime("2025-02-20T11:05:52Z"), Sidecar: defaultBeforeUpgrade, Terminating: true}}},
			restarted("2025-03-13T09:37:41Z", 2, defaultAfterUpgrade),
		},
	},
	"shop/Deployment/currency": {
		Created: mustTime("2024-07-01T10:00:05Z"), Revision: 5,
		Templates: []meshtest.Template{restarted("2025-03-05T11:20:00Z", 1, defaultAfterUpgrade)},
	},
	"shop/Deployment/oauth2-proxy": {
		Created: mustTime("2024-08-19T13:31:40Z"), Revision: 4,
		Templates: current(pods(2, "2025-02-10T09:31:18Z", defaultBeforeUpgrade)...),
	},
	"shop/Deployment/recommendations": {
		Created: mustTime("2024-10-02T08:45:00Z"), Revision: 7,
		Templates: current(pods(2, "2025-02-12T02:15:44Z", defaultBeforeUpgrade)...),
	},
	"shop/Deployment/podinfo": {
		Created: mustTime("2024-11-20T15:00:33Z"), Revision: 3,
		Templates: current(pods(2, "2025-02-14T16:48:09Z", defaultBeforeUpgrade)...),
	},
	"shop/Deployment/legacy-admin": {
		Created: mustTime("2024-09-17T14:22:05Z"), Revision: 2,
		Templates: current(pods(1, "2025-01-28T12:03:55Z", defaultBeforeUpgrade)...),
	},
	"shop/Pod/debug-shell": {
		Templates: current(pods(1, "2025-03-03T16:45:12Z", defaultBeforeUpgrade)...),
	},

	"payments/Rollout/payments-api": {
		Created: mustTime("2024-07-15T12:00:10Z"), Revision: 23,
		Templates: current(pods(3, "2025-02-24T13:10:26Z", defaultBeforeUpgrade)...),
	},
	"payments/Deployment/fraud-check": {
		Created: mustTime("2024-07-15T12:00:11Z"), Revision: 8,
		Templates: []meshtest.Template{restarted("2025-03-05T09:10:00Z", 2, defaultAfterUpgrade)},
	},
	"payments/Deployment/oauth2-proxy": {
		Created: mustTime("2024-08-19T13:33:02Z"), Revision: 5,
		Templates: []meshtest.Template{restarted("2025-03-06T14:30:00Z", 2, defaultAfterUpgrade)},
	},
	"payments/StatefulSet/ledger": {
		Created: mustTime("2024-07-15T12:00:11Z"), Revision: 6,
		Templates: []meshtest.Template{restarted("2025-03-12T07:30:00Z", 3, canary)},
	},

	"orders/Deployment/orders-api": {
		Created: mustTime("2024-06-20T09:12:44Z"), Revision: 11,
		Templates: []meshtest.Template{restarted("2025-03-07T10:15:00Z", 2, canary)},
	},
	"orders/Deployment/orders-worker": {
		Created: mustTime("2024-06-20T09:12:44Z"), Revision: 10,
		Templates: []meshtest.Template{restarted("2025-03-10T16:00:00Z", 2, defaultAfterUpgrade)},
	},
	// orders-db-0 was recreated by a node drain while orders carried only
	// istio.io/rev=1-25-0; orders-db-1 has run since before the upgrade.
	"orders/StatefulSet/orders-db": {
		Created: mustTime("2024-06-20T09:12:45Z"), Revision: 3,
		Templates: current(
			meshtest.PodPlan{Started: mustTime("2025-03-07T11:42:10Z"), Sidecar: canary},
			meshtest.PodPlan{Started: mustTime("2025-02-19T04:13:14Z"), Sidecar: defaultBeforeUpgrade},
		),
	},
	// Synced by Argo CD from a chart; its pods predate the upgrade.
	"orders/Deployment/orders-notifications": {
		Created: mustTime("2024-10-14T11:20:37Z"), Revision: 4,
		Templates: current(pods(2, "2025-02-21T08:55:02Z", defaultBeforeUpgrade)...),
	},
	"orders/Job/db-migrate-20250303": {
		Created: mustTime("2025-03-03T07:00:01Z"),
		Templates: current(meshtest.PodPlan{
			Started: mustTime("2025-03-03T07:00:04Z"), Sidecar: defaultBeforeUpgrade, Succeeded: true,
		}),
	},

	"analytics/Deployment/events-collector": {
		Created: mustTime("2024-09-02T10:20:00Z"), Revision: 6,
		Templates: []meshtest.Template{restarted("2025-03-05T13:00:00Z", 2, defaultAfterUpgrade)},
	},
	"analytics/Deployment/reporting": {
		Created: mustTime("2024-09-02T10:20:00Z"), Revision: 4,
		Templates: []meshtest.Template{restarted("2025-03-12T09:30:00Z", 1, nil)},
	},
	"analytics/DaemonSet/metrics-agent": {
		Created: mustTime("2024-09-02T10:20:01Z"), Revision: 5,
		Templates: []meshtest.Template{restarted("2025-03-05T13:05:00Z", 3, defaultAfterUpgrade)},
	},

	"search/Deployment/search-api": {
		Created: mustTime("2024-08-05T07:55:21Z"), Revision: 8,
		Templates: []meshtest.Template{restarted("2025-03-07T09:05:00Z", 2, canary)},
	},
	"search/Deployment/indexer": {
		Created: mustTime("2024-08-05T07:55:21Z"), Revision: 6,
		Templates: current(pods(2, "2025-03-05T15:40:12Z", defaultAfterUpgrade)...),
	},
	"search/Deployment/synonyms": {
		Created: mustTime("2024-08-05T07:55:22Z"), Revision: 3,
		Templates: []meshtest.Template{restarted("2025-03-07T09:06:00Z", 1, canary)},
	},

	// reviews (applied from the team's own repository) has not restarted
	// since the in-place upgrade.
	"reviews/Deployment/reviews-api": {
		Created: mustTime("2024-11-04T13:21:30Z"), Revision: 5,
		Templates: current(pods(2, "2025-02-27T16:44:02Z", defaultBeforeUpgrade)...),
	},

	"catalog/Deployment/catalog-api": {
		Created: mustTime("2025-03-01T10:11:40Z"), Revision: 1,
		Templates: current(pods(2, "2025-03-01T10:11:45Z", nil)...),
	},
	"catalog/Deployment/catalog-image-resizer": {
		Created: mustTime("2025-03-01T10:11:40Z"), Revision: 1,
		Templates: current(
			meshtest.PodPlan{Started: mustTime("2025-03-01T10:12:30Z")},
			meshtest.PodPlan{Started: mustTime("2025-03-13T09:21:14Z"), Sidecar: defaultAfterUpgrade},
			meshtest.PodPlan{Started: mustTime("2025-03-13T09:21:16Z"), Sidecar: defaultAfterUpgrade},
		),
	},
	"catalog/Deployment/catalog-sync": {
		Created: mustTime("2025-03-01T10:11:40Z"), Revision: 1,
		Templates: current(pods(1, "2025-03-01T10:12:02Z", nil)...),
	},
	"catalog/CronJob/catalog-price-import": {
		Created:   mustTime("2025-03-01T10:11:40Z"),
		Scheduled: mustTime("2025-03-13T08:00:00Z"),
		Templates: current(pods(1, "2025-03-13T08:00:03Z", nil)...),
	},
}

// namespaceCreated is when each namespace was created; the system ones
// come with the cluster.
var namespaceCreated = map[string]time.Time{
	"default":         mustTime("2024-06-10T07:58:02Z"),
	"kube-node-lease": mustTime("2024-06-10T07:58:02Z"),
	"kube-public":     mustTime("2024-06-10T07:58:02Z"),
	"kube-system":     mustTime("2024-06-10T07:58:02Z"),
	"flux-system":     mustTime("2024-06-11T16:20:48Z"),
	"argocd":          mustTime("2024-10-14T10:02:19Z"),
	"istio-system":    mustTime("2024-06-12T09:10:03Z"),
	"istio-ingress":   mustTime("2024-06-12T09:10:03Z"),
	"orders":          mustTime("2024-06-20T09:12:40Z"),
	"shop":            mustTime("2024-07-01T09:59:58Z"),
	"payments":        mustTime("2024-07-15T12:00:02Z"),
	"search":          mustTime("2024-08-05T07:55:15Z"),
	"analytics":       mustTime("2024-09-02T10:19:51Z"),
	"catalog":         mustTime("2025-03-01T10:11:33Z"),
	"reviews":         mustTime("2024-11-04T13:20:07Z"),
}

// gitRevision is the commit of the GitOps repository Flux last applied.
const gitRevision = "main@sha1:9b2e4c7a1f0d3b6e8c5a2f7d4e1b0a9c8d7e6f5a"

// teamRepositories are the repositories besides the platform one that Flux
// applies from: GitRepository spec.url to the directory (below the demo
// directory) holding its tree, and the commit Flux last applied from it.
var teamRepositories = map[string]teamRepository{
	"https://github.com/example-org/team-reviews": {Dir: "team-reviews", Revision: "main@sha1:4d1c0b7e9a2f5c8e3b6d0a1f7e4c9b2a5d8e1f03"},
}

type teamRepository struct {
	Dir, Revision string
}
