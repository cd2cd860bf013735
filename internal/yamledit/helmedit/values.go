package helmedit

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kedge-io/kedge/internal/yamledit"
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
	at, err := yamledit.ParsePath(m.At)
	if err != nil {
		return nil, false, err
	}
	names, err := annotationNames(set)
	if err != nil {
		return nil, false, err
	}
	out = src
	for _, k := range names {
		f, obj, err := yamledit.OpenDocument(out, doc, m.Kind)
		if err != nil {
			return nil, false, err
		}
		next, ch, err := f.SetScalar(obj.Doc, obj.Path.Append(at).Key(valuePath...), k, set[k])
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
	at, err := yamledit.ParsePath(m.At)
	if err != nil {
		return nil, false, err
	}
	f, obj, err := yamledit.OpenDocument(src, doc, m.Kind)
	if err != nil {
		return nil, false, err
	}
	block, err := readLiteralBlock(f, obj.Node, at)
	if err != nil {
		return nil, false, err
	}
	if f.EndsWithoutBreak(block.last) {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "the file ends without a line break after %s", at)
	}
	edited, err := setInText(block.text(), valuePath, set)
	if err != nil {
		return nil, false, err
	}
	sp := block.splice(f, edited, f.EOL(block.first))
	if sp == nil {
		return src, false, nil
	}
	want := edited
	if block.strip {
		want = strings.TrimRight(edited, "\n")
	}
	full := obj.Path.Append(at)
	out, err = f.Commit(obj.Doc, sp, func(root *yaml.Node) error {
		n := full.Find(root)
		if n == nil || n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s is not a scalar", full)
		}
		n.Value = want
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

// readLiteralBlock finds the literal block scalar at path below m.
func readLiteralBlock(f *yamledit.File, m *yaml.Node, path yamledit.Path) (*literalBlock, error) {
	k, v, err := f.Lookup(m, path)
	if err != nil {
		return nil, err
	}
	if v == nil || v.Kind != yaml.ScalarNode || v.Style != yaml.LiteralStyle {
		return nil, yamledit.Refuse(yamledit.CodeUnsupported, "%s is not a literal block scalar (|)", path)
	}
	_, after, _ := strings.Cut(f.Line(k.Line), ":")
	indicator := strings.TrimSpace(after)
	if c := strings.Index(indicator, " #"); c >= 0 {
		indicator = strings.TrimSpace(indicator[:c])
	}
	if indicator != "|" && indicator != "|-" {
		return nil, yamledit.Refuse(yamledit.CodeUnsupported, "%s has the block header %q; only | and |- are edited", path, indicator)
	}
	b := &literalBlock{first: k.Line + 1, indent: -1, strip: indicator == "|-"}
	for n := b.first; n <= f.Lines(); n++ {
		c := f.Line(n)
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
		return nil, yamledit.Refuse(yamledit.CodeUnsupported, "%s is empty", path)
	}
	for n := b.first; n <= b.last; n++ {
		c := f.Line(n)
		if strings.TrimSpace(c) == "" {
			c = ""
		} else {
			c = c[b.indent:]
		}
		b.lines = append(b.lines, c)
	}
	if strings.TrimRight(b.text(), "\n") != strings.TrimRight(v.Value, "\n") {
		return nil, yamledit.Refuse(yamledit.CodeUnsupported, "%s could not be read line by line", path)
	}
	return b, nil
}

func (b *literalBlock) text() string { return strings.Join(b.lines, "\n") + "\n" }

// splice puts the edited text back: the lines it shares with the block at
// its start and end stay, the others are written with the block's indent.
func (b *literalBlock) splice(f *yamledit.File, edited, eol string) *yamledit.Splice {
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
	return f.ReplaceLines(b.first+p, b.first-1+len(b.lines)-q, text.String())
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
		f, err := yamledit.Open([]byte(text))
		if err != nil {
			return "", err
		}
		if f.Documents() != 1 {
			return "", yamledit.Refuse(yamledit.CodeUnsupported, "the values text holds %d documents", f.Documents())
		}
		out, _, err := f.SetScalar(0, yamledit.Keys(valuePath...), k, set[k])
		if err != nil {
			return "", err
		}
		text = string(out)
	}
	return text, nil
}

// annotationNames checks the annotations kedge sets and returns their keys
// in the order they are written.
func annotationNames(set map[string]string) ([]string, error) {
	names := make([]string, 0, len(set))
	for k, v := range set {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, yamledit.Refuse(yamledit.CodeInvalidInput, "annotation key %q is invalid: %s", k, errs[0])
		}
		if !utf8.ValidString(v) || strings.Contains(v, "{{") {
			return nil, yamledit.Refuse(yamledit.CodeInvalidInput, "the value of annotation %q is not plain text", k)
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
		return nil, false, yamledit.Refuse(yamledit.CodeInvalidInput, "parameter %s=%s cannot be written plainly", name, value)
	}
	at, err := yamledit.ParsePath(m.At + ".parameters")
	if err != nil {
		return nil, false, err
	}
	f, obj, err := yamledit.OpenDocument(src, doc, m.Kind)
	if err != nil {
		return nil, false, err
	}
	_, list, err := f.Lookup(obj.Node, at)
	if err != nil {
		return nil, false, err
	}
	if list.Kind != yaml.SequenceNode || list.Style&yaml.FlowStyle != 0 || len(list.Content) == 0 {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "%s is not a block list with items", at)
	}
	full := obj.Path.Append(at)
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode || item.Style&yaml.FlowStyle != 0 {
			return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "item %d of %s is not a block mapping", i, at)
		}
		if yamledit.StringAt(item, "name") != name {
			continue
		}
		if yamledit.StringAt(item, "forceString") != "true" {
			return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "parameter %s is not a string parameter (forceString: true)", name)
		}
		return f.SetScalar(obj.Doc, full.Index(i), "value", value)
	}
	last := list.Content[len(list.Content)-1]
	col := last.Column - 1
	dash := strings.Index(f.Line(last.Line), "-")
	if dash < 0 || dash >= col {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "the items of %s do not start on their dash's line", at)
	}
	end := f.EndLine(list, dash)
	if f.EndsWithoutBreak(end) {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "the file ends without a line break after %s", at)
	}
	pad := strings.Repeat(" ", col)
	lines := []string{
		strings.Repeat(" ", dash) + "-" + strings.Repeat(" ", col-dash-1) + "name: '" + name + "'",
		pad + "value: " + yamledit.DoubleQuoted(value),
		pad + "forceString: true",
	}
	sp, err := f.InsertAfter(end, "", lines)
	if err != nil {
		return nil, false, err
	}
	out, err = f.Commit(obj.Doc, sp, func(root *yaml.Node) error {
		n := full.Find(root)
		if n == nil || n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s is not a list", full)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
			scalarNode("name"), scalarNode(name), scalarNode("value"), scalarNode(value), scalarNode("forceString"), {Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"},
		}})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}
