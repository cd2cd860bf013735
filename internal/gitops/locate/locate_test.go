package locate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/argo"
	"github.com/kedge-io/kedge/internal/gitops/flux"
	"github.com/kedge-io/kedge/internal/gitops/helmrelease"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

func TestLocate(t *testing.T) {
	found := func(path, edit string) drift.Manifest {
		return drift.Manifest{Status: drift.ManifestFound, Path: path, Edit: edit}
	}
	tests := []struct {
		name     string
		repo     string
		workload drift.Workload
		hints    Hints
		want     drift.Manifest
		wantRoot string
	}{
		{
			name: "namespace and prefix/suffix from the kustomization", repo: "kustomize-prefix",
			workload: gitopstest.Workload("shop", "Deployment", "prod-cart-v1"),
			// clusters/prod renders it too; the innermost root is kept.
			want: found("apps/shop/deployment.yaml", drift.EditInPlace), wantRoot: "apps/shop",
		},
		{
			name: "hinted outer root", repo: "kustomize-prefix",
			workload: gitopstest.Workload("shop", "Deployment", "prod-cart-v1"),
			hints:    Hints{Paths: []string{"clusters/prod"}},
			want:     found("apps/shop/deployment.yaml", drift.EditInPlace), wantRoot: "clusters/prod",
		},
		{
			name: "second document of a multi-document file", repo: "kustomize-prefix",
			workload: gitopstest.Workload("shop", "StatefulSet", "prod-redis-v1"),
			want:     found("apps/shop/redis.yaml", drift.EditInPlace), wantRoot: "apps/shop",
		},
		{
			name: "the name as written is not the deployed name", repo: "kustomize-prefix",
			workload: gitopstest.Workload("shop", "Deployment", "cart"),
			want:     drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Deployment shop/cart in the indexed paths"},
		},
		{
			name: "kind must match", repo: "kustomize-prefix",
			workload: gitopstest.Workload("shop", "StatefulSet", "prod-cart-v1"),
			want:     drift.Manifest{Status: drift.ManifestNotFound, Detail: "no StatefulSet shop/prod-cart-v1 in the indexed paths"},
		},
		{
			name: "shared base is patched in the workload's overlay", repo: "shared-base",
			workload: gitopstest.Workload("team-a", "Deployment", "web"),
			want:     found("base/web.yaml", drift.EditOverlayPatch), wantRoot: "overlays/team-a",
		},
		{
			name: "shared base under a name prefix", repo: "shared-base",
			workload: gitopstest.Workload("team-b", "Deployment", "b-worker"),
			want:     found("base/worker.yaml", drift.EditOverlayPatch), wantRoot: "overlays/team-b",
		},
		{
			name: "base applied on its own as well: no overlay can take the patch", repo: "shared-base",
			workload: gitopstest.Workload("team-z", "Deployment", "web"),
			hints:    Hints{Paths: []string{"base"}, TargetNamespace: "team-z", Via: "Flux Kustomization flux-system/base"},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "base/web.yaml", Edit: drift.EditOverlayPatch,
				Detail: "base/web.yaml is deployed as several workloads and no overlay renders it only as Deployment team-z/web"},
		},
		{
			name: "plain multi-document file with namespaces", repo: "plain",
			workload: gitopstest.Workload("payments", "StatefulSet", "ledger"),
			want:     found("apps/multi.yaml", drift.EditInPlace),
		},
		{
			name: "plain file without namespace matches any", repo: "plain",
			workload: gitopstest.Workload("billing", "Deployment", "billing"),
			want:     found("apps/billing.yaml", drift.EditInPlace),
		},
		{
			name: "plain file namespace must match", repo: "plain",
			workload: gitopstest.Workload("other", "Deployment", "api"),
			want:     drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Deployment other/api in the indexed paths"},
		},
		{
			name: "same workload in two directories without a hint", repo: "flux",
			workload: gitopstest.Workload("podinfo", "Deployment", "podinfo"),
			want: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "2 definitions match Deployment podinfo/podinfo",
				Candidates: []string{"apps/podinfo/deployment.yaml", "staging/podinfo/deployment.yaml"}},
		},
		{
			name: "Flux path of plain files settles it", repo: "flux",
			workload: gitopstest.Workload("podinfo", "Deployment", "podinfo"),
			hints:    Hints{Paths: []string{"staging/podinfo"}, TargetNamespace: "podinfo", Via: "Flux Kustomization flux-system/staging"},
			want:     found("staging/podinfo/deployment.yaml", drift.EditInPlace),
		},
		{
			name: "Flux path of a kustomize root with targetNamespace", repo: "flux",
			workload: gitopstest.Workload("web", "Deployment", "frontend"),
			hints:    Hints{Paths: []string{"apps/frontend"}, TargetNamespace: "web", Via: "Flux Kustomization flux-system/frontend"},
			want:     found("apps/frontend/frontend.yaml", drift.EditInPlace), wantRoot: "apps/frontend",
		},
		{
			name: "Flux targetNamespace contradicts the workload", repo: "flux",
			workload: gitopstest.Workload("elsewhere", "Deployment", "frontend"),
			hints:    Hints{Paths: []string{"apps/frontend"}, TargetNamespace: "web", Via: "Flux Kustomization flux-system/frontend"},
			want:     drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Deployment elsewhere/frontend under apps/frontend (Flux Kustomization flux-system/frontend)"},
		},
		{
			name: "Flux path of a root that was skipped", repo: "remote",
			workload: gitopstest.Workload("nested", "Deployment", "app"),
			hints:    Hints{Paths: []string{"apps/nested"}, Via: "Flux Kustomization flux-system/nested"},
			want: drift.Manifest{Status: drift.ManifestNotFound,
				Detail: "Flux Kustomization flux-system/nested applies apps/nested, which was skipped: remote base https://github.com/example/manifests//deploy?ref=v1.0.0 is not fetched"},
		},
		{
			name: "Argo CD source path settles it", repo: "argo",
			workload: gitopstest.Workload("guestbook", "Deployment", "guestbook-ui"),
			hints:    Hints{Paths: []string{"guestbook-dev"}, Via: "Argo CD Application argocd/guestbook-dev"},
			want:     found("guestbook-dev/guestbook-ui.yaml", drift.EditInPlace), wantRoot: "guestbook-dev",
		},
		{
			name: "Argo CD without a hint", repo: "argo",
			workload: gitopstest.Workload("guestbook", "Deployment", "guestbook-ui"),
			want: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "2 definitions match Deployment guestbook/guestbook-ui",
				Candidates: []string{"guestbook-dev/guestbook-ui.yaml", "guestbook/guestbook-ui.yaml"}},
		},
		{
			name: "two plain files define it", repo: "ambiguous",
			workload: gitopstest.Workload("dev", "Deployment", "api"),
			want: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "2 definitions match Deployment dev/api",
				Candidates: []string{"team1/api.yaml", "team2/api.yaml"}},
		},
		{
			name: "Flux Helm release", repo: "helm",
			workload: gitopstest.Workload("podinfo", "Deployment", "podinfo"),
			hints:    Hints{Helm: "HelmRelease podinfo/podinfo"},
			want:     drift.Manifest{Status: drift.ManifestHelm, Detail: "HelmRelease podinfo/podinfo"},
		},
		{
			name: "Argo CD path holding a chart", repo: "helm",
			workload: gitopstest.Workload("podinfo", "Deployment", "podinfo"),
			hints:    Hints{Paths: []string{"charts/podinfo"}, Via: "Argo CD Application argocd/podinfo"},
			want:     drift.Manifest{Status: drift.ManifestHelm, Detail: "Argo CD Application argocd/podinfo renders the chart in charts/podinfo; its Application source is not known"},
		},
		{
			name: "source in another repository", repo: "plain",
			workload: gitopstest.Workload("payments", "Deployment", "api"),
			hints:    Hints{OtherRepo: "https://example.com/other.git", Via: "Flux Kustomization flux-system/payments"},
			want: drift.Manifest{Status: drift.ManifestNoRepo,
				Detail: "Flux Kustomization flux-system/payments applies it from https://example.com/other.git, not this repository"},
		},
		{
			name: "one workload defined for two clusters, no hint", repo: "multi-cluster",
			workload: gitopstest.Workload("shop", "Deployment", "web"),
			want: drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "2 definitions match Deployment shop/web",
				Candidates: []string{"clusters/eu-1/shop/web.yaml", "clusters/us-1/shop/web.yaml"}},
		},
		{
			name: "the cluster's Flux path picks its definition", repo: "multi-cluster",
			workload: gitopstest.Workload("shop", "Deployment", "web"),
			hints:    Hints{Paths: []string{"clusters/us-1/shop"}, Via: "Flux Kustomization flux-system/shop"},
			want:     found("clusters/us-1/shop/web.yaml", drift.EditInPlace), wantRoot: "clusters/us-1/shop",
		},
		{
			name: "the namespace written in the file is overridden by the kustomization", repo: "namespaces",
			workload: gitopstest.Workload("legacy", "Deployment", "cart"),
			want:     drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Deployment legacy/cart in the indexed paths"},
		},
		{
			name: "one root, two files, two namespaces", repo: "namespaces",
			workload: gitopstest.Workload("staging", "Deployment", "debug"),
			want:     found("apps/tools/debug-staging.yaml", drift.EditInPlace), wantRoot: "apps/tools",
		},
		{
			name: "files of directories without kustomization listed by a parent", repo: "nested-dir",
			workload: gitopstest.Workload("apps", "StatefulSet", "worker"),
			want:     found("apps/worker/statefulset.yaml", drift.EditInPlace), wantRoot: "apps",
		},
		{
			name: "a root Flux applies into two namespaces", repo: "flux-target-namespace",
			workload: gitopstest.Workload("team-b", "Deployment", "echo"),
			hints: Hints{Paths: []string{"apps/echo"}, TargetNamespace: "team-b", Via: "Flux Kustomization flux-system/echo-b",
				Applied: []Applied{
					{Path: "apps/echo", Namespace: "team-a", Force: true},
					{Path: "apps/echo", Namespace: "team-b", Force: true},
				}},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/echo/deployment.yaml", Edit: drift.EditOverlayPatch,
				Detail: "apps/echo/deployment.yaml is deployed as several workloads and no overlay renders it only as Deployment team-b/echo"},
		},
		{
			name: "a plain directory Flux applies into two namespaces", repo: "flux-target-namespace",
			workload: gitopstest.Workload("x", "Deployment", "solo"),
			hints: Hints{Paths: []string{"apps/solo"}, TargetNamespace: "x",
				Applied: []Applied{
					{Path: "apps/solo", Namespace: "x", Force: true},
					{Path: "apps/solo", Namespace: "y", Force: true},
				}},
			want: drift.Manifest{Status: drift.ManifestFound, Path: "apps/solo/deployment.yaml", Edit: drift.EditOverlayPatch,
				Detail: "apps/solo/deployment.yaml is deployed as several workloads and no kustomization renders it; add one per deployment to let kedge patch Deployment x/solo alone"},
		},
		{
			name: "a component's workload in two overlays", repo: "components",
			workload: gitopstest.Workload("team-b", "Deployment", "exporter"),
			want:     found("components/metrics/exporter.yaml", drift.EditOverlayPatch), wantRoot: "overlays/team-b",
		},
		{
			name: "a file listed by two overlays", repo: "file-resources",
			workload: gitopstest.Workload("staging", "Deployment", "web"),
			want:     found("base/web.yaml", drift.EditOverlayPatch), wantRoot: "overlays/staging",
		},
		{
			name: "an intermediate overlay renders the shared document once", repo: "verify-refusal",
			workload: gitopstest.Workload("env", "Deployment", "b-app"),
			want:     found("base/app.yaml", drift.EditOverlayPatch), wantRoot: "mid-b",
		},
		{
			name: "outside the checkout is never found", repo: "symlink",
			workload: gitopstest.Workload("vault", "Deployment", "secret-app"),
			want:     drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Deployment vault/secret-app in the indexed paths"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := index.Read(gitopstest.FixtureRepo(tt.repo), index.Options{})
			require.NoError(t, err)
			loc := One(ix, tt.workload, tt.hints)
			assert.Equal(t, tt.want, loc.Manifest)
			assert.Equal(t, tt.wantRoot, loc.Root)
		})
	}
}

func TestHintsIn(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	set := &objects.Set{
		Kustomizations: []objects.Kustomization{
			{ObjectMeta: meta("flux-system", "shop"), Spec: objects.KustomizationSpec{
				Path: "./clusters/prod/shop/", TargetNamespace: "shop",
				SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: "fleet"},
			}},
			{ObjectMeta: meta("flux-system", "vendor"), Spec: objects.KustomizationSpec{
				Path: "./deploy", SourceRef: objects.CrossObjectRef{Kind: "GitRepository", Name: "vendor"},
			}},
		},
		GitRepositories: []objects.GitRepository{
			{ObjectMeta: meta("flux-system", "fleet"), Spec: objects.GitRepositorySpec{URL: "ssh://git@github.com/acme/fleet.git"}},
			{ObjectMeta: meta("flux-system", "vendor"), Spec: objects.GitRepositorySpec{URL: "https://github.com/vendor/charts"}},
		},
		Applications: []objects.Application{
			{ObjectMeta: meta("argocd", "guestbook"), Spec: objects.ApplicationSpec{
				Source: &objects.ApplicationSource{RepoURL: "https://github.com/acme/fleet", Path: "apps/guestbook"},
			}},
			{ObjectMeta: meta("team-a", "multi"), Spec: objects.ApplicationSpec{Sources: []objects.ApplicationSource{
				{RepoURL: "https://github.com/acme/fleet.git", Path: "./apps/multi/one"},
				{RepoURL: "git@github.com:acme/fleet.git", Path: "apps/multi/two", Directory: &objects.ApplicationSourceDirectory{Recurse: true, Include: "*.yaml"}},
			}}},
			{ObjectMeta: meta("argocd", "redis"), Spec: objects.ApplicationSpec{
				Source: &objects.ApplicationSource{RepoURL: "https://charts.bitnami.com/bitnami", Chart: "redis", TargetRevision: "19.0.0"},
			}},
		},
	}
	// Every Argo CD path is read as Argo CD reads it: by default the top
	// directory only.
	dirOf := func(app, source int) argo.Directory {
		a := &set.Applications[app]
		return *argo.DirectoryOf(a, argo.Sources(a)[source])
	}
	guestbookDir, multiOne, multiTwo := dirOf(0, 0), dirOf(1, 0), dirOf(1, 1)
	for _, d := range []struct {
		got  argo.Directory
		path string
		ref  argo.SourceRef
	}{
		{guestbookDir, "apps/guestbook", argo.SourceRef{Namespace: "argocd", Name: "guestbook", At: "spec.source"}},
		{multiOne, "apps/multi/one", argo.SourceRef{Namespace: "team-a", Name: "multi", At: "spec.sources[0]"}},
		{multiTwo, "apps/multi/two", argo.SourceRef{Namespace: "team-a", Name: "multi", At: "spec.sources[1]"}},
	} {
		assert.Equal(t, d.path, d.got.Path)
		assert.Equal(t, d.ref, d.got.Source)
	}
	assert.True(t, multiTwo.Recurse)
	assert.Equal(t, "*.yaml", multiTwo.Include)
	w := func(labels, annotations map[string]string) drift.Workload {
		x := gitopstest.Workload("shop", "Deployment", "cart")
		x.Labels, x.Annotations = labels, annotations
		return x
	}
	tests := []struct {
		name string
		w    drift.Workload
		want Hints
	}{
		{
			name: "no GitOps metadata", w: w(nil, nil), want: Hints{},
		},
		{
			name: "Flux Kustomization labels",
			w: w(map[string]string{
				"kustomize.toolkit.fluxcd.io/name": "shop", "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
			}, nil),
			want: Hints{Paths: []string{"clusters/prod/shop"}, TargetNamespace: "shop", Via: "Flux Kustomization flux-system/shop",
				Flux: &flux.Kustomization{Namespace: "flux-system", Name: "shop", Path: "clusters/prod/shop", Dir: "clusters/prod/shop"}},
		},
		{
			name: "Flux source is another repository",
			w: w(map[string]string{
				"kustomize.toolkit.fluxcd.io/name": "vendor", "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
			}, nil),
			want: Hints{Paths: []string{"deploy"}, Via: "Flux Kustomization flux-system/vendor", OtherRepo: "https://github.com/vendor/charts",
				Flux: &flux.Kustomization{Namespace: "flux-system", Name: "vendor", Path: "deploy", Dir: "deploy"}},
		},
		{
			name: "unknown Flux Kustomization gives no hint",
			w: w(map[string]string{
				"kustomize.toolkit.fluxcd.io/name": "gone", "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
			}, nil),
			want: Hints{},
		},
		{
			name: "Flux Helm release",
			w: w(map[string]string{
				"helm.toolkit.fluxcd.io/name": "cart", "helm.toolkit.fluxcd.io/namespace": "shop",
			}, nil),
			// The release's file is searched for where the cluster applies this repository.
			want: Hints{Helm: "HelmRelease shop/cart", Release: &helmrelease.Ref{Namespace: "shop", Name: "cart"},
				Paths: []string{"clusters/prod/shop", "apps/guestbook", "apps/multi/one", "apps/multi/two"}},
		},
		{
			name: "Argo CD tracking id",
			w:    w(nil, map[string]string{"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:shop/cart"}),
			want: Hints{Paths: []string{"apps/guestbook"}, Via: "Argo CD Application argocd/guestbook", Directories: []argo.Directory{guestbookDir}},
		},
		{
			name: "Argo CD tracking id of another object is ignored",
			w:    w(nil, map[string]string{"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:shop/other"}),
			want: Hints{},
		},
		{
			name: "Argo CD application in any namespace, several sources",
			w:    w(nil, map[string]string{"argocd.argoproj.io/tracking-id": "team-a_multi:apps/Deployment:shop/cart"}),
			want: Hints{Paths: []string{"apps/multi/one", "apps/multi/two"}, Via: "Argo CD Application team-a/multi", Directories: []argo.Directory{multiOne, multiTwo}},
		},
		{
			name: "Argo CD label tracking",
			w:    w(map[string]string{"app.kubernetes.io/instance": "guestbook"}, nil),
			want: Hints{Paths: []string{"apps/guestbook"}, Via: "Argo CD Application argocd/guestbook", Directories: []argo.Directory{guestbookDir}},
		},
		{
			name: "Argo CD chart source",
			w:    w(map[string]string{"app.kubernetes.io/instance": "redis"}, nil),
			want: Hints{Helm: "Argo CD Application argocd/redis (chart redis)", Via: "Argo CD Application argocd/redis",
				ChartSources: []argo.ChartSource{{Source: argo.SourceRef{Namespace: "argocd", Name: "redis", At: "spec.source"},
					RepoURL: "https://charts.bitnami.com/bitnami", Chart: "redis", Version: "19.0.0"}}},
		},
		{
			name: "instance label of a Helm release without an Application",
			w:    w(map[string]string{"app.kubernetes.io/instance": "my-release"}, nil),
			want: Hints{},
		},
	}
	hints := HintsIn(nil, set, "https://github.com/ACME/fleet.git", "https://ghe.example.com/mirror/fleet")
	applied := []Applied{
		{Path: "clusters/prod/shop", Namespace: "shop", Force: true, Via: "Flux Kustomization flux-system/shop"},
		{Path: "apps/guestbook", Via: "Argo CD Application argocd/guestbook", Directory: &guestbookDir},
		{Path: "apps/multi/one", Via: "Argo CD Application team-a/multi", Directory: &multiOne},
		{Path: "apps/multi/two", Via: "Argo CD Application team-a/multi", Directory: &multiTwo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hints(tt.w)
			if (tt.want.Helm == "" || tt.want.Release != nil) && tt.want.OtherRepo == "" {
				assert.Equal(t, applied, got.Applied, "every path of this repository the cluster applies")
			} else {
				assert.Empty(t, got.Applied)
			}
			got.Applied, got.appliedByPath = nil, nil
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("without repository addresses every source is this one", func(t *testing.T) {
		got := HintsIn(nil, set)(w(map[string]string{
			"kustomize.toolkit.fluxcd.io/name": "vendor", "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
		}, nil))
		assert.Len(t, got.Applied, 5)
		got.Applied, got.appliedByPath = nil, nil
		assert.Equal(t, Hints{Paths: []string{"deploy"}, Via: "Flux Kustomization flux-system/vendor",
			Flux: &flux.Kustomization{Namespace: "flux-system", Name: "vendor", Path: "deploy", Dir: "deploy"}}, got)
	})
	t.Run("a Helm release where the cluster applies nothing from this repository", func(t *testing.T) {
		got := HintsIn(nil, set, "https://github.com/someone/else")(w(map[string]string{
			"helm.toolkit.fluxcd.io/name": "cart", "helm.toolkit.fluxcd.io/namespace": "shop",
		}, nil))
		assert.Equal(t, Hints{Helm: "HelmRelease shop/cart renders it; the cluster's Flux and Argo CD objects apply nothing from this repository"}, got)
	})
	t.Run("no cluster objects", func(t *testing.T) {
		assert.Equal(t, Hints{}, HintsIn(nil, nil)(w(map[string]string{"app.kubernetes.io/instance": "guestbook"}, nil)))
	})
}
