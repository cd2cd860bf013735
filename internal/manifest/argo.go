package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/gobwas/glob"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// ArgoDirectory is one path an Argo CD Application applies from the indexed
// repository, and how Argo CD reads it when it holds plain manifests
// (https://argo-cd.readthedocs.io/en/stable/user-guide/directory/). A path
// with a kustomization file at its top is a kustomize source instead, and
// the filters do not apply.
type ArgoDirectory struct {
	Path string
	// Recurse reads the files of sub-directories too; by default only the
	// files at the top of Path are applied.
	Recurse bool
	// Include and Exclude are globs matched against a file's path relative
	// to Path: a file is applied when it matches Include (if set) and does
	// not match Exclude (if set).
	Include, Exclude string
	// Kustomize is the source's kustomize block: what Argo CD writes into
	// the path's kustomization before building it.
	Kustomize *objects.ApplicationSourceKustomize
	// Source is the Application and the source within it, for finding the
	// Application's copy in the repository.
	Source ArgoSourceRef
	// directory is set when the source has a directory block: Argo CD then
	// reads plain files even where a kustomization file is.
	directory bool
}

// ArgoSourceRef names one source of an Application: At is the path of the
// source in the Application ("spec.source", "spec.sources[1]").
type ArgoSourceRef struct {
	Namespace, Name string
	At              string
}

// argoSource is one source of an Application and where it sits in it.
type argoSource struct {
	at  string
	src objects.ApplicationSource
}

// argoSources lists the sources Argo CD reads (route.ApplicationSources)
// with where each sits in the Application.
func argoSources(app *objects.Application) []argoSource {
	sources := route.ApplicationSources(app)
	out := make([]argoSource, len(sources))
	for i, s := range sources {
		at := "spec.source"
		if len(app.Spec.Sources) > 0 {
			at = fmt.Sprintf("spec.sources[%d]", i)
		}
		out[i] = argoSource{at: at, src: s}
	}
	return out
}

// argoDirectoryOf reads how an Application applies one of its paths. Every
// Argo CD path gets one, with or without a directory block: the default
// (top directory only) differs from Flux's, which applies the whole tree.
func argoDirectoryOf(app *objects.Application, s argoSource) *ArgoDirectory {
	d := &ArgoDirectory{
		Path: cleanRepoPath(s.src.Path), Kustomize: s.src.Kustomize,
		Source: ArgoSourceRef{Namespace: app.Namespace, Name: app.Name, At: s.at},
	}
	if s.src.Directory != nil {
		d.Recurse, d.Include, d.Exclude = s.src.Directory.Recurse, s.src.Directory.Include, s.src.Directory.Exclude
		d.directory = true
	}
	return d
}

// argoVia names an Application in messages.
func argoVia(app *objects.Application) string { return route.ApplicationVia(app) }

// reads reports whether Argo CD applies the repo-relative file as a plain
// manifest of the directory. It follows the repo server's walk: files below
// the top only with recurse, then exclude, then include, each a glob on the
// path relative to the source's path.
func (d ArgoDirectory) reads(file string) bool {
	rel, ok := relativeTo(file, d.Path)
	if !ok {
		return false
	}
	if !d.Recurse && strings.Contains(rel, "/") {
		return false
	}
	if d.Exclude != "" && argoGlobMatch(d.Exclude, rel) {
		return false
	}
	return d.Include == "" || argoGlobMatch(d.Include, rel)
}

// relativeTo returns file relative to dir, and whether it lies below it.
func relativeTo(file, dir string) (string, bool) {
	if dir == "." {
		return file, true
	}
	rest, ok := strings.CutPrefix(file, dir+"/")
	return rest, ok
}

// argoGlobs holds compiled patterns: the same few are matched against
// every file of every Application's directory.
var argoGlobs sync.Map

// argoGlobMatch matches as Argo CD's glob.Match does: gobwas/glob compiled
// without separators, so "*" crosses directories and "{a,b}" lists
// alternatives. A comma outside braces is a literal character: Argo CD does
// not split the field. A pattern that does not compile matches nothing, as
// there.
func argoGlobMatch(pattern, name string) bool {
	g, ok := argoGlobs.Load(pattern)
	if !ok {
		compiled, err := glob.Compile(pattern)
		if err != nil {
			compiled = nil
		}
		g, _ = argoGlobs.LoadOrStore(pattern, compiled)
	}
	compiled, _ := g.(glob.Glob)
	return compiled != nil && compiled.Match(name)
}

// argoDirectoriesAt returns how the hints' Applications read path p; none
// when p comes from another tool.
func (h Hints) argoDirectoriesAt(p string) []ArgoDirectory {
	var out []ArgoDirectory
	for _, d := range h.Directories {
		if d.Path == p {
			out = append(out, d)
		}
	}
	return out
}

// argoDirectoryAt is the first of argoDirectoriesAt, or nil.
func (h Hints) argoDirectoryAt(p string) *ArgoDirectory {
	if ds := h.argoDirectoriesAt(p); len(ds) > 0 {
		return &ds[0]
	}
	return nil
}

// argoApplies reports whether the Application source d deploys object o:
// the render of d's path when it is a kustomize root, else a plain file the
// directory rules keep. Argo CD reads no kustomization below a directory
// source, so what roots below it render is not its.
func (ix *Index) argoApplies(d ArgoDirectory, o *Object) bool {
	if _, isRoot := ix.roots[d.Path]; isRoot {
		return o.Root == d.Path
	}
	if d.Kustomize != nil {
		// A kustomize block makes the source a kustomize one; without a
		// kustomization file Argo CD's build fails and applies nothing.
		return false
	}
	return o.Root == "" && d.reads(o.Source.Path)
}

// inHintedScope reports whether o is applied from one of the hinted paths,
// each read the way the tool applying it reads it.
func (ix *Index) inHintedScope(o *Object, h Hints) bool {
	if len(h.Directories) == 0 || len(h.Paths) == 0 {
		return ix.inScope(o, h.Paths)
	}
	for _, p := range h.Paths {
		ds := h.argoDirectoriesAt(p)
		if len(ds) == 0 && ix.inScope(o, []string{p}) {
			return true
		}
		for _, d := range ds {
			if ix.argoApplies(d, o) {
				return true
			}
		}
	}
	return false
}

// appliedBy reports whether the applied path a deploys object o.
func (ix *Index) appliedBy(a Applied, o *Object) bool {
	if a.Directory != nil {
		return ix.argoApplies(*a.Directory, o)
	}
	return ix.applies(a.Path, o)
}

// isApplicationKind tells Argo CD Applications from other kinds named so.
func isApplicationKind(apiVersion, kind string) bool {
	return kind == "Application" && apiGroup(apiVersion) == "argoproj.io"
}

// Applications returns the Argo CD Applications the repository holds, in
// plain files or rendered by its kustomize roots, one per namespace and
// name (the first root in directory order wins).
func (ix *Index) Applications() []objects.Application {
	seen := map[string]bool{}
	var out []objects.Application
	for _, a := range ix.applications {
		key := a.Namespace + "/" + a.Name
		if !seen[key] {
			seen[key] = true
			out = append(out, a)
		}
	}
	return out
}

// WithRepositoryApplications returns the cluster's objects with the
// repository's Applications standing in for the cluster's when it gives
// none (a snapshot without them, or no permission to read them). A cluster
// that has Applications is returned as it is: the repository may hold other
// clusters' Applications too.
func WithRepositoryApplications(set *objects.Set, ix *Index) *objects.Set {
	if ix == nil || len(ix.applications) == 0 || (set != nil && len(set.Applications) > 0) {
		return set
	}
	out := &objects.Set{}
	if set != nil {
		copied := *set
		out = &copied
	}
	out.Applications = ix.Applications()
	return out
}

// applicationsIn decodes the Application documents of a plain file whose
// parse found some. The parse has already held the file to the YAML
// budgets, so decoding it whole is safe; a document that is not a valid
// Application stops nothing else.
func applicationsIn(data []byte, docs []document) []objects.Application {
	wanted := false
	for _, d := range docs {
		wanted = wanted || (isApplicationKind(d.APIVersion, d.Kind) && !d.List)
	}
	if !wanted {
		return nil
	}
	var out []objects.Application
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return out
		}
		if app, ok := applicationFrom(doc); ok {
			out = append(out, app)
		}
	}
}

// applicationFrom converts a decoded object into an Application when it is
// one.
func applicationFrom(doc map[string]any) (objects.Application, bool) {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if !isApplicationKind(apiVersion, kind) {
		return objects.Application{}, false
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return objects.Application{}, false
	}
	var app objects.Application
	if err := json.Unmarshal(data, &app); err != nil || app.Name == "" {
		return objects.Application{}, false
	}
	return app, true
}
