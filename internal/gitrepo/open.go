package gitrepo

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectCacheSize bounds the git objects an open clone keeps in memory.
// go-git's PlainOpen keeps up to 96 MiB of them for as long as the
// repository is open, and kedge keeps its clones open for its lifetime: a
// fleet's first cycle reads thousands of trees and blobs to build each
// namespace's branch, and the service would hold them ever after. What is
// read again and again, the upper trees of the base commit, stays within a
// few MiB.
const objectCacheSize = 8 * cache.MiByte

// openClone opens the clone at dir as PlainOpen does, with the object cache
// bounded by objectCacheSize. It returns git.ErrRepositoryNotExists when
// dir holds no .git directory.
func openClone(dir string) (*git.Repository, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	worktree := osfs.New(abs)
	info, err := worktree.Stat(git.GitDirName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, git.ErrRepositoryNotExists
	case err != nil:
		return nil, err
	case !info.IsDir():
		// A .git file pointing elsewhere is not a clone kedge made; go-git
		// follows it.
		return git.PlainOpen(abs)
	}
	dot, err := worktree.Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	return git.Open(filesystem.NewStorage(dot, cache.NewObjectLRU(objectCacheSize)), worktree)
}
