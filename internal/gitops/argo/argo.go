// Package argo is the Argo CD Application source: how Argo CD's repo server
// reads each source of an Application (a directory of plain manifests, a
// kustomize path with the source's kustomize block written into its
// kustomization, a Helm chart of the repository or of a chart repository;
// several sources at once), and where a restart can be written for it: an
// entry of a source's kustomize.patches, or a chart value in its helm
// block, in the Application's copy in the repository
// (https://argo-cd.readthedocs.io/en/stable/user-guide/application_sources/).
package argo

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gobwas/glob"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// Directory is one path an Argo CD Application applies from the indexed
// repository, and how Argo CD reads it when it holds plain manifests
// (https://argo-cd.readthedocs.io/en/stable/user-guide/directory/). A path
// with a kustomization file at its top is a kustomize source instead, and
// the filters do not apply.
type Directory struct {
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
	Source SourceRef
	// Helm is the source's helm block, as the cluster runs it; Namespace
	// the Application's destination namespace.
	Helm      *objects.ApplicationSourceHelm
	Namespace string
	// Refs are the Application's ref: sources, which its values files
	// name as $<ref>/<path>.
	Refs []Ref
	// directory is set when the source has a directory block: Argo CD then
	// reads plain files even where a kustomization file is.
	directory bool
}

// Ref is a source of an Application with ref: set: `$<Name>/<path>` in a
// values file of another source is <path> at the root of its repository
// (https://argo-cd.readthedocs.io/en/stable/user-guide/multiple_sources/#helm-value-files-from-external-git-repository).
type Ref struct {
	Name, RepoURL, TargetRevision string
	// Indexed is set when the repository is the indexed checkout's.
	Indexed bool
}

// RefsOf lists the ref: sources of an Application; indexed tells whether a
// source is of the indexed repository.
func RefsOf(app *objects.Application, indexed func(objects.ApplicationSource) bool) []Ref {
	var out []Ref
	for _, s := range route.ApplicationSources(app) {
		if s.Ref != "" {
			out = append(out, Ref{Name: s.Ref, RepoURL: s.RepoURL, TargetRevision: s.TargetRevision, Indexed: indexed(s)})
		}
	}
	return out
}

// SourceRef names one source of an Application: At is the path of the
// source in the Application ("spec.source", "spec.sources[1]").
type SourceRef struct {
	Namespace, Name string
	At              string
}

// Source is one source of an Application and where it sits in it.
type Source struct {
	At  string
	Src objects.ApplicationSource
}

// Sources lists the sources Argo CD reads (route.ApplicationSources) with
// where each sits in the Application.
func Sources(app *objects.Application) []Source {
	sources := route.ApplicationSources(app)
	out := make([]Source, len(sources))
	for i, s := range sources {
		at := "spec.source"
		if len(app.Spec.Sources) > 0 {
			at = fmt.Sprintf("spec.sources[%d]", i)
		}
		out[i] = Source{At: at, Src: s}
	}
	return out
}

// DirectoryOf reads how an Application applies one of its paths. Every
// Argo CD path gets one, with or without a directory block: the default
// (top directory only) differs from Flux's, which applies the whole tree.
func DirectoryOf(app *objects.Application, s Source) *Directory {
	d := &Directory{
		Path: route.CleanPath(s.Src.Path), Kustomize: s.Src.Kustomize, Helm: s.Src.Helm, Namespace: app.Spec.Destination.Namespace,
		Source: SourceRef{Namespace: app.Namespace, Name: app.Name, At: s.At},
	}
	if s.Src.Directory != nil {
		d.Recurse, d.Include, d.Exclude = s.Src.Directory.Recurse, s.Src.Directory.Include, s.Src.Directory.Exclude
		d.directory = true
	}
	return d
}

// Via names an Application in messages.
func Via(app *objects.Application) string { return route.ApplicationVia(app) }

// reads reports whether Argo CD applies the repo-relative file as a plain
// manifest of the directory. It follows the repo server's walk: files below
// the top only with recurse, then exclude, then include, each a glob on the
// path relative to the source's path.
func (d Directory) reads(file string) bool {
	rel, ok := relativeTo(file, d.Path)
	if !ok {
		return false
	}
	if !d.Recurse && strings.Contains(rel, "/") {
		return false
	}
	if d.Exclude != "" && globMatch(d.Exclude, rel) {
		return false
	}
	return d.Include == "" || globMatch(d.Include, rel)
}

// relativeTo returns file relative to dir, and whether it lies below it.
func relativeTo(file, dir string) (string, bool) {
	if dir == "." {
		return file, true
	}
	rest, ok := strings.CutPrefix(file, dir+"/")
	return rest, ok
}

// globs holds compiled patterns: the same few are matched against every
// file of every Application's directory.
var globs sync.Map

// globMatch matches as Argo CD's glob.Match does: gobwas/glob compiled
// without separators, so "*" crosses directories and "{a,b}" lists
// alternatives. A comma outside braces is a literal character: Argo CD does
// not split the field. A pattern that does not compile matches nothing, as
// there.
func globMatch(pattern, name string) bool {
	g, ok := globs.Load(pattern)
	if !ok {
		compiled, err := glob.Compile(pattern)
		if err != nil {
			compiled = nil
		}
		g, _ = globs.LoadOrStore(pattern, compiled)
	}
	compiled, _ := g.(glob.Glob)
	return compiled != nil && compiled.Match(name)
}

// DirectoriesAt returns how the Applications read path p; none when p
// comes from another tool.
func DirectoriesAt(dirs []Directory, p string) []Directory {
	var out []Directory
	for _, d := range dirs {
		if d.Path == p {
			out = append(out, d)
		}
	}
	return out
}

// DirectoryAt is the first of DirectoriesAt, or nil.
func DirectoryAt(dirs []Directory, p string) *Directory {
	if ds := DirectoriesAt(dirs, p); len(ds) > 0 {
		return &ds[0]
	}
	return nil
}

// Applies reports whether the Application source d deploys object o: the
// render of d's path when it is a kustomize root, else a plain file the
// directory rules keep. Argo CD reads no kustomization below a directory
// source, so what roots below it render is not its.
func Applies(ix *index.Index, d Directory, o *index.Object) bool {
	if ix.RootAt(d.Path) != nil {
		return o.Root == d.Path
	}
	if d.Kustomize != nil {
		// A kustomize block makes the source a kustomize one; without a
		// kustomization file Argo CD's build fails and applies nothing.
		return false
	}
	return o.Root == "" && d.reads(o.Source.Path)
}
