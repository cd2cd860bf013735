// Package repofs reads a GitOps checkout and nothing outside it.
//
// A repository is written by many people and read by kedge while it holds a
// GitHub App key that can write to every repository the App is installed
// on. Every file kedge reads for a repository goes through an FS: an
// os.Root opened on the checkout, so that no path, ".." or symbolic link a
// writer commits can make kedge read a file outside it, whatever races the
// file system sees (os.Root resolves each component itself and refuses an
// escape; absolute symbolic links are refused outright). Only regular files
// are read, each within the repository's size budget; a device or named
// pipe could block a read forever.
package repofs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// ErrOutside is the error for a path that resolves outside the checkout
// (or, for a Sub, outside the directory it was opened on).
var ErrOutside = errors.New("path resolves outside the repository")

// ErrNotRegular is the error for a path that is a device, socket or named
// pipe.
var ErrNotRegular = errors.New("not a regular file")

// FS is a checkout, read-only, confined to its directory.
type FS struct {
	// dir is the absolute directory, symbolic links resolved.
	dir  string
	root *os.Root
	// sub is the directory a Sub was opened on, repo-relative; "" for the
	// checkout itself.
	sub string
}

// Open opens the checkout at dir.
func Open(dir string) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("repository root: %w", err)
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, fmt.Errorf("repository root: %w", err)
	}
	return &FS{dir: resolved, root: root}, nil
}

// Dir is the checkout's absolute directory, symbolic links resolved.
func (f *FS) Dir() string { return f.dir }

// Abs is the absolute path of a repo-relative one.
func (f *FS) Abs(rel string) string { return filepath.Join(f.dir, filepath.FromSlash(rel)) }

// Rel is the repo-relative, slash-separated form of an absolute path
// inside the checkout (compared as written, symbolic links not resolved);
// false when it lies outside.
func (f *FS) Rel(abs string) (string, bool) {
	r, err := filepath.Rel(f.dir, filepath.Clean(abs))
	if err != nil || !filepath.IsLocal(r) && r != "." {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// clean turns a repo-relative path into the form os.Root takes, refusing
// one that is absolute or climbs out as written.
func (f *FS) clean(rel string) (string, error) {
	c := path.Clean(filepath.ToSlash(rel))
	if c == "." {
		return ".", nil
	}
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", f.outside(rel)
	}
	return filepath.FromSlash(c), nil
}

func (f *FS) outside(rel string) error { return &OutsideError{Path: rel, Sub: f.sub} }

// OutsideError names a path that resolves outside the checkout, or outside
// the directory a Sub confines reads to.
type OutsideError struct {
	Path string
	Sub  string
}

func (e *OutsideError) Error() string {
	if e.Sub != "" {
		return fmt.Sprintf("%s: path resolves outside %s", e.Path, e.Sub)
	}
	return fmt.Sprintf("%s: %v", e.Path, ErrOutside)
}

func (e *OutsideError) Is(target error) bool { return target == ErrOutside }

// confined maps os.Root's refusal of an escape to ErrOutside, naming rel.
func (f *FS) confined(rel string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return f.outside(rel)
	}
	return err
}

// Resolve returns the repo-relative path rel names once symbolic links are
// resolved, or ErrOutside. It names files (one file read through two links
// is one file); reads never depend on it for their confinement.
func (f *FS) Resolve(rel string) (string, error) {
	c, err := f.clean(rel)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(f.dir, c))
	if err != nil {
		return "", err
	}
	r, ok := f.Rel(resolved)
	if !ok {
		return "", f.outside(rel)
	}
	return r, nil
}

// Stat describes the file rel names, symbolic links followed inside.
func (f *FS) Stat(rel string) (fs.FileInfo, error) {
	c, err := f.clean(rel)
	if err != nil {
		return nil, err
	}
	info, err := f.root.Stat(c)
	return info, f.confined(rel, err)
}

// Lstat describes rel itself, a symbolic link not followed.
func (f *FS) Lstat(rel string) (fs.FileInfo, error) {
	c, err := f.clean(rel)
	if err != nil {
		return nil, err
	}
	info, err := f.root.Lstat(c)
	return info, f.confined(rel, err)
}

// ReadDir lists a directory, sorted by name.
func (f *FS) ReadDir(rel string) ([]fs.DirEntry, error) {
	c, err := f.clean(rel)
	if err != nil {
		return nil, err
	}
	d, err := f.root.Open(c)
	if err != nil {
		return nil, f.confined(rel, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	sortEntries(entries)
	return entries, nil
}

// ReadFile reads a regular file within the repository's size budget.
func (f *FS) ReadFile(rel string) ([]byte, error) {
	return f.ReadFileLimit(rel, yamlguard.MaxFileBytes)
}

// ReadFileLimit reads a regular file of at most limit bytes; a larger one
// is a *yamlguard.Error of the size budget, and is not read.
func (f *FS) ReadFileLimit(rel string, limit int64) ([]byte, error) {
	c, err := f.clean(rel)
	if err != nil {
		return nil, err
	}
	file, err := f.root.OpenFile(c, openFlags, 0)
	if err != nil {
		return nil, f.confined(rel, err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: rel, Err: ErrNotRegular}
	}
	// The size said is the file's, not how far a read got before it
	// stopped; the read still stops at the limit if the file grows.
	if limit > 0 && info.Size() > limit {
		return nil, &yamlguard.Error{Budget: "size", Found: info.Size(), Limit: limit}
	}
	return yamlguard.ReadAll(file, limit)
}

// Open opens a regular file for reading.
func (f *FS) Open(rel string) (*os.File, error) {
	c, err := f.clean(rel)
	if err != nil {
		return nil, err
	}
	file, err := f.root.OpenFile(c, openFlags, 0)
	if err != nil {
		return nil, f.confined(rel, err)
	}
	info, err := file.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// WalkDir walks the tree at rel as fs.WalkDir does: in lexical order,
// symbolic links reported and never followed. Paths passed to fn are
// repo-relative.
func (f *FS) WalkDir(rel string, fn fs.WalkDirFunc) error {
	c, err := f.clean(rel)
	if err != nil {
		return err
	}
	return fs.WalkDir(f.root.FS(), filepath.ToSlash(c), fn)
}

// Sub confines reads to the directory rel: a symbolic link that leaves it
// is refused like one leaving the checkout. A chart is loaded through one,
// so that no file of the chart can be a link to anything outside it.
func (f *FS) Sub(rel string) (*FS, error) {
	c, err := f.clean(rel)
	if err != nil {
		return nil, err
	}
	resolved, err := f.Resolve(rel)
	if err != nil {
		return nil, err
	}
	root, err := f.root.OpenRoot(c)
	if err != nil {
		return nil, f.confined(rel, err)
	}
	return &FS{dir: f.Abs(resolved), root: root, sub: path.Join(f.sub, rel)}, nil
}

// Close releases the checkout's directory handle.
func (f *FS) Close() error { return f.root.Close() }

// Exists reports whether rel names a file or directory inside.
func (f *FS) Exists(rel string) bool {
	_, err := f.Stat(rel)
	return err == nil
}

// IsDir reports whether rel names a directory inside.
func (f *FS) IsDir(rel string) bool {
	info, err := f.Stat(rel)
	return err == nil && info.IsDir()
}

// IsRegular reports whether rel names a regular file inside.
func (f *FS) IsRegular(rel string) bool {
	info, err := f.Stat(rel)
	return err == nil && info.Mode().IsRegular()
}

func sortEntries(entries []fs.DirEntry) {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// IsOutside reports whether err says a path leaves the checkout.
func IsOutside(err error) bool { return errors.Is(err, ErrOutside) }
