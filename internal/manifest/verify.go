package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"
	"sync"
)

// verifier renders every kustomize root an edit reaches, before and after,
// and accepts the edit only when the sole difference is the intended pod
// template annotations of the intended workloads. This is what makes a
// patch whose name kustomize resolves differently, or an in-place edit that
// another overlay also renders, fail safe instead of restarting the wrong
// workloads.
type verifier struct {
	ix *Index
	// before holds each root's render without edits: the namespaces whose
	// edits a shared base reaches are verified concurrently, against one
	// render of it.
	mu     sync.Mutex
	before map[string]*beforeRender
	// docs are the parsed files plain kustomizations list.
	docs *docCache
}

type beforeRender struct {
	once   sync.Once
	result renderResult
}

type renderResult struct {
	objects []renderedObject
	err     error
}

// renderedObject is one object of a render. Renders without edits are kept
// for every root that a namespace's edits reach, thousands in a fleet, so
// they hold the object as JSON (a fraction of a decoded body's size); the
// renders with edits are compared once and hold the body.
type renderedObject struct {
	id   WorkloadID
	body map[string]any
	json []byte
}

func newVerifier(ix *Index) *verifier {
	return &verifier{ix: ix, before: map[string]*beforeRender{}, docs: newDocCache(ix.fs)}
}

func (v *verifier) render(root string, replace map[string][]byte, compact bool) renderResult {
	r := v.ix.roots[root]
	return builtObjects(buildRoot(v.ix.fs, v.ix.abs(r.Dir), replace), compact)
}

// checkPlain verifies the edits a plain kustomization reads (one the index
// reads without kustomize, before and after the edits): the same workloads
// in the same order, the intended annotations set, and every other
// template annotation as it was. It reports false when the root is not
// plain on either side; kustomize then renders it.
func (v *verifier) checkPlain(root string, replace map[string][]byte, intended map[WorkloadID]intent) (bool, error) {
	if !renderPlainKustomizations {
		return false, nil
	}
	for _, in := range intended {
		if in.release != nil {
			return false, nil // only kustomize's render holds the release's post-renderers
		}
	}
	r := v.ix.roots[root]
	kf := &kustomizationFile{dir: v.ix.abs(r.Dir), name: r.File}
	before, ok := renderPlainWith(kf, v.ix.fs, v.docs, nil)
	if !ok {
		return false, nil
	}
	after, ok := renderPlainWith(kf, v.ix.fs, v.docs, replace)
	if !ok {
		return false, nil
	}
	if len(before.objects) != len(after.objects) {
		return true, fmt.Errorf("%d workloads instead of %d", len(after.objects), len(before.objects))
	}
	for i := range before.objects {
		b, a := &before.objects[i], &after.objects[i]
		id := WorkloadID{Namespace: a.Namespace, Kind: a.Kind, Name: a.Name}
		if (WorkloadID{Namespace: b.Namespace, Kind: b.Kind, Name: b.Name}) != id {
			return true, fmt.Errorf("%s rendered where %s/%s %s was", id, b.Namespace, b.Name, b.Kind)
		}
		want := maps.Clone(b.TemplateAnnotations)
		if in, ok := intended[id]; ok {
			if want == nil {
				want = map[string]string{}
			}
			maps.Copy(want, in.set)
		}
		if !maps.Equal(want, a.TemplateAnnotations) {
			return true, fmt.Errorf("%s: template annotations %v, want %v", id, a.TemplateAnnotations, want)
		}
	}
	return true, nil
}

// renderBefore renders root without edits, once.
func (v *verifier) renderBefore(root string) renderResult {
	v.mu.Lock()
	b, ok := v.before[root]
	if !ok {
		b = &beforeRender{}
		v.before[root] = b
	}
	v.mu.Unlock()
	b.once.Do(func() { b.result = v.render(root, nil, true) })
	return b.result
}

// intent is one workload an edit set restarts: its identity in the plan,
// the annotations it gets, and the document that defines it.
type intent struct {
	id     WorkloadID
	set    map[string]string
	source Source
	// flux is set when the restart is a patch in a Flux Kustomization.
	flux *fluxSite
	// argo is set when the restart is a patch in an Argo CD Application.
	argo *argoSite
	// values is set when the restart is a chart value in an Argo CD
	// Application.
	values *valuesSite
	// hints are those the workload was located with.
	hints Hints
	// release is set for a HelmRelease: the annotations kedge's
	// post-renderer entry must set, by "Kind/name" of the workload.
	release map[string]map[string]string
}

// check returns the edits that verify, refusals for the others, and the
// workloads whose intended annotations a render lost (an overlay overrides
// them).
func (v *verifier) check(edits []FileEdit, intended []intent) ([]FileEdit, []Refusal, map[WorkloadID]bool) {
	replace := map[string][]byte{}
	for _, e := range edits {
		replace[v.ix.abs(e.Path)] = e.After
	}
	affected := map[string][]int{} // root → indices of edits it reads
	for i, e := range edits {
		readers := v.ix.readers[e.Path]
		if e.Created {
			readers = v.ix.readers[v.ix.kustomizationPath(path.Dir(e.Path))]
		}
		for _, r := range readers {
			affected[r] = append(affected[r], i)
		}
	}
	failed := map[int]string{}
	overridden := map[WorkloadID]bool{}
	for _, root := range sortedKeys(affected) {
		intendedHere := v.ix.intendedIn(root, intended)
		if handled, err := v.checkPlain(root, replace, intendedHere); handled {
			if err != nil {
				for _, i := range affected[root] {
					if _, done := failed[i]; !done {
						failed[i] = fmt.Sprintf("rendering %s with the edit: %v", root, err)
					}
				}
			}
			continue
		}
		before := v.renderBefore(root)
		if before.err != nil {
			continue // the index already reported this root
		}
		after := v.render(root, replace, false)
		if err := compareRenders(before, after, intendedHere); err != nil {
			var lost *lostAnnotationError
			if errors.As(err, &lost) {
				overridden[lost.workload] = true
			}
			for _, i := range affected[root] {
				if _, done := failed[i]; !done {
					failed[i] = fmt.Sprintf("rendering %s with the edit: %v", root, err)
				}
			}
		}
	}
	v.checkFlux(edits, intended, failed)
	v.checkArgo(edits, intended, failed)
	v.checkValues(edits, intended, failed)
	if len(failed) == 0 {
		return edits, nil, overridden
	}
	var kept []FileEdit
	var refused []Refusal
	for i, e := range edits {
		reason, bad := failed[i]
		if !bad {
			kept = append(kept, e)
			continue
		}
		refused = append(refused, Refusal{Path: e.Path, Reason: reason, Workloads: e.Workloads})
	}
	return kept, refused, overridden
}

// intendedIn maps the intended workloads to the identities root renders
// them under. A root renders a workload's document under the workload's own
// identity (a namespace-less render standing for it when the GitOps
// controller sets the namespace), or, when the root is an input of other
// roots (a base), under whatever identity it gives the document before the
// including roots add their namespace and name prefixes. Anything else that
// root renders from the document is another workload, and must not change.
// The including roots read the edited files as well, so they are checked in
// their own right.
func (ix *Index) intendedIn(root string, intended []intent) map[WorkloadID]intent {
	out := map[WorkloadID]intent{}
	included := len(ix.includedBy[root]) > 0
	for _, in := range intended {
		for _, i := range ix.byPath[in.source.Path] {
			o := &ix.objects[i]
			if o.Root != root || o.Source != in.source {
				continue
			}
			self := o.Kind == in.id.Kind && o.Name == in.id.Name && (o.Namespace == in.id.Namespace || o.Namespace == "") ||
				ix.fluxRendersAs(o, in) || ix.argoRendersAs(o, in)
			if self || included {
				out[WorkloadID{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name}] = in
			}
		}
	}
	return out
}

func (ix *Index) kustomizationPath(dir string) string {
	if r := ix.roots[dir]; r != nil {
		return path.Join(dir, r.File)
	}
	return path.Join(dir, kustomizationFileNames[0])
}

// lostAnnotationError says a render of the workload lacks an annotation
// the edit wrote: something later in the build overrides it.
type lostAnnotationError struct {
	workload, rendered WorkloadID
	key, got, want     string
}

func (e *lostAnnotationError) Error() string {
	return fmt.Sprintf("%s: annotation %s is %q, want %q", e.rendered, e.key, e.got, e.want)
}

func compareRenders(before, after renderResult, intended map[WorkloadID]intent) error {
	if after.err != nil {
		return after.err
	}
	if len(before.objects) != len(after.objects) {
		return fmt.Errorf("%d objects instead of %d", len(after.objects), len(before.objects))
	}
	for i := range before.objects {
		b, a := before.objects[i], after.objects[i]
		if b.id != a.id {
			return fmt.Errorf("%s rendered where %s was", a.id, b.id)
		}
		in, ok := intended[a.id]
		if !ok {
			afterJSON, err := json.Marshal(a.body)
			if err != nil {
				return err
			}
			if !bytes.Equal(b.json, afterJSON) && !changedOnlyInKedgeFields(b.json, a.body) {
				return fmt.Errorf("%s changes beyond the restart annotations", a.id)
			}
			continue
		}
		if in.release != nil {
			var beforeBody map[string]any
			if err := json.Unmarshal(b.json, &beforeBody); err != nil {
				return err
			}
			if err := compareRelease(beforeBody, a.body, in, a.id); err != nil {
				return err
			}
			continue
		}
		got := templateAnnotations(a.body)
		keys := make([]string, 0, len(in.set))
		for k := range in.set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if got[k] != in.set[k] {
				return &lostAnnotationError{workload: in.id, rendered: a.id, key: k, got: got[k], want: in.set[k]}
			}
		}
		var beforeBody map[string]any
		if err := json.Unmarshal(b.json, &beforeBody); err != nil {
			return err
		}
		afterBody := copyMap(a.body)
		stripTemplateAnnotations(beforeBody, keys)
		stripTemplateAnnotations(afterBody, keys)
		if !reflect.DeepEqual(normalJSON(beforeBody), normalJSON(afterBody)) {
			return fmt.Errorf("%s changes beyond the restart annotations", a.id)
		}
	}
	return nil
}

// normalJSON gives a body the types a JSON round trip gives it, so that a
// decoded render and a rendered one compare by value.
func normalJSON(body map[string]any) any {
	data, err := json.Marshal(body)
	if err != nil {
		return body
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return body
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = copyMap(sub)
		}
		out[k] = v
	}
	return out
}

func templateMetadata(body map[string]any) map[string]any {
	spec, _ := body["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	md, _ := tpl["metadata"].(map[string]any)
	return md
}

func templateAnnotations(body map[string]any) map[string]string {
	out := map[string]string{}
	ann, _ := templateMetadata(body)["annotations"].(map[string]any)
	for k, v := range ann {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// stripTemplateAnnotations removes keys, and the mappings the edit may have
// created to hold them once they are empty.
func stripTemplateAnnotations(body map[string]any, keys []string) {
	spec, _ := body["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	md, _ := tpl["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		return
	}
	for _, k := range keys {
		delete(ann, k)
	}
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	if len(md) == 0 {
		delete(tpl, "metadata")
	}
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
		sort.Strings(out[f])
		out[f] = slices.Compact(out[f])
	}
	return out
}

// RenderedObject is one object of a kustomize root's render.
type RenderedObject struct {
	APIVersion, Kind, Namespace, Name string
	Body                              map[string]any
}

// RenderRoot renders a kustomize root of the index, with the files of
// replace (repo-relative paths) as an edit would leave them.
func (ix *Index) RenderRoot(root string, replace map[string][]byte) ([]RenderedObject, error) {
	r := ix.roots[root]
	if r == nil || r.Problem != nil {
		return nil, fmt.Errorf("%s is not a kustomize root kedge renders", root)
	}
	abs := make(map[string][]byte, len(replace))
	for rel, data := range replace {
		abs[ix.abs(rel)] = data
	}
	built := builtObjects(buildRoot(ix.fs, ix.abs(r.Dir), abs), false)
	if built.err != nil {
		return nil, built.err
	}
	out := make([]RenderedObject, 0, len(built.objects))
	for _, o := range built.objects {
		out = append(out, RenderedObject{APIVersion: nestedString(o.body, "apiVersion"), Kind: o.id.Kind, Namespace: o.id.Namespace, Name: o.id.Name, Body: o.body})
	}
	return out, nil
}

// Readers returns the kustomize roots whose builds read a repo-relative
// file.
func (ix *Index) Readers(file string) []string { return slices.Clone(ix.readers[file]) }

// ReadFile reads a repo-relative file of the checkout, refusing one that a
// symlink places outside it.
func (ix *Index) ReadFile(rel string) ([]byte, error) { return ix.readInside(rel) }

// NamespacesIn returns the Namespace documents written in a repo-relative
// file; for a kustomization, those of its inline patches.
func (ix *Index) NamespacesIn(file string) ([]Namespace, error) {
	if slices.Contains(kustomizationFileNames, path.Base(file)) {
		return slices.Clone(ix.inlineNamespaces[file]), nil
	}
	data, err := ix.readInside(file)
	if err != nil {
		return nil, err
	}
	docs, err := parseDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []Namespace
	for _, d := range docs {
		if isNamespaceKind(d.APIVersion, d.Kind) {
			out = append(out, renderedNamespace(d.Name, d.Labels, "", file))
		}
	}
	return out, nil
}

// changedOnlyInKedgeFields reports whether a rendered GitOps object differs
// from its render before only in the fields kedge's edits of it write: a
// Flux Kustomization's patches, an Argo CD Application source's kustomize
// patches or Helm values and parameters, a Flux HelmRelease's values. What
// those do is checked by building the path or rendering the chart
// (checkFlux, checkArgo, checkValues).
func changedOnlyInKedgeFields(beforeJSON []byte, after map[string]any) bool {
	var strip func(spec map[string]any)
	apiVersion, _ := after["apiVersion"].(string)
	kind, _ := after["kind"].(string)
	switch {
	case kind == "Kustomization" && apiGroup(apiVersion) == "kustomize.toolkit.fluxcd.io":
		strip = func(spec map[string]any) { delete(spec, "patches") }
	case isApplicationKind(apiVersion, kind):
		strip = func(spec map[string]any) {
			stripSourceBlock(spec, "kustomize", "patches")
			stripSourceBlock(spec, "helm", "values", "valuesObject", "parameters")
		}
	case isHelmReleaseKind(apiVersion, kind):
		strip = func(spec map[string]any) { delete(spec, "values") }
	default:
		return false
	}
	afterJSON, err := json.Marshal(after)
	if err != nil {
		return false
	}
	// Fresh decodes, so that stripping writes into neither render.
	var b, a map[string]any
	if json.Unmarshal(beforeJSON, &b) != nil || json.Unmarshal(afterJSON, &a) != nil {
		return false
	}
	for _, body := range []map[string]any{b, a} {
		if spec, ok := body["spec"].(map[string]any); ok {
			strip(spec)
		}
	}
	return reflect.DeepEqual(b, a)
}

// stripSourceBlock deletes fields of one block (kustomize, helm) of every
// source of an Application spec, and the block when nothing else is left.
func stripSourceBlock(spec map[string]any, block string, fields ...string) {
	sources := []any{spec["source"]}
	if list, ok := spec["sources"].([]any); ok {
		sources = append(sources, list...)
	}
	for _, s := range sources {
		src, _ := s.(map[string]any)
		b, _ := src[block].(map[string]any)
		if b == nil {
			continue
		}
		for _, f := range fields {
			delete(b, f)
		}
		if len(b) == 0 {
			delete(src, block)
		}
	}
}
