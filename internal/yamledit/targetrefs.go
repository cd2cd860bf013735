package yamledit

import (
	"maps"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TargetRef is one entry of an Istio policy's spec.targetRefs.
type TargetRef struct {
	Group, Kind, Name string
}

// ReplaceSelectorWithTargetRefs attaches an Istio policy (AuthorizationPolicy, RequestAuthentication) to what
// refs name instead of the pods its selector picks: the lines of `spec.selector`, which must hold exactly
// `matchLabels` equal to selector, are replaced by a block `spec.targetRefs` at the same place and indentation,
// each entry written `kind`, `group`, `name` as Istio's documentation writes them, its list dashes placed as the
// object's other lists are. Nothing else changes. It reports changed=false, with src as is, when the object
// already has exactly those targetRefs and no selector. A comment inside the selector, which the edit would
// drop, is refused.
func ReplaceSelectorWithTargetRefs(src []byte, t Target, selector map[string]string, refs []TargetRef) ([]byte, bool, error) {
	if len(refs) == 0 {
		return nil, false, refuse(CodeInvalidInput, "no targetRefs to attach %s to", t)
	}
	for _, r := range refs {
		if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
			return nil, false, refuse(CodeInvalidInput, "target name %q is invalid: %s", r.Name, errs[0])
		}
		if r.Kind == "" || strings.ContainsAny(r.Kind+r.Group, " :#{}[]\"'") {
			return nil, false, refuse(CodeInvalidInput, "target kind %q (group %q) is invalid", r.Kind, r.Group)
		}
	}
	s, obj, err := loadEditable(src, t)
	if err != nil {
		return nil, false, err
	}
	specAt := append(append([]step{}, obj.path...), keys("spec")...)
	sk, spec, err := s.findKey(obj.node, "spec", obj.path)
	switch {
	case err != nil:
		return nil, false, err
	case sk == nil:
		return nil, false, refuse(CodeNotFound, "%s has no spec", t)
	case spec.Kind != yaml.MappingNode || spec.Style&yaml.FlowStyle != 0:
		return nil, false, refuse(CodeUnsupported, "the spec of %s is not a block mapping (line %d)", t, spec.Line)
	}
	if err := s.checkCollection(spec, specAt); err != nil {
		return nil, false, err
	}
	k, v, err := s.findKey(spec, "selector", specAt)
	if err != nil {
		return nil, false, err
	}
	if k == nil {
		if hasTargetRefs(spec, refs) {
			return s.original(), false, nil
		}
		return nil, false, refuse(CodeNotFound, "%s has no spec.selector", t)
	}
	if tk, _, _ := s.findKey(spec, "targetRefs", specAt); tk != nil {
		return nil, false, refuse(CodeUnsupported, "%s has both spec.selector and spec.targetRefs (line %d)", t, tk.Line)
	}
	if err := s.plainSelector(k, v, selector); err != nil {
		return nil, false, err
	}
	indent := k.Column - 1
	// Istio's documentation's style, dash under the key, where the spec
	// writes no block list to follow.
	offset, content := sequenceStyle(spec)
	pad := strings.Repeat(" ", indent+offset)
	lines := []string{strings.Repeat(" ", indent) + "targetRefs:"}
	for _, r := range refs {
		lines = append(lines,
			seqItem(indent+offset, content, "kind: "+writeScalar(r.Kind, plainIfSafe)),
			pad+strings.Repeat(" ", max(content, 2))+"group: "+doubleQuote(r.Group),
			pad+strings.Repeat(" ", max(content, 2))+"name: "+writeScalar(r.Name, plainIfSafe))
	}
	end := s.endLine(v, indent)
	last := s.lines[end-1]
	eol := s.eolOf(k.Line)
	var b strings.Builder
	for i, ln := range lines {
		b.WriteString(ln)
		if i < len(lines)-1 {
			b.WriteString(eol)
		}
	}
	b.Write(s.text[last.end:last.next])
	sp := &splice{from: k.Line - 1, to: end, text: b.String()}
	out, err := s.commit(obj.doc, sp, func(root *cnode) error { return expectTargetRefs(root, specAt, refs) })
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// plainSelector checks that `selector:` heads a block of its own lines holding exactly `matchLabels`, a block
// mapping of strings equal to want, with no comment the edit would drop.
func (s *source) plainSelector(k, v *yaml.Node, want map[string]string) error {
	if _, err := s.colonAfterKey(k); err != nil {
		return err
	}
	if k.LineComment != "" || v.LineComment != "" {
		return refuse(CodeUnsupported, "a comment on spec.selector (line %d) would be lost", k.Line)
	}
	if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 || v.Line == k.Line {
		return refuse(CodeUnsupported, "spec.selector is not a block mapping of its own lines (line %d)", k.Line)
	}
	if err := s.checkCollection(v, keys("spec", "selector")); err != nil {
		return err
	}
	if len(v.Content) != 2 || v.Content[0].Value != "matchLabels" {
		return refuse(CodeUnsupported, "spec.selector holds more than matchLabels (line %d)", k.Line)
	}
	got, err := readStringMap(v, keys("matchLabels"))
	if err != nil {
		return err
	}
	if !maps.Equal(got, want) {
		return refuse(CodeVerification, "spec.selector.matchLabels in the file is not the one the cluster has (line %d)", k.Line)
	}
	var comment func(n *yaml.Node) bool
	comment = func(n *yaml.Node) bool {
		if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
			return true
		}
		for _, c := range n.Content {
			if comment(c) {
				return true
			}
		}
		return false
	}
	if comment(v) {
		return refuse(CodeUnsupported, "a comment inside spec.selector (lines %d to %d) would be lost", k.Line, s.endLine(v, k.Column-1))
	}
	return nil
}

// hasTargetRefs tells a spec that already attaches to exactly refs.
func hasTargetRefs(spec *yaml.Node, refs []TargetRef) bool {
	v := lookupValue(spec, "targetRefs")
	if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) != len(refs) {
		return false
	}
	for i, item := range v.Content {
		r := refs[i]
		if scalarAt(item, "kind") != r.Kind || scalarAt(item, "group") != r.Group || scalarAt(item, "name") != r.Name || len(item.Content) != 6 {
			return false
		}
	}
	return true
}

// expectTargetRefs applies the intended edit to the meaning of a document: the spec's selector entry becomes
// a targetRefs entry in its place.
func expectTargetRefs(root *cnode, specAt []step, refs []TargetRef) error {
	spec, err := root.walk(specAt, false)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(spec.content); i += 2 {
		if k := spec.content[i]; k.kind == yaml.ScalarNode && k.value == "selector" {
			seq := emptySeq()
			for _, r := range refs {
				item := emptyMap()
				item.content = []*cnode{str("kind"), str(r.Kind), str("group"), str(r.Group), str("name"), str(r.Name)}
				seq.content = append(seq.content, item)
			}
			spec.content[i], spec.content[i+1] = str("targetRefs"), seq
			return nil
		}
	}
	return refuse(CodeVerification, "no selector in spec")
}
