package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/yamledit/templated"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

var utf8BOM = []byte("\xEF\xBB\xBF")

// line is one line of the source: text[start:end] is its content, text[end:next] its line break (empty on a
// last line without one).
type line struct{ start, end, next int }

// source is a parsed file. Node positions from the parser are file-absolute because the whole stream goes
// through one decoder; lines are numbered like the parser numbers them, which holds because load refuses
// the line breaks (lone CR, NEL, LS, PS) on which the parser and a LF/CRLF split would disagree.
type source struct {
	bom   bool
	text  []byte // without the byte order mark
	lines []line
	docs  []*yaml.Node // document nodes, empty documents included
}

func load(src []byte) (*source, error) {
	if len(src) > yamlguard.MaxFileBytes {
		return nil, refuse(CodeOverBudget, "%v", &yamlguard.Error{Budget: "size", Found: int64(len(src)), Limit: yamlguard.MaxFileBytes})
	}
	s := &source{text: src}
	if bytes.HasPrefix(src, utf8BOM) {
		s.bom, s.text = true, src[len(utf8BOM):]
	}
	if bytes.HasPrefix(s.text, []byte{0xFE, 0xFF}) || bytes.HasPrefix(s.text, []byte{0xFF, 0xFE}) || bytes.HasPrefix(s.text, []byte{0, 0}) {
		return nil, refuse(CodeUnparsable, "the file is not UTF-8")
	}
	if !utf8.Valid(s.text) {
		return nil, refuse(CodeUnparsable, "the file is not valid UTF-8")
	}
	s.lines = splitLines(s.text)
	for i, l := range s.lines {
		content := s.text[l.start:l.end]
		if bytes.IndexByte(content, '\r') >= 0 {
			return nil, refuse(CodeUnparsable, "line %d has a carriage return that does not end the line", i+1)
		}
		if bytes.Contains(content, []byte("\u0085")) || bytes.Contains(content, []byte("\u2028")) || bytes.Contains(content, []byte("\u2029")) {
			return nil, refuse(CodeUnparsable, "line %d has a Unicode line separator", i+1)
		}
	}
	docs, err := decodeAll(s.text)
	if yamlguard.IsOverBudget(err) {
		return nil, refuse(CodeOverBudget, "%v", err)
	}
	if n := templated.Line(s.text, docs, err == nil); n > 0 {
		return nil, refuse(CodeTemplate, "line %d holds template text ({{) outside a YAML string: the file is not plain YAML", n)
	}
	if err != nil {
		if n := s.firstTabIndentedLine(); n > 0 {
			return nil, refuse(CodeTab, "line %d is indented with a tab, which YAML does not allow", n)
		}
		return nil, refuse(CodeUnparsable, "the file is not valid YAML: %v", err)
	}
	s.docs = docs
	return s, nil
}

// TemplateLine returns the first line of src holding template text ({{)
// outside a YAML string or comment, or 0 when there is none: a file whose
// YAML is a template's (Helm's `{{- if }}`, an unquoted `{{ .Values.x }}`)
// is not what gets applied, while `"{{ .Release.Name }}"`, a string value
// that a chart or External Secrets templates later, is plain YAML.
func TemplateLine(src []byte) int {
	text := bytes.TrimPrefix(src, utf8BOM)
	if !bytes.Contains(text, []byte("{{")) {
		return 0
	}
	docs, err := decodeAll(text)
	return templated.Line(text, docs, err == nil)
}

// decodeAll parses every document of a stream; a panic inside the parser counts as a parse error so that a
// bad file never takes the caller down. Every walk of the nodes follows aliases, so a stream whose aliases
// or nesting exceed the repository budget is refused before anything walks it.
func decodeAll(text []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("parser failure: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(text))
	meter := yamlguard.NewMeter(yamlguard.Repository)
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		if err := meter.Add(&n); err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

func splitLines(text []byte) []line {
	var lines []line
	for start := 0; start < len(text); {
		i := bytes.IndexByte(text[start:], '\n')
		if i < 0 {
			lines = append(lines, line{start, len(text), len(text)})
			break
		}
		end, next := start+i, start+i+1
		if end > start && text[end-1] == '\r' {
			end--
		}
		lines = append(lines, line{start, end, next})
		start = next
	}
	return lines
}

func (s *source) firstTabIndentedLine() int {
	for i, l := range s.lines {
		for _, c := range s.text[l.start:l.end] {
			if c == '\t' {
				return i + 1
			}
			if c != ' ' && c != '-' {
				break
			}
		}
	}
	return 0
}

// content returns line n (1-based) without its line break; a line past the end of the file is empty (the
// parser places some empty values there).
func (s *source) content(n int) string {
	if n < 1 || n > len(s.lines) {
		return ""
	}
	l := s.lines[n-1]
	return string(s.text[l.start:l.end])
}

// eolOf returns the line break of line n (1-based), or the file's first line break when that line has none.
func (s *source) eolOf(n int) string {
	if n >= 1 && n <= len(s.lines) {
		l := s.lines[n-1]
		if l.next > l.end {
			return string(s.text[l.end:l.next])
		}
	}
	for _, l := range s.lines {
		if l.next > l.end {
			return string(s.text[l.end:l.next])
		}
	}
	return "\n"
}

// byteCol converts the parser's column (1-based, counted in characters) on line n into a byte index within
// the line's content; ok is false when the column lies past the end of the line.
func (s *source) byteCol(n, col int) (int, bool) {
	if n < 1 || n > len(s.lines) {
		return 0, false
	}
	c := s.content(n)
	i := 0
	for k := 1; k < col; k++ {
		if i >= len(c) {
			return 0, false
		}
		_, w := utf8.DecodeRuneInString(c[i:])
		i += w
	}
	return i, true
}

// refuseTabBefore refuses when a tab is part of the indentation of n's line (the run of blanks and sequence
// dashes that starts it): the column the parser counts and the column a reader sees then differ, and copying
// that indentation is guesswork. Tabs further right separate tokens and are harmless.
func (s *source) refuseTabBefore(n *yaml.Node, what string) error {
	for _, c := range []byte(s.content(n.Line)) {
		if c == '\t' {
			return refuse(CodeTab, "a tab indents %s on line %d", what, n.Line)
		}
		if c != ' ' && c != '-' {
			return nil
		}
	}
	return nil
}
