package chartpull

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// cache is the directory pulled charts are kept in. Every read and write
// goes through an os.Root of it, and every name is checked to be local
// before it is used: whatever a chart's name or version, or a repository's
// index, say, no file outside the directory is read or written.
type cache struct {
	dir string
}

// entry is the cache's name of a chart archive: a directory per
// repository (a hash of its URL), one per chart, and the version. A chart
// per directory keeps "a" at version 1.0.0-2.0.0 apart from "a-1.0.0" at
// 2.0.0, which one flat name would confuse.
func entry(repoURL, chart, version string) (string, error) {
	if msg := validChartName(chart); msg != "" {
		return "", &InputError{Msg: msg}
	}
	rel := path.Join(repoKey(repoURL), chart, chart+"-"+version+".tgz")
	if !filepath.IsLocal(rel) || strings.Count(rel, "/") != 2 {
		return "", fmt.Errorf("%s is not a name inside the chart cache", shown(rel))
	}
	return rel, nil
}

// repoKey is a repository's directory in the cache.
func repoKey(repoURL string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(repoURL, "/")))
	return hex.EncodeToString(sum[:8])
}

func (c cache) open() (*os.Root, error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	root, err := os.OpenRoot(c.dir)
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	return root, nil
}

// lookup returns the path of a cached archive, "" when there is none.
func (c cache) lookup(rel string) string {
	root, err := c.open()
	if err != nil {
		return ""
	}
	defer root.Close()
	st, err := root.Lstat(filepath.FromSlash(rel))
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return filepath.Join(c.dir, filepath.FromSlash(rel))
}

// store writes an archive under a temporary name and renames it: a pull
// cut short never leaves a partial archive in the cache.
func (c cache) store(rel string, data []byte) (string, error) {
	root, err := c.open()
	if err != nil {
		return "", err
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return "", fmt.Errorf("chart cache: %w", err)
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	tmp := filepath.Join(filepath.Dir(name), ".pull-"+hex.EncodeToString(suffix))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("chart cache: %w", err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = root.Remove(tmp)
		return "", fmt.Errorf("chart cache: %w", err)
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return "", fmt.Errorf("chart cache: %w", err)
	}
	return filepath.Join(c.dir, name), nil
}
