package index

import (
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/repofs"
)

// buildCache is what one build read, per file and per root, kept with the
// index so that the next one reads again only what changed. Nothing in it
// is written after the build that made it returns.
type buildCache struct {
	// kustomizations are the parsed kustomization files, by repo-relative
	// path.
	kustomizations map[string]readKustomizationResult
	// rendered are the rendered roots, by repo-relative directory.
	rendered map[string]*renderedRoot
	// plain are the parsed plain files, by repo-relative path.
	plain map[string]plainFile
	// sources are the Flux and Argo CD objects of each repo-relative YAML
	// file; nil for a file that holds none.
	sources map[string]*fileSources
	// kustomizationsAt are the kustomizations of the directories that
	// kustomization entries name, by absolute unresolved path.
	kustomizationsAt map[string]dirKustomization
	// symlinks are the repo-relative symlinks the walk passed.
	symlinks map[string]bool
	// scan is what the walk found, and walkProblems the problems it
	// reported, in walk order.
	scan         *scanResult
	walkProblems []Problem
}

type readKustomizationResult struct {
	kf  *kustomizationFile
	err error
}

func newBuildCache() *buildCache {
	return &buildCache{
		kustomizations:   map[string]readKustomizationResult{},
		rendered:         map[string]*renderedRoot{},
		plain:            map[string]plainFile{},
		sources:          map[string]*fileSources{},
		kustomizationsAt: map[string]dirKustomization{},
		symlinks:         map[string]bool{},
	}
}

// priorBuild is an earlier index of the same checkout and the files changed
// since it was built. A nil priorBuild reuses nothing.
type priorBuild struct {
	ix      *Index
	changed map[string]bool
}

// Update returns the index of the checkout after the given files changed
// (repo-relative, slash-separated; a rename is its old and its new path),
// equal to what Read would return for it now. It re-reads the changed
// files and re-renders only the roots whose builds read one, and builds
// everything again when a change could move roots. ix is left as it is:
// the new index shares what did not change with it, and with nothing
// changed it is ix itself.
func (ix *Index) Update(changed []string) (*Index, error) {
	if len(changed) == 0 {
		return ix, nil
	}
	opts := Options{Paths: ix.paths, MaxChartBytes: ix.maxChartBytes, KustomizeEveryRoot: ix.kustomizeAll}
	set := make(map[string]bool, len(changed))
	for _, p := range changed {
		set[path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./"))] = true
	}
	prior := &priorBuild{ix: ix, changed: set}
	if reason := prior.rebuildReason(); reason != "" {
		slog.Debug("manifest index rebuilt in full", "reason", reason)
		return buildIndex(ix.root, opts, nil)
	}
	return buildIndex(ix.root, opts, prior)
}

// rebuildReason names a change whose effect the prior build did not record,
// or "" when re-reading what read the changed files is enough.
func (p *priorBuild) rebuildReason() string {
	known := p.knownKustomizations()
	for _, rel := range sortedKeys(p.changed) {
		if p.ix.cache.symlinks[rel] || isSymlink(p.ix.fs, rel) {
			// Builds record the files symlinks resolve to, not the links.
			return "symlink " + rel + " changed"
		}
		if slices.Contains(KustomizationFileNames, path.Base(rel)) && known[rel] != p.ix.fs.Exists(rel) {
			// A kustomization file that appears or goes away changes what
			// a directory entry of any build means, listed or not.
			return "kustomization " + rel + " added or removed"
		}
	}
	return ""
}

// knownKustomizations are the kustomization files the prior build found
// or read, by repo-relative path.
func (p *priorBuild) knownKustomizations() map[string]bool {
	known := map[string]bool{}
	for rel := range p.ix.cache.kustomizations {
		known[rel] = true
	}
	for _, r := range p.ix.roots {
		for _, read := range r.reads {
			if slices.Contains(KustomizationFileNames, path.Base(read)) {
				known[read] = true
			}
		}
	}
	return known
}

// rootsMoved names why the walk's kustomizations are not the prior
// build's roots, or returns "" when they are (or there is no prior build).
func (p *priorBuild) rootsMoved(ix *Index, scan *scanResult) string {
	if p == nil {
		return ""
	}
	if len(scan.kustomizations) != len(p.ix.roots) {
		return "kustomize roots added or removed"
	}
	for dir, name := range scan.kustomizations {
		r := p.ix.roots[ix.rel(dir)]
		if r == nil || r.File != name {
			return "kustomize root " + ix.rel(dir) + " added or renamed"
		}
	}
	if len(scan.symlinks) != len(p.ix.cache.symlinks) {
		return "symlinks added or removed"
	}
	for _, l := range scan.symlinks {
		if !p.ix.cache.symlinks[l] {
			return "symlink " + l + " added"
		}
	}
	return ""
}

// rescan returns the prior build's walk with the changed files walked
// again, and the walk's problems; false when it indexed some paths only,
// which a rescan would have to check against each path.
func (p *priorBuild) rescan(ix *Index, paths []string) (*scanResult, []Problem, bool) {
	if p == nil || len(paths) != 0 || p.ix.cache.scan == nil {
		return nil, nil, false
	}
	prev := p.ix.cache.scan
	// Kustomization files that appear or go away rebuild everything, so
	// the kustomizations and symlinks are the prior walk's.
	scan := &scanResult{kustomizations: prev.kustomizations, symlinks: prev.symlinks}
	kept := make([]string, 0, len(prev.yamlFiles))
	for _, f := range prev.yamlFiles {
		if !p.changed[ix.rel(f)] {
			kept = append(kept, f)
		}
	}
	var added []string
	var problems []Problem
	for _, pr := range p.ix.cache.walkProblems {
		if !p.changed[pr.Path] {
			problems = append(problems, pr)
		}
	}
	for _, rel := range sortedKeys(p.changed) {
		if hiddenPath(rel) {
			continue
		}
		info, err := ix.fs.Lstat(rel)
		kustomization := slices.Contains(KustomizationFileNames, path.Base(rel))
		switch {
		case err != nil || info.IsDir():
			// Gone, or a directory whose files are changes of their own.
		case !info.Mode().IsRegular():
			if kustomization {
				return nil, nil, false // no longer a root: walk again
			}
			problems = append(problems, Problem{Path: rel, Kind: ProblemNotRegular, Err: errNotRegular.Error()})
		case kustomization:
		case !document.IsYAMLName(path.Base(rel)):
			problems = append(problems, Problem{Path: rel, Kind: ProblemNotYAML})
		default:
			added = append(added, ix.abs(rel))
		}
	}
	slices.SortFunc(added, walkOrder)
	scan.yamlFiles = mergeSorted(kept, added)
	slices.SortStableFunc(problems, func(a, b Problem) int { return walkOrder(a.Path, b.Path) })
	return scan, problems, true
}

// mergeSorted merges two lists sorted in walk order.
func mergeSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if walkOrder(a[0], b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// walkOrder orders paths as filepath.WalkDir visits them: directory by
// directory, each one's entries by name. A separator sorts before any
// byte of a name, so comparing with it as the lowest byte does that.
func walkOrder(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x == '/' {
			return -1
		}
		if y == '/' {
			return 1
		}
		return int(x) - int(y)
	}
	return len(a) - len(b)
}

// hiddenPath reports whether the walk skips rel: a name in it starts
// with a dot.
func hiddenPath(rel string) bool {
	for _, name := range strings.Split(rel, "/") {
		if strings.HasPrefix(name, ".") {
			return true
		}
	}
	return false
}

// readKustomization reads the kustomization file in dir, or takes the
// prior build's reading of it when it did not change.
func (ix *Index) readKustomization(dir, name string, prior *priorBuild) (*kustomizationFile, error) {
	rel := ix.rel(filepath.Join(dir, name))
	res, ok := prior.cachedKustomization(rel)
	if !ok {
		res.kf, res.err = readKustomizationFile(ix.fs, dir, name)
	}
	ix.cache.kustomizations[rel] = res
	return res.kf, res.err
}

func (p *priorBuild) cachedKustomization(rel string) (readKustomizationResult, bool) {
	if p == nil || p.changed[rel] {
		return readKustomizationResult{}, false
	}
	res, ok := p.ix.cache.kustomizations[rel]
	return res, ok
}

// reusable returns, for the new index, which roots keep the prior build's
// rendering: those that built without a problem and whose builds read no
// changed file and listed no directory a change is in.
func (p *priorBuild) reusable(ix *Index) func(*kustomizationFile) *renderedRoot {
	return func(kf *kustomizationFile) *renderedRoot {
		if p == nil {
			return nil
		}
		dir := ix.rel(kf.dir)
		prev, r := p.ix.roots[dir], p.ix.cache.rendered[dir]
		// A build that failed may have stopped before reading the file
		// that would mend it; such roots are few and always built again.
		if prev == nil || r == nil || prev.Problem != nil || r.problem != nil || prev.File != kf.name {
			return nil
		}
		if p.changed[path.Join(dir, kf.name)] || slices.ContainsFunc(prev.reads, func(f string) bool { return p.changed[f] }) {
			return nil
		}
		if p.listedChanged(ix, r.listed) {
			return nil
		}
		return r
	}
}

// listedChanged reports whether a change is in a directory a build listed,
// or below one it walked.
func (p *priorBuild) listedChanged(ix *Index, listed map[string]bool) bool {
	for dir, tree := range listed {
		rel := ix.rel(dir)
		for c := range p.changed {
			parent := path.Dir(c)
			if parent == rel || (tree && (rel == "." || strings.HasPrefix(c, rel+"/"))) {
				return true
			}
		}
	}
	return false
}

// plainFile reads the plain file at absolute path f, or takes the prior
// build's reading when it did not change.
func (p *priorBuild) plainFile(ix *Index, f string) plainFile {
	if p != nil {
		rel := ix.rel(f)
		// Whether a file below a templates/ directory is a chart's
		// template depends on the chart's Chart.yaml too: such a file is
		// read again, not taken from the prior build.
		underTemplates := strings.HasPrefix(rel, "templates/") || strings.Contains(rel, "/templates/")
		if cached, ok := p.ix.cache.plain[rel]; ok && !p.changed[rel] && !underTemplates {
			return cached
		}
	}
	return readPlainFile(ix.fs, f)
}

// fileSources are the Flux and Argo CD objects of one file.
type fileSources struct {
	flux *fluxSources
	argo []ArgoManifest
}

// readSources reads the Flux and Argo CD objects of the given absolute
// files, each file once, or takes the prior build's reading of the files
// that did not change.
func (ix *Index) readSources(files []string, prior *priorBuild) {
	ix.flux = newFluxSources()
	for _, f := range files {
		rel := ix.rel(f)
		src, ok := prior.cachedSources(rel)
		if !ok {
			src = readFileSources(ix.fs, f, rel)
		}
		ix.cache.sources[rel] = src
		if src == nil {
			continue
		}
		// Later files win, as when one reader reads them all in order.
		ix.flux.kustomizations = append(ix.flux.kustomizations, src.flux.kustomizations...)
		ix.flux.generators = append(ix.flux.generators, src.flux.generators...)
		maps.Copy(ix.flux.configMaps, src.flux.configMaps)
		maps.Copy(ix.flux.secretKeys, src.flux.secretKeys)
		ix.argo = append(ix.argo, src.argo...)
	}
}

func readFileSources(fsys *repofs.FS, f, rel string) *fileSources {
	data, err := readRegular(fsys, f)
	if err != nil {
		return nil
	}
	flux, argo := fluxKinds.Match(data), argoKind.Match(data)
	if !flux && !argo {
		return nil
	}
	src := &fileSources{flux: newFluxSources()}
	if flux {
		src.flux.add(rel, data)
	}
	if argo {
		src.argo = ArgoManifestsIn(rel, data)
	}
	return src
}

func (p *priorBuild) cachedSources(rel string) (*fileSources, bool) {
	if p == nil || p.changed[rel] {
		return nil, false
	}
	src, ok := p.ix.cache.sources[rel]
	return src, ok
}

// dirKustomization is the kustomization of a directory a kustomization
// entry names: resolved is the directory with symlinks resolved, empty
// when it does not resolve inside the checkout; kf is nil when it has no
// kustomization.
type dirKustomization struct {
	resolved string
	kf       *kustomizationFile
}

// kustomizationAt returns the kustomization of the directory dir, or nil
// when dir is not a kustomization directory inside the checkout. The prior
// build's answer stands while the kustomization files there are unchanged:
// one appearing or going away rebuilds everything.
func (ix *Index) kustomizationAt(dir string, prior *priorBuild) *kustomizationFile {
	at, ok := prior.cachedKustomizationAt(ix, dir)
	if !ok {
		if resolved, err := resolveIn(ix.fs, dir); err == nil {
			at = dirKustomization{resolved: resolved, kf: loadKustomizationIn(ix.fs, resolved)}
		}
	}
	ix.cache.kustomizationsAt[dir] = at
	return at.kf
}

func (p *priorBuild) cachedKustomizationAt(ix *Index, dir string) (dirKustomization, bool) {
	if p == nil {
		return dirKustomization{}, false
	}
	at, ok := p.ix.cache.kustomizationsAt[dir]
	if !ok {
		return dirKustomization{}, false
	}
	if at.resolved != "" {
		rel := ix.rel(at.resolved)
		for _, name := range KustomizationFileNames {
			if p.changed[path.Join(rel, name)] {
				return dirKustomization{}, false
			}
		}
	}
	return at, true
}

func isSymlink(fsys *repofs.FS, rel string) bool {
	info, err := fsys.Lstat(rel)
	return err == nil && info.Mode()&os.ModeSymlink != 0
}
