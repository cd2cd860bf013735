package demodata

import (
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/demo/cluster from the generator")

const demoDir = "../../../testdata/demo"

// TestCommittedSnapshotIsGenerated keeps testdata/demo/cluster exactly what
// the generator produces from testdata/demo/gitops; after changing either,
// run `go test ./internal/testing/demodata -run TestCommittedSnapshotIsGenerated -update`.
func TestCommittedSnapshotIsGenerated(t *testing.T) {
	files, err := Generate(demoDir)
	require.NoError(t, err)
	clusterDir := filepath.Join(demoDir, "cluster")

	if *update {
		require.NoError(t, os.RemoveAll(clusterDir))
		for name, data := range files {
			p := filepath.Join(clusterDir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}
	}

	onDisk := map[string]string{}
	require.NoError(t, filepath.WalkDir(clusterDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(clusterDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		onDisk[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	generated := map[string]string{}
	for name, data := range files {
		generated[name] = string(data)
	}
	assert.ElementsMatch(t, slices.Sorted(maps.Keys(generated)), slices.Sorted(maps.Keys(onDisk)), "snapshot files")
	for name, want := range generated {
		assert.Equal(t, want, onDisk[name], "%s differs from the generator's output; rerun with -update", name)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	first, err := Generate(demoDir)
	require.NoError(t, err)
	second, err := Generate(demoDir)
	require.NoError(t, err)
	assert.Equal(t, first, second)
}
