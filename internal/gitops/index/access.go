package index

import (
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/kedge-io/kedge/internal/repofs"
)

// The index is read by the stages above it and written by none: what these
// return is the index's own, never to be changed.

// FS is the checkout's file system.
func (ix *Index) FS() *repofs.FS { return ix.fs }

// Len is the number of indexed objects.
func (ix *Index) Len() int { return len(ix.objects) }

// Object is the indexed object i.
func (ix *Index) Object(i int) *Object { return &ix.objects[i] }

// ByKindName are the objects rendered as "Kind/name".
func (ix *Index) ByKindName(kindName string) []int { return ix.byKindName[kindName] }

// ByPath are the objects whose source is the repo-relative file.
func (ix *Index) ByPath(file string) []int { return ix.byPath[file] }

// Substituted are the objects whose name or namespace holds a ${...} for
// Flux to substitute.
func (ix *Index) Substituted() []int { return ix.substituted }

// RootAt is the kustomize root at the repo-relative directory, nil when
// there is none.
func (ix *Index) RootAt(dir string) *Root { return ix.roots[dir] }

// IncludedBy are the roots whose builds read the root at dir.
func (ix *Index) IncludedBy(dir string) []string { return ix.includedBy[dir] }

// Readers are the kustomize roots whose builds read a repo-relative file.
func (ix *Index) Readers(file string) []string { return ix.readers[file] }

// ReadFile reads a repo-relative file of the checkout, refusing one that a
// symlink places outside it.
func (ix *Index) ReadFile(rel string) ([]byte, error) { return ix.fs.ReadFile(rel) }

// Abs is the absolute path of a repo-relative one.
func (ix *Index) Abs(rel string) string { return ix.abs(rel) }

// HasRestartPatch reports whether the root's kustomization lists kedge's
// patch file holding a document "Kind/name", or kedge's release patch of
// "HelmRelease/name".
func (r *Root) HasRestartPatch(kindName string) bool { return r.restartPatch[kindName] }

// NamePrefix and NameSuffix are the root's kustomization's own.
func (r *Root) NamePrefix() string { return r.namePrefix }

// NameSuffix is the root's kustomization's own name suffix.
func (r *Root) NameSuffix() string { return r.nameSuffix }

// IncludesDir reports whether the root's build read the kustomization of
// dir.
func (r *Root) IncludesDir(dir string) bool { return slices.Contains(r.includes, dir) }

// InParallel calls fn for 0..n-1 on every CPU and returns when all calls
// have.
func InParallel(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func pathBase(p string) string { return path.Base(p) }

func fileError(file string, err error) error { return fmt.Errorf("%s: %w", file, err) }

// RestartPatchFile is the strategic-merge patch kedge writes in an overlay
// whose kustomization file is named kustomization: it follows the
// repository's extension, .yml beside a kustomization.yml.
func RestartPatchFile(kustomization string) string {
	if path.Ext(kustomization) == ".yml" {
		return "kedge-restart-patch.yml"
	}
	return "kedge-restart-patch.yaml"
}

// ReleasePatchFile is kedge's JSON 6902 patch of one HelmRelease in an
// overlay; one per release, since a patch file of that kind has one target.
func ReleasePatchFile(root *Root, release string) string {
	ext := ".yaml"
	if path.Ext(root.File) == ".yml" {
		ext = ".yml"
	}
	return "kedge-helm-" + release + ext
}

// listedReleasePatches returns "HelmRelease/<name>" for every release
// patch file of kedge's the kustomization lists: that overlay must stay the
// place of the release's restarts, or its older entry, applied after an
// edit elsewhere, would undo them.
func listedReleasePatches(kf *kustomizationFile) map[string]bool {
	var out map[string]bool
	for _, f := range kf.files {
		base := path.Base(f)
		for _, ext := range []string{".yaml", ".yml"} {
			if name, ok := strings.CutPrefix(strings.TrimSuffix(base, ext), "kedge-helm-"); ok && strings.HasSuffix(base, ext) && path.Dir(path.Clean(f)) == "." {
				if out == nil {
					out = map[string]bool{}
				}
				out["HelmRelease/"+name] = true
			}
		}
	}
	return out
}

// NewDocCache returns a cache of the parsed documents of the checkout's
// files, for RenderPlain calls that read the same files.
func (ix *Index) NewDocCache() *DocCache { return newDocCache(ix.fs) }

// PatchTargetName is the name a patch of the root's kustomization selects
// o by: kustomize applies patches before the kustomization's own prefix
// and suffix.
func (ix *Index) PatchTargetName(o *Object) string {
	if r := ix.roots[o.Root]; o.Root != "" && r != nil {
		return strings.TrimSuffix(strings.TrimPrefix(o.Name, r.namePrefix), r.nameSuffix)
	}
	return o.Name
}

// Under reports whether the repo-relative path p is dir or below it.
func Under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// MaxChartBytes bounds a chart the index's sources render.
func (ix *Index) MaxChartBytes() int64 { return ix.maxChartBytes }
