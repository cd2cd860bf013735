package manifest

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

const fixtures = "../../testdata/manifest"

// fixtureRepo is the checkout of a fixture case.
func fixtureRepo(name string) string { return filepath.Join(fixtures, name, "repo") }

// copyCase copies a whole fixture case (the repo and anything next to it
// that its symlinks point at) and returns the copied checkout.
func copyCase(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	src := filepath.Join(fixtures, name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
	})
	require.NoError(t, err)
	return filepath.Join(dst, "repo")
}

// gitApply applies a patch the way a reviewer would, with git itself.
func gitApply(t *testing.T, dir, patch string) {
	t.Helper()
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewBufferString(patch)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git apply: %s\npatch:\n%s", out, patch)
}

// golden compares got with testdata/manifest/<case>/golden/<name>, or
// rewrites the file with -update.
func golden(t *testing.T, name, file string, got []byte) {
	t.Helper()
	p := filepath.Join(fixtures, name, "golden", file)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "golden file missing; run with -update")
	require.Equal(t, string(want), string(got), "golden %s", p)
}
