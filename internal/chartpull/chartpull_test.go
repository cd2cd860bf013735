package chartpull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// packaged returns the archive of a small chart of that version.
func packaged(t *testing.T, version string) []byte {
	t.Helper()
	c := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "podinfo", Version: version},
		Values:    map[string]any{"podAnnotations": map[string]any{}},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")}},
	}
	file, err := chartutil.Save(c, t.TempDir())
	require.NoError(t, err)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return data
}

// chartRepo serves an index.yaml listing the archives (by version, under
// charts/) and the archives; the index is replaced when index is set.
func chartRepo(t *testing.T, archives map[string][]byte, index string) (*httptest.Server, *int) {
	t.Helper()
	requests := new(int)
	if index == "" {
		index = "apiVersion: v1\nentries:\n  podinfo:\n"
		for v, data := range archives {
			sum := sha256.Sum256(data)
			index += fmt.Sprintf("    - version: %s\n      urls: [charts/podinfo-%s.tgz]\n      digest: %s\n", v, v, hex.EncodeToString(sum[:]))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/repo/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		*requests++
		_, _ = w.Write([]byte(index))
	})
	for v, data := range archives {
		mux.HandleFunc("/repo/charts/podinfo-"+v+".tgz", func(w http.ResponseWriter, _ *http.Request) {
			*requests++
			_, _ = w.Write(data)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, requests
}

func TestPull(t *testing.T) {
	archives := map[string][]byte{"6.7.0": packaged(t, "6.7.0"), "6.7.1": packaged(t, "6.7.1"), "7.0.0-rc.1": packaged(t, "7.0.0-rc.1")}
	tests := []struct {
		name, version, want string
	}{
		{name: "an exact version", version: "6.7.0", want: "6.7.0"},
		{name: "a constraint", version: "~6.7", want: "6.7.1"},
		{name: "the latest stable", version: "", want: "6.7.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := chartRepo(t, archives, "")
			p := loopbackPuller(t.TempDir(), 10*time.Second)
			got, err := p.Pull(context.Background(), Ref{RepoURL: srv.URL + "/repo", Chart: "podinfo", Version: tt.version})
			require.NoError(t, err)
			c, err := loader.Load(got)
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Metadata.Version)
			assert.Equal(t, "podinfo-"+tt.want+".tgz", filepath.Base(got))
		})
	}
}

func TestPullKeepsAnExactVersion(t *testing.T) {
	srv, requests := chartRepo(t, map[string][]byte{"6.7.0": packaged(t, "6.7.0")}, "")
	p := loopbackPuller(t.TempDir(), 10*time.Second)
	ref := Ref{RepoURL: srv.URL + "/repo", Chart: "podinfo", Version: "6.7.0"}
	first, err := p.Pull(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, 2, *requests, "the index and the archive")
	srv.Close()
	again, err := p.Pull(context.Background(), ref)
	require.NoError(t, err, "the cached archive is used without the repository")
	assert.Equal(t, first, again)
}

func TestPullReports(t *testing.T) {
	good := packaged(t, "6.7.0")
	tests := []struct {
		name    string
		serve   func(t *testing.T) string
		version string
		wantErr string
	}{
		{
			name: "an index that is not one", version: "6.7.0", wantErr: "is not a chart repository index",
			serve: func(t *testing.T) string {
				srv, _ := chartRepo(t, nil, "<html>maintenance</html>\n")
				return srv.URL + "/repo"
			},
		},
		{
			name: "a chart the index does not list", version: "9.9.9", wantErr: "no version of the chart matching",
			serve: func(t *testing.T) string {
				srv, _ := chartRepo(t, map[string][]byte{"6.7.0": good}, "")
				return srv.URL + "/repo"
			},
		},
		{
			name: "an archive that is not the one indexed", version: "6.7.0", wantErr: "does not match the index's digest",
			serve: func(t *testing.T) string {
				index := "apiVersion: v1\nentries:\n  podinfo:\n    - version: 6.7.0\n      urls: [charts/podinfo-6.7.0.tgz]\n      digest: 00\n"
				srv, _ := chartRepo(t, map[string][]byte{"6.7.0": good}, index)
				return srv.URL + "/repo"
			},
		},
		{
			name: "a repository that is gone", version: "6.7.0", wantErr: "404",
			serve: func(t *testing.T) string {
				srv := httptest.NewServer(http.NotFoundHandler())
				t.Cleanup(srv.Close)
				return srv.URL + "/repo"
			},
		},
		{
			name: "a repository that does not answer", version: "6.7.0", wantErr: "deadline exceeded",
			serve: func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
				t.Cleanup(srv.Close)
				return srv.URL + "/repo"
			},
		},
		{name: "neither HTTP nor OCI", version: "6.7.0", wantErr: "only http, https and OCI", serve: func(*testing.T) string { return "s3://bucket/charts" }},
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

// loopbackPuller pulls from the tests' servers, which listen on loopback:
// helm.allowedHosts must list 127.0.0.1 for a pull to start there or
// connect to it.
func loopbackPuller(dir string, timeout time.Duration) *Puller {
	return &Puller{Dir: dir, Timeout: timeout, AllowedHosts: []string{"127.0.0.1"}}
}

// filesUnder lists every file and symbolic link below dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	}))
	return out
}
