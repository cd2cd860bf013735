package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/repofs"
)

// archive packs files (paths under the chart's directory name) as a chart
// archive.
func archive(t *testing.T, name string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for p, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// An archive inside a subchart archive counts against the chart's budget,
// and the refusal blames the archive in the chart's directory, the one a
// reader can find, naming the one inside it.
func TestNestedArchiveOverBudgetBlamesTheChartsArchive(t *testing.T) {
	inner := archive(t, "inner", map[string][]byte{
		"Chart.yaml":  []byte("apiVersion: v2\nname: inner\nversion: 1.0.0\n"),
		"files/zeros": make([]byte, 2<<20),
	})
	outer := archive(t, "outer", map[string][]byte{
		"Chart.yaml":             []byte("apiVersion: v2\nname: outer\nversion: 1.0.0\n"),
		"charts/inner-1.0.0.tgz": inner,
	})
	repo := t.TempDir()
	dir := filepath.Join(repo, "chart", "charts")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "chart", "Chart.yaml"), []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "outer-1.0.0.tgz"), outer, 0o644))
	fsys, err := repofs.Open(repo)
	require.NoError(t, err)
	defer fsys.Close()

	_, err = LoadChartDir(fsys, "chart", 1<<20, nil)
	var over *OverBudgetError
	require.True(t, errors.As(err, &over), "%v", err)
	assert.Equal(t, "charts/outer-1.0.0.tgz", over.File)
	assert.Contains(t, over.Budget, "charts/inner-1.0.0.tgz inside it")

	chrt, err := LoadChartDir(fsys, "chart", 4<<20, nil)
	require.NoError(t, err, "within the budget")
	require.Len(t, chrt.Dependencies(), 1)
	assert.Len(t, chrt.Dependencies()[0].Dependencies(), 1)
}
