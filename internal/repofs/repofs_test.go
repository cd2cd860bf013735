package repofs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// TestReadFileRefuses holds every read to the checkout and to regular
// files within the budget: links out of the checkout (relative, absolute,
// through a directory, through another link), a named pipe (which must not
// block), and a file over the budget, whose size the refusal states.
func TestReadFileRefuses(t *testing.T) {
	world := t.TempDir()
	secret := filepath.Join(world, "secret", "key.pem")
	require.NoError(t, os.MkdirAll(filepath.Dir(secret), 0o700))
	require.NoError(t, os.WriteFile(secret, []byte("KEY"), 0o600))
	repo := filepath.Join(world, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "chart", "files"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "chart", "ok.yaml"), []byte("a: 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "big.yaml"), make([]byte, 3000), 0o644))
	require.NoError(t, os.Symlink("../../secret/key.pem", filepath.Join(repo, "chart", "relative")))
	require.NoError(t, os.Symlink(secret, filepath.Join(repo, "chart", "absolute")))
	require.NoError(t, os.Symlink("../secret", filepath.Join(repo, "dir")))
	require.NoError(t, os.Symlink("relative", filepath.Join(repo, "chart", "chained")))
	require.NoError(t, os.Symlink("../ok.yaml", filepath.Join(repo, "chart", "files", "inside")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(repo, "pipe"), 0o644))

	fsys, err := Open(repo)
	require.NoError(t, err)
	defer fsys.Close()
	for _, tc := range []struct {
		path    string
		outside bool
		refused error
	}{
		{path: "chart/relative", outside: true},
		{path: "chart/absolute", outside: true},
		{path: "dir/key.pem", outside: true},
		{path: "chart/chained", outside: true},
		{path: "../secret/key.pem", outside: true},
		{path: "chart/../../secret/key.pem", outside: true},
		{path: "/" + secret, outside: true},
		{path: "pipe", refused: ErrNotRegular},
	} {
		t.Run(tc.path, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() {
				data, err = fsys.ReadFile(tc.path)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the read blocks")
			}
			require.Error(t, err)
			assert.Nil(t, data)
			if tc.outside {
				assert.True(t, IsOutside(err), "%v", err)
			} else {
				assert.ErrorIs(t, err, tc.refused)
			}
			assert.NotContains(t, err.Error(), "KEY")
		})
	}

	data, err := fsys.ReadFile("chart/files/inside")
	require.NoError(t, err, "a link inside the checkout is followed")
	assert.Equal(t, "a: 1\n", string(data))

	_, err = fsys.ReadFileLimit("big.yaml", 1000)
	var over *yamlguard.Error
	require.ErrorAs(t, err, &over)
	assert.Equal(t, "file of 3000 bytes exceeds the budget of 1000 bytes", over.Error(), "the size said is the file's")

	sub, err := fsys.Sub("chart")
	require.NoError(t, err)
	defer sub.Close()
	_, err = sub.ReadFile("files/inside")
	require.NoError(t, err, "a link inside the directory of a Sub is followed")
	_, err = fsys.Sub("dir")
	assert.True(t, IsOutside(err), "a Sub of a directory outside: %v", err)
	require.NoError(t, os.Symlink("../../big.yaml", filepath.Join(repo, "chart", "files", "up")))
	_, err = sub.ReadFile("files/up")
	assert.True(t, IsOutside(err), "a link leaving the directory of a Sub: %v", err)
	assert.Contains(t, err.Error(), "path resolves outside chart")
}
