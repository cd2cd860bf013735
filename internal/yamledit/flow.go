package yamledit

import (
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// flowSet is planSet inside a flow collection (`{...}`, `[...]`, JSON): new entries are written in flow style
// before the closing bracket, so the surrounding layout stays as it is.
func (s *source) flowSet(node *yaml.Node, at, rest []step, key, value string) (*splice, error) {
	at = append([]step{}, at...)
	for i, st := range rest {
		if err := s.checkCollection(node, at); err != nil {
			return nil, err
		}
		if st.isIndex() {
			if node.Kind != yaml.SequenceNode || st.index >= len(node.Content) {
				return nil, refuse(CodeNotFound, "%s has no item %d", pathString(at), st.index)
			}
			node = node.Content[st.index]
			at = append(at, st)
			continue
		}
		if node.Kind != yaml.MappingNode {
			return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(at), node.Line)
		}
		k, v, err := s.findKey(node, st.key, at)
		if err != nil {
			return nil, err
		}
		if k == nil {
			for _, missing := range rest[i:] {
				if missing.isIndex() {
					return nil, refuse(CodeNotFound, "%s has no key %q", pathString(at), st.key)
				}
			}
			return s.flowInsert(node, at, flowChain(rest[i:], key, value, keyQuoting(node)))
		}
		at = append(at, st)
		switch {
		case v.Kind == yaml.MappingNode:
			node = v
		case v.Kind == yaml.SequenceNode && i+1 < len(rest) && rest[i+1].isIndex():
			node = v
		case isNull(v) && v.Value != "":
			return s.replaceToken(v, "{"+flowChain(rest[i+1:], key, value, keyQuoting(node))+"}")
		default:
			return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(at), v.Line)
		}
	}
	if err := s.checkCollection(node, at); err != nil {
		return nil, err
	}
	if node.Kind != yaml.MappingNode {
		return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(at), node.Line)
	}
	k, v, err := s.findKey(node, key, at)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return s.flowInsert(node, at, flowChain(nil, key, value, keyQuoting(node)))
	}
	return s.replaceValue(k, v, value, flowItem)
}

// flowChain renders `a: {b: {key: "value"}}` for the missing mappings rest.
func flowChain(rest []step, key, value string, q quoting) string {
	if len(rest) == 0 {
		return writeScalar(key, q) + ": " + doubleQuote(value)
	}
	return writeScalar(rest[0].key, q) + ": {" + flowChain(rest[1:], key, value, q) + "}"
}

// replaceToken replaces the plain scalar v (written on one line) with text.
func (s *source) replaceToken(v *yaml.Node, text string) (*splice, error) {
	line := s.content(v.Line)
	b, ok := s.byteCol(v.Line, v.Column)
	if !ok || v.Style != 0 || !strings.HasPrefix(line[b:], v.Value) {
		return nil, refuse(CodeUnsupported, "cannot find the value on line %d", v.Line)
	}
	return s.replaceLine(v.Line, line[:b]+text+line[b+len(v.Value):])
}

// flowInsert adds entry to flow collection n. Entries laid out one per line (JSON as formatters write it)
// get a line of their own: before the first entry, with a comma, so that no existing line changes (adding
// after the last entry would rewrite its line to give it a comma). Otherwise the entry joins the line of
// the last one.
func (s *source) flowInsert(n *yaml.Node, at []step, entry string) (*splice, error) {
	open, ok := s.offsetOf(n)
	if !ok || (s.text[open] != '{' && s.text[open] != '[') {
		return nil, refuse(CodeUnsupported, "cannot find the start of the flow collection at %s (line %d)", pathString(at), n.Line)
	}
	closing, lastSig, ok := scanFlow(s.text, open)
	if !ok {
		return nil, refuse(CodeUnsupported, "cannot find the end of the flow collection at %s (line %d)", pathString(at), n.Line)
	}
	closeLine, sigLine := s.lineAt(closing), s.lineAt(lastSig)
	if len(n.Content) == 0 {
		if closeLine != n.Line {
			return nil, refuse(CodeUnsupported, "the empty flow collection at %s spans several lines (line %d)", pathString(at), n.Line)
		}
		start := s.lines[n.Line-1].start
		text := s.content(n.Line)
		return s.replaceLine(n.Line, text[:open-start+1]+entry+text[closing-start:])
	}
	if first := n.Content[0]; first.Line > n.Line && s.startsLine(first) && s.onlyOpensLine(open) {
		return s.insertBefore(first.Line, []string{strings.Repeat(" ", first.Column-1) + entry + ","})
	}
	// lastEntry is where the last entry starts: its key in a mapping.
	lastEntry := n.Content[len(n.Content)-1]
	if n.Kind == yaml.MappingNode {
		lastEntry = n.Content[len(n.Content)-2]
	}
	if tail, ok := s.offsetOf(lastNode(n)); !ok || lastSig < tail || closing < tail {
		return nil, refuse(CodeUnsupported, "cannot find the end of the flow collection at %s (line %d)", pathString(at), n.Line)
	}
	sigText := s.content(sigLine)
	sb := lastSig - s.lines[sigLine-1].start
	comma := s.text[lastSig] == ','
	if closeLine > sigLine && lastEntry.Line > n.Line && s.startsLine(lastEntry) {
		indent := strings.Repeat(" ", lastEntry.Column-1)
		if comma {
			return s.insertAfter(sigLine, "", []string{indent + entry + ","})
		}
		return s.insertAfter(sigLine, sigText[:sb+1]+","+sigText[sb+1:], []string{indent + entry})
	}
	sep := ", "
	if comma {
		sep = " "
	}
	return s.replaceLine(sigLine, sigText[:sb+1]+sep+entry+sigText[sb+1:])
}

// scanFlow reads a flow collection starting at the bracket at open and returns the offsets of its closing
// bracket and of the last character before it that is neither blank nor comment.
func scanFlow(text []byte, open int) (closing, lastSig int, ok bool) {
	depth := 0
	prev := byte(0)
	lastSig = open
	for i := open; i < len(text); i++ {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case c == '#' && i > 0 && strings.IndexByte(" \t\r\n", text[i-1]) >= 0:
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		case (c == '"' || c == '\'') && strings.IndexByte("{[,:?", prev) >= 0:
			end, found := quotedEnd(text, i)
			if !found {
				return 0, 0, false
			}
			i, lastSig, prev = end, end, c
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i, lastSig, true
			}
		}
		lastSig, prev = i, c
	}
	return 0, 0, false
}

// quotedEnd returns the offset of the quote that closes the quoted scalar opening at i.
func quotedEnd(text []byte, i int) (int, bool) {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch {
		case q == '"' && text[j] == '\\':
			j++
		case text[j] == q && q == '\'' && j+1 < len(text) && text[j+1] == '\'':
			j++
		case text[j] == q:
			return j, true
		}
	}
	return 0, false
}

func (s *source) offsetOf(n *yaml.Node) (int, bool) {
	b, ok := s.byteCol(n.Line, n.Column)
	if !ok {
		return 0, false
	}
	off := s.lines[n.Line-1].start + b
	return off, off < len(s.text)
}

// lineAt returns the 1-based line holding byte offset off.
func (s *source) lineAt(off int) int {
	return sort.Search(len(s.lines), func(i int) bool { return s.lines[i].next > off }) + 1
}

// onlyOpensLine tells whether the bracket at offset open ends its line but for blanks and a comment, so that a
// line inserted after it lies inside the collection.
func (s *source) onlyOpensLine(open int) bool {
	n := s.lineAt(open)
	rest := strings.TrimLeft(string(s.text[open+1:s.lines[n-1].end]), " \t")
	return rest == "" || rest[0] == '#'
}

// startsLine tells whether only spaces precede n on its line.
func (s *source) startsLine(n *yaml.Node) bool {
	b, ok := s.byteCol(n.Line, n.Column)
	return ok && strings.Trim(s.content(n.Line)[:b], " ") == ""
}
