package restart

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

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
)

// Verifier renders every kustomize root an edit reaches, before and after,
// and accepts the edit only when the sole difference is the intended pod
// template annotations of the intended workloads; a site whose edit
// changes how its GitOps object builds (a Checker) renders that build too.
// This is what makes a patch whose name kustomize resolves differently, or
// an in-place edit that another overlay also renders, fail safe instead of
// restarting the wrong workloads.
type Verifier struct {
	ix *index.Index
	// before holds each root's render without edits: the namespaces whose
	// edits a shared base reaches are verified concurrently, against one
	// render of it.
	mu     sync.Mutex
	before map[string]*beforeRender
	// docs are the parsed files plain kustomizations list.
	docs *index.DocCache
}

type beforeRender struct {
	once   sync.Once
	result index.Render
}

// NewVerifier returns a verifier of edits of the index's checkout.
func NewVerifier(ix *index.Index) *Verifier {
	return &Verifier{ix: ix, before: map[string]*beforeRender{}, docs: ix.NewDocCache()}
}

// renderBefore renders root without edits, once.
func (v *Verifier) renderBefore(root string) index.Render {
	v.mu.Lock()
	b, ok := v.before[root]
	if !ok {
		b = &beforeRender{}
		v.before[root] = b
	}
	v.mu.Unlock()
	b.once.Do(func() { b.result = v.ix.Build(root, nil, true) })
	return b.result
}

// Check returns the edits that verify, refusals for the others, and the
// workloads whose intended annotations a render lost (an overlay overrides
// them).
func (v *Verifier) Check(edits []FileEdit, intended []Intent) ([]FileEdit, []Refusal, map[WorkloadID]bool) {
	replace := map[string][]byte{}
	for _, e := range edits {
		replace[e.Path] = e.After
	}
	affected := map[string][]int{} // root → indices of edits it reads
	for i, e := range edits {
		readers := v.ix.Readers(e.Path)
		if e.Created {
			readers = v.ix.Readers(v.ix.KustomizationPath(path.Dir(e.Path)))
		}
		for _, r := range readers {
			affected[r] = append(affected[r], i)
		}
	}
	failed := map[int]string{}
	fail := func(i int, reason string) {
		if _, done := failed[i]; !done {
			failed[i] = reason
		}
	}
	overridden := map[WorkloadID]bool{}
	for _, root := range slices.Sorted(maps.Keys(affected)) {
		intendedHere := v.intendedIn(root, intended)
		if handled, err := v.checkPlain(root, replace, intendedHere); handled {
			if err != nil {
				for _, i := range affected[root] {
					fail(i, fmt.Sprintf("rendering %s with the edit: %v", root, err))
				}
			}
			continue
		}
		before := v.renderBefore(root)
		if before.Err != nil {
			continue // the index already reported this root
		}
		after := v.ix.Build(root, replace, false)
		if err := compareRenders(before, after, intendedHere); err != nil {
			var lost *lostAnnotationError
			if errors.As(err, &lost) {
				overridden[lost.workload] = true
			}
			for _, i := range affected[root] {
				fail(i, fmt.Sprintf("rendering %s with the edit: %v", root, err))
			}
		}
	}
	v.checkSites(edits, intended, fail)
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

// checkSites runs the check of every site that has one, with the intents
// it covers, on the edits of its file.
func (v *Verifier) checkSites(edits []FileEdit, intended []Intent, fail func(int, string)) {
	type group struct {
		site    Checker
		file    string
		intents map[WorkloadID]Intent
	}
	groups := map[string]*group{}
	for _, in := range intended {
		c, ok := in.Site.(Checker)
		if !ok {
			continue
		}
		g := groups[c.CheckKey()]
		if g == nil {
			g = &group{site: c, file: in.Site.File(), intents: map[WorkloadID]Intent{}}
			groups[c.CheckKey()] = g
		}
		g.intents[c.Rendered()] = in
	}
	keys := slices.Sorted(maps.Keys(groups))
	for i, e := range edits {
		for _, k := range keys {
			g := groups[k]
			if g.file != e.Path {
				continue
			}
			if err := g.site.Check(v.ix, e, g.intents); err != nil {
				fail(i, err.Error())
			}
		}
	}
}

// checkPlain verifies the edits a plain kustomization reads (one the index
// reads without kustomize, before and after the edits): the same workloads
// in the same order, the intended annotations set, and every other
// template annotation as it was. It reports false when the root is not
// plain on either side; kustomize then renders it.
func (v *Verifier) checkPlain(root string, replace map[string][]byte, intended map[WorkloadID]Intent) (bool, error) {
	for _, in := range intended {
		if in.Compare != nil {
			return false, nil // only kustomize's render holds a release's post-renderers
		}
	}
	before, ok := v.ix.RenderPlain(root, nil, v.docs)
	if !ok {
		return false, nil
	}
	after, ok := v.ix.RenderPlain(root, replace, v.docs)
	if !ok {
		return false, nil
	}
	if len(before) != len(after) {
		return true, fmt.Errorf("%d workloads instead of %d", len(after), len(before))
	}
	for i := range before {
		b, a := &before[i], &after[i]
		id := WorkloadID{Namespace: a.Namespace, Kind: a.Kind, Name: a.Name}
		if (WorkloadID{Namespace: b.Namespace, Kind: b.Kind, Name: b.Name}) != id {
			return true, fmt.Errorf("%s rendered where %s/%s %s was", id, b.Namespace, b.Name, b.Kind)
		}
		want := maps.Clone(b.TemplateAnnotations)
		if in, ok := intended[id]; ok {
			if want == nil {
				want = map[string]string{}
			}
			maps.Copy(want, in.Set)
		}
		if !maps.Equal(want, a.TemplateAnnotations) {
			return true, fmt.Errorf("%s: template annotations %v, want %v", id, a.TemplateAnnotations, want)
		}
	}
	return true, nil
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
func (v *Verifier) intendedIn(root string, intended []Intent) map[WorkloadID]Intent {
	out := map[WorkloadID]Intent{}
	included := len(v.ix.IncludedBy(root)) > 0
	for _, in := range intended {
		for _, i := range v.ix.ByPath(in.Source.Path) {
			o := v.ix.Object(i)
			if o.Root != root || o.Source != in.Source {
				continue
			}
			self := o.Kind == in.ID.Kind && o.Name == in.ID.Name && (o.Namespace == in.ID.Namespace || o.Namespace == "")
			if in.Renames != nil && !self {
				self = in.Renames.RendersAs(v.ix, o, in.ID)
			}
			if self || included {
				out[WorkloadID{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name}] = in
			}
		}
	}
	return out
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

// CompareRenders reports how after differs from before beyond the
// intended restarts, keyed by the identity the render gives each.
func CompareRenders(before, after index.Render, intended map[WorkloadID]Intent) error {
	return compareRenders(before, after, intended)
}

func compareRenders(before, after index.Render, intended map[WorkloadID]Intent) error {
	if after.Err != nil {
		return after.Err
	}
	if len(before.Objects) != len(after.Objects) {
		return fmt.Errorf("%d objects instead of %d", len(after.Objects), len(before.Objects))
	}
	for i := range before.Objects {
		b, a := before.Objects[i], after.Objects[i]
		if b.ID != a.ID {
			return fmt.Errorf("%s rendered where %s was", a.ID, b.ID)
		}
		in, ok := intended[a.ID]
		if !ok {
			afterJSON, err := json.Marshal(a.Body)
			if err != nil {
				return err
			}
			if !bytes.Equal(b.JSON, afterJSON) && !changedOnlyInKedgeFields(b.JSON, a.Body) {
				return fmt.Errorf("%s changes beyond the restart annotations", a.ID)
			}
			continue
		}
		var beforeBody map[string]any
		if err := json.Unmarshal(b.JSON, &beforeBody); err != nil {
			return err
		}
		if in.Compare != nil {
			if err := in.Compare(beforeBody, a.Body); err != nil {
				return err
			}
			continue
		}
		got := document.TemplateAnnotations(a.Body)
		keys := slices.Sorted(maps.Keys(in.Set))
		for _, k := range keys {
			if got[k] != in.Set[k] {
				return &lostAnnotationError{workload: in.ID, rendered: a.ID, key: k, got: got[k], want: in.Set[k]}
			}
		}
		afterBody := document.CopyMap(a.Body)
		document.StripTemplateAnnotations(beforeBody, keys)
		document.StripTemplateAnnotations(afterBody, keys)
		if !reflect.DeepEqual(document.NormalJSON(beforeBody), document.NormalJSON(afterBody)) {
			return fmt.Errorf("%s changes beyond the restart annotations", a.ID)
		}
	}
	return nil
}

// changedOnlyInKedgeFields reports whether a rendered GitOps object differs
// from its render before only in the fields kedge's edits of it write: a
// Flux Kustomization's patches, an Argo CD Application source's kustomize
// patches or Helm values and parameters, a Flux HelmRelease's values. What
// those do is checked by building the path or rendering the chart (each
// site's Checker).
func changedOnlyInKedgeFields(beforeJSON []byte, after map[string]any) bool {
	var strip func(spec map[string]any)
	apiVersion, _ := after["apiVersion"].(string)
	kind, _ := after["kind"].(string)
	switch {
	case document.IsFluxKustomization(apiVersion, kind):
		strip = func(spec map[string]any) { delete(spec, "patches") }
	case document.IsApplication(apiVersion, kind):
		strip = func(spec map[string]any) {
			stripSourceBlock(spec, "kustomize", "patches")
			stripSourceBlock(spec, "helm", "values", "valuesObject", "parameters")
		}
	case document.IsHelmRelease(apiVersion, kind):
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

// sortByPath orders edits by path.
func sortByPath(edits []FileEdit) {
	sort.Slice(edits, func(i, j int) bool { return edits[i].Path < edits[j].Path })
}
