package gitrepo

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Change is a branch built by PrepareBranch, ready for Push.
type Change struct {
	Branch string
	// Commit is the branch's new tip; Parent is the base tip it sits on.
	Commit plumbing.Hash
	Parent plumbing.Hash
	// Changed is false when the remote branch already holds this content on
	// this parent: nothing to push.
	Changed bool
}

// ErrNoDifference is returned by PrepareBranch when the files already have
// the given content on the base branch, so a commit would be empty.
var ErrNoDifference = errors.New("gitrepo: the base branch already has this content")

// PrepareBranch builds, without touching the worktree, a commit on top of the
// current base tip in which every path in files (repo-relative, slash
// separated) has exactly the given content and everything else is as on the
// base. Existing files keep their mode; new files and directories are
// created.
//
// The commit is reproducible: kedge's identity as author and committer, and
// the base commit's committer time as both dates, so the same base, files and
// message give the same commit id on every run and every replica. When the
// remote branch (as last seen by RemoteBranches or BranchHistory) already
// points at that commit, or at any commit with the same tree on the same
// parent, that commit is reused and Changed is false.
func (r *Repo) PrepareBranch(name string, files map[string][]byte, message string) (Change, error) {
	if err := plumbing.NewBranchReferenceName(name).Validate(); err != nil {
		return Change{}, fmt.Errorf("gitrepo: branch %q: %w", name, err)
	}
	if name == r.baseBranch {
		return Change{}, fmt.Errorf("gitrepo: branch %q is the base branch", name)
	}
	if len(files) == 0 {
		return Change{}, fmt.Errorf("gitrepo: branch %q: no files", name)
	}
	if strings.TrimSpace(message) == "" {
		return Change{}, fmt.Errorf("gitrepo: branch %q: empty commit message", name)
	}
	edits, err := newTreeEdit(files)
	if err != nil {
		return Change{}, fmt.Errorf("gitrepo: branch %q: %w", name, err)
	}

	base, err := r.repo.CommitObject(r.baseTip)
	if err != nil {
		return Change{}, fmt.Errorf("gitrepo: base commit %s: %w", r.baseTip, err)
	}
	baseTree, err := base.Tree()
	if err != nil {
		return Change{}, fmt.Errorf("gitrepo: base tree: %w", err)
	}
	tree, err := r.writeTree(baseTree, edits, "")
	if err != nil {
		return Change{}, fmt.Errorf("gitrepo: branch %q: %w", name, err)
	}
	if tree == baseTree.Hash {
		return Change{}, fmt.Errorf("gitrepo: branch %q: %w", name, ErrNoDifference)
	}

	change := Change{Branch: name, Parent: r.baseTip}
	if tip, ok := r.remoteTips[name]; ok && r.sameContent(tip, tree) {
		change.Commit = tip
		return change, nil
	}

	sig := object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: base.Committer.When}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	commit := &object.Commit{
		Author:       sig,
		Committer:    sig,
		Message:      message,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{r.baseTip},
	}
	if change.Commit, err = r.store(commit); err != nil {
		return Change{}, err
	}
	change.Changed = r.remoteTips[name] != change.Commit
	return change, nil
}

// sameContent reports whether commit tip, if present locally, has tree on
// the current base tip as its only parent.
func (r *Repo) sameContent(tip, tree plumbing.Hash) bool {
	c, err := r.repo.CommitObject(tip)
	if err != nil {
		return false
	}
	return c.TreeHash == tree && len(c.ParentHashes) == 1 && c.ParentHashes[0] == r.baseTip
}

// treeEdit is the set of writes under one directory.
type treeEdit struct {
	files map[string][]byte
	dirs  map[string]*treeEdit
}

func newTreeEdit(files map[string][]byte) (*treeEdit, error) {
	root := &treeEdit{files: map[string][]byte{}, dirs: map[string]*treeEdit{}}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := validatePath(p); err != nil {
			return nil, err
		}
		segments := strings.Split(p, "/")
		dir := root
		for _, seg := range segments[:len(segments)-1] {
			if _, isFile := dir.files[seg]; isFile {
				return nil, fmt.Errorf("path %q: a parent is also written as a file", p)
			}
			next, ok := dir.dirs[seg]
			if !ok {
				next = &treeEdit{files: map[string][]byte{}, dirs: map[string]*treeEdit{}}
				dir.dirs[seg] = next
			}
			dir = next
		}
		leaf := segments[len(segments)-1]
		if _, isDir := dir.dirs[leaf]; isDir {
			return nil, fmt.Errorf("path %q: also written as a directory", p)
		}
		dir.files[leaf] = files[p]
	}
	return root, nil
}

func validatePath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || path.Clean(p) != p || strings.Contains(p, "\\") {
		return fmt.Errorf("path %q is not a clean repository-relative path", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || strings.EqualFold(seg, ".git") || strings.ContainsRune(seg, 0) {
			return fmt.Errorf("path %q is not allowed", p)
		}
	}
	return nil
}

// writeTree stores base with edits applied and returns the new tree's id.
// base is nil for a directory that does not exist yet.
func (r *Repo) writeTree(base *object.Tree, edits *treeEdit, dir string) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if base != nil {
		for _, e := range base.Entries {
			entries[e.Name] = e
		}
	}
	for name, content := range edits.files {
		p := path.Join(dir, name)
		mode := filemode.Regular
		if old, ok := entries[name]; ok {
			switch old.Mode {
			case filemode.Regular, filemode.Executable, filemode.Deprecated:
				mode = old.Mode
			case filemode.Dir:
				return plumbing.ZeroHash, fmt.Errorf("path %q is a directory on the base branch", p)
			default:
				return plumbing.ZeroHash, fmt.Errorf("path %q is a symlink or submodule on the base branch", p)
			}
		}
		blob, err := r.storeBlob(content)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: blob}
	}
	for name, sub := range edits.dirs {
		p := path.Join(dir, name)
		var subBase *object.Tree
		if old, ok := entries[name]; ok {
			if old.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("path %q is a file on the base branch", p)
			}
			t, err := r.repo.TreeObject(old.Hash)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("read tree %q: %w", p, err)
			}
			subBase = t
		}
		h, err := r.writeTree(subBase, sub, p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}

	tree := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	for _, e := range entries {
		tree.Entries = append(tree.Entries, e)
	}
	sort.Sort(object.TreeEntrySorter(tree.Entries))
	return r.store(tree)
}

func (r *Repo) storeBlob(content []byte) (plumbing.Hash, error) {
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		_ = w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.put(obj)
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func (r *Repo) store(o encoder) (plumbing.Hash, error) {
	obj := r.repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("gitrepo: encode object: %w", err)
	}
	h, err := r.put(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("gitrepo: store object: %w", err)
	}
	return h, nil
}

// put stores obj unless the repository has it already. Every cycle builds
// each drifted namespace's branch again, and when nothing changed every
// blob, tree and commit it builds exists from the cycle before: the hash
// is computed in memory, and writing a loose object (a temporary file,
// compressed, renamed) again would be most of an unchanged cycle's cost.
func (r *Repo) put(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if r.repo.Storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	return r.repo.Storer.SetEncodedObject(obj)
}
