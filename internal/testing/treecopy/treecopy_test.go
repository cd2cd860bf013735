package treecopy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCopyOverlaysTheSourceOntoTheDestination(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "a", "b", "f.yaml"), []byte("new\r\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dst, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "a", "b", "f.yaml"), []byte("old"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "kept.yaml"), []byte("kept"), 0o644))

	Copy(t, src, dst)

	got, err := os.ReadFile(filepath.Join(dst, "a", "b", "f.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "new\r\n", string(got), "byte for byte, overwriting")
	kept, err := os.ReadFile(filepath.Join(dst, "kept.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "kept", string(kept))
}
