package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/editcheck"
	"github.com/kedge-io/kedge/internal/yamledit"
)

var istio125 = drift.Desired{Revision: "1-25-0", Image: "docker.io/istio/proxyv2:1.25.0"}

func drifted(ns, kind, name string, desired drift.Desired) drift.Workload {
	w := workload(ns, kind, name)
	w.Reasons = []drift.Reason{drift.ReasonRevision}
	w.Desired = desired
	return w
}

// labelled returns w with the metadata a GitOps controller puts on what it
// applies, as "key=value" pairs; keys with a slash and "tracking-id" in them
// are annotations.
func labelled(w drift.Workload, pairs ...string) drift.Workload {
	w.Labels, w.Annotations = map[string]string{}, map[string]string{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		if strings.HasSuffix(k, "tracking-id") {
			w.Annotations[k] = v
		} else {
			w.Labels[k] = v
		}
	}
	return w
}

// fluxApplied labels w as applied by the Flux Kustomization flux-system/name.
func fluxApplied(w drift.Workload, name string) drift.Workload {
	return labelled(w, "kustomize.toolkit.fluxcd.io/name="+name, "kustomize.toolkit.fluxcd.io/namespace=flux-system")
}

// helmRendered labels w as rendered by the Flux HelmRelease namespace/name,
// as helm-controller labels what it installs.
func helmRendered(w drift.Workload, namespace, name string) drift.Workload {
	return labelled(w, "helm.toolkit.fluxcd.io/name="+name, "helm.toolkit.fluxcd.io/namespace="+namespace)
}

// argoTracked annotates w as tracked by the Argo CD Application app.
func argoTracked(w drift.Workload, app string) drift.Workload {
	return labelled(w, "argocd.argoproj.io/tracking-id="+app+":apps/"+w.Kind+":"+w.Namespace+"/"+w.Name)
}

type editCase struct {
	repo      string
	workloads []drift.Workload
	// hints by "namespace/name".
	hints map[string]Hints
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
}

var editCases = []editCase{
	{
		repo: "kustomize-prefix",
		workloads: []drift.Workload{
			drifted("shop", "Deployment", "prod-cart-v1", istio125),
			drifted("shop", "StatefulSet", "prod-redis-v1", istio125),
		},
	},
	{
		repo: "shared-base",
		workloads: []drift.Workload{
			drifted("team-a", "Deployment", "web", istio125),
			drifted("team-b", "Deployment", "b-web", istio125),
			drifted("team-b", "Deployment", "b-worker", istio125),
			// Already patched for an older target: the patch is updated.
			drifted("team-c", "Deployment", "web", istio125),
			drifted("team-c", "Deployment", "worker", istio125),
		},
	},
	{
		repo: "plain",
		workloads: []drift.Workload{
			drifted("payments", "Deployment", "api", istio125),
			// No sidecar wanted any more.
			drifted("payments", "StatefulSet", "ledger", drift.Desired{}),
			// Bumped for this very target already.
			drifted("kube-system", "DaemonSet", "node-agent", istio125),
			// The file has no newline at its end.
			drifted("billing", "Deployment", "billing", istio125),
		},
	},
	{
		repo: "flux",
		workloads: []drift.Workload{
			drifted("podinfo", "Deployment", "podinfo", istio125),
			drifted("web", "Deployment", "frontend", istio125),
		},
		hints: map[string]Hints{
			"podinfo/podinfo": {Paths: []string{"staging/podinfo"}, TargetNamespace: "podinfo", Via: "Flux Kustomization flux-system/podinfo"},
			"web/frontend":    {Paths: []string{"apps/frontend"}, TargetNamespace: "web", Via: "Flux Kustomization flux-system/frontend"},
		},
	},
	{
		repo: "argo",
		workloads: []drift.Workload{
			drifted("guestbook", "Deployment", "guestbook-ui", istio125),
		},
		hints: map[string]Hints{
			"guestbook/guestbook-ui": {Paths: []string{"guestbook-dev"}, Via: "Argo CD Application argocd/guestbook-dev"},
		},
	},
	{
		repo: "refused",
		workloads: []drift.Workload{
			drifted("legacy", "Deployment", "anchored", istio125),
			drifted("legacy", "Deployment", "fine", istio125),
		},
	},
	{
		repo: "verify-refusal",
		workloads: []drift.Workload{
			// The base document renders twice in env (a-app, b-app): a patch
			// there by the base's name would hit both, and kustomize refuses
			// it. mid-a renders it once, as what becomes env/a-app.
			drifted("env", "Deployment", "a-app", istio125),
			drifted("other", "Deployment", "app", istio125),
		},
	},
	{
		// The demo's catalog: a base deployed once under a name prefix is
		// edited in place, and verified as the prefixed workload.
		repo: "prefixed-base",
		workloads: []drift.Workload{
			drifted("catalog", "Deployment", "catalog-api", istio125),
			drifted("catalog", "Deployment", "catalog-image-resizer", istio125),
		},
	},
	{
		repo: "flux-target-namespace", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// Flux applies apps/echo once per team: no edit restarts one
			// team's echo alone.
			fluxApplied(drifted("team-a", "Deployment", "echo", istio125), "echo-a"),
			// A directory without kustomization; its files name no namespace.
			fluxApplied(drifted("solo", "Deployment", "solo", istio125), "solo"),
			// The file says default; targetNamespace puts it in pinned.
			fluxApplied(drifted("pinned", "Deployment", "pinned", istio125), "pinned"),
		},
	},
	{
		repo: "flux-patches", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// A plain directory two Kustomizations apply: the patch goes
			// after the Kustomization's own one.
			fluxApplied(drifted("team-a", "Deployment", "podinfo", istio125), "podinfo-a"),
			// kedge's entry for an older target is updated in place.
			fluxApplied(drifted("team-b", "Deployment", "podinfo", istio125), "podinfo-b"),
		},
	},
	{
		repo: "flux-substitute", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// ${tenant} names the namespace.
			fluxApplied(drifted("shop", "Deployment", "cart", istio125), "shop"),
			// ${env:=prod}, env set by a ConfigMap.
			fluxApplied(drifted("shop", "Deployment", "api-staging", istio125), "shop"),
			// ${region}, set by a Secret whose value kedge does not read.
			fluxApplied(drifted("shop", "Deployment", "worker-eu", istio125), "shop"),
			// Opted out of substitution: read literally.
			fluxApplied(drifted("shop", "Deployment", "legacy", istio125), "shop"),
		},
		// What the cluster substitutes, for checking the applied edits.
		vars: map[string]string{"tenant": "shop", "env": "staging", "region": "eu"},
	},
	{
		repo: "flux-name-prefix", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// web, renamed by the Kustomization's namePrefix and nameSuffix.
			fluxApplied(drifted("web", "Deployment", "blue-web-v2", istio125), "web-blue"),
		},
	},
	{
		repo: "argo-sources", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			// An Application with two paths of this repository: a kustomize
			// root and a plain directory.
			argoTracked(drifted("guestbook", "Deployment", "guestbook-ui", istio125), "guestbook"),
			argoTracked(drifted("guestbook", "StatefulSet", "redis", istio125), "guestbook"),
			// A chart with values from this repository.
			labelled(drifted("podinfo", "Deployment", "podinfo", istio125), "app.kubernetes.io/instance=podinfo"),
			// A chart next to a path that does not hold the workload.
			argoTracked(drifted("mixed", "StatefulSet", "mixed-redis-master", istio125), "mixed"),
		},
	},
	{
		repo: "file-resources",
		workloads: []drift.Workload{
			// base/web.yaml is listed by prod and staging.
			drifted("prod", "Deployment", "web", istio125),
			// base/worker.yaml by prod only.
			drifted("prod", "Deployment", "worker", istio125),
		},
	},
	{
		repo: "inline-patches",
		workloads: []drift.Workload{
			// Inline JSON 6902 and strategic-merge patches, by name and by
			// label selector, leave the annotation of the base to reach it.
			drifted("shop", "Deployment", "api", istio125),
			// An inline patch replaces the template annotations: what the
			// base says is lost, so the restart goes in a patch applied
			// after it.
			drifted("payments", "StatefulSet", "ledger", istio125),
		},
	},
	{
		repo: "components",
		workloads: []drift.Workload{
			// The base is team-a's alone; the component patches it.
			drifted("team-a", "Deployment", "app", istio125),
			// The component's own Deployment is in both teams.
			drifted("team-a", "Deployment", "exporter", istio125),
			drifted("team-b", "Deployment", "exporter", istio125),
		},
	},
	{
		repo: "yml-names",
		workloads: []drift.Workload{
			// Shared base; the overlay's kustomization file is `Kustomization`.
			drifted("a", "Deployment", "web", istio125),
			drifted("b", "Deployment", "web", istio125),
			drifted("solo", "StatefulSet", "solo", istio125),
		},
	},
	{
		repo: "multi-cluster", cluster: "clusters/eu-1/flux-system",
		workloads: []drift.Workload{
			// Both clusters define shop/web; this cluster's Flux path picks one.
			fluxApplied(drifted("shop", "Deployment", "web", istio125), "shop"),
			// Both clusters' overlays build on one base: editing it would
			// restart the other cluster's api too.
			fluxApplied(drifted("shop", "Deployment", "api", istio125), "shop"),
		},
	},
	{
		repo: "nested-dir",
		workloads: []drift.Workload{
			// Directories without kustomization, listed file by file.
			drifted("apps", "Deployment", "web", istio125),
			drifted("apps", "StatefulSet", "worker", istio125),
		},
	},
	{
		repo: "json",
		workloads: []drift.Workload{
			drifted("json", "Deployment", "api", istio125),
			// No template annotations, 4-space indents, no final newline.
			drifted("json", "Deployment", "worker", istio125),
		},
	},
	{
		repo: "namespaces",
		workloads: []drift.Workload{
			// The file says legacy; the kustomization sets shop.
			drifted("shop", "Deployment", "cart", istio125),
			// Two files of one root define debug, in two namespaces.
			drifted("tools", "Deployment", "debug", istio125),
		},
	},
	{
		repo: "ambiguous",
		workloads: []drift.Workload{
			drifted("dev", "Deployment", "api", istio125),
		},
	},
	{
		repo: "helm",
		workloads: []drift.Workload{
			drifted("podinfo", "Deployment", "podinfo", istio125),
		},
		hints: map[string]Hints{"podinfo/podinfo": {Helm: "HelmRelease podinfo/podinfo"}},
	},
	{
		repo: "helm-release", cluster: "clusters/prod",
		workloads: []drift.Workload{
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-post-renderers", cluster: "clusters/prod",
		workloads: []drift.Workload{
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-images", cluster: "clusters/prod",
		workloads: []drift.Workload{
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-shared-base", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// team-b's podinfo runs the desired proxy: only team-a's restarts.
			helmRendered(drifted("team-a", "Deployment", "podinfo", istio125), "team-a", "podinfo"),
			// The cache release has no post-renderers of its own.
			helmRendered(drifted("team-b", "Deployment", "cache", istio125), "team-b", "cache"),
		},
	},
	{
		repo: "helm-two-workloads", cluster: "clusters/prod",
		workloads: []drift.Workload{
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
			helmRendered(drifted("podinfo", "StatefulSet", "podinfo-redis", istio125), "podinfo", "podinfo"),
		},
	},
	{
		// helm-release with its edit merged.
		repo: "helm-rerun", cluster: "clusters/prod",
		workloads: []drift.Workload{
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "helm-later-target", cluster: "clusters/prod",
		workloads: []drift.Workload{
			// Restarted for 1-24-0 before; the StatefulSet runs what is wanted.
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
		},
	},
	{
		repo: "remote",
		workloads: []drift.Workload{
			drifted("local", "Deployment", "local-app", istio125),
			drifted("nested", "Deployment", "app", istio125),
		},
		hints: map[string]Hints{"nested/app": {Paths: []string{"apps/nested"}, Via: "Flux Kustomization flux-system/nested"}},
	},
	{
		// recurse defaults to false: the copy in a sub-directory is not
		// applied. With recurse, a sub-directory's file is.
		repo: "argo-directory-recurse", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("web", "Deployment", "web", istio125), "web"),
			argoTracked(drifted("jobs", "Deployment", "worker", istio125), "jobs"),
			argoTracked(drifted("jobs", "StatefulSet", "queue", istio125), "jobs"),
		},
	},
	{
		// exclude removes the stale duplicates, by name and by directory.
		repo: "argo-directory-exclude", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("api", "Deployment", "api", istio125), "api"),
			argoTracked(drifted("api", "Deployment", "worker", istio125), "api"),
		},
	},
	{
		// Built like istio's samples/bookinfo/platform/kube: several files
		// define the same Deployments; each Application includes its own.
		repo: "argo-directory-include", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("bookinfo", "Deployment", "reviews-v1", istio125), "bookinfo"),
			argoTracked(drifted("bookinfo", "Deployment", "productpage-v1", istio125), "bookinfo"),
			argoTracked(drifted("bookinfo", "Deployment", "details-v2", istio125), "bookinfo-v2"),
			argoTracked(drifted("bookinfo", "Deployment", "ratings-v2", istio125), "bookinfo-v2"),
			argoTracked(drifted("bookinfo-psa", "Deployment", "reviews-v1", istio125), "bookinfo-psa"),
		},
	},
	{
		// One Application, several sources, each read with its own settings.
		repo: "argo-multi-source", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("shop", "Deployment", "web", istio125), "shop"),
			argoTracked(drifted("shop", "Deployment", "cart", istio125), "shop"),
			argoTracked(drifted("shop", "StatefulSet", "queue", istio125), "shop"),
		},
	},
	{
		// The cluster shows no Application: those of the repository, in a
		// plain file and rendered by a kustomize root, stand in.
		repo: "argo-repo-applications", repoApplications: true, repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("payments", "Deployment", "api", istio125), "payments"),
			labelled(drifted("ledger", "StatefulSet", "ledger", istio125), "app.kubernetes.io/instance=ledger"),
		},
	},
	{
		// namePrefix, nameSuffix and namespace of an Application's kustomize
		// block replace the kustomization's own.
		repo: "argo-kustomize-names", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("shop", "Deployment", "prod-cart", istio125), "cart"),
			argoTracked(drifted("shop", "Deployment", "api-v2", istio125), "api"),
			argoTracked(drifted("payments", "StatefulSet", "ledger", istio125), "ledger"),
			// A kustomize block on a directory without kustomization:
			// Argo CD cannot build it.
			argoTracked(drifted("tools", "Deployment", "probe", istio125), "probe"),
		},
	},
	{
		// A root two Applications deploy into two namespaces: the restart
		// goes in each Application's kustomize.patches.
		repo: "argo-kustomize-patches", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("team-a", "Deployment", "podinfo", istio125), "podinfo-a"),
			// kedge's entry for an older target is updated in place.
			argoTracked(drifted("team-b", "Deployment", "podinfo", istio125), "podinfo-b"),
			// No kustomize block yet: it gets one.
			argoTracked(drifted("team-c", "Deployment", "podinfo", istio125), "podinfo-c"),
		},
	},
	{
		// The patch goes in the kustomize block of the right source.
		repo: "argo-kustomize-multi-source", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("web", "Deployment", "blue-web", istio125), "web-blue"),
		},
	},
	{
		// Charts in the repository that Argo CD Applications render: the
		// restart is a chart value found by rendering, set in the helm block.
		repo: "argo-helm-values", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("shop", "Deployment", "shop-podinfo", istio125), "podinfo"),
			argoTracked(drifted("labs", "Deployment", "podinfo-new", istio125), "podinfo-new"),
			// Restarted before for an older target: updated in place.
			argoTracked(drifted("legacy", "Deployment", "podinfo-old", istio125), "podinfo-old"),
			// The chart writes its pod annotations itself: no value reaches them.
			argoTracked(drifted("tools", "Deployment", "fixed", istio125), "fixed"),
		},
	},
	{
		// A chart whose components have their own podAnnotations: the
		// value is the drifted component's, written where each Application
		// writes its values (a values text, parameters, a second source).
		repo: "argo-helm-components", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		workloads: []drift.Workload{
			argoTracked(drifted("web", "Deployment", "platform-web", istio125), "platform"),
			argoTracked(drifted("jobs", "Deployment", "platform-jobs-worker", istio125), "platform-jobs"),
			argoTracked(drifted("multi", "Deployment", "multi-web", istio125), "platform-multi"),
			// The Application's kustomize source renders this one.
			argoTracked(drifted("multi", "Deployment", "reporter", istio125), "platform-multi"),
		},
	},
	{
		// A team that prefers values: the release's chart is in the
		// repository and its podAnnotations reaches the workload, so the
		// restart goes in spec.values; a chart without such a value keeps
		// the post-renderer.
		repo: "helm-values", cluster: "clusters/prod", preferValues: true,
		workloads: []drift.Workload{
			helmRendered(drifted("podinfo", "Deployment", "podinfo", istio125), "podinfo", "podinfo"),
			helmRendered(drifted("tools", "Deployment", "fixed", istio125), "tools", "fixed"),
		},
	},
	{
		// An Application naming a chart of a chart repository: the chart,
		// pulled before the plan, is rendered from its copy.
		repo: "argo-helm-pulled", cluster: "argocd", repoURL: "https://github.com/example-org/fleet",
		charts: map[string]string{"https://stefanprodan.github.io/podinfo podinfo 6.7.0": "pulled/podinfo"},
		workloads: []drift.Workload{
			argoTracked(drifted("shop", "Deployment", "podinfo", istio125), "podinfo"),
		},
	},
	{
		repo: "symlink",
		workloads: []drift.Workload{
			drifted("vault", "Deployment", "good", istio125),
			drifted("vault", "Deployment", "secret-app", istio125),
		},
	},
}

// hintsFunc returns the case's hints: from its cluster objects when it has
// some, else from its table.
func (c editCase) hintsFunc(t *testing.T) func(drift.Workload) Hints {
	set := &objects.Set{}
	switch {
	case c.repoApplications:
		ix, err := BuildIndex(fixtureRepo(c.repo), IndexOptions{})
		require.NoError(t, err)
		set = WithRepositoryApplications(set, ix)
	case c.cluster == "":
		return func(w drift.Workload) Hints { return c.hints[w.Namespace+"/"+w.Name] }
	default:
		var err error
		set, err = cluster.ReadSnapshot(filepath.Join(fixtureRepo(c.repo), filepath.FromSlash(c.cluster)))
		require.NoError(t, err)
	}
	var urls []string
	if c.repoURL != "" {
		urls = append(urls, c.repoURL)
	}
	hints := HintsFor(set, urls...)
	pulled := map[string]PulledChart{}
	for key, dir := range c.pulledCharts() {
		pulled[key] = PulledChart{Archive: dir}
	}
	return func(w drift.Workload) Hints {
		h := WithPulledCharts(hints(w), pulled)
		h.PreferValues = c.preferValues
		return h
	}
}

// pulledCharts are the case's charts of chart repositories, as absolute
// directories.
func (c editCase) pulledCharts() map[string]string {
	out := map[string]string{}
	for key, dir := range c.charts {
		abs, _ := filepath.Abs(filepath.Join(fixtures, c.repo, filepath.FromSlash(dir)))
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

// planEdits indexes repo and computes the case's edits.
func planEdits(t *testing.T, c editCase, repo string) (*drift.Plan, EditSet) {
	t.Helper()
	ix, err := BuildIndex(repo, IndexOptions{})
	require.NoError(t, err)
	plan, set := locateAndEdit(ix, c.plan(), c.hintsFunc(t), Annotations{})
	return plan, set
}

// locateAndEdit runs the locate and edit stages on a plan and returns the
// plan carrying their outcomes.
func locateAndEdit(ix *Index, plan *drift.Plan, hints func(drift.Workload) Hints, ann Annotations) (*drift.Plan, EditSet) {
	set, outcomes := ix.Edits(plan.Workloads, ix.Locate(plan.Workloads, hints), ann)
	out := plan.WithManifests(func(w drift.Workload) (drift.Manifest, bool) {
		m, ok := outcomes[IDOf(w)]
		return m, ok
	})
	return &out, set
}

func TestEditsGolden(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			plan, set := planEdits(t, c, fixtureRepo(c.repo))
			golden(t, c.repo, "edits.diff", []byte(UnifiedDiff(set.All())))

			type entry struct {
				Workload string         `json:"workload"`
				Manifest drift.Manifest `json:"manifest"`
			}
			var summary struct {
				Workloads  []entry             `json:"workloads"`
				Namespaces map[string][]string `json:"namespaces"`
				Refused    []Refusal           `json:"refused"`
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
			golden(t, c.repo, "plan.json", append(out, '\n'))
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
			_, set := planEdits(t, c, fixtureRepo(c.repo))
			for _, ns := range set.NamespaceNames() {
				t.Run(ns, func(t *testing.T) {
					after := copyCase(t, c.repo)
					gitApply(t, after, UnifiedDiff(set.Namespaces[ns]))
					checkApplied(t, editcheck.Check{
						Before: fixtureRepo(c.repo), After: after, TargetNamespaces: c.targetNamespaces(t), Flux: c.fluxApplied(t), Argo: c.argoApplied(t),
						Charts: c.pulledCharts(),
					}, c.plan(), set.Namespaces[ns])
				})
			}
		})
	}
}

// checkApplied holds an applied diff to editcheck's promises: nothing but
// the restart annotations changed, and every workload the edits name was
// restarted under its own identity.
func checkApplied(t *testing.T, check editcheck.Check, plan *drift.Plan, edits []FileEdit) {
	t.Helper()
	ann := Annotations{}.withDefaults()
	var restarts []editcheck.Restart
	for _, w := range plan.Workloads {
		target := TargetValue(w.Desired)
		restarts = append(restarts, editcheck.Restart{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{ann.Target: target, ann.Restart: RestartValue(w, target)},
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
			_, set := planEdits(t, c, fixtureRepo(c.repo))
			repo := copyCase(t, c.repo)
			restarted := map[WorkloadID]bool{}
			for _, ns := range set.NamespaceNames() {
				gitApply(t, repo, UnifiedDiff(set.Namespaces[ns]))
				for _, e := range set.Namespaces[ns] {
					for _, id := range e.Workloads {
						restarted[id] = true
					}
				}
			}
			plan, again := planEdits(t, c, repo)
			assert.Empty(t, again.Namespaces)
			for _, w := range plan.Workloads {
				if restarted[WorkloadID{w.Namespace, w.Kind, w.Name}] {
					assert.Equal(t, drift.EditAlreadyBumped, w.Manifest.Edit, "%s/%s", w.Namespace, w.Name)
				}
			}
		})
	}
}

func TestEditsWithoutLocateUseNoHints(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("kustomize-prefix"), IndexOptions{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{drifted("shop", "Deployment", "prod-cart-v1", istio125)}}
	set, _ := ix.Edits(plan.Workloads, nil, Annotations{Restart: "example.com/restart", Target: "example.com/target"})
	require.Len(t, set.Namespaces["shop"], 1)
	after := string(set.Namespaces["shop"][0].After)
	assert.Contains(t, after, "example.com/restart: ")
	assert.Contains(t, after, "example.com/target: ")
}

func TestRestartValueIsStablePerTarget(t *testing.T) {
	cart := drifted("shop", "Deployment", "cart", istio125)
	other := drifted("shop", "Deployment", "checkout", istio125)
	target := TargetValue(cart.Desired)
	assert.Equal(t, "1-25-0@docker.io/istio/proxyv2:1.25.0", target)
	assert.Equal(t, RestartValue(cart, target), RestartValue(cart, target))
	assert.NotEqual(t, RestartValue(cart, target), RestartValue(other, target))
	assert.NotEqual(t, RestartValue(cart, target), RestartValue(cart, TargetValue(drift.Desired{Revision: "1-26-0", Image: "docker.io/istio/proxyv2:1.26.0"})))
	assert.Equal(t, "no-sidecar", TargetValue(drift.Desired{}))
	assert.Equal(t, "default", TargetValue(drift.Desired{Revision: "default"}))
}

func TestEditsRefuseWhenNoOverlayIsSafe(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("shared-base"), IndexOptions{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{drifted("team-z", "Deployment", "web", istio125)}}
	plan, set := locateAndEdit(ix, plan, func(drift.Workload) Hints {
		return Hints{Paths: []string{"base"}, TargetNamespace: "team-z"}
	}, Annotations{})
	assert.Equal(t, drift.ManifestRefused, plan.Workloads[0].Manifest.Status)
	assert.Empty(t, set.Namespaces)
	require.Len(t, set.Refused, 1)
	assert.Equal(t, Refusal{
		Namespace: "team-z", Path: "base/web.yaml",
		Reason:    "base/web.yaml is deployed as several workloads and no overlay renders it only as Deployment team-z/web",
		Workloads: []WorkloadID{{"team-z", "Deployment", "web"}},
	}, set.Refused[0])
}

// TestEditsChangeOnlyRestartLines holds the patch of every fixture to the
// promise reviewers rely on: each changed line is a restart annotation, a
// metadata:/annotations: line it needed, or kedge's overlay patch file and
// its entry in the overlay's kustomization.
func TestEditsChangeOnlyRestartLines(t *testing.T) {
	ann := Annotations{}.withDefaults()
	rules := editcheck.Rules{
		AnnotationKeys: []string{ann.Restart, ann.Target}, PatchFiles: []string{restartPatchFile("kustomization.yaml"), restartPatchFile("kustomization.yml")},
		PostRendererMarker: yamledit.RestartMarker, ReleasePatchPrefix: "kedge-helm-",
	}
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			_, set := planEdits(t, c, fixtureRepo(c.repo))
			assert.Empty(t, editcheck.PatchLineViolations(UnifiedDiff(set.All()), rules))
		})
	}
}

// TestEveryFixtureIsPlanned keeps the fixture repositories and the edit
// cases together, so that no repository escapes the checks above.
func TestEveryFixtureIsPlanned(t *testing.T) {
	entries, err := os.ReadDir(fixtures)
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
