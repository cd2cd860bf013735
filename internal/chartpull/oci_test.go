package chartpull

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// artifact is what `helm push` writes: an OCI manifest whose config and
// layer carry the given media types.
func artifact(t *testing.T, chartArchive []byte, configType, layerType types.MediaType) v1.Image {
	t.Helper()
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(chartArchive, layerType), MediaType: layerType})
	require.NoError(t, err)
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, configType)
}

// ociRegistry starts an in-process registry and pushes the charts under
// charts/podinfo, tagged as Helm tags them; it returns the registry's
// host:port.
func ociRegistry(t *testing.T, charts map[string]v1.Image) (string, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	pushCharts(t, host, charts)
	return host, srv
}

// pushCharts pushes the charts to the registry at host under
// charts/podinfo.
func pushCharts(t *testing.T, host string, charts map[string]v1.Image, opts ...remote.Option) {
	t.Helper()
	for version, img := range charts {
		tag, err := name.NewTag(host + "/charts/podinfo:" + ociTag(version))
		require.NoError(t, err)
		require.NoError(t, remote.Write(tag, img, opts...))
	}
}

func helmChart(t *testing.T, version string) v1.Image {
	return artifact(t, packaged(t, version), helmConfigMediaType, helmChartLayerMediaType)
}

func TestPullOCI(t *testing.T) {
	charts := map[string]v1.Image{
		"6.7.0":       helmChart(t, "6.7.0"),
		"6.7.1":       helmChart(t, "6.7.1"),
		"6.8.0+build": helmChart(t, "6.8.0+build"),
		"7.0.0-rc.1":  helmChart(t, "7.0.0-rc.1"),
	}
	host, _ := ociRegistry(t, charts)
	tests := []struct {
		name, repoURL, version, want string
	}{
		{name: "Flux's oci:// URL, an exact version", repoURL: "oci://" + host + "/charts", version: "6.7.0", want: "6.7.0"},
		{name: "Argo CD's URL without a scheme", repoURL: host + "/charts", version: "6.7.1", want: "6.7.1"},
		{name: "build metadata, tagged with _", repoURL: "oci://" + host + "/charts/", version: "6.8.0+build", want: "6.8.0+build"},
		{name: "a range, resolved against the tags", repoURL: "oci://" + host + "/charts", version: "~6.7", want: "6.7.1"},
		{name: "the latest stable", repoURL: host + "/charts", version: "", want: "6.8.0+build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := loopbackPuller(t.TempDir(), 10*time.Second)
			got, err := p.Pull(context.Background(), Ref{RepoURL: tt.repoURL, Chart: "podinfo", Version: tt.version})
			require.NoError(t, err)
			c, err := loader.Load(got)
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Metadata.Version)
			assert.Equal(t, "podinfo-"+tt.want+".tgz", filepath.Base(got))
		})
	}
}

func TestPullOCIKeepsAnExactVersion(t *testing.T) {
	host, srv := ociRegistry(t, map[string]v1.Image{"6.7.0": helmChart(t, "6.7.0")})
	p := loopbackPuller(t.TempDir(), 10*time.Second)
	ref := Ref{RepoURL: "oci://" + host + "/charts", Chart: "podinfo", Version: "6.7.0"}
	first, err := p.Pull(context.Background(), ref)
	require.NoError(t, err)
	srv.Close()
	again, err := p.Pull(context.Background(), ref)
	require.NoError(t, err, "the cached archive is used without the registry")
	assert.Equal(t, first, again)
}

func TestPullOCIReports(t *testing.T) {
	tests := []struct {
		name    string
		serve   func(t *testing.T) string
		version string
		wantErr string
	}{
		{
			name: "a version the registry has no tag for", version: "9.9.9", wantErr: "MANIFEST_UNKNOWN",
			serve: func(t *testing.T) string {
				host, _ := ociRegistry(t, map[string]v1.Image{"6.7.0": helmChart(t, "6.7.0")})
				return "oci://" + host + "/charts"
			},
		},
		{
			name: "a range no tag satisfies", version: ">=9", wantErr: `has no tag matching ">=9"`,
			serve: func(t *testing.T) string {
				host, _ := ociRegistry(t, map[string]v1.Image{"6.7.0": helmChart(t, "6.7.0")})
				return "oci://" + host + "/charts"
			},
		},
		{
			name: "a container image under the chart's name", version: "6.7.0", wantErr: "not a Helm chart's",
			serve: func(t *testing.T) string {
				img := artifact(t, packaged(t, "6.7.0"), types.OCIConfigJSON, types.OCILayer)
				host, _ := ociRegistry(t, map[string]v1.Image{"6.7.0": img})
				return "oci://" + host + "/charts"
			},
		},
		{
			name: "a Helm artifact without a chart layer", version: "6.7.0", wantErr: "no layer of media type",
			serve: func(t *testing.T) string {
				img := artifact(t, packaged(t, "6.7.0"), helmConfigMediaType, "application/vnd.cncf.helm.chart.provenance.v1.prov")
				host, _ := ociRegistry(t, map[string]v1.Image{"6.7.0": img})
				return "oci://" + host + "/charts"
			},
		},
		{
			name: "a registry that does not answer", version: "6.7.0", wantErr: "deadline exceeded",
			serve: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
				t.Cleanup(srv.Close)
				return "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := loopbackPuller(dir, 200*time.Millisecond)
			_, err := p.Pull(context.Background(), Ref{RepoURL: tt.serve(t), Chart: "podinfo", Version: tt.version})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), "chart podinfo "+tt.version, "the error names the chart")
			assert.Empty(t, filesUnder(t, dir), "nothing is cached")
		})
	}
}
