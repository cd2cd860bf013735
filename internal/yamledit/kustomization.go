package yamledit

import (
	"path"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AddKustomizationPatch makes sure the kustomization lists patchPath under `patches:` as `- path: <path>`,
// adding the `patches:` key at the end when it is missing. Nothing changes when the file is already listed
// there or under the deprecated `patchesStrategicMerge:`.
func AddKustomizationPatch(src []byte, patchPath string) (out []byte, changed bool, err error) {
	return addKustomizationPatch(src, patchPath, nil)
}

// PatchTarget selects the objects a patch file applies to, by kind and name.
type PatchTarget struct{ Kind, Name string }

// AddKustomizationTargetPatch is AddKustomizationPatch for a patch that needs a target (a JSON 6902 patch):
// the entry is `- path: <path>` with `target:` naming the kind and name.
func AddKustomizationTargetPatch(src []byte, patchPath string, t PatchTarget) (out []byte, changed bool, err error) {
	if validation.IsDNS1123Subdomain(t.Name) != nil || validation.IsQualifiedName(t.Kind) != nil || strings.Contains(t.Kind, "/") {
		return nil, false, refuse(CodeInvalidInput, "patch target %s/%s is not a kind and name", t.Kind, t.Name)
	}
	return addKustomizationPatch(src, patchPath, &t)
}

func addKustomizationPatch(src []byte, patchPath string, target *PatchTarget) (out []byte, changed bool, err error) {
	if strings.TrimSpace(patchPath) == "" || strings.ContainsAny(patchPath, "\r\n") || !utf8.ValidString(patchPath) || strings.Contains(patchPath, "{{") {
		return nil, false, refuse(CodeInvalidInput, "patch path %q is not a file path", patchPath)
	}
	s, err := load(src)
	if err != nil {
		return nil, false, err
	}
	doc, root, err := s.kustomization()
	if err != nil {
		return nil, false, err
	}
	if listsPatch(root, patchPath) {
		return s.original(), false, nil
	}
	e := patchEntry{path: patchPath, target: target}
	sp, err := s.planAppendPatch(root, e)
	if err != nil {
		return nil, false, err
	}
	item := &cnode{kind: yaml.MappingNode, tag: "!!map", content: []*cnode{str("path"), str(patchPath)}}
	if target != nil {
		item.content = append(item.content, str("target"), &cnode{kind: yaml.MappingNode, tag: "!!map",
			content: []*cnode{str("kind"), str(target.Kind), str("name"), str(target.Name)}})
	}
	out, err = s.commit(doc, sp, func(r *cnode) error { return expectAppend(r, nil, "patches", item, sp.first) })
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// SetKustomizationLabel sets key=value wherever the kustomization already sets that label: in
// `commonLabels:` and in the `pairs:` of `labels:` entries. It refuses (CodeNotFound) when the kustomization
// does not set the label, and refuses when a place that sets it cannot be edited safely. Beware that
// commonLabels, and labels entries with includeSelectors, also rewrite selectors of the workloads in the
// same kustomization, which are immutable: the caller decides whether that is acceptable.
func SetKustomizationLabel(src []byte, key, value string) ([]byte, bool, error) {
	if err := validateLabel(key, value); err != nil {
		return nil, false, err
	}
	s, err := load(src)
	if err != nil {
		return nil, false, err
	}
	_, root, err := s.kustomization()
	if err != nil {
		return nil, false, err
	}
	places := labelPlaces(root, key)
	if len(places) == 0 {
		return nil, false, refuse(CodeNotFound, "the kustomization sets label %q neither in commonLabels nor in labels", key)
	}
	return atEachPlace(src, places, func(cur *source, doc int, at []step) ([]byte, bool, error) {
		return cur.setScalar(doc, at, key, value)
	})
}

// atEachPlace applies edit at each place of a kustomization in turn, the
// file read afresh before each, so that every edit sees the lines the one
// before wrote.
func atEachPlace(src []byte, places [][]step, edit func(cur *source, doc int, at []step) ([]byte, bool, error)) ([]byte, bool, error) {
	out, changed := src, false
	for _, at := range places {
		cur, err := load(out)
		if err != nil {
			return nil, false, err
		}
		doc, _, err := cur.kustomization()
		if err != nil {
			return nil, false, err
		}
		next, ch, err := edit(cur, doc, at)
		if err != nil {
			return nil, false, err
		}
		if ch {
			out, changed = next, true
		}
	}
	return out, changed, nil
}

// kustomization returns the file's only document, which must be a mapping.
func (s *source) kustomization() (int, *yaml.Node, error) {
	doc := -1
	for i := range s.docs {
		if s.root(i) == nil {
			continue
		}
		if doc >= 0 {
			return 0, nil, refuse(CodeAmbiguous, "a kustomization file holds one document, this one holds several")
		}
		doc = i
	}
	if doc < 0 {
		return 0, nil, refuse(CodeNotFound, "the kustomization file is empty")
	}
	root := s.root(doc)
	if root.Kind != yaml.MappingNode {
		return 0, nil, refuse(CodeUnsupported, "the kustomization is not a mapping (line %d)", root.Line)
	}
	return doc, root, nil
}

func cleanPath(p string) string { return path.Clean(strings.TrimSpace(p)) }

// listsPatch tells whether the kustomization already applies the patch file p.
func listsPatch(root *yaml.Node, p string) bool {
	want := cleanPath(p)
	if patches := lookupValue(root, "patches"); patches != nil && patches.Kind == yaml.SequenceNode {
		for _, item := range patches.Content {
			item = deref(item)
			if item.Kind == yaml.ScalarNode && cleanPath(item.Value) == want {
				return true
			}
			if v := lookupValue(item, "path"); v != nil && v.Kind == yaml.ScalarNode && cleanPath(v.Value) == want {
				return true
			}
		}
	}
	if psm := lookupValue(root, "patchesStrategicMerge"); psm != nil && psm.Kind == yaml.SequenceNode {
		for _, item := range psm.Content {
			if item = deref(item); item.Kind == yaml.ScalarNode && cleanPath(item.Value) == want {
				return true
			}
		}
	}
	return false
}

// planAppendPatch appends `- path: p` to `patches:`, writing the new item like the file's existing items.
func (s *source) planAppendPatch(root *yaml.Node, p patchEntry) (*splice, error) {
	if err := s.checkCollection(root, nil); err != nil {
		return nil, err
	}
	k, v, err := s.findKey(root, "patches", nil)
	if err != nil {
		return nil, err
	}
	at := keys("patches")
	if k == nil {
		if root.Style&yaml.FlowStyle != 0 {
			return s.flowInsert(root, nil, writeScalar("patches", keyQuoting(root))+": [{"+p.flow(keyQuoting(root))+"}]")
		}
		if err := s.simpleKeys(root); err != nil {
			return nil, err
		}
		offset, content := sequenceStyle(root)
		indent := root.Content[0].Column - 1
		lines := append([]string{strings.Repeat(" ", indent) + "patches:"}, p.block(indent+offset, content)...)
		// Adding after a last line without a line break would rewrite it.
		if end := s.endLine(root, indent); !s.endsWithoutBreak(end) || !s.startsLine(root.Content[0]) {
			return s.insertAfter(end, "", lines)
		}
		return s.insertBefore(root.Content[0].Line, lines)
	}
	if err := s.checkCollection(v, at); err != nil {
		return nil, err
	}
	switch {
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle != 0 && (len(v.Content) > 0 || v.Line != k.Line || root.Style&yaml.FlowStyle != 0):
		return s.flowInsert(v, at, "{"+p.flow(itemQuoting(v))+"}")
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0:
		content := 2
		if first := v.Content[0]; first.Line == v.Line {
			content = first.Column - v.Column
		}
		item := p.block(v.Column-1, content)
		// Adding after a last line without a line break would rewrite it; the patch goes first instead,
		// which kustomize applies just as well since it only adds kedge's own annotations.
		if end := s.endLine(v, v.Column-1); !s.endsWithoutBreak(end) || !s.startsLine(v) {
			return s.insertAfter(end, "", item)
		}
		return s.insertBefore(v.Line, item)
	case isNull(v) || (v.Kind == yaml.SequenceNode && len(v.Content) == 0):
		if root.Style&yaml.FlowStyle != 0 {
			return nil, refuse(CodeUnsupported, "patches is empty inside a flow mapping (line %d)", k.Line)
		}
		if v.Line != k.Line && v.Value != "" {
			return nil, refuse(CodeUnsupported, "the empty value of patches sits on its own line (line %d)", v.Line)
		}
		head, comment, err := s.keyLineWithoutValue(k, v)
		if err != nil {
			return nil, err
		}
		if comment != "" {
			head += " " + comment
		}
		offset, content := sequenceStyle(root)
		return s.insertAfter(k.Line, head, p.block(k.Column-1+offset, content))
	}
	return nil, refuse(CodeUnsupported, "patches is not a list (line %d)", v.Line)
}

// patchEntry is one `patches:` item of a kustomization: a file, and the target when the patch needs one.
type patchEntry struct {
	path   string
	target *PatchTarget
}

func (e patchEntry) flow(q quoting) string {
	out := writeScalar("path", q) + ": " + writeScalar(e.path, q)
	if e.target != nil {
		out += ", " + writeScalar("target", q) + ": {" + writeScalar("kind", q) + ": " + writeScalar(e.target.Kind, q) +
			", " + writeScalar("name", q) + ": " + writeScalar(e.target.Name, q) + "}"
	}
	return out
}

// block writes the item as lines of a block list whose dash sits at column dashIndent.
func (e patchEntry) block(dashIndent, content int) []string {
	lines := []string{seqItem(dashIndent, content, writeScalar("path", plainIfSafe)+": "+writeScalar(e.path, plainIfSafe))}
	if e.target != nil {
		pad := strings.Repeat(" ", dashIndent+max(content, 2))
		lines = append(lines, pad+"target:",
			pad+"  kind: "+writeScalar(e.target.Kind, plainIfSafe),
			pad+"  name: "+writeScalar(e.target.Name, plainIfSafe))
	}
	return lines
}

// itemQuoting follows the keys of the first mapping item of a flow sequence.
func itemQuoting(seq *yaml.Node) quoting {
	for _, item := range seq.Content {
		if item.Kind == yaml.MappingNode {
			return keyQuoting(item)
		}
	}
	return plainIfSafe
}

func seqItem(dashIndent, content int, entry string) string {
	if content < 2 {
		content = 2
	}
	return strings.Repeat(" ", dashIndent) + "-" + strings.Repeat(" ", content-1) + entry
}

// sequenceStyle reads how the kustomization writes its lists: how far the dash sits right of its key (0 for
// `key:\n- item`) and how far the item sits right of the dash. Without lists it follows `kustomize edit`.
func sequenceStyle(root *yaml.Node) (offset, content int) {
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 || v.Line == k.Line {
			continue
		}
		content = 2
		if first := v.Content[0]; first.Line == v.Line && first.Column > v.Column {
			content = first.Column - v.Column
		}
		if d := v.Column - k.Column; d >= 0 {
			return d, content
		}
	}
	return 0, 2
}
