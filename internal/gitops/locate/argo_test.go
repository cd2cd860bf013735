package locate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

// TestRepositoryApplications reads the Applications a repository holds:
// from a plain file as written, and from a kustomize root as it renders
// them (its namespace: set).
func TestRepositoryApplications(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("argo-repo-applications"), index.Options{})
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
	assert.Same(t, cluster, index.WithRepositoryApplications(cluster, ix), "the cluster's Applications are read alone")
	empty := &objects.Set{}
	stood := index.WithRepositoryApplications(empty, ix)
	assert.Len(t, stood.Applications, 2)
	assert.Empty(t, empty.Applications, "the cluster's set is left as it was")
}

// TestArgoDirectoryFilesSharedByTwoApplications: two Applications that
// include the same file into two namespaces share it, so no in-place edit
// restarts one alone; files each includes alone are not shared.
func TestArgoDirectoryFilesSharedByTwoApplications(t *testing.T) {
	ix, err := index.Read(gitopstest.FixtureRepo("argo-directory-include"), index.Options{})
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
			w := gitopstest.ArgoTracked(gitopstest.Drifted("one", "Deployment", "reviews-v1", gitopstest.Istio125), "one")
			loc := locate.One(ix, w, locate.HintsIn(nil, set)(w))
			assert.Equal(t, drift.ManifestFound, loc.Manifest.Status)
			assert.Equal(t, kube+"/bookinfo.yaml", loc.Manifest.Path)
			assert.Equal(t, tt.want, loc.Manifest.Edit)
		})
	}
}
