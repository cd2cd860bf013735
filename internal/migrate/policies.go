package migrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/yamledit"
	"github.com/kedge-io/kedge/internal/yamledit/policyedit"
)

// PolicyEdit is the change of one file that carries policies over to
// ambient mode: each one's spec.selector replaced by spec.targetRefs.
type PolicyEdit struct {
	Path   string
	Before []byte
	After  []byte
	apply  func([]byte) ([]byte, bool, error)
}

// Onto makes the same change in another version of the file.
func (e *PolicyEdit) Onto(src []byte) ([]byte, error) {
	out, _, err := e.apply(src)
	return out, err
}

// placed returns the findings with the file each object is written in:
// the namespace's own file for the Namespace, else the one document the
// index places the object in ("" when none, several files joined).
func (c *Checkout) placed(findings []ambient.Finding, namespacePath string) []ambient.Finding {
	out := make([]ambient.Finding, len(findings))
	for i, f := range findings {
		if f.Object.Kind == "Namespace" {
			f.Path = namespacePath
		} else {
			var paths []string
			for _, m := range c.written(f.Object) {
				if !containsString(paths, m.Source.Path) {
					paths = append(paths, m.Source.Path)
				}
			}
			f.Path = strings.Join(paths, ", ")
		}
		out[i] = f
	}
	return out
}

// written are the places the repository writes an object: its documents
// rendered or applied into the object's namespace, or written without a
// namespace for the GitOps tool to give one, each once.
func (c *Checkout) written(ref ambient.Ref) []index.MeshObject {
	var out []index.MeshObject
	seen := map[index.Source]bool{}
	for _, m := range c.ix.MeshObjects() {
		if m.Kind != ref.Kind || m.Name != ref.Name || (m.Namespace != ref.Namespace && m.Namespace != "") || m.Source.Path == "" {
			continue
		}
		if !seen[m.Source] {
			seen[m.Source] = true
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Source.Path != out[j].Source.Path {
			return out[i].Source.Path < out[j].Source.Path
		}
		return out[i].Source.Document < out[j].Source.Document
	})
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// carried is one policy rewrite located in a file.
type carried struct {
	finding int // index into the migration's Carried
	ref     ambient.Ref
	source  index.Source
	rewrite *ambient.Rewrite
}

// carry makes the rewrites the move carries over in the files that write
// the policies, one edit per file, each verified by rendering. It returns
// the edits and the carried findings with their files, or, when a policy
// cannot be edited safely, the refusals that keep the namespace where it
// is: moving it without the rewrite would leave a policy ztunnel turns
// into a DENY of all traffic.
func (c *Checkout) carry(m *drift.Migration) ([]*PolicyEdit, []ambient.Finding, []ambient.Finding) {
	var refused []ambient.Finding
	byFile := map[string][]carried{}
	placed := c.placed(m.Carried, m.Manifest.Path)
	for i, f := range m.Carried {
		refuse := func(why string) {
			r := placed[i]
			r.Rewrite = nil
			r.Reason = "kedge would carry it over (" + strings.TrimPrefix(f.Reason, "carried over: ") + "), but " + why
			refused = append(refused, r)
		}
		where := c.written(f.Object)
		switch len(where) {
		case 0:
			refuse("the repository the Namespace is applied from does not write it (or a generator does), so kedge cannot change it there")
			continue
		case 1:
		default:
			refuse("several documents write it (" + placed[i].Path + "), so kedge cannot tell which one applies")
			continue
		}
		byFile[where[0].Source.Path] = append(byFile[where[0].Source.Path], carried{finding: i, ref: f.Object, source: where[0].Source, rewrite: f.Rewrite})
	}
	if len(refused) > 0 {
		return nil, placed, refused
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	var edits []*PolicyEdit
	for _, file := range files {
		edit, err := c.policyEdit(file, byFile[file])
		if err == nil && edit == nil {
			continue
		}
		if err != nil {
			for _, cr := range byFile[file] {
				r := placed[cr.finding]
				r.Rewrite = nil
				r.Reason = "kedge would carry it over, but the edit of " + file + " is refused: " + refusalText(err)
				refused = append(refused, r)
			}
			continue
		}
		edits = append(edits, edit)
	}
	if len(refused) > 0 {
		return nil, placed, refused
	}
	return edits, placed, nil
}

// policyEdit rewrites every carried policy of one file and proves the
// result.
func (c *Checkout) policyEdit(file string, policies []carried) (*PolicyEdit, error) {
	apply := func(src []byte) ([]byte, bool, error) {
		out := src
		for _, p := range policies {
			next, _, err := policyedit.ReplaceSelectorWithTargetRefs(out, targetOf(p.source), p.rewrite.Selector, targetRefs(p.rewrite))
			if err != nil {
				return nil, false, err
			}
			out = next
		}
		return out, !bytes.Equal(out, src), nil
	}
	before, err := c.ix.ReadFile(file)
	if err != nil {
		return nil, err
	}
	after, changed, err := apply(before)
	if err != nil {
		return nil, err
	}
	if !changed {
		// Git has the rewrite already (a merged pull request not yet
		// applied): nothing more to write.
		return nil, nil
	}
	if err := c.verifyPolicies(file, before, after, policies); err != nil {
		return nil, err
	}
	return &PolicyEdit{Path: file, Before: before, After: after, apply: apply}, nil
}

func targetOf(src index.Source) yamledit.Target {
	return yamledit.Target{Kind: src.Kind, Name: src.Name, Namespace: src.Namespace, Document: src.Document}
}

func targetRefs(rw *ambient.Rewrite) []policyedit.TargetRef {
	out := make([]policyedit.TargetRef, len(rw.TargetRefs))
	for i, t := range rw.TargetRefs {
		out[i] = policyedit.TargetRef{Group: t.Group, Kind: t.Kind, Name: t.Name}
	}
	return out
}

// verifyPolicies renders every kustomize root that reads the file before
// and after the edit (a file no root reads is applied as it is written, so
// its documents are what is compared), and accepts the edit only when the
// sole difference is each policy's selector turned into its targetRefs.
func (c *Checkout) verifyPolicies(file string, before, after []byte, policies []carried) error {
	roots := c.ix.Readers(file)
	if len(roots) == 0 {
		b, err := documents(before)
		if err != nil {
			return err
		}
		a, err := documents(after)
		if err != nil {
			return fmt.Errorf("the edited file does not parse: %w", err)
		}
		seen, err := comparePolicies(b, a, policies, true)
		if err == nil && seen < len(policies) {
			err = fmt.Errorf("the file does not hold every policy it is said to")
		}
		return err
	}
	seen := 0
	for _, root := range c.deployedRoots(roots) {
		b, err := c.objects(root, nil)
		if err != nil {
			return fmt.Errorf("rendering %s: %w", root, err)
		}
		a, err := c.objects(root, map[string][]byte{file: after})
		if err != nil {
			return fmt.Errorf("rendering %s with the edit: %w", root, err)
		}
		n, err := comparePolicies(b, a, policies, false)
		if err != nil {
			return fmt.Errorf("in %s, %w", root, err)
		}
		seen += n
	}
	if seen < len(policies) {
		return fmt.Errorf("no kustomize root renders every policy into namespace %s", policies[0].ref.Namespace)
	}
	return nil
}

// deployedRoots are the roots no other of them includes: a base read by
// an overlay is applied through the overlay, and rendered there.
func (c *Checkout) deployedRoots(roots []string) []string {
	var out []string
	for _, r := range roots {
		included := false
		for _, other := range roots {
			if rr := c.renderAt(other); other != r && rr != nil && rr.includes[r] {
				included = true
			}
		}
		if !included {
			out = append(out, r)
		}
	}
	return out
}

// documents reads a plain file's objects as the API server would receive
// them, keyed as rendered objects are.
func documents(data []byte) (map[objectID]map[string]any, error) {
	out := map[objectID]map[string]any{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var body map[string]any
		if err := sigsyaml.Unmarshal(doc, &body); err != nil {
			return nil, err
		}
		if len(body) == 0 {
			continue
		}
		u := unstructured.Unstructured{Object: body}
		out[objectID{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}] = body
	}
}

// comparePolicies holds two renders to the intended change, and counts the
// policies it found. In a plain file a policy may be written without a
// namespace.
func comparePolicies(before, after map[objectID]map[string]any, policies []carried, plain bool) (int, error) {
	want := maps.Clone(before)
	seen := 0
	for _, p := range policies {
		for id, b := range before {
			if id.kind != p.ref.Kind || id.name != nameIn(p, plain) || (id.namespace != p.ref.Namespace && !(plain && id.namespace == "")) {
				continue
			}
			seen++
			sel, _, _ := unstructured.NestedStringMap(b, "spec", "selector", "matchLabels")
			if !maps.Equal(sel, p.rewrite.Selector) {
				return 0, fmt.Errorf("%s %s is rendered with spec.selector.matchLabels %v, not the %v the cluster has", p.ref.Kind, id.name, sel, p.rewrite.Selector)
			}
			want[id] = withTargetRefs(b, p.rewrite)
		}
	}
	if changed := unintended(want, after); len(changed) > 0 {
		return 0, fmt.Errorf("the edit changes %s otherwise than intended", strings.Join(changed, ", "))
	}
	return seen, nil
}

// nameIn is the name a policy has where it is compared: as written in a
// plain file, as rendered otherwise.
func nameIn(p carried, plain bool) string {
	if plain {
		return p.source.Name
	}
	return p.ref.Name
}

// withTargetRefs is a copy of a policy's body as the rewrite leaves it.
func withTargetRefs(body map[string]any, rw *ambient.Rewrite) map[string]any {
	out := runtime.DeepCopyJSON(body)
	unstructured.RemoveNestedField(out, "spec", "selector")
	refs := make([]any, len(rw.TargetRefs))
	for i, t := range rw.TargetRefs {
		refs[i] = map[string]any{"kind": t.Kind, "group": t.Group, "name": t.Name}
	}
	_ = unstructured.SetNestedSlice(out, refs, "spec", "targetRefs")
	return out
}
