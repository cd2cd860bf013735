package dashboard

import (
	"time"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/prstate"
)

// sample is data every template is rendered with at load time.
type sample struct {
	pr        NamespacePR
	dashboard ClusterDashboard
	comment   CommentData
	plan      PlanView
}

// samples are a full case, touching every field and branch the built-in
// templates have, and an empty one.
func samples() []sample {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := now.Add(-50 * time.Hour)
	workloads := []drift.Workload{
		{
			Namespace: "shop", Kind: "Deployment", Name: "cart",
			Reasons: []drift.Reason{drift.ReasonRevision}, Pods: drift.PodCount{Total: 3, Drifted: 3},
			Current:               drift.Current{Revisions: []string{"1-23-2"}, Images: []string{"docker.io/istio/proxyv2:1.23.2"}},
			Desired:               drift.Desired{Revision: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0"},
			Manifest:              drift.Manifest{Status: drift.ManifestFound, Path: "apps/shop/cart.yaml", Edit: drift.EditInPlace},
			OldestDriftedPodStart: &started,
		},
		{
			Namespace: "shop", Kind: "Deployment", Name: "podinfo",
			Reasons: []drift.Reason{drift.ReasonProxyImage}, Pods: drift.PodCount{Total: 2, Drifted: 2},
			Current:  drift.Current{Revisions: []string{"1-24-0"}, Images: []string{"mirror.example.com/istio/proxyv2:1.23.2"}},
			Desired:  drift.Desired{Revision: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0"},
			Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "apps/shop/podinfo.yaml", Edit: drift.EditInPlace},
			Via:      &drift.Via{Kind: drift.KindCanary, Name: "podinfo", APIVersion: "flagger.app/v1beta1", Primary: "podinfo-primary"},
		},
		{
			Namespace: "shop", Kind: "Deployment", Name: "api-template",
			Reasons: []drift.Reason{drift.ReasonRevision}, Pods: drift.PodCount{Total: 1, Drifted: 1},
			Current:  drift.Current{Revisions: []string{"1-23-2"}, Images: []string{"docker.io/istio/proxyv2:1.23.2"}},
			Desired:  drift.Desired{Revision: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0"},
			Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "apps/shop/api.yaml", Edit: drift.EditInPlace},
			Via:      &drift.Via{Kind: drift.KindRollout, Name: "api", APIVersion: "argoproj.io/v1alpha1"},
		},
		{
			Namespace: "shop", Kind: "StatefulSet", Name: "db",
			Reasons: []drift.Reason{drift.ReasonMissingSidecar}, Pods: drift.PodCount{Total: 2, Drifted: 1},
			Desired:  drift.Desired{Revision: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0"},
			Manifest: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "two overlays", Candidates: []string{"a.yaml", "b.yaml"}},
		},
	}
	full := sample{
		pr: NamespacePR{
			Cluster: "c", Namespace: "shop", Branch: "kedge/shop", BaseBranch: "main",
			RepoWebURL: "https://github.com/o/r", Workloads: workloads,
			ProxyVersions: map[string]int{"1.23.2": 3, "": 1}, Applier: "Flux Kustomization flux-system/apps",
			OptOutAnnotation: "kedge.io/ignore", RestartAnnotation: "kedge.io/restartedAt",
			DashboardURL: "https://github.com/o/r/issues/1",
			Migration: &Migration{From: "1-23-2", To: "1-24-0", NamespacePath: "ns/shop.yaml", RemovedLabels: []string{"istio-injection"}, SetLabels: []string{"istio.io/dataplane-mode=ambient"},
				Carried: []CarriedPolicy{{Object: "AuthorizationPolicy shop/get-only", Path: "apps/shop/policies.yaml", Selector: "app=cart", Services: []string{"cart"}, Waypoints: []string{"shop/waypoint"}}}},
			Now: now,
		},
		dashboard: ClusterDashboard{
			Cluster: "c", RepoWebURL: "https://github.com/o/r", BaseBranch: "main",
			Mesh: Mesh{
				Revisions: []Revision{{Name: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0", Tags: []string{"default"}, Namespaces: []string{"shop"}}},
				Tags:      map[string]string{"default": "1-24-0", "old": "1-22-0"},
			},
			Namespaces: []NamespaceStatus{{Namespace: "shop", State: prstate.PROpen, PRNumber: 7, PRURL: "https://github.com/o/r/pull/7", Workloads: workloads, Detail: "d"}},
			Skipped:    []drift.Skipped{{Namespace: "batch", Kind: "CronJob", Name: "nightly", Reason: drift.SkipNotRestartable}},
			Refused:    []RefusedFile{{Namespace: "shop", Path: "apps/shop/cart.yaml", Reason: "anchors", Workloads: []string{"Deployment/cart"}}},
			Stragglers: []Straggler{{Namespace: "shop", PRNumber: 6, PRURL: "https://github.com/o/r/pull/6", MergedAt: now.Add(-time.Hour), Workloads: workloads[:1]}},
			LastCycle:  now, LastCycleDuration: 3 * time.Second,
		},
		comment: CommentData{
			Cluster: "c", Namespace: "shop", Branch: "kedge/shop",
			Targets: prstate.NewState("c", "shop", workloads).Targets,
			Closed: []ClosedTarget{
				{Target: prstate.NewState("c", "shop", workloads).Targets[0], Fate: prstate.FateOptedOut, Detail: "annotation kedge.io/ignore=true"},
				{Target: prstate.NewState("c", "shop", workloads).Targets[1], Fate: prstate.FateResolved},
			},
			OptOutAnnotation: "kedge.io/ignore", NamespaceOptedOut: true,
			Successor: 8, SuccessorURL: "https://github.com/o/r/pull/8",
			Stragglers: workloads, Authors: []string{"someone"},
			MergedAt: now.Add(-time.Hour), Grace: 30 * time.Minute, Now: now,
			DashboardURL: "https://github.com/o/r/issues/1",
		},
	}
	full.plan = PlanView{
		Plan: drift.Plan{Cluster: "c", Workloads: workloads, Skipped: full.dashboard.Skipped},
		Mesh: &full.dashboard.Mesh, Now: now,
		ProxyVersions: map[string]map[string]int{"shop": full.pr.ProxyVersions},
	}
	return []sample{full, {}}
}
