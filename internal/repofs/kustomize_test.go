package repofs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildFSConfinesToCheckout(t *testing.T) {
	fsys, err := Open("../../testdata/manifest/symlink/repo")
	require.NoError(t, err)
	root := fsys.Dir()
	g := fsys.Build(map[string][]byte{"apps/new.yaml": []byte("a: 1\n")}, nil)
	inside := filepath.Join(root, "apps", "good", "deploy.yaml")
	outside := []string{
		filepath.Join(root, "apps", "leak.yaml"),
		filepath.Join(root, "apps", "linked-base"),
		filepath.Join(root, "..", "outside", "deploy.yaml"),
	}

	_, err = g.ReadFile(inside)
	require.NoError(t, err)
	assert.True(t, g.Exists(inside))
	data, err := g.ReadFile(filepath.Join(root, "apps", "new.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "a: 1\n", string(data), "replaced files are served from memory")
	assert.True(t, g.IsDir(filepath.Join(root, "apps")))
	names, err := g.ReadDir(filepath.Join(root, "apps", "good"))
	require.NoError(t, err)
	assert.Equal(t, []string{"deploy.yaml"}, names)
	matches, err := g.Glob(filepath.Join(root, "apps", "*.yaml"))
	require.NoError(t, err)
	assert.Empty(t, matches, "the escaping symlink is not globbed")

	for _, p := range outside {
		_, err := g.ReadFile(p)
		assert.ErrorIs(t, err, ErrOutside, p)
		assert.False(t, g.Exists(p), p)
		assert.False(t, g.IsDir(p), p)
		_, err = g.Open(p)
		assert.Error(t, err, p)
		_, _, err = g.CleanedAbs(p)
		assert.Error(t, err, p)
		_, err = g.ReadDir(p)
		assert.Error(t, err, p)
		assert.Error(t, g.Walk(p, func(string, os.FileInfo, error) error { return nil }), p)
	}
	assert.Error(t, g.WriteFile(inside, nil), "read-only")
	assert.Error(t, g.MkdirAll(filepath.Join(root, "x")), "read-only")
	_, err = g.Create(inside)
	assert.Error(t, err, "read-only")
	assert.Empty(t, g.Refused)
	assert.NotContains(t, g.Reads, "apps/leak.yaml")
}
