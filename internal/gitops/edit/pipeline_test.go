package edit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

type editCase struct {
	repo      string
	workloads []drift.Workload
	// hints by "namespace/name".
	hints map[string]locate.Hints
	// cluster is a directory of the checkout holding the Flux and Argo CD
	// objects the cluster runs; hints then come from them and the
	// workloads' tracking metadata, as kedge reads them from a cluster.
	cluster string
	// repoURL is the address the checkout is cloned from.
	repoURL string
	// repoApplications reads hints from the Argo CD Applications written in
	// the checkout, as kedge does when the cluster shows none.
	repoApplications bool
	// vars are the variables Flux substitutes in what the case's
	// Kustomizations apply, values of Secrets included.
	vars map[string]string
	// preferValues restarts workloads of HelmReleases through chart values
	// (config helm.prefer: values).
	preferValues bool
	// charts are the charts of chart repositories the case's Applications
	// name, by manifest.ChartKey, as directories of the case.
	charts map[string]string
	// fluxDirs are where the paths of the case's Kustomizations of an
	// ExternalArtifact are in the repository, by "namespace/name".
	fluxDirs map[string]string
}

var editCases = []editCase{
	{
		repo: "kustomize-prefix",
		workloads: []drift.Workload{
			gitopstest.Drifted("shop", "Deployment", "prod-cart-v1", gitopstest.Istio125),
			gitopstest.Drifted("shop", "StatefulSet", "prod-redis-v1", gitopstest.Istio125),
		},
	},
	{
		repo: "shared-base",
		workloads: []drift.Workload{
			gitopstest.Drifted("team-a", "Deployment", "web", gitopstest.Istio125),
			gitopstest.Drifted("team-b", "Deployment", "b-web", gitopstest.Istio125),
			gitopstest.Drifted("team-b", "Deployment", "b-worker", gitopstest.Istio125),
			// Already patched for an older target: the patch is updated.
			gitopstest.Drifted("team-c", "Deployment", "web", gitopstest.Istio125),
			gitopstest.Drifted("team-c", "Deployment", "worker", gitopstest.Istio125),
		},
	},
	{
		repo: "plain",
		workloads: []drift.Workload{
			gitopstest.Drifted("payments", "Deployment", "api", gitopstest.Istio125),
			// No sidecar wanted any more.
			gitopstest.Drifted("payments", "StatefulSet", "ledger", drift.Desired{}),
			// Bumped for this very target already.
			gitopstest.Drifted("kube-system", "DaemonSet", "node-agent", gitopstest.Istio125),
			// The file has no newline at its end.
			gitopstest.Drifted("billing", "Deployment", "billing", gitopstest.Istio125),
		},
	},
	{
		repo: "flux",
		workloads: []drift.Workload{
			gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125),
			gitopstest.Drifted("web", "Deployment", "frontend", gitopstest.Istio125),
		},
		hints: map[string]locate.Hints{
			"podinfo/podinfo": {Paths: []string{"staging/podinfo"}, TargetNamespace: "podinfo", Via: "Flux Kustomization flux-system/podinfo"},
			"web/frontend":    {Paths: []string{"apps/frontend"}, TargetNamespace: "web", Via: "Flux Kustomization flux-system/frontend"},
		},
	},
	{
		repo: "argo",
		workloads: []drift.Workload{
			gitopstest.Drifted("guestbook", "Deployment", "guestbook-ui", gitopstest.Istio125),
		},
		hints: map[string]locate.Hints{
			"guestbook/guestbook-ui": {Paths: []string{"guestbook-dev"}, Via: "Argo CD Application argocd/guestbook-dev"},
		},
	},
	{
		repo: "refused",
		workloads: []drift.Workload{
			gitopstest.Drifted("legacy", "Deployment", "anchored", gitopstest.Istio125),
			gitopstest.Drifted("legacy", "Deployment", "fine", gitopstest.Istio125),
		},
	},
	{
		repo: "verify-refusal",
		workloads: []drift.Workload{
			// The base document renders twice in env (a-app, b-app): a patch
			// there by the base's name would hit both, and kustomize refuses
			// it. mid-a renders it once, as what becomes env/a-app.
			gitopstest.Drifted("env", "Deployment", "a-app", gitopstest.Istio125),
			gitopstest.Drifted("other", "Deployment", "app", gitopstest.Istio125),
		},
	},
	{
		// The demo's catalog: a base deployed once under a name prefix is
		// edited in place, and verified as the prefixed workload.
		repo: "prefixed-base",
		workloads: []drift.Workload{
			gitopstest.Drifted("catalog", "Deployment", "catalog-api", gitopstest.Istio125),
			gitopstest.Drifted("catalog", "Deployment", "catalog-image-resizer", gitopstest.Istio125),
		},
	},
	{
		repo: "flux-target-namespace", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// Flux applies apps/echo once per team: no edit restarts one
			// team's echo alone.
			gitopstest.FluxApplied(gitopstest.Drifted("team-a", "Deployment", "echo", gitopstest.Istio125), "echo-a"),
			// A directory without kustomization; its files name no namespace.
			gitopstest.FluxApplied(gitopstest.Drifted("solo", "Deployment", "solo", gitopstest.Istio125), "solo"),
			// The file says default; targetNamespace puts it in pinned.
			gitopstest.FluxApplied(gitopstest.Drifted("pinned", "Deployment", "pinned", gitopstest.Istio125), "pinned"),
		},
	},
	{
		repo: "flux-patches", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// A plain directory two Kustomizations apply: the patch goes
			// after the Kustomization's own one.
			gitopstest.FluxApplied(gitopstest.Drifted("team-a", "Deployment", "podinfo", gitopstest.Istio125), "podinfo-a"),
			// kedge's entry for an older target is updated in place.
			gitopstest.FluxApplied(gitopstest.Drifted("team-b", "Deployment", "podinfo", gitopstest.Istio125), "podinfo-b"),
		},
	},
	{
		repo: "flux-substitute", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// ${tenant} names the namespace.
			gitopstest.FluxApplied(gitopstest.Drifted("shop", "Deployment", "cart", gitopstest.Istio125), "shop"),
			// ${env:=prod}, env set by a ConfigMap.
			gitopstest.FluxApplied(gitopstest.Drifted("shop", "Deployment", "api-staging", gitopstest.Istio125), "shop"),
			// ${region}, set by a Secret whose value kedge does not read.
			gitopstest.FluxApplied(gitopstest.Drifted("shop", "Deployment", "worker-eu", gitopstest.Istio125), "shop"),
			// Opted out of substitution: read literally.
			gitopstest.FluxApplied(gitopstest.Drifted("shop", "Deployment", "legacy", gitopstest.Istio125), "shop"),
		},
		// What the cluster substitutes, for checking the applied edits.
		vars: map[string]string{"tenant": "shop", "env": "staging", "region": "eu"},
	},
	{
		repo: "flux-name-prefix", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// web, renamed by the Kustomization's namePrefix and nameSuffix.
			gitopstest.FluxApplied(gitopstest.Drifted("web", "Deployment", "blue-web-v2", gitopstest.Istio125), "web-blue"),
		},
	},
	{
		repo: "argo-sources", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			// An Application with two paths of this repository: a kustomize
			// root and a plain directory.
			gitopstest.ArgoTracked(gitopstest.Drifted("guestbook", "Deployment", "guestbook-ui", gitopstest.Istio125), "guestbook"),
			gitopstest.ArgoTracked(gitopstest.Drifted("guestbook", "StatefulSet", "redis", gitopstest.Istio125), "guestbook"),
			// A chart with values from this repository.
			gitopstest.Labelled(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "app.kubernetes.io/instance=podinfo"),
			// A chart next to a path that does not hold the workload.
			gitopstest.ArgoTracked(gitopstest.Drifted("mixed", "StatefulSet", "mixed-redis-master", gitopstest.Istio125), "mixed"),
		},
	},
	{
		repo: "file-resources",
		workloads: []drift.Workload{
			// base/web.yaml is listed by prod and staging.
			gitopstest.Drifted("prod", "Deployment", "web", gitopstest.Istio125),
			// base/worker.yaml by prod only.
			gitopstest.Drifted("prod", "Deployment", "worker", gitopstest.Istio125),
		},
	},
	{
		repo: "inline-patches",
		workloads: []drift.Workload{
			// Inline JSON 6902 and strategic-merge patches, by name and by
			// label selector, leave the annotation of the base to reach it.
			gitopstest.Drifted("shop", "Deployment", "api", gitopstest.Istio125),
			// An inline patch replaces the template annotations: what the
			// base says is lost, so the restart goes in a patch applied
			// after it.
			gitopstest.Drifted("payments", "StatefulSet", "ledger", gitopstest.Istio125),
		},
	},
	{
		repo: "components",
		workloads: []drift.Workload{
			// The base is team-a's alone; the component patches it.
			gitopstest.Drifted("team-a", "Deployment", "app", gitopstest.Istio125),
			// The component's own Deployment is in both teams.
			gitopstest.Drifted("team-a", "Deployment", "exporter", gitopstest.Istio125),
			gitopstest.Drifted("team-b", "Deployment", "exporter", gitopstest.Istio125),
		},
	},
	{
		repo: "yml-names",
		workloads: []drift.Workload{
			// Shared base; the overlay's kustomization file is `Kustomization`.
			gitopstest.Drifted("a", "Deployment", "web", gitopstest.Istio125),
			gitopstest.Drifted("b", "Deployment", "web", gitopstest.Istio125),
			gitopstest.Drifted("solo", "StatefulSet", "solo", gitopstest.Istio125),
		},
	},
	{
		repo: "multi-cluster", cluster: "clusters/eu-1/flux-system",
		workloads: []drift.Workload{
			// Both clusters define shop/web; this cluster's Flux path picks one.
			gitopstest.FluxApplied(gitopstest.Drifted("shop", "Deployment", "web", gitopstest.Istio125), "shop"),
			// Both clusters' overlays build on one base: editing it would
			// restart the other cluster's api too.
			gitopstest.FluxApplied(gitopstest.Drifted("shop", "Deployment", "api", gitopstest.Istio125), "shop"),
		},
	},
	{
		repo: "nested-dir",
		workloads: []drift.Workload{
			// Directories without kustomization, listed file by file.
			gitopstest.Drifted("apps", "Deployment", "web", gitopstest.Istio125),
			gitopstest.Drifted("apps", "StatefulSet", "worker", gitopstest.Istio125),
		},
	},
	{
		repo: "json",
		workloads: []drift.Workload{
			gitopstest.Drifted("json", "Deployment", "api", gitopstest.Istio125),
			// No template annotations, 4-space indents, no final newline.
			gitopstest.Drifted("json", "Deployment", "worker", gitopstest.Istio125),
		},
	},
	{
		repo: "namespaces",
		workloads: []drift.Workload{
			// The file says legacy; the kustomization sets shop.
			gitopstest.Drifted("shop", "Deployment", "cart", gitopstest.Istio125),
			// Two files of one root define debug, in two namespaces.
			gitopstest.Drifted("tools", "Deployment", "debug", gitopstest.Istio125),
		},
	},
	{
		repo: "ambiguous",
		workloads: []drift.Workload{
			gitopstest.Drifted("dev", "Deployment", "api", gitopstest.Istio125),
		},
	},
	{
		repo: "helm",
		workloads: []drift.Workload{
			gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125),
		},
		hints: map[string]locate.Hints{"podinfo/podinfo": {Helm: "HelmRelease podinfo/podinfo"}},
	},
	{
		repo: "helm-release", cluster: "clusters/prod",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-post-renderers", cluster: "clusters/prod",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-images", cluster: "clusters/prod",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-shared-base", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// team-b's podinfo runs the desired proxy: only team-a's restarts.
			gitopstest.HelmRendered(gitopstest.Drifted("team-a", "Deployment", "podinfo", gitopstest.Istio125), "team-a", "podinfo"),
			// The cache release has no post-renderers of its own.
			gitopstest.HelmRendered(gitopstest.Drifted("team-b", "Deployment", "cache", gitopstest.Istio125), "team-b", "cache"),
		},
	},
	{
		repo: "helm-two-workloads", cluster: "clusters/prod",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "StatefulSet", "podinfo-redis", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		// helm-release with its edit merged.
		repo: "helm-rerun", cluster: "clusters/prod",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-later-target", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// Restarted for 1-24-0 before; the StatefulSet runs what is wanted.
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "remote",
		workloads: []drift.Workload{
			gitopstest.Drifted("local", "Deployment", "local-app", gitopstest.Istio125),
			gitopstest.Drifted("nested", "Deployment", "app", gitopstest.Istio125),
		},
		hints: map[string]locate.Hints{"nested/app": {Paths: []string{"apps/nested"}, Via: "Flux Kustomization flux-system/nested"}},
	},
	{
		// recurse defaults to false: the copy in a sub-directory is not
		// applied. With recurse, a sub-directory's file is.
		repo: "argo-directory-recurse", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("web", "Deployment", "web", gitopstest.Istio125), "web"),
			gitopstest.ArgoTracked(gitopstest.Drifted("jobs", "Deployment", "worker", gitopstest.Istio125), "jobs"),
			gitopstest.ArgoTracked(gitopstest.Drifted("jobs", "StatefulSet", "queue", gitopstest.Istio125), "jobs"),
		},
	},
	{
		// exclude removes the stale duplicates, by name and by directory.
		repo: "argo-directory-exclude", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("api", "Deployment", "api", gitopstest.Istio125), "api"),
			gitopstest.ArgoTracked(gitopstest.Drifted("api", "Deployment", "worker", gitopstest.Istio125), "api"),
		},
	},
	{
		// Built like istio's samples/bookinfo/platform/kube: several files
		// define the same Deployments; each Application includes its own.
		repo: "argo-directory-include", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("bookinfo", "Deployment", "reviews-v1", gitopstest.Istio125), "bookinfo"),
			gitopstest.ArgoTracked(gitopstest.Drifted("bookinfo", "Deployment", "productpage-v1", gitopstest.Istio125), "bookinfo"),
			gitopstest.ArgoTracked(gitopstest.Drifted("bookinfo", "Deployment", "details-v2", gitopstest.Istio125), "bookinfo-v2"),
			gitopstest.ArgoTracked(gitopstest.Drifted("bookinfo", "Deployment", "ratings-v2", gitopstest.Istio125), "bookinfo-v2"),
			gitopstest.ArgoTracked(gitopstest.Drifted("bookinfo-psa", "Deployment", "reviews-v1", gitopstest.Istio125), "bookinfo-psa"),
		},
	},
	{
		// One Application, several sources, each read with its own settings.
		repo: "argo-multi-source", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "web", gitopstest.Istio125), "shop"),
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "cart", gitopstest.Istio125), "shop"),
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "StatefulSet", "queue", gitopstest.Istio125), "shop"),
		},
	},
	{
		// The cluster shows no Application: those of the repository, in a
		// plain file and rendered by a kustomize root, stand in.
		repo: "argo-repo-applications", repoApplications: true, repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("payments", "Deployment", "api", gitopstest.Istio125), "payments"),
			gitopstest.Labelled(gitopstest.Drifted("ledger", "StatefulSet", "ledger", gitopstest.Istio125), "app.kubernetes.io/instance=ledger"),
		},
	},
	{
		// namePrefix, nameSuffix and namespace of an Application's kustomize
		// block replace the kustomization's own.
		repo: "argo-kustomize-names", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "prod-cart", gitopstest.Istio125), "cart"),
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "api-v2", gitopstest.Istio125), "api"),
			gitopstest.ArgoTracked(gitopstest.Drifted("payments", "StatefulSet", "ledger", gitopstest.Istio125), "ledger"),
			// A kustomize block on a directory without kustomization:
			// Argo CD cannot build it.
			gitopstest.ArgoTracked(gitopstest.Drifted("tools", "Deployment", "probe", gitopstest.Istio125), "probe"),
		},
	},
	{
		// A root two Applications deploy into two namespaces: the restart
		// goes in each Application's kustomize.patches.
		repo: "argo-kustomize-patches", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("team-a", "Deployment", "podinfo", gitopstest.Istio125), "podinfo-a"),
			// kedge's entry for an older target is updated in place.
			gitopstest.ArgoTracked(gitopstest.Drifted("team-b", "Deployment", "podinfo", gitopstest.Istio125), "podinfo-b"),
			// No kustomize block yet: it gets one.
			gitopstest.ArgoTracked(gitopstest.Drifted("team-c", "Deployment", "podinfo", gitopstest.Istio125), "podinfo-c"),
		},
	},
	{
		// The patch goes in the kustomize block of the right source.
		repo: "argo-kustomize-multi-source", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("web", "Deployment", "blue-web", gitopstest.Istio125), "web-blue"),
		},
	},
	{
		// Charts in the repository that Argo CD Applications render: the
		// restart is a chart value found by rendering, set in the helm block.
		repo: "argo-helm-values", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "shop-podinfo", gitopstest.Istio125), "podinfo"),
			gitopstest.ArgoTracked(gitopstest.Drifted("labs", "Deployment", "podinfo-new", gitopstest.Istio125), "podinfo-new"),
			// Restarted before for an older target: updated in place.
			gitopstest.ArgoTracked(gitopstest.Drifted("legacy", "Deployment", "podinfo-old", gitopstest.Istio125), "podinfo-old"),
			// The chart writes its pod annotations itself: no value reaches them.
			gitopstest.ArgoTracked(gitopstest.Drifted("tools", "Deployment", "fixed", gitopstest.Istio125), "fixed"),
		},
	},
	{
		// A chart whose components have their own podAnnotations: the
		// value is the drifted component's, written where each Application
		// writes its values (a values text, parameters, a second source).
		repo: "argo-helm-components", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("web", "Deployment", "platform-web", gitopstest.Istio125), "platform"),
			gitopstest.ArgoTracked(gitopstest.Drifted("jobs", "Deployment", "platform-jobs-worker", gitopstest.Istio125), "platform-jobs"),
			gitopstest.ArgoTracked(gitopstest.Drifted("multi", "Deployment", "multi-web", gitopstest.Istio125), "platform-multi"),
			// The Application's kustomize source renders this one.
			gitopstest.ArgoTracked(gitopstest.Drifted("multi", "Deployment", "reporter", gitopstest.Istio125), "platform-multi"),
		},
	},
	{
		// A team that prefers values: the release's chart is in the
		// repository and its podAnnotations reaches the workload, so the
		// restart goes in spec.values; a chart without such a value keeps
		// the post-renderer.
		repo: "helm-values", cluster: "clusters/prod", preferValues: true,
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
			gitopstest.HelmRendered(gitopstest.Drifted("tools", "Deployment", "fixed", gitopstest.Istio125), "tools", "fixed"),
		},
	},
	{
		// An Application naming a chart of a chart repository: the chart,
		// pulled before the plan, is rendered from its copy.
		repo: "argo-helm-pulled", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		charts: map[string]string{"https://stefanprodan.github.io/podinfo podinfo 6.7.0": "pulled/podinfo"},
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "podinfo"),
		},
	},
	{
		// The home-lab layout: cluster-apps builds kubernetes/apps, which has
		// no kustomization file; kustomize-controller's generated one takes
		// shop/ as one resource and goes no deeper, so each app's app/
		// directory is applied by its own Kustomization alone.
		repo: "flux-generated-apps", cluster: "../cluster", repoURL: "https://github.com/example-org/home",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "shop", "podinfo"),
			gitopstest.Labelled(gitopstest.Drifted("shop", "Deployment", "echo", gitopstest.Istio125),
				"kustomize.toolkit.fluxcd.io/name=echo", "kustomize.toolkit.fluxcd.io/namespace=shop"),
		},
	},
	{
		// A copy without template directives: quoted template text is a
		// string.
		repo: "helm-quoted-template", cluster: "clusters/prod",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("podinfo", "Deployment", "podinfo", gitopstest.Istio125), "podinfo", "podinfo"),
		},
	},
	{
		// Flux 2.7: an ExternalArtifact of an ArtifactGenerator, and an
		// OCIRepository.
		repo: "flux-external-artifact", cluster: "clusters/prod", repoURL: "https://github.com/example-org/fleet",
		fluxDirs: map[string]string{"flux-system/apps": "apps/prod"},
		workloads: []drift.Workload{
			gitopstest.FluxApplied(gitopstest.Drifted("web", "Deployment", "web", gitopstest.Istio125), "apps"),
			gitopstest.FluxApplied(gitopstest.Drifted("policies", "Deployment", "kyverno-admission-controller", gitopstest.Istio125), "policies"),
		},
	},
	{
		// Values files of the repository read through a ref: source.
		repo: "argo-helm-ref-values", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		charts: map[string]string{"https://stefanprodan.github.io/podinfo podinfo 6.7.0": "pulled/podinfo"},
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "podinfo"),
		},
	},
	{
		// A chart rendering differently every time.
		repo: "argo-helm-volatile", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("shop", "Deployment", "shop", gitopstest.Istio125), "shop"),
		},
	},
	{
		// Two drifted workloads per release: a value each, and one value
		// the two share.
		repo: "argo-helm-several", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("web", "Deployment", "platform-web", gitopstest.Istio125), "platform"),
			gitopstest.ArgoTracked(gitopstest.Drifted("web", "Deployment", "platform-worker", gitopstest.Istio125), "platform"),
			gitopstest.ArgoTracked(gitopstest.Drifted("edge", "Deployment", "gateway-proxy", gitopstest.Istio125), "gateway"),
			gitopstest.ArgoTracked(gitopstest.Drifted("edge", "Deployment", "gateway-admin", gitopstest.Istio125), "gateway"),
		},
	},
	{
		// An Application of an ApplicationSet, its chart of a chart
		// repository without a pod-annotation value.
		repo: "argo-chart-no-value", cluster: "../cluster", repoURL: "https://github.com/example-org/fleet",
		charts: map[string]string{"https://charts.example.org fixed 1.0.0": "pulled/fixed"},
		workloads: []drift.Workload{
			gitopstest.ArgoTracked(gitopstest.Drifted("tools", "Deployment", "fixed", gitopstest.Istio125), "fixed"),
		},
	},
	{
		// A HelmRelease applied by hand, beside a Kustomization's Deployment.
		repo: "helm-release-not-applied", cluster: "../cluster", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			gitopstest.HelmRendered(gitopstest.Drifted("shop", "Deployment", "podinfo", gitopstest.Istio125), "shop", "podinfo"),
			gitopstest.Labelled(gitopstest.Drifted("shop", "Deployment", "echo", gitopstest.Istio125),
				"kustomize.toolkit.fluxcd.io/name=apps", "kustomize.toolkit.fluxcd.io/namespace=flux-system"),
		},
	},
	{
		repo: "symlink",
		workloads: []drift.Workload{
			gitopstest.Drifted("vault", "Deployment", "good", gitopstest.Istio125),
			gitopstest.Drifted("vault", "Deployment", "secret-app", gitopstest.Istio125),
		},
	},
}

// hintsFunc returns the case's hints: from its cluster objects when it has
// some, else from its table.
func (c editCase) hintsFunc(t *testing.T) func(drift.Workload) locate.Hints {
	set := &objects.Set{}
	switch {
	case c.repoApplications:
		ix, err := index.Read(gitopstest.FixtureRepo(c.repo), index.Options{})
		require.NoError(t, err)
		set = index.WithRepositoryApplications(set, ix)
	case c.cluster == "":
		return func(w drift.Workload) locate.Hints { return c.hints[w.Namespace+"/"+w.Name] }
	default:
		var err error
		set, err = snapshot.Read(filepath.Join(gitopstest.FixtureRepo(c.repo), filepath.FromSlash(c.cluster)))
		require.NoError(t, err)
	}
	var urls []string
	if c.repoURL != "" {
		urls = append(urls, c.repoURL)
	}
	ix, err := index.Read(gitopstest.FixtureRepo(c.repo), index.Options{})
	require.NoError(t, err)
	hints := locate.HintsIn(ix, set, urls...)
	pulled := map[string]chart.Pulled{}
	for key, dir := range c.pulledCharts() {
		pulled[key] = chart.Pulled{Archive: dir}
	}
	return func(w drift.Workload) locate.Hints {
		h := locate.WithPulledCharts(hints(w), pulled)
		h.PreferValues = c.preferValues
		return h
	}
}

// pulledCharts are the case's charts of chart repositories, as absolute
// directories.
func (c editCase) pulledCharts() map[string]string {
	out := map[string]string{}
	for key, dir := range c.charts {
		abs, _ := filepath.Abs(filepath.Join(gitopstest.Fixtures, c.repo, filepath.FromSlash(dir)))
		out[key] = abs
	}
	return out
}

func (c editCase) plan() *drift.Plan {
	return &drift.Plan{Cluster: "test", Workloads: append([]drift.Workload(nil), c.workloads...)}
}

// targetNamespaces are the directories the case's workloads are applied
// from with a namespace forced on them.
func (c editCase) targetNamespaces(t *testing.T) map[string]string {
	out := map[string]string{}
	hints := c.hintsFunc(t)
	for _, w := range c.workloads {
		h := hints(w)
		for _, p := range h.Paths {
			if h.TargetNamespace != "" {
				out[p] = h.TargetNamespace
			}
		}
	}
	return out
}

// fluxApplied are the directories the case's workloads are applied from by
// Flux Kustomizations that rename what they apply.
func (c editCase) fluxApplied(t *testing.T) map[string]editcheck.FluxApply {
	out := map[string]editcheck.FluxApply{}
	hints := c.hintsFunc(t)
	for _, w := range c.workloads {
		f := hints(w).Flux
		if f == nil {
			continue
		}
		apply := editcheck.FluxApply{NamePrefix: f.NamePrefix, NameSuffix: f.NameSuffix}
		if f.PostBuild != nil {
			apply.Vars = c.vars
		}
		out[f.Path] = apply
	}
	return out
}

// argoApplied are the directories the case's workloads are applied from by
// Argo CD Applications whose kustomize block renames what they render.
func (c editCase) argoApplied(t *testing.T) map[string]editcheck.ArgoApply {
	out := map[string]editcheck.ArgoApply{}
	hints := c.hintsFunc(t)
	for _, w := range c.workloads {
		for _, d := range hints(w).Directories {
			if k := d.Kustomize; k != nil {
				out[d.Path] = editcheck.ArgoApply{NamePrefix: k.NamePrefix, NameSuffix: k.NameSuffix, Namespace: k.Namespace}
			}
		}
	}
	return out
}

// appliers are the Flux Kustomizations and Argo CD Applications of the
// case's cluster, whose builds the checks hold to the promise too.
func (c editCase) appliers(t *testing.T) []editcheck.Applier {
	if c.cluster == "" {
		return nil
	}
	out, err := editcheck.ClusterAppliers(filepath.Join(gitopstest.FixtureRepo(c.repo), filepath.FromSlash(c.cluster)), c.repoURL, "", c.fluxDirs)
	require.NoError(t, err)
	return out
}

// planEdits indexes repo and computes the case's edits.
func planEdits(t *testing.T, c editCase, repo string) (*drift.Plan, edit.Set) {
	return planEditsWith(t, c, repo, index.Options{})
}

// planEditsWith indexes repo with opts and computes the case's edits.
func planEditsWith(t *testing.T, c editCase, repo string, opts index.Options) (*drift.Plan, edit.Set) {
	t.Helper()
	ix, err := index.Read(repo, opts)
	require.NoError(t, err)
	plan, set := locateAndEdit(ix, c.plan(), c.hintsFunc(t), restart.Annotations{})
	return plan, set
}

// locateAndEdit runs the locate and edit stages on a plan and returns the
// plan carrying their outcomes.
func locateAndEdit(ix *index.Index, plan *drift.Plan, hints func(drift.Workload) locate.Hints, ann restart.Annotations) (*drift.Plan, edit.Set) {
	set, outcomes := edit.Compute(ix, plan.Workloads, locate.Locate(ix, plan.Workloads, hints), edit.Options{Annotations: ann})
	out := plan.WithManifests(func(w drift.Workload) (drift.Manifest, bool) {
		m, ok := outcomes[restart.IDOf(w)]
		return m, ok
	})
	return &out, set
}

func TestEditsGolden(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			plan, set := planEdits(t, c, gitopstest.FixtureRepo(c.repo))
			gitopstest.Golden(t, c.repo, "edits.diff", []byte(edit.UnifiedDiff(set.All())))

			type entry struct {
				Workload string         `json:"workload"`
				Manifest drift.Manifest `json:"manifest"`
			}
			var summary struct {
				Workloads  []entry             `json:"workloads"`
				Namespaces map[string][]string `json:"namespaces"`
				Refused    []restart.Refusal   `json:"refused"`
			}
			summary.Namespaces = map[string][]string{}
			for _, w := range plan.Workloads {
				summary.Workloads = append(summary.Workloads, entry{w.Kind + " " + w.Namespace + "/" + w.Name, w.Manifest})
			}
			for ns, edits := range set.Namespaces {
				for _, e := range edits {
					summary.Namespaces[ns] = append(summary.Namespaces[ns], e.Path)
				}
			}
			summary.Refused = set.Refused
			out, err := json.MarshalIndent(summary, "", "  ")
			require.NoError(t, err)
			gitopstest.Golden(t, c.repo, "plan.json", append(out, '\n'))
		})
	}
}

// TestEditsApplyAndRender applies each namespace's diff with git to a copy of
// the checkout (as its own branch would), renders every kustomize root and
// reads every changed plain file before and after, and requires that the
// only difference is the restart annotations of that namespace's workloads.
func TestEditsApplyAndRender(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			plan, set := planEdits(t, c, gitopstest.FixtureRepo(c.repo))
			for _, ns := range set.NamespaceNames() {
				t.Run(ns, func(t *testing.T) {
					after := gitopstest.CopyCase(t, c.repo)
					gitopstest.GitApply(t, after, edit.UnifiedDiff(set.Namespaces[ns]))
					checkApplied(t, editcheck.Check{
						Before: gitopstest.FixtureRepo(c.repo), After: after, TargetNamespaces: c.targetNamespaces(t), Flux: c.fluxApplied(t), Argo: c.argoApplied(t),
						Charts: c.pulledCharts(), Appliers: c.appliers(t), Repository: c.repoURL,
					}, plan, set.Namespaces[ns])
				})
			}
		})
	}
}

// checkApplied holds an applied diff to editcheck's promises: nothing but
// the restart annotations changed, and every workload the edits name was
// restarted under its own identity.
func checkApplied(t *testing.T, check editcheck.Check, plan *drift.Plan, edits []restart.FileEdit) {
	t.Helper()
	ann := restart.Annotations{}.WithDefaults()
	// Workloads restarted through the chart values of one release may
	// share one value, and with it one restart value
	// (restart.GroupRestartValue): any value is theirs, as long as it is on
	// them.
	peers := map[string]int{}
	for _, w := range plan.Workloads {
		if w.Manifest.Edit == drift.EditHelmValues {
			peers[w.Namespace+" "+w.Manifest.Path]++
		}
	}
	var restarts []editcheck.Restart
	for _, w := range plan.Workloads {
		target := restart.TargetValue(w.Desired)
		value := restart.RestartValue(w, target)
		if w.Manifest.Edit == drift.EditHelmValues && peers[w.Namespace+" "+w.Manifest.Path] > 1 {
			value = ""
		}
		restarts = append(restarts, editcheck.Restart{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{ann.Target: target, ann.Restart: value},
		})
	}
	var changed []string
	for _, e := range edits {
		changed = append(changed, e.Path)
	}
	check.Changed, check.Restarts = changed, restarts
	res, err := editcheck.CompareRepos(check)
	require.NoError(t, err)
	assert.Empty(t, res.Problems)
	for _, e := range edits {
		for _, id := range e.Workloads {
			assert.True(t, res.Restarted[id.String()], "%s was not restarted by the applied diff", id)
		}
	}
}

// TestEditsRerunIsANoOp applies every edit, re-indexes, and plans again: the
// restart values are derived from the target, so nothing changes and every
// restarted workload reads as already bumped.
func TestEditsRerunIsANoOp(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			_, set := planEdits(t, c, gitopstest.FixtureRepo(c.repo))
			repo := gitopstest.CopyCase(t, c.repo)
			restarted := map[restart.WorkloadID]bool{}
			for _, ns := range set.NamespaceNames() {
				gitopstest.GitApply(t, repo, edit.UnifiedDiff(set.Namespaces[ns]))
				for _, e := range set.Namespaces[ns] {
					for _, id := range e.Workloads {
						restarted[id] = true
					}
				}
			}
			plan, again := planEdits(t, c, repo)
			assert.Empty(t, again.Namespaces)
			for _, w := range plan.Workloads {
				if restarted[restart.IDOf(w)] {
					assert.Equal(t, drift.EditAlreadyBumped, w.Manifest.Edit, "%s/%s", w.Namespace, w.Name)
				}
			}
		})
	}
}

func TestEditsWithoutLocateUseNoHints(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("kustomize-prefix"), index.Options{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{gitopstest.Drifted("shop", "Deployment", "prod-cart-v1", gitopstest.Istio125)}}
	set, _ := edit.Compute(ix, plan.Workloads, nil, edit.Options{Annotations: restart.Annotations{Restart: "example.com/restart", Target: "example.com/target"}})
	require.Len(t, set.Namespaces["shop"], 1)
	after := string(set.Namespaces["shop"][0].After)
	assert.Contains(t, after, "example.com/restart: ")
	assert.Contains(t, after, "example.com/target: ")
}

func TestRestartValueIsStablePerTarget(t *testing.T) {
	cart := gitopstest.Drifted("shop", "Deployment", "cart", gitopstest.Istio125)
	other := gitopstest.Drifted("shop", "Deployment", "checkout", gitopstest.Istio125)
	target := restart.TargetValue(cart.Desired)
	assert.Equal(t, "1-25-0@docker.io/istio/proxyv2:1.25.0", target)
	assert.Equal(t, restart.RestartValue(cart, target), restart.RestartValue(cart, target))
	assert.NotEqual(t, restart.RestartValue(cart, target), restart.RestartValue(other, target))
	assert.NotEqual(t, restart.RestartValue(cart, target), restart.RestartValue(cart, restart.TargetValue(drift.Desired{Revision: "1-26-0", Image: "docker.io/istio/proxyv2:1.26.0"})))
	assert.Equal(t, "no-sidecar", restart.TargetValue(drift.Desired{}))
	assert.Equal(t, "default", restart.TargetValue(drift.Desired{Revision: "default"}))
}

func TestEditsRefuseWhenNoOverlayIsSafe(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("shared-base"), index.Options{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{gitopstest.Drifted("team-z", "Deployment", "web", gitopstest.Istio125)}}
	plan, set := locateAndEdit(ix, plan, func(drift.Workload) locate.Hints {
		return locate.Hints{Paths: []string{"base"}, TargetNamespace: "team-z"}
	}, restart.Annotations{})
	assert.Equal(t, drift.ManifestRefused, plan.Workloads[0].Manifest.Status)
	assert.Empty(t, set.Namespaces)
	require.Len(t, set.Refused, 1)
	assert.Equal(t, restart.Refusal{
		Namespace: "team-z", Path: "base/web.yaml",
		Reason:    "base/web.yaml is deployed as several workloads and no overlay renders it only as Deployment team-z/web",
		Workloads: []restart.WorkloadID{{Namespace: "team-z", Kind: "Deployment", Name: "web"}},
	}, set.Refused[0])
}

// TestEditsChangeOnlyRestartLines holds the patch of every fixture to the
// promise reviewers rely on: each changed line is a restart annotation, a
// metadata:/annotations: line it needed, or kedge's overlay patch file and
// its entry in the overlay's kustomization.
func TestEditsChangeOnlyRestartLines(t *testing.T) {
	ann := restart.Annotations{}.WithDefaults()
	rules := editcheck.Rules{
		AnnotationKeys: []string{ann.Restart, ann.Target}, PatchFiles: []string{index.RestartPatchFile("kustomization.yaml"), index.RestartPatchFile("kustomization.yml")},
		PostRendererMarker: helmedit.RestartMarker, ReleasePatchPrefix: "kedge-helm-",
	}
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			_, set := planEdits(t, c, gitopstest.FixtureRepo(c.repo))
			assert.Empty(t, editcheck.PatchLineViolations(edit.UnifiedDiff(set.All()), rules))
		})
	}
}

// TestEveryFixtureIsPlanned keeps the fixture repositories and the edit
// cases together, so that no repository escapes the checks above.
func TestEveryFixtureIsPlanned(t *testing.T) {
	entries, err := os.ReadDir(gitopstest.Fixtures)
	require.NoError(t, err)
	planned := map[string]bool{}
	for _, c := range editCases {
		planned[c.repo] = true
	}
	for _, e := range entries {
		if e.IsDir() {
			assert.True(t, planned[e.Name()], "testdata/manifest/%s has no edit case", e.Name())
		}
	}
}
