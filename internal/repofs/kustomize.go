package repofs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// BuildFS is the file system a kustomize build sees: the checkout through
// its FS, read-only, with some files' contents replaced (an edit to
// verify, or a kustomization with options written into it), and a record
// of every file the build read and every directory it listed. kustomize
// speaks in absolute paths; every one of them is mapped into the checkout
// or refused.
type BuildFS struct {
	fs *FS
	// replace maps repo-relative resolved paths to the bytes a build must
	// see in their place.
	replace map[string][]byte
	// budget judges a file the build reads from disk; nil checks it
	// against the repository's YAML budget.
	budget func(rel string, data []byte) error

	// Reads are the repo-relative files read; Refused those over budget,
	// with why.
	Reads   map[string]struct{}
	Refused map[string]error
	// Listed records the repo-relative directories listed (false) or
	// walked (true): a file added there can change the build without any
	// read file changing.
	Listed map[string]bool
}

var _ filesys.FileSystem = (*BuildFS)(nil)

// Build returns the file system of one kustomize build over the checkout,
// with replace (repo-relative paths) standing in for the content of files.
// budget, when not nil, judges each file read from the checkout (to share
// verdicts between builds); it must refuse what yamlguard refuses.
func (f *FS) Build(replace map[string][]byte, budget func(rel string, data []byte) error) *BuildFS {
	return &BuildFS{fs: f, replace: replace, budget: budget,
		Reads: map[string]struct{}{}, Refused: map[string]error{}, Listed: map[string]bool{}}
}

// resolve maps an absolute path kustomize names to the repo-relative path
// it resolves to.
func (b *BuildFS) resolve(p string) (string, error) {
	rel, ok := b.fs.Rel(p)
	if !ok {
		return "", &OutsideError{Path: p}
	}
	if _, ok := b.replace[rel]; ok {
		return rel, nil
	}
	return b.fs.Resolve(rel)
}

func (b *BuildFS) abs(rel string) string { return b.fs.Abs(rel) }

var errReadOnly = errors.New("the repository is read-only")

func (b *BuildFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (b *BuildFS) Mkdir(string) error                  { return errReadOnly }
func (b *BuildFS) MkdirAll(string) error               { return errReadOnly }
func (b *BuildFS) RemoveAll(string) error              { return errReadOnly }
func (b *BuildFS) WriteFile(string, []byte) error      { return errReadOnly }

// Open opens a regular file of the checkout; kustomize reads through
// ReadFile, so a replaced file cannot be opened.
func (b *BuildFS) Open(p string) (filesys.File, error) {
	rel, err := b.resolve(p)
	if err != nil {
		return nil, err
	}
	if _, ok := b.replace[rel]; ok {
		return nil, fmt.Errorf("%s: open is not supported for replaced files", rel)
	}
	return b.fs.Open(rel)
}

func (b *BuildFS) IsDir(p string) bool {
	rel, err := b.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := b.replace[rel]; ok {
		return false
	}
	return b.fs.IsDir(rel)
}

func (b *BuildFS) Exists(p string) bool {
	rel, err := b.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := b.replace[rel]; ok {
		return true
	}
	return b.fs.Exists(rel)
}

func (b *BuildFS) ReadDir(p string) ([]string, error) {
	rel, err := b.resolve(p)
	if err != nil {
		return nil, err
	}
	b.list(rel, false)
	entries, err := b.fs.ReadDir(rel)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

func (b *BuildFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	rel, err := b.resolve(p)
	if err != nil {
		return "", "", err
	}
	if b.IsDir(b.abs(rel)) {
		return filesys.ConfirmedDir(b.abs(rel)), "", nil
	}
	return filesys.ConfirmedDir(b.abs(path.Dir(rel))), path.Base(rel), nil
}

// Glob matches the pattern as filepath.Glob does, inside the checkout
// only, hidden files left out as kustomize's own file system does.
func (b *BuildFS) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	rel, ok := b.fs.Rel(pattern)
	if !ok {
		return nil, nil
	}
	b.listGlob(rel)
	var matches []string
	b.glob(".", strings.Split(rel, "/"), &matches)
	sort.Strings(matches)
	return filesys.RemoveHiddenFiles(matches), nil
}

// glob expands the remaining pattern segments below dir (repo-relative).
func (b *BuildFS) glob(dir string, segments []string, out *[]string) {
	if len(segments) == 0 {
		if _, err := b.resolve(b.abs(dir)); err == nil {
			*out = append(*out, b.abs(dir))
		}
		return
	}
	seg, rest := segments[0], segments[1:]
	if !strings.ContainsAny(seg, `*?[\`) {
		next := path.Join(dir, seg)
		if len(rest) == 0 && !b.fs.Exists(next) {
			return
		}
		b.glob(next, rest, out)
		return
	}
	entries, err := b.fs.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if ok, _ := path.Match(seg, e.Name()); ok {
			b.glob(path.Join(dir, e.Name()), rest, out)
		}
	}
}

func (b *BuildFS) ReadFile(p string) ([]byte, error) {
	rel, err := b.resolve(p)
	if err != nil {
		return nil, err
	}
	data, replaced := b.replace[rel]
	if replaced {
		err = yamlguard.Check(data, yamlguard.Repository)
	} else if data, err = b.fs.ReadFile(rel); err == nil {
		err = b.judge(rel, data)
	}
	if yamlguard.IsOverBudget(err) {
		b.Reads[rel] = struct{}{}
		b.Refused[rel] = err
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if err != nil {
		return nil, err
	}
	b.Reads[rel] = struct{}{}
	return data, nil
}

func (b *BuildFS) judge(rel string, data []byte) error {
	if b.budget != nil {
		return b.budget(rel, data)
	}
	return yamlguard.Check(data, yamlguard.Repository)
}

// Walk walks as filepath.Walk does (symbolic links not followed), with
// absolute paths.
func (b *BuildFS) Walk(p string, fn filepath.WalkFunc) error {
	rel, err := b.resolve(p)
	if err != nil {
		return err
	}
	b.list(rel, true)
	return b.fs.WalkDir(rel, func(r string, d fs.DirEntry, err error) error {
		var info os.FileInfo
		if err == nil {
			info, err = d.Info()
		}
		return fn(b.abs(r), info, err)
	})
}

func (b *BuildFS) list(dir string, tree bool) { b.Listed[dir] = b.Listed[dir] || tree }

// listGlob records what a glob lists: the directory of its pattern, or the
// tree below the part before the first wildcard when a directory is one.
func (b *BuildFS) listGlob(pattern string) {
	dir := path.Dir(pattern)
	if i := strings.IndexAny(dir, `*?[\`); i >= 0 {
		b.list(path.Dir(dir[:i]+"x"), true)
		return
	}
	b.list(dir, false)
}
