package plan_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/plan"
)

// chartRepository serves the fixture chart charts/podinfo of
// argo-helm-values as a chart repository: index.yaml and the archive.
func chartRepository(t *testing.T) *httptest.Server {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(manifestFixtures, "argo-helm-values", "repo", "charts", "podinfo"))
	require.NoError(t, err)
	file, err := chartutil.Save(chrt, t.TempDir())
	require.NoError(t, err)
	archive, err := os.ReadFile(file)
	require.NoError(t, err)
	sum := sha256.Sum256(archive)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  podinfo:\n    - version: 6.7.0\n      urls: [podinfo-6.7.0.tgz]\n      digest: %s\n", hex.EncodeToString(sum[:]))
	mux := http.NewServeMux()
	mux.HandleFunc("/index.yaml", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(index)) })
	mux.HandleFunc("/podinfo-6.7.0.tgz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(archive) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const pulledApp = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: podinfo
  namespace: argocd
spec:
  project: default
  destination:
    server: https://kubernetes.default.svc
    namespace: shop
  source:
    repoURL: %s
    chart: podinfo
    targetRevision: 6.7.0
    helm:
      valuesObject:
        replicaCount: 2
`

// TestArgoChartFromAChartRepository: an Application naming a chart of a
// chart repository is planned from the chart pulled into a cache outside
// the checkout; a chart that cannot be pulled keeps the status helm with
// the reason.
func TestArgoChartFromAChartRepository(t *testing.T) {
	srv := chartRepository(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	tests := []struct {
		name, repoURL string
		want          drift.Manifest
	}{
		{name: "pulled", repoURL: srv.URL, want: drift.Manifest{Status: drift.ManifestFound, Path: "argocd/podinfo.yaml", Edit: drift.EditHelmValues,
			Detail: "Argo CD Application argocd/podinfo (release podinfo, value podAnnotations)"}},
		{name: "unreachable", repoURL: gone.URL, want: drift.Manifest{Status: drift.ManifestHelm}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(repo, "argocd"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(repo, "argocd", "podinfo.yaml"), []byte(fmt.Sprintf(pulledApp, tt.repoURL)), 0o644))
			set := argoCluster(t, []argoWorkload{{"shop", "Deployment", "podinfo", "podinfo", false}})
			snap, err := snapshot.Read(filepath.Join(repo, "argocd"))
			require.NoError(t, err)
			set.Applications = snap.Applications
			puller := &chartpull.Puller{Dir: t.TempDir(), Timeout: 10 * time.Second, AllowedHosts: []string{"127.0.0.1"}} // the test repository listens on loopback
			opts := plan.Options{RepoRoot: repo, RepoURLs: []string{fleetURL}, Charts: assemble.PullCharts(context.Background(), set, nil, puller)}

			res, err := plan.Build(set, opts)
			require.NoError(t, err)
			require.Len(t, res.Plan.Workloads, 1)
			got := res.Plan.Workloads[0].Manifest
			if tt.want.Status == drift.ManifestHelm {
				assert.Equal(t, drift.ManifestHelm, got.Status)
				assert.Contains(t, got.Detail, "renders chart podinfo 6.7.0 from "+tt.repoURL+"; chart podinfo 6.7.0 from "+tt.repoURL+": reading the repository's index")
				assert.Empty(t, res.Edits.All())
				return
			}
			assert.Equal(t, tt.want, got)
			edits := res.Edits.All()
			require.Len(t, edits, 1)
			assert.Contains(t, string(edits[0].After), "      valuesObject:\n        replicaCount: 2\n        podAnnotations:\n          kedge.io/restart-target: ")
			require.NoError(t, os.WriteFile(filepath.Join(repo, filepath.FromSlash(edits[0].Path)), edits[0].After, 0o644))

			again, err := plan.Build(set, opts)
			require.NoError(t, err)
			assert.Empty(t, again.Edits.All(), "a second plan over the edited checkout writes nothing")
		})
	}
}
