package yamledit

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ValuesMap names a mapping of chart values in an object of a file: the
// object's kind, and the dot path ([i] indexing a sequence) of the mapping
// below which the chart's value sits ("spec.source.helm.valuesObject",
// "spec.values").
type ValuesMap struct {
	Kind string
	At   string
}

// SetChartValues makes object doc of the file (counted as Target.Document
// counts), of the map's kind, carry each key=value in the mapping that
// valuePath reaches below the map, creating the mappings it lacks. Keys are
// written in sorted order, after the existing ones; every other line stays
// byte for byte and the result must re-parse to exactly that change.
func SetChartValues(src []byte, doc int, m ValuesMap, valuePath []string, set map[string]string) (out []byte, changed bool, err error) {
	at, err := parseListPath(m.At)
	if err != nil {
		return nil, false, err
	}
	names, err := annotationNames(set)
	if err != nil {
		return nil, false, err
	}
	out = src
	for _, k := range names {
		s, obj, err := loadDocumentOfKind(out, doc, m.Kind)
		if err != nil {
			return nil, false, err
		}
		full := append(append(append([]step{}, obj.path...), at...), keys(valuePath...)...)
		next, ch, err := s.setScalar(obj.doc, full, k, set[k])
		if err != nil {
			return nil, false, err
		}
		if ch {
			out, changed = next, true
		}
	}
	return out, changed, nil
}

// SetChartValuesText is SetChartValues for values written as YAML text in
// a literal block scalar (values: | or |-): the text is edited as a
// document of its own, exactly, and only its changed lines are put back,
// with the block's indentation.
func SetChartValuesText(src []byte, doc int, m ValuesMap, valuePath []string, set map[string]string) (out []byte, changed bool, err error) {
	if _, err := annotationNames(set); err != nil {
		return nil, false, err
	}
	at, err := parseListPath(m.At)
	if err != nil {
		return nil, false, err
	}
	s, obj, err := loadDocumentOfKind(src, doc, m.Kind)
	if err != nil {
		return nil, false, err
	}
	block, err := s.literalBlock(obj.node, at)
	if err != nil {
		return nil, false, err
	}
	if s.endsWithoutBreak(block.last) {
		return nil, false, refuse(CodeUnsupported, "the file ends without a line break after %s", pathString(at))
	}
	edited, err := setInText(block.text(), valuePath, set)
	if err != nil {
		return nil, false, err
	}
	sp := block.splice(edited, s.eolOf(block.first))
	if sp == nil {
		return src, false, nil
	}
	want := edited
	if block.strip {
		want = strings.TrimRight(edited, "\n")
	}
	full := append(append([]step{}, obj.path...), at...)
	out, err = s.commit(obj.doc, sp, func(root *cnode) error {
		n := root.at(full)
		if n == nil || n.kind != yaml.ScalarNode {
			return fmt.Errorf("%s is not a scalar", pathString(full))
		}
		n.value = want
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// literalBlock is a literal block scalar of the file: lines first..last
// (1-based) hold its text, indented by indent.
type literalBlock struct {
	first, last, indent int
	lines               []string
	strip               bool
}

// literalBlock finds the literal block scalar at path below m.
func (s *source) literalBlock(m *yaml.Node, path []step) (*literalBlock, error) {
	var k, v *yaml.Node
	for i, st := range path {
		if st.isIndex() {
			if m.Kind != yaml.SequenceNode || st.index >= len(m.Content) {
				return nil, refuse(CodeNotFound, "%s has no item %d", pathString(path[:i]), st.index)
			}
			m = m.Content[st.index]
			continue
		}
		if m.Kind != yaml.MappingNode {
			return nil, refuse(CodeNotFound, "%s is not a mapping", pathString(path[:i]))
		}
		var err error
		if k, v, err = s.findKey(m, st.key, path[:i]); err != nil {
			return nil, err
		}
		if v == nil {
			return nil, refuse(CodeNotFound, "%s is missing", pathString(path[:i+1]))
		}
		m = v
	}
	if v == nil || v.Kind != yaml.ScalarNode || v.Style != yaml.LiteralStyle {
		return nil, refuse(CodeUnsupported, "%s is not a literal block scalar (|)", pathString(path))
	}
	_, after, _ := strings.Cut(s.content(k.Line), ":")
	indicator := strings.TrimSpace(after)
	if c := strings.Index(indicator, " #"); c >= 0 {
		indicator = strings.TrimSpace(indicator[:c])
	}
	if indicator != "|" && indicator != "|-" {
		return nil, refuse(CodeUnsupported, "%s has the block header %q; only | and |- are edited", pathString(path), indicator)
	}
	b := &literalBlock{first: k.Line + 1, indent: -1, strip: indicator == "|-"}
	for n := b.first; n <= len(s.lines); n++ {
		c := s.content(n)
		if strings.TrimSpace(c) == "" {
			continue
		}
		ind := len(c) - len(strings.TrimLeft(c, " "))
		if b.indent < 0 {
			b.indent = ind
		}
		if ind < b.indent || ind <= k.Column-1 {
			break
		}
		b.last = n
	}
	if b.last < b.first {
		return nil, refuse(CodeUnsupported, "%s is empty", pathString(path))
	}
	for n := b.first; n <= b.last; n++ {
		c := s.content(n)
		if strings.TrimSpace(c) == "" {
			c = ""
		} else {
			c = c[b.indent:]
		}
		b.lines = append(b.lines, c)
	}
	if strings.TrimRight(b.text(), "\n") != strings.TrimRight(v.Value, "\n") {
		return nil, refuse(CodeUnsupported, "%s could not be read line by line", pathString(path))
	}
	return b, nil
}

func (b *literalBlock) text() string { return strings.Join(b.lines, "\n") + "\n" }

// splice puts the edited text back: the lines it shares with the block at
// its start and end stay, the others are written with the block's indent.
func (b *literalBlock) splice(edited, eol string) *splice {
	lines := strings.Split(strings.TrimSuffix(edited, "\n"), "\n")
	p := 0
	for p < len(lines) && p < len(b.lines) && lines[p] == b.lines[p] {
		p++
	}
	if p == len(lines) && p == len(b.lines) {
		return nil
	}
	// Lines added after the block's last one are written with it: the
	// splice then starts on a line of the file, even at its end.
	if p == len(b.lines) {
		p--
	}
	q := 0
	for q < len(lines)-p && q < len(b.lines)-p && lines[len(lines)-1-q] == b.lines[len(b.lines)-1-q] {
		q++
	}
	var text strings.Builder
	for _, l := range lines[p : len(lines)-q] {
		if l != "" {
			text.WriteString(strings.Repeat(" ", b.indent))
		}
		text.WriteString(l + eol)
	}
	return &splice{from: b.first - 1 + p, to: b.first - 1 + len(b.lines) - q, text: text.String()}
}

// setInText sets each key=value in the mapping at valuePath of a YAML
// document given as text, creating the mappings it lacks.
func setInText(text string, valuePath []string, set map[string]string) (string, error) {
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s, err := load([]byte(text))
		if err != nil {
			return "", err
		}
		if len(s.docs) != 1 {
			return "", refuse(CodeUnsupported, "the values text holds %d documents", len(s.docs))
		}
		out, _, err := s.setScalar(0, keys(valuePath...), k, set[k])
		if err != nil {
			return "", err
		}
		text = string(out)
	}
	return text, nil
}

// at returns the node path reaches from c, or nil.
func (c *cnode) at(path []step) *cnode {
	for _, st := range path {
		if st.isIndex() {
			if c.kind != yaml.SequenceNode || st.index >= len(c.content) {
				return nil
			}
			c = c.content[st.index]
			continue
		}
		var next *cnode
		for i := 0; i+1 < len(c.content); i += 2 {
			if c.content[i].value == st.key {
				next = c.content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}

// annotationNames checks the annotations kedge sets and returns their keys
// in the order they are written.
func annotationNames(set map[string]string) ([]string, error) {
	names := make([]string, 0, len(set))
	for k, v := range set {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, refuse(CodeInvalidInput, "annotation key %q is invalid: %s", k, errs[0])
		}
		if !utf8.ValidString(v) || strings.Contains(v, "{{") {
			return nil, refuse(CodeInvalidInput, "the value of annotation %q is not plain text", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// SetChartParameter makes the block list `parameters` of the mapping at
// m.At (an Argo CD source's helm block) carry name=value as a string
// (forceString: true, so that a value of digits stays a string): an item
// of that name gets the value in place, else an item is appended after the
// last one. Every other line stays byte for byte.
func SetChartParameter(src []byte, doc int, m ValuesMap, name, value string) (out []byte, changed bool, err error) {
	if !utf8.ValidString(value) || strings.ContainsAny(value, "\"\\{") || strings.ContainsAny(name, "'\n") {
		return nil, false, refuse(CodeInvalidInput, "parameter %s=%s cannot be written plainly", name, value)
	}
	at, err := parseListPath(m.At + ".parameters")
	if err != nil {
		return nil, false, err
	}
	s, obj, err := loadDocumentOfKind(src, doc, m.Kind)
	if err != nil {
		return nil, false, err
	}
	list := obj.node
	for i, st := range at {
		if st.isIndex() {
			if list.Kind != yaml.SequenceNode || st.index >= len(list.Content) {
				return nil, false, refuse(CodeNotFound, "%s has no item %d", pathString(at[:i]), st.index)
			}
			list = list.Content[st.index]
			continue
		}
		if list.Kind != yaml.MappingNode {
			return nil, false, refuse(CodeNotFound, "%s is not a mapping", pathString(at[:i]))
		}
		_, v, err := s.findKey(list, st.key, at[:i])
		if err != nil {
			return nil, false, err
		}
		if v == nil {
			return nil, false, refuse(CodeNotFound, "%s is missing", pathString(at[:i+1]))
		}
		list = v
	}
	if list.Kind != yaml.SequenceNode || list.Style&yaml.FlowStyle != 0 || len(list.Content) == 0 {
		return nil, false, refuse(CodeUnsupported, "%s is not a block list with items", pathString(at))
	}
	full := append(append([]step{}, obj.path...), at...)
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode || item.Style&yaml.FlowStyle != 0 {
			return nil, false, refuse(CodeUnsupported, "item %d of %s is not a block mapping", i, pathString(at))
		}
		if scalarAt(item, "name") != name {
			continue
		}
		if scalarAt(item, "forceString") != "true" {
			return nil, false, refuse(CodeUnsupported, "parameter %s is not a string parameter (forceString: true)", name)
		}
		return s.setScalar(obj.doc, append(full, step{index: i}), "value", value)
	}
	last := list.Content[len(list.Content)-1]
	col := last.Column - 1
	dash := strings.Index(s.content(last.Line), "-")
	if dash < 0 || dash >= col {
		return nil, false, refuse(CodeUnsupported, "the items of %s do not start on their dash's line", pathString(at))
	}
	end := s.endLine(list, dash)
	if s.endsWithoutBreak(end) {
		return nil, false, refuse(CodeUnsupported, "the file ends without a line break after %s", pathString(at))
	}
	pad := strings.Repeat(" ", col)
	lines := []string{
		strings.Repeat(" ", dash) + "-" + strings.Repeat(" ", col-dash-1) + "name: '" + name + "'",
		pad + "value: " + doubleQuote(value),
		pad + "forceString: true",
	}
	sp, err := s.insertAfter(end, "", lines)
	if err != nil {
		return nil, false, err
	}
	out, err = s.commit(obj.doc, sp, func(root *cnode) error {
		n := root.at(full)
		if n == nil || n.kind != yaml.SequenceNode {
			return fmt.Errorf("%s is not a list", pathString(full))
		}
		n.content = append(n.content, &cnode{kind: yaml.MappingNode, tag: "!!map", content: []*cnode{
			str("name"), str(name), str("value"), str(value), str("forceString"), {kind: yaml.ScalarNode, tag: "!!bool", value: "true"},
		}})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}
