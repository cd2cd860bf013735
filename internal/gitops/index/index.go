package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/api/resource"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/sandbox"
	"github.com/kedge-io/kedge/internal/untrusted"
	"github.com/kedge-io/kedge/internal/yamledit"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// Options say which part of a checkout to index, and how far a render of it may go.
type Options struct {
	// Paths are repo-relative sub-trees (repo.paths); empty means the whole
	// repository.
	Paths []string
	// MaxChartBytes bounds a chart kedge renders, uncompressed with its
	// subcharts; 0 is render.DefaultMaxChartBytes.
	MaxChartBytes int64
	// KustomizeEveryRoot builds every root with kustomize, the plain ones
	// (see simple.go) included: what reading those directly must agree
	// with.
	KustomizeEveryRoot bool
}

// ProblemKind classifies why a path was skipped.
type ProblemKind string

const (
	ProblemBuildFailed  ProblemKind = "build-failed"
	ProblemRemoteBase   ProblemKind = "remote-base"
	ProblemOutsideRepo  ProblemKind = "outside-repo"
	ProblemHelmTemplate ProblemKind = "helm-template"
	ProblemNotYAML      ProblemKind = "not-yaml"
	ProblemUnparsable   ProblemKind = "unparsable"
	ProblemNotRegular   ProblemKind = "not-a-file"
)

// Problem is a path the index skipped, and why. Problems are never fatal:
// one broken overlay must not stop the rest of the repository from being
// served.
type Problem struct {
	Path string      `json:"path"`
	Kind ProblemKind `json:"kind"`
	Err  string      `json:"error,omitempty"`
}

// Source is where an object is written: a file, the document in it, and the
// identity as the file writes it (before namespace:, namePrefix: and the
// like).
type Source struct {
	Path       string `json:"path"`
	Document   int    `json:"document"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// Object is one workload as it is deployed from the repository: its rendered
// identity, the kustomize root that renders it (empty for a plain file), and
// its source.
type Object struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	// Root is the repo-relative kustomize root directory ("." for the
	// repository root); empty for an object read from a plain file.
	Root   string
	Source Source
	// TemplateAnnotations are the rendered pod template annotations; they
	// tell whether a workload already carries a restart for a target.
	TemplateAnnotations map[string]string
	// GeneratedBy is set when a generator, not a file, produced the object;
	// such objects cannot be edited.
	GeneratedBy string
	// SubstituteDisabled is set when the object opts out of Flux's
	// post-build substitution: its ${...} are meant literally.
	SubstituteDisabled bool
	// Release is set for a Flux HelmRelease: what its post-renderers say.
	Release *document.ReleaseRender
}

// Namespace is one Namespace object as deployed from the repository.
type Namespace struct {
	Name   string
	Labels map[string]string
	// Root is the kustomize root rendering it; empty for a plain file.
	Root string
	// Origin is the repo-relative file the Namespace is written in; empty
	// when a generator or a remote base produced it.
	Origin string
}

// Root is one kustomize root found in the checkout.
type Root struct {
	Dir  string // repo-relative
	File string // kustomization file name
	// Problem is set when the root was skipped (remote base, failed build).
	Problem *Problem
	// reads are the repo-relative files the build read.
	reads []string
	// includes are the repo-relative directories of the other kustomizations
	// the build read (bases, components, nested overlays).
	includes []string
	// restartPatch lists "Kind/name" documents of the kedge patch file when
	// the kustomization already lists it.
	restartPatch map[string]bool
	// namePrefix and nameSuffix are the kustomization's own.
	namePrefix, nameSuffix string
}

// Index maps a checkout's deployed workloads to their sources.
type Index struct {
	// fs reads the checkout, and nothing outside it.
	fs   *repofs.FS
	root string // absolute, symlinks resolved
	// maxChartBytes bounds a chart the index renders.
	maxChartBytes int64
	// kustomizeAll is Options.KustomizeEveryRoot.
	kustomizeAll bool
	paths        []string
	Problems     []Problem

	roots map[string]*Root
	// kustomizationDirs are the repo-relative directories holding a
	// kustomization file, whatever it is.
	kustomizationDirs map[string]bool
	objects           []Object
	namespaces        []Namespace
	// mesh are the Istio and Gateway API objects and Services (MeshObjects).
	mesh []MeshObject
	// applications are the Argo CD Applications written in the repository.
	applications []objects.Application
	// kustomizationLabels are the label values each kustomization file
	// (repo-relative) sets in commonLabels and labels, by key.
	kustomizationLabels map[string]map[string][]string
	// inlineNamespaces are the Namespace documents of each kustomization
	// file's inline patches.
	inlineNamespaces map[string][]Namespace
	// byKindName indexes objects by "Kind/name" (rendered).
	byKindName map[string][]int
	// byPath indexes objects by source file.
	byPath map[string][]int
	// includedBy maps a root dir to the roots whose builds read it.
	includedBy map[string][]string
	// readers maps a repo-relative file to the roots whose builds read it.
	readers map[string][]string
	// substituted indexes the objects whose name or namespace holds a
	// ${...} for Flux to substitute.
	substituted []int
	// flux are the Flux objects the repository writes.
	flux *fluxSources
	// argo are the Argo CD Application documents the repository writes.
	argo []ArgoManifest
	// cache is what the build read, for Update to reuse.
	cache *buildCache
	// generation is this index's own: the build or the update that read
	// files, shared by an update that changed nothing.
	generation *Generation
	// base is the generation of the full build this index was updated
	// from (its own, when it is one); changedIn holds, for every path an
	// update re-read since, the generation of the last update that did.
	// Together they stamp every file (see fileStamp).
	base      *Generation
	changedIn map[string]*Generation
}

// Root returns the absolute path of the indexed checkout.
func (ix *Index) Root() string { return ix.root }

// Paths returns the sub-trees indexed; empty is the whole checkout.
func (ix *Index) Paths() []string { return ix.paths }

// Roots returns the kustomize roots, sorted by directory.
func (ix *Index) Roots() []Root {
	out := make([]Root, 0, len(ix.roots))
	for _, r := range ix.roots {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// Namespaces returns every Namespace object the repository deploys.
func (ix *Index) Namespaces() []Namespace { return slices.Clone(ix.namespaces) }

// KustomizationSets reports whether the kustomization file (repo-relative)
// sets the label to the value, in commonLabels or a labels entry.
func (ix *Index) KustomizationSets(file, key, value string) bool {
	return slices.Contains(ix.kustomizationLabels[file][key], value)
}

// Reads returns the repo-relative files the root's build read.
func (r Root) Reads() []string { return slices.Clone(r.reads) }

// Includes returns the directories of the other kustomizations the root's
// build read; the index's own list, never to be changed.
func (r Root) Includes() []string { return r.includes }

// Objects returns every indexed workload object.
func (ix *Index) Objects() []Object { return slices.Clone(ix.objects) }

// Read indexes the checkout at root.
func Read(root string, opts Options) (*Index, error) {
	return buildIndex(root, opts, nil)
}

// buildIndex indexes the checkout at root, reusing what prior read of the
// files that did not change since; a nil prior reads everything.
func buildIndex(root string, opts Options, prior *priorBuild) (*Index, error) {
	fsys, err := repofs.Open(root)
	if err != nil {
		return nil, err
	}
	ix := &Index{
		fs:            fsys,
		root:          fsys.Dir(),
		maxChartBytes: opts.MaxChartBytes,
		kustomizeAll:  opts.KustomizeEveryRoot,
		paths:         opts.Paths,
		roots:         map[string]*Root{},
		byKindName:    map[string][]int{},
		byPath:        map[string][]int{},

		kustomizationLabels: map[string]map[string][]string{},
		inlineNamespaces:    map[string][]Namespace{},
		includedBy:          map[string][]string{},
		cache:               newBuildCache(),
	}
	ix.stamp(prior)
	scan, err := ix.scanCheckout(opts.Paths, prior)
	if err != nil {
		return nil, err
	}
	for _, l := range scan.symlinks {
		ix.cache.symlinks[l] = true
	}
	ix.kustomizationDirs = make(map[string]bool, len(scan.kustomizations))
	for dir := range scan.kustomizations {
		ix.kustomizationDirs[ix.rel(dir)] = true
	}
	if reason := prior.rootsMoved(ix, scan); reason != "" {
		slog.Debug("manifest index rebuilt in full", "reason", reason)
		return buildIndex(root, opts, nil)
	}

	kfiles := map[string]*kustomizationFile{}
	reached := map[string]bool{}
	dirs := sortedKeys(scan.kustomizations)
	for _, dir := range dirs {
		kf, err := ix.readKustomization(dir, scan.kustomizations[dir], prior)
		if err != nil {
			ix.addRoot(dir, scan.kustomizations[dir], &Problem{Kind: ProblemBuildFailed, Err: err.Error()})
			ix.overBudget(filepath.Join(dir, scan.kustomizations[dir]), err)
			continue
		}
		ix.deprecations(kf)
		kfiles[dir] = kf
		for _, f := range kf.files {
			reached[filepath.Join(dir, f)] = true
		}
		for _, f := range kf.refs {
			if !isRemoteRef(f) {
				reached[filepath.Join(dir, f)] = true
			}
		}
	}
	var builds []*kustomizationFile
	refused := map[string]*Problem{}
	loads := map[string]int{}
	for _, dir := range dirs {
		kf := kfiles[dir]
		if kf == nil || kf.kind == "Component" {
			continue
		}
		// remoteRef and buildLoads fill kfiles with bases outside the
		// indexed paths, so they run before the builds share the map.
		if ref := ix.remoteRef(kf.dir, kfiles, map[string]bool{}, prior); ref != "" {
			refused[dir] = &Problem{Kind: ProblemRemoteBase, Err: "remote base " + untrusted.Excerpt(ref, 0) + " is not fetched"}
		} else if n := ix.buildLoads(kf.dir, kfiles, loads, map[string]bool{}, prior); n > MaxBuildLoads {
			refused[dir] = &Problem{Kind: ProblemOverBudget, Err: fmt.Sprintf("building %s would load more than %d kustomizations: kustomize loads a base once for every path that reaches it",
				kf.name, MaxBuildLoads)}
		}
		builds = append(builds, kf)
	}
	for _, kf := range kfiles {
		if kf != nil {
			rel := ix.rel(filepath.Join(kf.dir, kf.name))
			ix.kustomizationLabels[rel] = kf.labels
			for _, d := range kf.inlineNamespaces {
				ix.inlineNamespaces[rel] = append(ix.inlineNamespaces[rel], renderedNamespace(d.Name, d.Labels, "", rel))
			}
		}
	}
	for i, rendered := range renderRoots(builds, refused, ix.fs, !ix.kustomizeAll, prior.reusable(ix)) {
		ix.cache.rendered[ix.rel(builds[i].dir)] = rendered
		for r := range ix.addRendered(builds[i], rendered) {
			reached[r] = true
		}
	}
	var plain []string
	for _, f := range scan.yamlFiles {
		if reached[f] {
			continue
		}
		// A file next to a kustomization that does not list it is not
		// applied by anything: Flux applies the kustomization, not the
		// directory.
		if _, ok := scan.kustomizations[filepath.Dir(f)]; ok {
			continue
		}
		plain = append(plain, f)
	}
	parsed := make([]plainFile, len(plain))
	InParallel(len(plain), func(i int) { parsed[i] = prior.plainFile(ix, plain[i]) })
	for i, f := range parsed {
		ix.cache.plain[ix.rel(plain[i])] = f
		ix.addPlainFile(plain[i], f)
	}
	ix.readSources(scan.yamlFiles, prior)
	ix.finish()
	return ix, nil
}

// scanCheckout walks the indexed paths, or, given a prior build of the
// whole checkout, takes its walk with the changed files walked again.
func (ix *Index) scanCheckout(paths []string, prior *priorBuild) (*scanResult, error) {
	if scan, problems, ok := prior.rescan(ix, paths); ok {
		ix.Problems = append(ix.Problems, problems...)
		ix.cache.scan, ix.cache.walkProblems = scan, problems
		return scan, nil
	}
	starts, err := ix.startDirs(paths)
	if err != nil {
		return nil, err
	}
	scan := &scanResult{kustomizations: map[string]string{}}
	for _, start := range starts {
		if err := ix.walk(start, scan); err != nil {
			return nil, err
		}
	}
	ix.cache.scan, ix.cache.walkProblems = scan, slices.Clone(ix.Problems)
	return scan, nil
}

func (ix *Index) startDirs(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return []string{"."}, nil
	}
	var out []string
	for _, p := range paths {
		clean := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(p, "./")))
		if filepath.IsAbs(clean) {
			return nil, fmt.Errorf("index path %q must be relative to the repository", p)
		}
		r, err := ix.fs.Resolve(filepath.ToSlash(clean))
		if err != nil {
			return nil, fmt.Errorf("index path %q: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

type scanResult struct {
	// kustomizations maps absolute directories to their kustomization file
	// name.
	kustomizations map[string]string
	yamlFiles      []string
	// symlinks are the repo-relative symlinks the walk passed.
	symlinks []string
}

func (ix *Index) walk(start string, scan *scanResult) error {
	return ix.fs.WalkDir(start, func(rel string, d fs.DirEntry, err error) error {
		p := ix.abs(rel)
		if err != nil {
			ix.problem(p, ProblemUnparsable, err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if rel != start && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			scan.symlinks = append(scan.symlinks, ix.rel(p))
			// Symlinks are not followed: a target inside the checkout is
			// indexed where it lives; one outside is refused.
			if _, err := ix.fs.Stat(rel); err != nil {
				ix.problem(p, ProblemOutsideRepo, errOutsideRepo)
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			ix.problem(p, ProblemNotRegular, errNotRegular)
			return nil
		}
		if slices.Contains(KustomizationFileNames, name) {
			dir := filepath.Dir(p)
			if prev, ok := scan.kustomizations[dir]; !ok || kustomizationRank(name) < kustomizationRank(prev) {
				scan.kustomizations[dir] = name
			}
			return nil
		}
		if !document.IsYAMLName(name) {
			ix.problem(p, ProblemNotYAML, nil)
			return nil
		}
		scan.yamlFiles = append(scan.yamlFiles, p)
		return nil
	})
}

func kustomizationRank(name string) int { return slices.Index(KustomizationFileNames, name) }

// rel turns an absolute path inside the checkout into the repo-relative,
// slash-separated form used everywhere else.
func (ix *Index) rel(p string) string { return relTo(ix.root, p) }

// relTo returns p relative to the checkout root, slash-separated.
func relTo(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

func (ix *Index) abs(rel string) string { return filepath.Join(ix.root, filepath.FromSlash(rel)) }

func (ix *Index) problem(p string, kind ProblemKind, err error) {
	pr := Problem{Path: ix.rel(p), Kind: kind}
	if err != nil {
		pr.Err = err.Error()
	}
	ix.Problems = append(ix.Problems, pr)
}

func (ix *Index) addRoot(dir, file string, pr *Problem) *Root {
	r := &Root{Dir: ix.rel(dir), File: file}
	if pr != nil {
		pr.Path = r.Dir
		r.Problem = pr
		ix.Problems = append(ix.Problems, *pr)
	}
	ix.roots[r.Dir] = r
	return r
}

// remoteRef returns the first remote entry the kustomization in dir reaches
// through local bases and components, or "" when it reaches none. Bases
// outside the checkout are not read here; the build refuses them.
func (ix *Index) remoteRef(dir string, kfiles map[string]*kustomizationFile, seen map[string]bool, prior *priorBuild) string {
	if seen[dir] {
		return ""
	}
	seen[dir] = true
	kf, ok := kfiles[dir]
	if !ok {
		// A base outside the indexed paths is still read by the build.
		kf = ix.kustomizationAt(dir, prior)
		kfiles[dir] = kf
	}
	if kf == nil {
		return ""
	}
	if len(kf.remote) > 0 {
		return kf.remote[0]
	}
	for _, ref := range kf.refs {
		if isRemoteRef(ref) {
			return ref
		}
		if r := ix.remoteRef(filepath.Join(kf.dir, ref), kfiles, seen, prior); r != "" {
			return r
		}
	}
	return ""
}

// MaxBuildLoads bounds the kustomizations one build may load. kustomize
// loads a base once for every path of bases and components that reaches
// it, not once: a diamond of bases doubles the work at each level, and 30
// levels of a few bytes each would never finish. No repository a person
// writes comes near it.
const MaxBuildLoads = 1000

// buildLoads counts the kustomizations a build of dir loads, as kustomize
// loads them, up to MaxBuildLoads+1.
func (ix *Index) buildLoads(dir string, kfiles map[string]*kustomizationFile, memo map[string]int, visiting map[string]bool, prior *priorBuild) int {
	if n, ok := memo[dir]; ok {
		return n
	}
	if visiting[dir] {
		return 0 // a cycle: kustomize refuses it
	}
	visiting[dir] = true
	defer delete(visiting, dir)
	kf, ok := kfiles[dir]
	if !ok {
		kf = ix.kustomizationAt(dir, prior)
		kfiles[dir] = kf
	}
	n := 0
	if kf != nil {
		n = 1
		for _, ref := range kf.refs {
			if n > MaxBuildLoads {
				break
			}
			if !isRemoteRef(ref) {
				n += ix.buildLoads(filepath.Join(kf.dir, ref), kfiles, memo, visiting, prior)
			}
		}
	}
	n = min(n, MaxBuildLoads+1)
	memo[dir] = n
	return n
}

// loadKustomizationIn reads the kustomization of dir, or returns nil when
// dir is not a kustomization directory (a file, or missing).
func loadKustomizationIn(fsys *repofs.FS, dir string) *kustomizationFile {
	for _, name := range KustomizationFileNames {
		if info, err := statIn(fsys, filepath.Join(dir, name)); err == nil && !info.IsDir() {
			kf, err := readKustomizationFile(fsys, dir, name)
			if err != nil {
				return nil
			}
			return kf
		}
	}
	return nil
}

// renderedRoot is what rendering one kustomize root found, kept apart from
// the index so that roots render concurrently and are added in order.
type renderedRoot struct {
	problem      *Problem
	reads        map[string]struct{}
	objects      []Object
	namespaces   []Namespace
	mesh         []MeshObject
	applications []objects.Application
	unparsable   []string
	restartPatch map[string]bool
	// refused are the files over budget the build tried to read, with why.
	refused map[string]string
	// listed are the absolute directories the build listed; true when it
	// walked the whole tree below.
	listed map[string]bool
}

// renderRoots renders the roots on every CPU. The kustomize API is safe for
// concurrent builds since kyaml guards its OpenAPI schema with a lock
// (kubernetes-sigs/kustomize#3659); each build has its own file system.
// A root that reuse returns (not nil) is not rendered again.
func renderRoots(kfs []*kustomizationFile, refused map[string]*Problem, fsys *repofs.FS, plain bool, reuse func(*kustomizationFile) *renderedRoot) []*renderedRoot {
	out := make([]*renderedRoot, len(kfs))
	var dirty []int
	for i, kf := range kfs {
		if out[i] = reuse(kf); out[i] == nil {
			dirty = append(dirty, i)
		}
	}
	docs := newDocCache(fsys)
	InParallel(len(dirty), func(j int) {
		i := dirty[j]
		out[i] = renderRoot(kfs[i], refused[kfs[i].dir], fsys, plain, docs)
	})
	return out
}

// DocCache holds the parsed documents of the files origins point at: a
// base shared by hundreds of overlays is parsed once, not once per render.
type DocCache struct {
	fs      *repofs.FS
	mu      sync.Mutex
	entries map[string]*cachedDocs
}

func newDocCache(fsys *repofs.FS) *DocCache {
	return &DocCache{fs: fsys, entries: map[string]*cachedDocs{}}
}

type cachedDocs struct {
	once sync.Once
	docs []document.Document
	err  error
}

// get returns the documents of the file at repo-relative path rel.
func (c *DocCache) get(rel string) ([]document.Document, error) {
	c.mu.Lock()
	e, ok := c.entries[rel]
	if !ok {
		e = &cachedDocs{}
		c.entries[rel] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		data, err := c.fs.ReadFile(rel)
		if err == nil {
			e.docs, err = document.Parse(data)
		}
		if err != nil {
			e.err = fmt.Errorf("%s: %w", rel, err)
		}
	})
	return e.docs, e.err
}

func renderRoot(kf *kustomizationFile, skipped *Problem, fsys *repofs.FS, plain bool, docs *DocCache) *renderedRoot {
	if skipped != nil {
		p := *skipped
		return &renderedRoot{problem: &p}
	}
	if plain {
		if r, ok := renderPlain(kf, fsys, docs); ok {
			return r
		}
	}
	kpath := filepath.Join(kf.dir, kf.name)
	data, err := readRegular(fsys, kpath)
	if err == nil {
		data, err = withOriginAnnotations(data)
	}
	if err != nil {
		return &renderedRoot{problem: &Problem{Kind: ProblemBuildFailed, Err: untrusted.Error(err)}}
	}
	res := buildRoot(fsys, kf.dir, map[string][]byte{kpath: data})
	reads := make(map[string]struct{}, len(res.Reads))
	for _, rel := range res.Reads {
		reads[fsys.Abs(rel)] = struct{}{}
	}
	listed := make(map[string]bool, len(res.Listed))
	for rel, tree := range res.Listed {
		listed[fsys.Abs(rel)] = tree
	}
	refused := make(map[string]string, len(res.Refused))
	for rel, why := range res.Refused {
		refused[fsys.Abs(rel)] = why
	}
	if res.Failure != nil {
		return &renderedRoot{problem: buildProblem(kf, res.Failure, len(refused) > 0), reads: reads, refused: refused, listed: listed}
	}
	out := &renderedRoot{reads: reads, listed: listed, restartPatch: readRestartPatch(fsys, kf)}
	rootDir := relTo(fsys.Dir(), kf.dir)
	for _, raw := range res.Objects {
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			out.unparsable = append(out.unparsable, err.Error())
			continue
		}
		apiVersion, kind := document.String(body, "apiVersion"), document.String(body, "kind")
		name, namespace := document.String(body, "metadata", "name"), document.String(body, "metadata", "namespace")
		labels, annotations := document.Strings(body, "metadata", "labels"), document.Strings(body, "metadata", "annotations")
		origin, originErr := originOf(annotations)
		if document.IsNamespace(apiVersion, kind) {
			out.namespaces = append(out.namespaces, renderedNamespace(name, labels, rootDir, originFile(fsys, kf.dir, origin)))
			continue
		}
		if document.IsApplication(apiVersion, kind) {
			if app, ok := document.Application(body); ok {
				out.applications = append(out.applications, app)
			}
			continue
		}
		if isMeshKind(apiVersion, kind) {
			out.mesh = append(out.mesh, renderedMeshObject(fsys, kf.dir, rootDir, apiVersion, kind, name, namespace, origin, originErr, docs))
			continue
		}
		if !document.IsIndexed(apiVersion, kind) {
			continue
		}
		obj := Object{
			APIVersion:         apiVersion,
			Kind:               kind,
			Name:               name,
			Namespace:          namespace,
			Root:               rootDir,
			SubstituteDisabled: document.SubstituteDisabled(labels, annotations),
		}
		if document.IsHelmRelease(obj.APIVersion, obj.Kind) {
			spec, _ := body["spec"].(map[string]any)
			obj.Release = document.NewReleaseRender(spec["postRenderers"])
		}
		if tmpl := document.TemplateMetadata(body); tmpl != nil {
			if _, ok := tmpl["annotations"].(map[string]any); ok {
				obj.TemplateAnnotations = document.TemplateAnnotations(body)
			}
		}
		switch {
		case originErr != nil || origin == nil:
			obj.GeneratedBy = "unknown origin"
		case origin.Repo != "":
			obj.GeneratedBy = "remote " + origin.Repo
		case origin.Path == "":
			obj.GeneratedBy = origin.ConfiguredIn
		default:
			src, err := sourceFor(fsys, kf.dir, origin.Path, &obj, docs)
			if err != nil {
				out.unparsable = append(out.unparsable, err.Error())
				continue
			}
			obj.Source = src
		}
		out.objects = append(out.objects, obj)
	}
	return out
}

// buildProblem is the problem of a root whose build failed: over budget
// (time or memory, or a file the build read, then reported on its own),
// outside the repository, a remote base or URL, or any other failure.
func buildProblem(kf *kustomizationFile, f *sandbox.Failure, refusedFiles bool) *Problem {
	kind := ProblemBuildFailed
	msg := f.Message
	switch f.Kind {
	case sandbox.FailOutside:
		kind = ProblemOutsideRepo
	case sandbox.FailRemote:
		kind, msg = ProblemRemoteBase, "remote bases and URLs are not fetched: "+msg
	case sandbox.FailOverBudget:
		if !refusedFiles {
			kind, msg = ProblemOverBudget, fmt.Sprintf("building %s: %s", kf.name, msg)
		}
	}
	return &Problem{Kind: kind, Err: msg}
}

// addRendered indexes a rendered root; it returns the absolute paths the
// build read.
func (ix *Index) addRendered(kf *kustomizationFile, r *renderedRoot) map[string]struct{} {
	for _, p := range sortedKeys(r.refused) {
		ix.overBudgetMessage(p, r.refused[p])
	}
	if r.problem != nil {
		ix.addRoot(kf.dir, kf.name, r.problem)
		return r.reads
	}
	root := ix.addRoot(kf.dir, kf.name, nil)
	for p := range r.reads {
		root.reads = append(root.reads, ix.rel(p))
		if slices.Contains(KustomizationFileNames, filepath.Base(p)) && filepath.Dir(p) != kf.dir {
			root.includes = append(root.includes, ix.rel(filepath.Dir(p)))
		}
	}
	sort.Strings(root.reads)
	sort.Strings(root.includes)
	root.restartPatch = r.restartPatch
	root.namePrefix, root.nameSuffix = kf.namePrefix, kf.nameSuffix
	for _, msg := range r.unparsable {
		ix.Problems = append(ix.Problems, Problem{Path: root.Dir, Kind: ProblemUnparsable, Err: msg})
	}
	for _, o := range r.objects {
		ix.addObject(o)
	}
	ix.namespaces = append(ix.namespaces, r.namespaces...)
	ix.mesh = append(ix.mesh, r.mesh...)
	ix.applications = append(ix.applications, r.applications...)
	return r.reads
}

func renderedNamespace(name string, labels map[string]string, root, origin string) Namespace {
	return Namespace{Name: name, Labels: labels, Root: root, Origin: origin}
}

// originFile is the repo-relative file a rendered object's origin
// names; "" for a generated or remote object, or a file a symlink places
// outside the checkout.
func originFile(fsys *repofs.FS, rootDir string, origin *resource.Origin) string {
	if origin == nil || origin.Repo != "" || origin.Path == "" {
		return ""
	}
	p, err := resolveIn(fsys, filepath.Join(rootDir, filepath.FromSlash(origin.Path)))
	if err != nil {
		return ""
	}
	return relTo(fsys.Dir(), p)
}

// sourceFor finds the document of the origin file that a rendered object
// comes from. Origins name the file only; within a multi-document file the
// document is the one of the same kind whose written name the rendered name
// was built from (namePrefix/nameSuffix only add around it).
func sourceFor(fsys *repofs.FS, rootDir, originPath string, obj *Object, cache *DocCache) (Source, error) {
	p, err := resolveIn(fsys, filepath.Join(rootDir, filepath.FromSlash(originPath)))
	if err != nil {
		return Source{}, fmt.Errorf("%s: %w", originPath, err)
	}
	rel := relTo(fsys.Dir(), p)
	docs, err := cache.get(rel)
	if err != nil {
		return Source{}, err
	}
	var best *document.Document
	var sameKind []*document.Document
	for i := range docs {
		d := &docs[i]
		if d.Kind != obj.Kind {
			continue
		}
		sameKind = append(sameKind, d)
		if d.Name == "" || !strings.Contains(obj.Name, d.Name) {
			continue
		}
		switch {
		case best == nil,
			d.Name == obj.Name && best.Name != obj.Name,
			len(d.Name) > len(best.Name) && best.Name != obj.Name,
			len(d.Name) == len(best.Name) && d.Namespace == obj.Namespace && best.Namespace != obj.Namespace:
			best = d
		}
	}
	if best == nil && len(sameKind) == 1 {
		// Renamed by a patch: the only document of that kind is the source.
		best = sameKind[0]
	}
	if best == nil {
		return Source{}, fmt.Errorf("%s: no %s document renders %s", rel, obj.Kind, obj.Name)
	}
	return Source{
		Path: rel, Document: best.Index, APIVersion: best.APIVersion,
		Kind: best.Kind, Name: best.Name, Namespace: best.Namespace,
	}, nil
}

func readRestartPatch(fsys *repofs.FS, kf *kustomizationFile) map[string]bool {
	out := listedReleasePatches(kf)
	name := RestartPatchFile(kf.name)
	if !slices.Contains(kf.files, name) {
		return out
	}
	data, err := readRegular(fsys, filepath.Join(kf.dir, name))
	if err != nil {
		return out
	}
	docs, err := document.Parse(data)
	if err != nil {
		return out
	}
	if out == nil {
		out = map[string]bool{}
	}
	for _, d := range docs {
		if d.Kind != "" {
			out[d.Kind+"/"+d.Name] = true
		}
	}
	return out
}

// plainFile is a manifest file outside kustomize, read and parsed.
type plainFile struct {
	docs         []document.Document
	applications []objects.Application
	kind         ProblemKind
	problem      error
}

// chartOfTemplate tells a file below a chart's templates/ directory, and
// the chart's directory: Helm renders every file there, so one that parses
// as YAML (its templating kept in quoted strings) is still not what any
// controller applies.
func chartOfTemplate(fsys *repofs.FS, p string) (string, bool) {
	rel, ok := fsys.Rel(p)
	if !ok {
		return "", false
	}
	for dir := path.Dir(rel); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if path.Base(dir) == "templates" && fsys.IsRegular(path.Join(path.Dir(dir), "Chart.yaml")) {
			return path.Dir(dir), true
		}
	}
	return "", false
}

func readPlainFile(fsys *repofs.FS, p string) plainFile {
	data, err := readRegular(fsys, p)
	if yamlguard.IsOverBudget(err) {
		return plainFile{kind: ProblemOverBudget, problem: err}
	}
	if err != nil {
		return plainFile{kind: ProblemUnparsable, problem: err}
	}
	if !utf8.Valid(data) {
		return plainFile{kind: ProblemUnparsable, problem: errors.New("not UTF-8 text")}
	}
	if chart, ok := chartOfTemplate(fsys, p); ok {
		return plainFile{kind: ProblemHelmTemplate, problem: fmt.Errorf("a template of the chart at %s, which Helm renders: it is not applied as written", chart)}
	}
	if n := yamledit.TemplateLine(data); n > 0 {
		return plainFile{kind: ProblemHelmTemplate, problem: fmt.Errorf("line %d holds template directives outside a YAML string", n)}
	}
	docs, err := document.Parse(data)
	if yamlguard.IsOverBudget(err) {
		return plainFile{kind: ProblemOverBudget, problem: err}
	}
	if err != nil {
		return plainFile{kind: ProblemUnparsable, problem: err}
	}
	return plainFile{docs: docs, applications: document.Applications(data, docs)}
}

func (ix *Index) addPlainFile(p string, f plainFile) {
	if f.problem != nil {
		ix.problem(p, f.kind, f.problem)
		return
	}
	rel := ix.rel(p)
	ix.applications = append(ix.applications, f.applications...)
	for _, d := range f.docs {
		if document.IsNamespace(d.APIVersion, d.Kind) && d.Name != "" {
			ix.namespaces = append(ix.namespaces, renderedNamespace(d.Name, d.Labels, "", rel))
		}
		if isMeshKind(d.APIVersion, d.Kind) && d.Name != "" {
			ix.mesh = append(ix.mesh, documentMeshObject(d, d.Namespace, "", rel))
		}
		if !document.IsIndexed(d.APIVersion, d.Kind) || d.Name == "" {
			continue
		}
		ix.addObject(Object{
			APIVersion:          d.APIVersion,
			Kind:                d.Kind,
			Name:                d.Name,
			Namespace:           d.Namespace,
			TemplateAnnotations: d.TemplateAnnotations,
			SubstituteDisabled:  d.SubstituteDisabled,
			Release:             d.Release,
			Source: Source{
				Path: rel, Document: d.Index, APIVersion: d.APIVersion,
				Kind: d.Kind, Name: d.Name, Namespace: d.Namespace,
			},
		})
	}
}

func (ix *Index) addObject(o Object) {
	ix.byKindName[o.Kind+"/"+o.Name] = append(ix.byKindName[o.Kind+"/"+o.Name], len(ix.objects))
	if strings.Contains(o.Name+o.Namespace, "${") && !o.SubstituteDisabled {
		ix.substituted = append(ix.substituted, len(ix.objects))
	}
	if o.Source.Path != "" {
		ix.byPath[o.Source.Path] = append(ix.byPath[o.Source.Path], len(ix.objects))
	}
	ix.objects = append(ix.objects, o)
}

// finish derives what needs every root built: which roots include which.
func (ix *Index) finish() {
	for dir, r := range ix.roots {
		for _, inc := range r.includes {
			ix.includedBy[inc] = append(ix.includedBy[inc], dir)
		}
	}
	for _, v := range ix.includedBy {
		sort.Strings(v)
	}
	ix.readers = readersOf(ix.roots)
	sort.SliceStable(ix.Problems, func(i, j int) bool { return ix.Problems[i].Path < ix.Problems[j].Path })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
