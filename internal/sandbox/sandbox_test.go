package sandbox

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write lays files (slash paths → content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    metadata:
      annotations:
        a: b
`

func TestKustomizeBuildsInAWorker(t *testing.T) {
	repo := t.TempDir()
	write(t, repo, map[string]string{
		"app/kustomization.yaml": "resources: [web.yaml]\nnamespace: shop\n",
		"app/web.yaml":           deployment,
	})
	res := Default().Kustomize(context.Background(), KustomizeJob{Root: repo, Dir: "app"})
	require.Nil(t, res.Failure)
	require.Len(t, res.Objects, 1)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(res.Objects[0], &obj))
	assert.Equal(t, "shop", obj["metadata"].(map[string]any)["namespace"])
	assert.Equal(t, []string{"app/kustomization.yaml", "app/web.yaml"}, res.Reads)

	replaced := Default().Kustomize(context.Background(), KustomizeJob{Root: repo, Dir: "app",
		Replace: map[string][]byte{"app/kustomization.yaml": []byte("resources: [web.yaml]\nnamespace: other\n")}})
	require.Nil(t, replaced.Failure)
	require.NoError(t, json.Unmarshal(replaced.Objects[0], &obj))
	assert.Equal(t, "other", obj["metadata"].(map[string]any)["namespace"])
}

// A repository can name remote bases and URLs in every file field of a
// kustomization, in any case and scheme; a worker neither runs git nor
// sends a request, whatever the entry.
func TestKustomizeFetchesAndExecutesNothing(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, deployment)
	}))
	defer srv.Close()
	marker := filepath.Join(t.TempDir(), "marker")
	// A git on kedge's PATH would run if anything looked for one there.
	bin := t.TempDir()
	write(t, bin, map[string]string{"git": "#!/bin/sh\ntouch " + marker + "\n"})
	require.NoError(t, os.Chmod(filepath.Join(bin, "git"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	entries := map[string]string{
		"git-upper":        "resources: [\"GIT::file:///x?ref=--upload-pack=touch%20" + marker + "\"]",
		"git-lower":        "resources: [\"git::" + srv.URL + "/repo.git\"]",
		"https-resource":   "resources: [\"" + srv.URL + "/web.yaml\"]",
		"ssh":              "resources: [\"ssh://git@127.0.0.1/org/repo\"]",
		"scp":              "resources: [\"git@127.0.0.1:org/repo\"]",
		"github":           "resources: [\"github.com/org/repo/base?ref=main\"]",
		"patch-path":       "resources: [web.yaml]\npatches:\n- path: " + srv.URL + "/patch.yaml\n",
		"generator-file":   "configMapGenerator:\n- name: c\n  files: [" + srv.URL + "/f]\n",
		"transformer":      "resources: [web.yaml]\ntransformers: [\"" + srv.URL + "/t.yaml\"]\n",
		"openapi":          "resources: [web.yaml]\nopenapi:\n  path: " + srv.URL + "/schema.json\n",
		"crds":             "resources: [web.yaml]\ncrds: [\"" + srv.URL + "/crd.json\"]\n",
		"configurations":   "resources: [web.yaml]\nconfigurations: [\"" + srv.URL + "/c.yaml\"]\n",
		"json6902":         "resources: [web.yaml]\npatchesJson6902:\n- target: {kind: Deployment, name: web}\n  path: " + srv.URL + "/p.yaml\n",
		"upper-http":       "resources: [\"HTTP://" + strings.TrimPrefix(srv.URL, "http://") + "/web.yaml\"]",
		"strategic-merge":  "resources: [web.yaml]\npatchesStrategicMerge: [\"" + srv.URL + "/p.yaml\"]\n",
		"replacement-path": "resources: [web.yaml]\nreplacements:\n- path: " + srv.URL + "/r.yaml\n",
	}
	repo := t.TempDir()
	for name, k := range entries {
		write(t, repo, map[string]string{name + "/kustomization.yaml": k, name + "/web.yaml": deployment})
	}
	for name := range entries {
		t.Run(name, func(t *testing.T) {
			res := Default().Kustomize(context.Background(), KustomizeJob{Root: repo, Dir: name})
			require.NotNil(t, res.Failure, "the build must fail")
			assert.Empty(t, res.Objects)
		})
	}
	assert.Zero(t, hits.Load(), "requests reached the server")
	assert.NoFileExists(t, marker, "a process ran")
}

func TestKustomizeReadsNothingOutside(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: secret\ndata:\n  key: TOPSECRET\n"})
	repo := t.TempDir()
	write(t, repo, map[string]string{
		"escape/kustomization.yaml": "resources: [../../" + filepath.Base(outside) + "/secret.yaml]\n",
		"link/kustomization.yaml":   "resources: [secret.yaml]\n",
		"gen/kustomization.yaml":    "configMapGenerator:\n- name: c\n  files: [secret.yaml]\n",
		"abs/kustomization.yaml":    "resources: [" + filepath.Join(outside, "secret.yaml") + "]\n",
	})
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(repo, "link", "secret.yaml")))
	require.NoError(t, os.Symlink("../../"+filepath.Base(outside)+"/secret.yaml", filepath.Join(repo, "gen", "secret.yaml")))
	for _, dir := range []string{"escape", "link", "gen", "abs"} {
		res := Default().Kustomize(context.Background(), KustomizeJob{Root: repo, Dir: dir})
		require.NotNil(t, res.Failure, dir)
		// kustomize quotes a resource's error as text: the refusal is
		// still one.
		assert.Equal(t, FailOutside, res.Failure.Kind, "%s: %s", dir, res.Failure.Message)
		assert.NotContains(t, res.Failure.Message, "TOPSECRET", dir)
		for _, o := range res.Objects {
			assert.NotContains(t, string(o), "TOPSECRET", dir)
		}
	}
}

// chart writes a chart whose single template is tmpl.
func writeChart(t *testing.T, dir, tmpl string) {
	t.Helper()
	write(t, dir, map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"values.yaml":             "podAnnotations: {}\n",
		"templates/workload.yaml": tmpl,
	})
}

const chartDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    metadata:
      annotations: {{ toJson .Values.podAnnotations }}
`

func TestChartRendersEachValueSet(t *testing.T) {
	repo := t.TempDir()
	writeChart(t, filepath.Join(repo, "chart"), chartDeployment)
	res := Default().Chart(context.Background(), ChartJob{Root: repo, Dir: "chart", Release: "web", Namespace: "shop",
		Values: []map[string]any{{}, {"podAnnotations": map[string]any{"k": "v"}}}})
	require.Nil(t, res.Failure)
	require.Len(t, res.Renders, 2)
	assert.Equal(t, map[string]any{"podAnnotations": map[string]any{}}, res.Defaults)
	assert.Contains(t, string(res.Renders[0].Objects["Deployment/web"]), `"annotations":{}`)
	assert.Contains(t, string(res.Renders[1].Objects["Deployment/web"]), `"k":"v"`)
}

func TestChartBudgets(t *testing.T) {
	pool := NewPool(Limits{Timeout: 5 * time.Second, Memory: 256 << 20, Workers: 1})
	defer pool.Close()
	repo := t.TempDir()
	outside := t.TempDir()
	write(t, outside, map[string]string{"key.pem": "-----BEGIN PRIVATE KEY-----TOPSECRET"})

	writeChart(t, filepath.Join(repo, "memory"), "{{ $l := until 100000000 }}{{ len $l }}\n")
	writeChart(t, filepath.Join(repo, "doubling"), "{{ $s := \"xxxxxxxxxxxxxxxx\" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}{{ len $s }}\n")
	writeChart(t, filepath.Join(repo, "loops"), "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n")
	writeChart(t, filepath.Join(repo, "leak"), "{{ fail (.Files.Get \"files/leak\") }}\n")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "leak", "files"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "key.pem"), filepath.Join(repo, "leak", "files", "leak")))
	writeChart(t, filepath.Join(repo, "leak-relative"), "{{ fail (.Files.Get \"files/leak\") }}\n")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "leak-relative", "files"), 0o755))
	rel, err := filepath.Rel(filepath.Join(repo, "leak-relative", "files"), filepath.Join(outside, "key.pem"))
	require.NoError(t, err)
	require.NoError(t, os.Symlink(rel, filepath.Join(repo, "leak-relative", "files", "leak")))
	writeChart(t, filepath.Join(repo, "leak-dir"), "{{ fail (.Files.Get \"files/key.pem\") }}\n")
	require.NoError(t, os.Symlink(outside, filepath.Join(repo, "leak-dir", "files")))
	writeChart(t, filepath.Join(repo, "subcharts"), chartDeployment)
	for i := range 3 {
		write(t, filepath.Join(repo, "subcharts", "charts"), map[string]string{fmt.Sprintf("big%d.tgz", i): string(bigArchive(t, fmt.Sprintf("big%d", i), 6<<20))})
	}

	cases := []struct {
		dir  string
		kind FailureKind
	}{
		{"memory", FailOverBudget},
		{"doubling", FailOverBudget},
		{"loops", FailOverBudget},
		{"leak", FailOutside},
		{"leak-relative", FailOutside},
		{"leak-dir", FailOutside},
		{"subcharts", FailOverBudget},
		{"../" + filepath.Base(outside), FailOutside},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			started := time.Now()
			res := pool.Chart(context.Background(), ChartJob{Root: repo, Dir: c.dir, Release: "r", Namespace: "n", Values: []map[string]any{{}}})
			failure := res.Failure
			if failure == nil && len(res.Renders) == 1 {
				failure = res.Renders[0].Failure
			}
			require.NotNil(t, failure)
			assert.Equal(t, c.kind, failure.Kind, failure.Message)
			assert.NotContains(t, failure.Message, "TOPSECRET")
			assert.Less(t, time.Since(started), 15*time.Second)
		})
	}
	// The pool goes on serving after its workers were killed.
	ok := pool.Chart(context.Background(), ChartJob{Root: repo, Dir: "subcharts", MaxBytes: 64 << 20, Release: "web", Values: []map[string]any{{}}})
	require.Nil(t, ok.Failure)
	require.Nil(t, ok.Renders[0].Failure)
}

// bigArchive is a packaged chart of about size bytes uncompressed that
// compresses to almost nothing.
func bigArchive(t *testing.T, name string, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(n string, data []byte) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + n, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	add("Chart.yaml", []byte("apiVersion: v2\nname: "+name+"\nversion: 1.0.0\n"))
	for i := 0; size > 0; i++ {
		n := min(size, 4<<20)
		add(fmt.Sprintf("files/f%d", i), bytes.Repeat([]byte{'a'}, n))
		size -= n
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}
