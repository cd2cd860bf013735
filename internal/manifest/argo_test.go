package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// TestArgoDirectoryReads follows the Argo CD directory documentation
// (https://argo-cd.readthedocs.io/en/stable/user-guide/directory/) and the
// repo server's matching: globs on the path relative to the source path,
// "*" crossing directories, brace lists for several patterns.
func TestArgoDirectoryReads(t *testing.T) {
	tests := []struct {
		name string
		dir  ArgoDirectory
		file string
		want bool
	}{
		{"top file by default", ArgoDirectory{Path: "apps/web"}, "apps/web/deploy.yaml", true},
		{"sub-directory needs recurse", ArgoDirectory{Path: "apps/web"}, "apps/web/old/deploy.yaml", false},
		{"recurse reads sub-directories", ArgoDirectory{Path: "apps/web", Recurse: true}, "apps/web/old/deploy.yaml", true},
		{"another directory", ArgoDirectory{Path: "apps/web", Recurse: true}, "apps/webhook/deploy.yaml", false},
		{"the repository root", ArgoDirectory{Path: "."}, "deploy.yaml", true},
		{"include one file", ArgoDirectory{Path: "kube", Include: "bookinfo.yaml"}, "kube/bookinfo-psa.yaml", false},
		{"include matches the relative path", ArgoDirectory{Path: "kube", Include: "bookinfo.yaml"}, "kube/bookinfo.yaml", true},
		{"brace list", ArgoDirectory{Path: "kube", Include: "{bookinfo.yaml,details-v2.yaml}"}, "kube/details-v2.yaml", true},
		{"brace list of globs", ArgoDirectory{Path: "kube", Include: "{*.yml,*.yaml}"}, "kube/a.yml", true},
		// Argo CD does not split the field: outside braces a comma is a
		// character of the name.
		{"comma outside braces is literal", ArgoDirectory{Path: "kube", Include: "a.yaml,b.yaml"}, "kube/a.yaml", false},
		{"star crosses directories", ArgoDirectory{Path: "apps", Recurse: true, Include: "*.yaml"}, "apps/x/y/deploy.yaml", true},
		{"directory glob", ArgoDirectory{Path: "apps", Recurse: true, Exclude: "legacy/*"}, "apps/legacy/deploy.yaml", false},
		{"exclude wins over include", ArgoDirectory{Path: "apps", Include: "*.yaml", Exclude: "{config.yaml,*-old.yaml}"}, "apps/api-old.yaml", false},
		{"exclude leaves the rest", ArgoDirectory{Path: "apps", Include: "*.yaml", Exclude: "{config.yaml,*-old.yaml}"}, "apps/api.yaml", true},
		{"a pattern that does not compile includes nothing", ArgoDirectory{Path: "apps", Include: "[a"}, "apps/a.yaml", false},
		{"a pattern that does not compile excludes nothing", ArgoDirectory{Path: "apps", Exclude: "[a"}, "apps/a.yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.dir.reads(tt.file))
		})
	}
}

// TestRepositoryApplications reads the Applications a repository holds:
// from a plain file as written, and from a kustomize root as it renders
// them (its namespace: set).
func TestRepositoryApplications(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("argo-repo-applications"), IndexOptions{})
	require.NoError(t, err)
	apps := ix.Applications()
	require.Len(t, apps, 2)
	byName := map[string]objects.Application{}
	for _, a := range apps {
		byName[a.Name] = a
	}
	assert.Equal(t, "argocd", byName["payments"].Namespace, "the kustomization sets it")
	assert.Equal(t, &objects.ApplicationSourceDirectory{Exclude: "canary.yaml"}, byName["payments"].Spec.Source.Directory)
	assert.Equal(t, "{statefulset.yaml}", byName["ledger"].Spec.Source.Directory.Include)

	cluster := &objects.Set{Applications: []objects.Application{{}}}
	assert.Same(t, cluster, WithRepositoryApplications(cluster, ix), "the cluster's Applications are read alone")
	empty := &objects.Set{}
	stood := WithRepositoryApplications(empty, ix)
	assert.Len(t, stood.Applications, 2)
	assert.Empty(t, empty.Applications, "the cluster's set is left as it was")
}

// TestArgoDirectoryFilesSharedByTwoApplications: two Applications that
// include the same file into two namespaces share it, so no in-place edit
// restarts one alone; files each includes alone are not shared.
func TestArgoDirectoryFilesSharedByTwoApplications(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("argo-directory-include"), IndexOptions{})
	require.NoError(t, err)
	const kube = "samples/bookinfo/platform/kube"
	application := func(name, namespace, include string) objects.Application {
		return objects.Application{
			ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name},
			Spec: objects.ApplicationSpec{
				Source:      &objects.ApplicationSource{Path: kube, Directory: &objects.ApplicationSourceDirectory{Include: include}},
				Destination: objects.ApplicationDestination{Namespace: namespace},
			},
		}
	}
	tests := []struct {
		name   string
		second string
		want   string
	}{
		{"the same file into another namespace", "bookinfo.yaml", drift.EditOverlayPatch},
		{"another file into another namespace", "bookinfo-psa.yaml", drift.EditInPlace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := &objects.Set{Applications: []objects.Application{
				application("one", "one", "bookinfo.yaml"),
				application("two", "two", tt.second),
			}}
			w := argoTracked(drifted("one", "Deployment", "reviews-v1", istio125), "one")
			loc := ix.LocateOne(w, HintsFor(set)(w))
			assert.Equal(t, drift.ManifestFound, loc.Manifest.Status)
			assert.Equal(t, kube+"/bookinfo.yaml", loc.Manifest.Path)
			assert.Equal(t, tt.want, loc.Manifest.Edit)
		})
	}
}

// TestParseImageArg reads `kustomize edit set image` arguments as an
// Application's kustomize.images writes them.
func TestParseImageArg(t *testing.T) {
	tests := []struct {
		arg  string
		want types.Image
	}{
		{"nginx:1.27", types.Image{Name: "nginx", NewTag: "1.27"}},
		{"ghcr.io/acme/web@sha256:abc", types.Image{Name: "ghcr.io/acme/web", Digest: "sha256:abc"}},
		{"web=ghcr.io/acme/web:2.0", types.Image{Name: "web", NewName: "ghcr.io/acme/web", NewTag: "2.0"}},
		{"registry:5000/web=registry:5000/web-fips", types.Image{Name: "registry:5000/web", NewName: "registry:5000/web-fips"}},
		{"web=*:3.1", types.Image{Name: "web", NewTag: "3.1"}},
		{"localhost:5000/app", types.Image{Name: "localhost:5000/app"}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			assert.Equal(t, tt.want, parseImageArg(tt.arg))
		})
	}
}
