package yamledit

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// RemoveMetadataLabel removes metadata.labels[key] from the target (for example istio-injection from a
// Namespace). Nothing changes when the label is not set. Only a `key: value` line of a block mapping is
// removed; a label written inside a flow mapping, over several lines, or on a line it shares is refused.
// When it is the only label, `labels:` becomes `labels: {}`.
func RemoveMetadataLabel(src []byte, t Target, key string) ([]byte, bool, error) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, false, refuse(CodeInvalidInput, "label key %q is invalid: %s", key, errs[0])
	}
	s, obj, err := loadTarget(src, t)
	if err != nil {
		return nil, false, err
	}
	full := append(append([]step{}, obj.path...), keys("metadata", "labels")...)
	return s.removeKey(obj.doc, full, key)
}

// RemoveKustomizationLabel removes the label wherever the kustomization sets it: in `commonLabels:` and in
// the `pairs:` of `labels:` entries. Nothing changes when it sets the label nowhere. Like
// SetKustomizationLabel, the caller must check what else the label reaches (selectors, with commonLabels or
// includeSelectors) by rendering.
func RemoveKustomizationLabel(src []byte, key string) ([]byte, bool, error) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, false, refuse(CodeInvalidInput, "label key %q is invalid: %s", key, errs[0])
	}
	s, err := load(src)
	if err != nil {
		return nil, false, err
	}
	_, root, err := s.kustomization()
	if err != nil {
		return nil, false, err
	}
	return atEachPlace(s.original(), labelPlaces(root, key), func(cur *source, doc int, at []step) ([]byte, bool, error) {
		return cur.removeKey(doc, at, key)
	})
}

// ReplaceKustomizationLabels sets the labels of set in each place of the kustomization that sets the label
// anchor (commonLabels, or the pairs of a labels: entry), then removes the labels of remove wherever the
// kustomization sets them: the label change of a namespace whose labels come from a kustomization, made in that
// one file. It refuses (CodeNotFound) when the kustomization does not set anchor.
func ReplaceKustomizationLabels(src []byte, anchor string, set map[string]string, remove []string) ([]byte, bool, error) {
	s, err := load(src)
	if err != nil {
		return nil, false, err
	}
	_, root, err := s.kustomization()
	if err != nil {
		return nil, false, err
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	places := labelPlaces(root, anchor)
	if len(places) == 0 {
		if replaced(root, set, remove) {
			return s.original(), false, nil
		}
		return nil, false, refuse(CodeNotFound, "the kustomization sets label %q neither in commonLabels nor in labels", anchor)
	}
	for _, k := range keys {
		if err := validateLabel(k, set[k]); err != nil {
			return nil, false, err
		}
	}
	out := s.original()
	for _, k := range keys {
		if out, _, err = atEachPlace(out, places, func(cur *source, doc int, at []step) ([]byte, bool, error) {
			return cur.setScalar(doc, at, k, set[k])
		}); err != nil {
			return nil, false, err
		}
	}
	for _, k := range remove {
		if out, _, err = RemoveKustomizationLabel(out, k); err != nil {
			return nil, false, err
		}
	}
	return out, !bytes.Equal(out, src), nil
}

// replaced tells a kustomization that already sets every label of set and none of remove: the replacement is
// done.
func replaced(root *yaml.Node, set map[string]string, remove []string) bool {
	for _, k := range remove {
		if len(labelPlaces(root, k)) > 0 {
			return false
		}
	}
	for k, v := range set {
		places := labelPlaces(root, k)
		if len(places) == 0 {
			return false
		}
		for _, at := range places {
			if m := mappingAt(root, at); m == nil || scalarAt(m, k) != v {
				return false
			}
		}
	}
	return len(set) > 0
}

// mappingAt follows a path of keys and indexes from the root; nil when it leads nowhere.
func mappingAt(n *yaml.Node, path []step) *yaml.Node {
	for _, st := range path {
		switch {
		case st.isIndex() && n.Kind == yaml.SequenceNode && st.index < len(n.Content):
			n = n.Content[st.index]
		case !st.isIndex() && n.Kind == yaml.MappingNode:
			if n = lookupValue(n, st.key); n == nil {
				return nil
			}
		default:
			return nil
		}
	}
	return n
}

// labelPlaces are the paths of the mappings in a kustomization that set the label key.
func labelPlaces(root *yaml.Node, key string) [][]step {
	var places [][]step
	if common := lookupValue(root, "commonLabels"); common != nil && lookupValue(common, key) != nil {
		places = append(places, keys("commonLabels"))
	}
	if labels := lookupValue(root, "labels"); labels != nil && labels.Kind == yaml.SequenceNode {
		for i, entry := range labels.Content {
			if pairs := lookupValue(entry, "pairs"); pairs != nil && lookupValue(pairs, key) != nil {
				places = append(places, []step{{key: "labels", index: -1}, {index: i}, {key: "pairs", index: -1}})
			}
		}
	}
	return places
}

// removeKey removes key from the mapping at path and returns the verified result.
func (s *source) removeKey(doc int, path []step, key string) ([]byte, bool, error) {
	sp, err := s.planRemove(doc, path, key)
	if err != nil {
		return nil, false, err
	}
	if sp == nil {
		return s.original(), false, nil
	}
	out, err := s.commit(doc, sp, func(root *cnode) error { return expectRemove(root, path, key) })
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// planRemove returns the splice that removes the key, or nil when it is not there.
func (s *source) planRemove(doc int, path []step, key string) (*splice, error) {
	node := s.root(doc)
	if node == nil {
		return nil, refuse(CodeNotFound, "document %d is empty", doc)
	}
	var holder *yaml.Node // the key whose value is the mapping
	for i, st := range path {
		if err := s.checkCollection(node, path[:i]); err != nil {
			return nil, err
		}
		if st.isIndex() {
			if node.Kind != yaml.SequenceNode || st.index >= len(node.Content) {
				return nil, nil
			}
			node, holder = node.Content[st.index], nil
			continue
		}
		if node.Kind != yaml.MappingNode {
			return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(path[:i]), node.Line)
		}
		k, v, err := s.findKey(node, st.key, path[:i])
		if err != nil || k == nil || isNull(v) {
			return nil, err
		}
		node, holder = v, k
	}
	if err := s.checkCollection(node, path); err != nil {
		return nil, err
	}
	if node.Kind != yaml.MappingNode {
		return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(path), node.Line)
	}
	k, v, err := s.findKey(node, key, path)
	if err != nil || k == nil {
		return nil, err
	}
	if node.Style&yaml.FlowStyle != 0 {
		return nil, refuse(CodeUnsupported, "%s is a flow mapping (line %d): kedge removes a label only from its own line", pathString(path), node.Line)
	}
	if err := s.ownLine(k, v); err != nil {
		return nil, err
	}
	if len(node.Content) > 2 {
		return &splice{from: k.Line - 1, to: k.Line}, nil
	}
	return s.emptyHolder(holder, k, path)
}

// ownLine checks that the entry k: v is alone on its line: nothing but blanks before the key, a value that
// ends on it, and at most a comment after.
func (s *source) ownLine(k, v *yaml.Node) error {
	text := s.content(k.Line)
	b, ok := s.byteCol(k.Line, k.Column)
	if !ok || strings.TrimLeft(text[:b], " ") != "" {
		return refuse(CodeUnsupported, "the label %q shares line %d with other text", k.Value, k.Line)
	}
	colon, err := s.colonAfterKey(k)
	if err != nil {
		return err
	}
	if v.Kind != yaml.ScalarNode || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) != 0 {
		return refuse(CodeUnsupported, "the value of %q is not a plain string (line %d)", k.Value, v.Line)
	}
	end := colon
	if !isNull(v) || v.Value != "" {
		vb, ok := s.byteCol(v.Line, v.Column)
		if v.Line != k.Line || !ok {
			return refuse(CodeUnsupported, "the value of %q is not on its key's line %d", k.Value, k.Line)
		}
		e, ok := tokenEnd(text, vb, v.Style, blockValue)
		if !ok || !decodesTo(text[vb:e], v.Value) {
			return refuse(CodeUnsupported, "the value of %q spans several lines (line %d)", k.Value, k.Line)
		}
		end = e
	}
	if rest := strings.TrimLeft(text[end:], " \t"); rest != "" && rest[0] != '#' {
		return refuse(CodeUnsupported, "unexpected text after the value of %q on line %d", k.Value, k.Line)
	}
	if s.endLine(v, k.Column-1) != k.Line {
		return refuse(CodeUnsupported, "the value of %q continues after line %d", k.Value, k.Line)
	}
	return nil
}

// emptyHolder removes the only entry of a block mapping: its holding key's line becomes `key: {}` (keeping a
// comment), so the mapping stays a mapping rather than turning null.
func (s *source) emptyHolder(holder, k *yaml.Node, path []step) (*splice, error) {
	if holder == nil || holder.Line >= k.Line {
		return nil, refuse(CodeUnsupported, "%s would be left empty, and kedge cannot rewrite its key (line %d)", pathString(path), k.Line)
	}
	if holder.Line+1 != k.Line {
		return nil, refuse(CodeUnsupported, "%s would be left empty with the lines between its key and its entry (lines %d to %d)", pathString(path), holder.Line, k.Line)
	}
	colon, err := s.colonAfterKey(holder)
	if err != nil {
		return nil, err
	}
	text := s.content(holder.Line)
	head := text[:colon] + " {}"
	if comment := strings.TrimLeft(text[colon:], " \t"); comment != "" {
		if comment[0] != '#' {
			return nil, refuse(CodeUnsupported, "unexpected text after %q on line %d", holder.Value, holder.Line)
		}
		head += " " + comment
	}
	// The new line ends as the removed entry's line did, break or none.
	last := s.lines[k.Line-1]
	return &splice{from: holder.Line - 1, to: k.Line, text: head + string(s.text[last.end:last.next])}, nil
}

// expectRemove applies the intended removal to the meaning of a document.
func expectRemove(root *cnode, path []step, key string) error {
	m, err := root.walk(path, false)
	if err != nil {
		return err
	}
	if m.kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a mapping", pathString(path))
	}
	for i := 0; i+1 < len(m.content); i += 2 {
		if k := m.content[i]; k.kind == yaml.ScalarNode && k.value == key {
			m.content = append(m.content[:i:i], m.content[i+2:]...)
			return nil
		}
	}
	return fmt.Errorf("%s has no key %q", pathString(path), key)
}
