package index

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/sandbox"
)

// Render is the result of building a kustomize root: its objects in
// kustomize's order, or why there are none.
type Render struct {
	Objects []Rendered
	Err     error
}

// Rendered is one object of a render: its identity, and its body decoded
// or, for a render kept to compare later against, as JSON only (a
// fraction of a decoded body's size).
type Rendered struct {
	ID         document.ID
	APIVersion string
	Body       map[string]any
	JSON       []byte
}

// buildRoot builds the kustomize root at the absolute directory dir of the
// checkout in a render worker (internal/sandbox), with replace (absolute
// paths) standing in for the content of files. Plugins are off and any
// file inside the checkout may be read, as Flux builds; nothing outside
// it, no remote base and no URL.
func buildRoot(fsys *repofs.FS, dir string, replace map[string][]byte) *sandbox.KustomizeResult {
	rel, ok := fsys.Rel(dir)
	if !ok {
		return &sandbox.KustomizeResult{Failure: &sandbox.Failure{Kind: sandbox.FailOutside, Message: fmt.Sprintf("%s: %v", dir, errOutsideRepo)}}
	}
	job := sandbox.KustomizeJob{Root: fsys.Dir(), Dir: rel}
	if len(replace) > 0 {
		job.Replace = make(map[string][]byte, len(replace))
		for p, data := range replace {
			if r, ok := fsys.Rel(p); ok {
				job.Replace[r] = data
			}
		}
	}
	return sandbox.Kustomize(context.Background(), job)
}

// BuildFlux builds the repo-relative directory dir as kustomize-controller
// builds it for the Flux Kustomization k (the whole object): in a render
// worker, its kustomization written there by kustomize-controller's own
// generator (render.FluxKustomization) before the build, with replace
// (repo-relative paths) standing in for the content of other files.
func (ix *Index) BuildFlux(dir string, k map[string]any, replace map[string][]byte, compact bool) Render {
	data, err := json.Marshal(k)
	if err != nil {
		return Render{Err: err}
	}
	job := sandbox.KustomizeJob{Root: ix.fs.Dir(), Dir: dir, Replace: replace, Flux: data}
	return renderOf(sandbox.Kustomize(context.Background(), job), compact)
}

// renderOf decodes the objects of a build; compact keeps each as JSON
// only.
func renderOf(res *sandbox.KustomizeResult, compact bool) Render {
	if res.Failure != nil {
		return Render{Err: res.Failure}
	}
	out := Render{Objects: make([]Rendered, 0, len(res.Objects))}
	for _, data := range res.Objects {
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			return Render{Err: err}
		}
		o := Rendered{ID: document.ID{Namespace: document.String(body, "metadata", "namespace"), Kind: document.String(body, "kind"), Name: document.String(body, "metadata", "name")},
			APIVersion: document.String(body, "apiVersion"), Body: body}
		if compact {
			o.JSON, o.Body = data, nil
		}
		out.Objects = append(out.Objects, o)
	}
	return out
}

// Build builds the kustomize root at the repo-relative directory dir as
// the index builds roots (in a render worker, reading nothing outside the
// checkout), with replace (repo-relative paths) standing in for the
// content of files; compact keeps the objects as JSON only. dir need not
// be a root the index knows: a GitOps object's path built with its own
// options written into the kustomization is one.
func (ix *Index) Build(dir string, replace map[string][]byte, compact bool) Render {
	abs := make(map[string][]byte, len(replace))
	for rel, data := range replace {
		abs[ix.abs(rel)] = data
	}
	return renderOf(buildRoot(ix.fs, ix.abs(dir), abs), compact)
}

// RenderRoot renders a kustomize root of the index, with the files of
// replace (repo-relative paths) as an edit would leave them.
func (ix *Index) RenderRoot(root string, replace map[string][]byte) ([]Rendered, error) {
	r := ix.roots[root]
	if r == nil || r.Problem != nil {
		return nil, fmt.Errorf("%s is not a kustomize root kedge renders", root)
	}
	built := ix.Build(r.Dir, replace, false)
	return built.Objects, built.Err
}

// RenderPlain renders the root at dir the way the index reads plain
// kustomizations (without kustomize), with the files of replace
// (repo-relative) as an edit would leave them; false when the root is not
// plain, and kustomize must render it.
func (ix *Index) RenderPlain(dir string, replace map[string][]byte, docs *DocCache) ([]Object, bool) {
	if ix.kustomizeAll {
		return nil, false
	}
	r := ix.roots[dir]
	if r == nil {
		return nil, false
	}
	abs := make(map[string][]byte, len(replace))
	for rel, data := range replace {
		abs[ix.abs(rel)] = data
	}
	kf := &kustomizationFile{dir: ix.abs(r.Dir), name: r.File}
	out, ok := renderPlainWith(kf, ix.fs, docs, abs)
	if !ok {
		return nil, false
	}
	return out.objects, true
}

// readersOf lists, for every file a build read, the roots that read it.
func readersOf(roots map[string]*Root) map[string][]string {
	out := map[string][]string{}
	for dir, r := range roots {
		for _, f := range r.reads {
			out[f] = append(out[f], dir)
		}
	}
	for f := range out {
		slices.Sort(out[f])
		out[f] = slices.Compact(out[f])
	}
	return out
}

// KustomizationPath is the kustomization file of the directory: the root's
// own, or the name kustomize reads first.
func (ix *Index) KustomizationPath(dir string) string {
	if r := ix.roots[dir]; r != nil {
		return path.Join(dir, r.File)
	}
	return path.Join(dir, KustomizationFileNames[0])
}
