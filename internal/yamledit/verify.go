package yamledit

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// cnode is the meaning of a YAML node, without layout or comments: kind, resolved tag, scalar text, anchor,
// children in order. Two files mean the same when their cnodes are equal. Comparing scalar text rather than
// decoded values errs on the safe side: `1.0` and `1.00` differ here.
type cnode struct {
	kind    yaml.Kind
	tag     string
	value   string
	anchor  string
	content []*cnode
}

func canon(n *yaml.Node) *cnode {
	c := &cnode{kind: n.Kind, anchor: n.Anchor}
	switch n.Kind {
	case yaml.AliasNode:
		c.value = n.Value
	case yaml.ScalarNode:
		c.tag, c.value = n.ShortTag(), n.Value
	case yaml.MappingNode, yaml.SequenceNode:
		c.tag = n.ShortTag()
	}
	for _, d := range n.Content {
		c.content = append(c.content, canon(d))
	}
	return c
}

func (c *cnode) equal(o *cnode) bool {
	if c.kind != o.kind || c.tag != o.tag || c.value != o.value || c.anchor != o.anchor || len(c.content) != len(o.content) {
		return false
	}
	for i := range c.content {
		if !c.content[i].equal(o.content[i]) {
			return false
		}
	}
	return true
}

func str(s string) *cnode { return &cnode{kind: yaml.ScalarNode, tag: "!!str", value: s} }

func emptyMap() *cnode { return &cnode{kind: yaml.MappingNode, tag: "!!map"} }

func emptySeq() *cnode { return &cnode{kind: yaml.SequenceNode, tag: "!!seq"} }

// child returns the value under key in mapping m, creating an empty mapping when it is missing or null; a
// created entry goes first when first is set, else last.
func (c *cnode) child(key string, first bool) *cnode {
	for i := 0; i+1 < len(c.content); i += 2 {
		if k := c.content[i]; k.kind == yaml.ScalarNode && k.value == key {
			if v := c.content[i+1]; v.kind == yaml.ScalarNode && v.tag == "!!null" {
				c.content[i+1] = emptyMap()
			}
			return c.content[i+1]
		}
	}
	m := emptyMap()
	c.content = addEntry(c.content, first, str(key), m)
	return m
}

// addEntry puts nodes at the start or at the end of content.
func addEntry(content []*cnode, first bool, nodes ...*cnode) []*cnode {
	if first {
		return append(nodes, content...)
	}
	return append(content, nodes...)
}

// walk follows path from c, creating missing mappings like the editor does (first or last in their parent).
func (c *cnode) walk(path []step, first bool) (*cnode, error) {
	for _, st := range path {
		if st.isIndex() {
			if c.kind != yaml.SequenceNode || st.index >= len(c.content) {
				return nil, fmt.Errorf("no item %d", st.index)
			}
			c = c.content[st.index]
			continue
		}
		if c.kind != yaml.MappingNode {
			return nil, fmt.Errorf("no mapping at %q", st.key)
		}
		c = c.child(st.key, first)
	}
	return c, nil
}

// expectSet applies the intended edit to the meaning of a document: key=value in the mapping at path, a new
// entry (the key, or the first mapping missing on the way) placed first when first is set, else last.
func expectSet(root *cnode, path []step, key, value string, first bool) error {
	m, err := root.walk(path, first)
	if err != nil {
		return err
	}
	if m.kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a mapping", pathString(path))
	}
	for i := 0; i+1 < len(m.content); i += 2 {
		if k := m.content[i]; k.kind == yaml.ScalarNode && k.value == key {
			m.content[i+1] = str(value)
			return nil
		}
	}
	m.content = addEntry(m.content, first, str(key), str(value))
	return nil
}

// expectAppend applies the intended edit to the meaning of a document: item added to the sequence under key
// in the mapping at path (first when first is set, else last), the sequence created when missing, null or
// empty.
func expectAppend(root *cnode, path []step, key string, item *cnode, first bool) error {
	m, err := root.walk(path, first)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(m.content); i += 2 {
		if k := m.content[i]; k.kind == yaml.ScalarNode && k.value == key {
			v := m.content[i+1]
			if v.kind == yaml.ScalarNode && v.tag == "!!null" {
				v = emptySeq()
				m.content[i+1] = v
			}
			if v.kind != yaml.SequenceNode {
				return fmt.Errorf("%s is not a sequence", key)
			}
			v.content = addEntry(v.content, first, item)
			return nil
		}
	}
	seq := emptySeq()
	seq.content = []*cnode{item}
	m.content = addEntry(m.content, first, str(key), seq)
	return nil
}

// commit applies the splice and proves the result: outside the spliced lines every byte is the original
// one, and the re-parsed file means the original plus exactly the intended change to document doc.
func (s *source) commit(doc int, sp *splice, intend func(root *cnode) error) ([]byte, error) {
	for i, l := range splitLines([]byte(sp.text)) {
		if lead := sp.text[l.start:l.end]; strings.ContainsRune(lead[:len(lead)-len(strings.TrimLeft(lead, " \t-"))], '\t') {
			return nil, refuse(CodeTab, "a tab indents line %d, which the edit would change", sp.from+i+1)
		}
	}
	var b bytes.Buffer
	if s.bom {
		b.Write(utf8BOM)
	}
	b.Write(s.text[:s.lines[sp.from].start])
	b.WriteString(sp.text)
	if sp.to < len(s.lines) {
		b.Write(s.text[s.lines[sp.to].start:])
	}
	out := b.Bytes()
	if err := s.onlySpliced(out, sp); err != nil {
		return nil, err
	}
	after, err := load(out)
	if err != nil {
		return nil, refuse(CodeVerification, "the edited file does not parse: %v", err)
	}
	if len(after.docs) != len(s.docs) {
		return nil, refuse(CodeVerification, "the edited file has %d documents instead of %d", len(after.docs), len(s.docs))
	}
	for i := range s.docs {
		want := canon(s.docs[i])
		if i == doc {
			if len(want.content) != 1 {
				return nil, refuse(CodeVerification, "document %d is empty", i)
			}
			if err := intend(want.content[0]); err != nil {
				return nil, refuse(CodeVerification, "the intended change does not apply: %v", err)
			}
		}
		if !want.equal(canon(after.docs[i])) {
			return nil, refuse(CodeVerification, "the edited file does not re-parse to the intended change (document starting at line %d)", s.docs[i].Line)
		}
	}
	return out, nil
}

// onlySpliced checks the written bytes line by line: the lines before and after the splice are the original
// lines, break for break, and the byte order mark is kept.
func (s *source) onlySpliced(out []byte, sp *splice) error {
	if bytes.HasPrefix(out, utf8BOM) != s.bom {
		return refuse(CodeVerification, "the byte order mark changed")
	}
	if s.bom {
		out = out[len(utf8BOM):]
	}
	got := splitLines(out)
	tail := len(s.lines) - sp.to
	if len(got) < sp.from+tail {
		return refuse(CodeVerification, "the edited file lost lines")
	}
	same := func(a, b line, bText []byte) bool {
		return bytes.Equal(s.text[a.start:a.next], bText[b.start:b.next])
	}
	for i := 0; i < sp.from; i++ {
		if !same(s.lines[i], got[i], out) {
			return refuse(CodeVerification, "line %d changed outside the edit", i+1)
		}
	}
	for i := 0; i < tail; i++ {
		if !same(s.lines[sp.to+i], got[len(got)-tail+i], out) {
			return refuse(CodeVerification, "line %d changed outside the edit", sp.to+i+1)
		}
	}
	return nil
}
