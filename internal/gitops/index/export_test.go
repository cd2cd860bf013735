package index

// What the index's own tests read of its insides.

var (
	IsRemoteRef           = isRemoteRef
	RemoteFiles           = remoteFiles
	WithOriginAnnotations = withOriginAnnotations
	WalkOrder             = walkOrder
)

// RootsOf are the index's roots by directory.
func RootsOf(ix *Index) map[string]*Root { return ix.roots }

// PlainRoots counts the roots the index reads without kustomize.
func PlainRoots(ix *Index) int {
	n := 0
	for dir := range ix.roots {
		if kf := loadKustomizationIn(ix.fs, ix.abs(dir)); kf != nil {
			if _, ok := renderPlain(kf, ix.fs, newDocCache(ix.fs)); ok {
				n++
			}
		}
	}
	return n
}

// WithoutCache is the index without what it keeps for the next update,
// which holds the same facts in another shape, and without the stamps
// that tell its builds apart, and without its handle on the checkout.
func WithoutCache(ix *Index) Index {
	c := *ix
	c.cache, c.fs = nil, nil
	c.generation, c.base, c.changedIn = nil, nil, nil
	return c
}

// KeptRoots counts the roots whose rendering next shares with prev.
func KeptRoots(prev, next *Index) int {
	n := 0
	for dir, r := range next.cache.rendered {
		if prev.cache.rendered[dir] == r {
			n++
		}
	}
	return n
}
