package index

import "maps"

// Generation tells apart the builds and updates that read files: two
// stamps are equal only when they are the same build's. It has a size so
// that every one is its own allocation (pointers to distinct zero-size
// values may be equal).
type Generation struct{ _ byte }

// stamp gives the index its generation. A full build starts a new base;
// an update keeps its prior's and stamps the paths it re-read with its own.
func (ix *Index) stamp(prior *priorBuild) {
	ix.generation = &Generation{}
	if prior == nil {
		ix.base = ix.generation
		return
	}
	ix.base = prior.ix.base
	ix.changedIn = make(map[string]*Generation, len(prior.ix.changedIn)+len(prior.changed))
	maps.Copy(ix.changedIn, prior.ix.changedIn)
	for rel := range prior.changed {
		ix.changedIn[rel] = ix.generation
	}
}

// Generation is the build or update that made this index: the same
// generation means the same index.
func (ix *Index) Generation() *Generation { return ix.generation }

// FileStamp is the generation that last read the repo-relative path: the
// same stamp in two indexes means the same content there.
func (ix *Index) FileStamp(rel string) *Generation {
	if g, ok := ix.changedIn[rel]; ok {
		return g
	}
	return ix.base
}

// RootStamp is what a reader of a kustomize root depends on: its
// kustomization file's name, its render (the same value while nothing it
// read changed), and whether other roots build on it. Equal stamps mean
// the same root.
type RootStamp struct {
	file     string
	render   *renderedRoot
	included bool
}

// RootStamp stamps the kustomize root at dir.
func (ix *Index) RootStamp(dir string) RootStamp {
	r := ix.roots[dir]
	if r == nil {
		return RootStamp{}
	}
	return RootStamp{file: r.File, render: ix.cache.rendered[dir], included: len(ix.includedBy[dir]) > 0}
}
