package yamledit

import (
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// splice replaces source lines [from, to) (0-based) with text, which holds whole lines with their breaks
// (the last one may lack a break when it ends the file); from == to inserts before line from.
type splice struct {
	from, to int
	text     string
	// first says the new entry goes before the existing ones of its collection rather than after them:
	// the verification expects it there.
	first bool
}

// link is a key on the way to the edit and the value below it.
type link struct{ key, value *yaml.Node }

// setScalar sets key=value in the mapping reached by path from the root of document doc, creating missing
// mappings, and returns the verified result.
func (s *source) setScalar(doc int, path []step, key, value string) ([]byte, bool, error) {
	sp, err := s.planSet(doc, path, key, value)
	if err != nil {
		return nil, false, err
	}
	if sp == nil {
		return s.original(), false, nil
	}
	out, err := s.commit(doc, sp, func(root *cnode) error { return expectSet(root, path, key, value, sp.first) })
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// planSet returns the splice that sets the key, or nil when the value is already there.
func (s *source) planSet(doc int, path []step, key, value string) (*splice, error) {
	node := s.root(doc)
	if node == nil {
		return nil, refuse(CodeNotFound, "document %d is empty", doc)
	}
	var chain []link
	for i, st := range path {
		if err := s.checkCollection(node, path[:i]); err != nil {
			return nil, err
		}
		if node.Style&yaml.FlowStyle != 0 {
			return s.flowSet(node, path[:i], path[i:], key, value)
		}
		if st.isIndex() {
			if node.Kind != yaml.SequenceNode || st.index >= len(node.Content) {
				return nil, refuse(CodeNotFound, "%s has no item %d", pathString(path[:i]), st.index)
			}
			node = node.Content[st.index]
			continue
		}
		if node.Kind != yaml.MappingNode {
			return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(path[:i]), node.Line)
		}
		k, v, err := s.findKey(node, st.key, path[:i])
		if err != nil {
			return nil, err
		}
		if k == nil {
			return s.insertIntoBlock(node, chain, path[i:], key, value)
		}
		chain = append(chain, link{k, v})
		switch {
		case v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0 && len(v.Content) == 0 && v.Line == k.Line:
			return s.replaceEmptyWithBlock(k, v, chain, path[i+1:], key, value, keyQuoting(node))
		case v.Kind == yaml.MappingNode:
			node = v
		case isNull(v):
			return s.replaceEmptyWithBlock(k, v, chain, path[i+1:], key, value, keyQuoting(node))
		case st.index < 0 && v.Kind == yaml.SequenceNode && i+1 < len(path) && path[i+1].isIndex():
			node = v
		default:
			return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(path[:i+1]), v.Line)
		}
	}
	if err := s.checkCollection(node, path); err != nil {
		return nil, err
	}
	if node.Style&yaml.FlowStyle != 0 {
		return s.flowSet(node, path, nil, key, value)
	}
	if node.Kind != yaml.MappingNode {
		return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(path), node.Line)
	}
	k, v, err := s.findKey(node, key, path)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return s.insertIntoBlock(node, chain, nil, key, value)
	}
	return s.replaceValue(k, v, value, blockValue)
}

// checkCollection refuses a collection on the path that an anchor shares, that is an alias, or that merges
// keys from elsewhere: editing it would change, or miss, other places.
func (s *source) checkCollection(n *yaml.Node, at []step) error {
	if n.Kind == yaml.AliasNode {
		return refuse(CodeAnchor, "%s is an alias (*%s, line %d)", pathString(at), n.Value, n.Line)
	}
	if n.Anchor != "" {
		return refuse(CodeAnchor, "%s carries the anchor &%s (line %d)", pathString(at), n.Anchor, n.Line)
	}
	if n.Kind == yaml.MappingNode {
		// A key written twice is an error to the API server's decoders,
		// and which one an edit would change is anyone's guess.
		seen := map[string]int{}
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if isMergeKey(k) {
				return refuse(CodeAnchor, "%s has a merge key (line %d)", pathString(at), k.Line)
			}
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if line, dup := seen[k.Value]; dup {
				return refuse(CodeAmbiguous, "key %q appears twice in %s (lines %d and %d)", k.Value, pathString(at), line, k.Line)
			}
			seen[k.Value] = k.Line
		}
	}
	return nil
}

// findKey returns the key and value nodes of key in mapping m, refusing duplicates and shared nodes.
func (s *source) findKey(m *yaml.Node, key string, at []step) (k, v *yaml.Node, err error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		c := m.Content[i]
		if c.Kind != yaml.ScalarNode || c.Value != key {
			continue
		}
		if k != nil {
			return nil, nil, refuse(CodeAmbiguous, "key %q appears twice in %s (lines %d and %d)", key, pathString(at), k.Line, c.Line)
		}
		k, v = c, m.Content[i+1]
	}
	if k == nil {
		return nil, nil, nil
	}
	here := append(append([]step{}, at...), step{key: key, index: -1})
	if k.Anchor != "" {
		return nil, nil, refuse(CodeAnchor, "the key of %s carries the anchor &%s (line %d)", pathString(here), k.Anchor, k.Line)
	}
	if v.Kind == yaml.AliasNode {
		return nil, nil, refuse(CodeAnchor, "%s is an alias (*%s, line %d)", pathString(here), v.Value, v.Line)
	}
	if v.Anchor != "" {
		return nil, nil, refuse(CodeAnchor, "%s carries the anchor &%s (line %d)", pathString(here), v.Anchor, v.Line)
	}
	if err := s.refuseTabBefore(k, pathString(here)); err != nil {
		return nil, nil, err
	}
	return k, v, nil
}

// insertIntoBlock adds key (below the still missing mappings named by rest) after the last entry of block
// mapping m, indented like m's keys. When that entry ends the file without a line break, adding after it
// would rewrite its line to give it one, so the new lines go before the first entry instead.
func (s *source) insertIntoBlock(m *yaml.Node, chain []link, rest []step, key, value string) (*splice, error) {
	if err := s.simpleKeys(m); err != nil {
		return nil, err
	}
	for _, st := range rest {
		if st.isIndex() {
			return nil, refuse(CodeNotFound, "a sequence on the way to %q is missing", key)
		}
	}
	indent := m.Content[0].Column - 1
	end := s.endLine(m, indent)
	lines := blockChain(indent, s.indentStep(chain), rest, key, value, keyQuoting(m))
	if s.endsWithoutBreak(end) && s.startsLine(m.Content[0]) {
		return s.insertBefore(m.Content[0].Line, lines)
	}
	return s.insertAfter(end, "", lines)
}

// endsWithoutBreak tells whether line n is the file's last line and has no line break.
func (s *source) endsWithoutBreak(n int) bool {
	return n == len(s.lines) && s.lines[n-1].next == s.lines[n-1].end
}

// simpleKeys refuses a block mapping whose entries are not all `key: value` with the key first on its line
// after blanks and dashes: only those tell where the mapping's lines are and how new ones are indented.
func (s *source) simpleKeys(m *yaml.Node) error {
	for i := 0; i < len(m.Content); i += 2 {
		if err := s.refuseTabBefore(m.Content[i], "a key"); err != nil {
			return err
		}
		if _, err := s.colonAfterKey(m.Content[i]); err != nil {
			return err
		}
	}
	return nil
}

// replaceEmptyWithBlock turns `key:`, `key: ~` or `key: {}` into `key:` followed by a block mapping holding the
// rest of the path and the new entry, keys quoted like k's siblings; a comment after the value stays on the
// key's line.
func (s *source) replaceEmptyWithBlock(k, v *yaml.Node, chain []link, rest []step, key, value string, q quoting) (*splice, error) {
	for _, st := range rest {
		if st.isIndex() {
			return nil, refuse(CodeNotFound, "a sequence on the way to %q is missing", key)
		}
	}
	if v.Line != k.Line && v.Value != "" {
		return nil, refuse(CodeUnsupported, "the empty value of %q sits on its own line (line %d)", k.Value, v.Line)
	}
	head, comment, err := s.keyLineWithoutValue(k, v)
	if err != nil {
		return nil, err
	}
	if comment != "" {
		head += " " + comment
	}
	step := s.indentStep(chain)
	lines := blockChain(k.Column-1+step, step, rest, key, value, q)
	return s.insertAfter(k.Line, head, lines)
}

// keyLineWithoutValue returns k's line cut after the colon, and the comment that followed the empty value v,
// which must be empty, `~`/`null` or `{}` written on the key's line.
func (s *source) keyLineWithoutValue(k, v *yaml.Node) (head, comment string, err error) {
	text := s.content(k.Line)
	colon, err := s.colonAfterKey(k)
	if err != nil {
		return "", "", err
	}
	rest := text[colon:]
	if trimmed := strings.TrimLeft(rest, " \t"); trimmed != "" && trimmed[0] != '#' {
		vb, ok := s.byteCol(v.Line, v.Column)
		if v.Line != k.Line || !ok || vb < colon {
			return "", "", refuse(CodeUnsupported, "cannot find the value of %q on line %d", k.Value, k.Line)
		}
		var ve int
		switch {
		case (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && len(v.Content) == 0 && vb < len(text) && (text[vb] == '{' || text[vb] == '['):
			closing := byte('}')
			if text[vb] == '[' {
				closing = ']'
			}
			ve = vb + 1 + len(text[vb+1:]) - len(strings.TrimLeft(text[vb+1:], " \t"))
			if ve >= len(text) || text[ve] != closing {
				return "", "", refuse(CodeUnsupported, "cannot find the end of the empty collection on line %d", k.Line)
			}
			ve++
		case v.Kind == yaml.ScalarNode && strings.HasPrefix(text[vb:], v.Value) && v.Value != "":
			ve = vb + len(v.Value)
		default:
			return "", "", refuse(CodeUnsupported, "cannot find the value of %q on line %d", k.Value, k.Line)
		}
		if strings.TrimSpace(text[colon:vb]) != "" {
			return "", "", refuse(CodeUnsupported, "unexpected text before the value of %q on line %d", k.Value, k.Line)
		}
		rest = text[ve:]
	}
	after := strings.TrimLeft(rest, " \t")
	if after != "" && (after[0] != '#' || rest == after) {
		return "", "", refuse(CodeUnsupported, "unexpected text after the value of %q on line %d", k.Value, k.Line)
	}
	return text[:colon], after, nil
}

// colonAfterKey returns the byte index just past the colon that ends block key k on its line.
func (s *source) colonAfterKey(k *yaml.Node) (int, error) {
	text := s.content(k.Line)
	b, ok := s.byteCol(k.Line, k.Column)
	if !ok || k.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return 0, refuse(CodeUnsupported, "cannot read the key %q on line %d", k.Value, k.Line)
	}
	e, ok := tokenEnd(text, b, k.Style, blockKey)
	if !ok || !decodesTo(text[b:e], k.Value) {
		return 0, refuse(CodeUnsupported, "cannot read the key %q on line %d", k.Value, k.Line)
	}
	i := e + len(text[e:]) - len(strings.TrimLeft(text[e:], " \t"))
	if i >= len(text) || text[i] != ':' {
		return 0, refuse(CodeUnsupported, "cannot find the colon after %q on line %d", k.Value, k.Line)
	}
	return i + 1, nil
}

// replaceValue writes value in place of the scalar v (the value of key k), keeping its quoting when it can.
func (s *source) replaceValue(k, v *yaml.Node, value string, ctx scanContext) (*splice, error) {
	if v.Kind != yaml.ScalarNode {
		return nil, refuse(CodeUnsupported, "the value of %q is not a string (line %d)", k.Value, v.Line)
	}
	if isString(v) && v.Value == value {
		return nil, nil
	}
	if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return nil, refuse(CodeUnsupported, "the value of %q is a block scalar (line %d)", k.Value, v.Line)
	}
	if v.Style&yaml.TaggedStyle != 0 {
		return nil, refuse(CodeUnsupported, "the value of %q carries a tag (line %d)", k.Value, v.Line)
	}
	if ctx == flowItem && isNull(v) && v.Value == "" {
		return nil, refuse(CodeUnsupported, "the value of %q is left empty inside a flow mapping (line %d)", k.Value, k.Line)
	}
	if ctx == blockValue && isNull(v) && v.Value == "" {
		head, comment, err := s.keyLineWithoutValue(k, v)
		if err != nil {
			return nil, err
		}
		text := head + " " + doubleQuote(value)
		if comment != "" {
			text += " " + comment
		}
		return s.replaceLine(k.Line, text)
	}
	text := s.content(v.Line)
	b, ok := s.byteCol(v.Line, v.Column)
	if !ok {
		return nil, refuse(CodeUnsupported, "cannot find the value of %q on line %d", k.Value, v.Line)
	}
	e, ok := tokenEnd(text, b, v.Style, ctx)
	if !ok || !decodesTo(text[b:e], v.Value) {
		return nil, refuse(CodeUnsupported, "the value of %q spans several lines (line %d)", k.Value, v.Line)
	}
	q := quotingOf(v)
	if ctx == flowItem && q == plainIfSafe && !plainSafe(value) {
		q = doubleQuoted
	}
	return s.replaceLine(v.Line, text[:b]+writeScalar(value, q)+text[e:])
}

// blockChain renders the lines for rest (mappings still to create) and the final key, starting at indent.
func blockChain(indent, step int, rest []step, key, value string, q quoting) []string {
	var lines []string
	for _, st := range rest {
		lines = append(lines, strings.Repeat(" ", indent)+writeScalar(st.key, q)+":")
		indent += step
	}
	return append(lines, strings.Repeat(" ", indent)+writeScalar(key, q)+": "+doubleQuote(value))
}

// endLine returns the last line that belongs to block collection n, whose entries are indented by indent:
// the line of its last node, plus the lines after it that continue that node (more indented text).
func (s *source) endLine(n *yaml.Node, indent int) int {
	last := lastNode(n)
	end := s.lastTokenLine(n, last.Line)
	blockScalar := last.Kind == yaml.ScalarNode && last.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	for l := end + 1; l <= len(s.lines); l++ {
		text := s.content(l)
		trimmed := strings.TrimLeft(text, " ")
		if trimmed == "" || (trimmed[0] == '\t' && strings.TrimSpace(trimmed) == "") {
			continue
		}
		ind := len(text) - len(trimmed)
		if ind <= indent {
			break
		}
		if trimmed[0] == '#' && !blockScalar {
			continue
		}
		end = l
	}
	return end
}

// lastTokenLine raises end to the line that closes any flow collection or quoted scalar in n's subtree: the
// parser tolerates their last line written further left than the rest of the collection.
func (s *source) lastTokenLine(n *yaml.Node, end int) int {
	flow := (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle != 0
	quoted := n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && n.Style&yaml.TaggedStyle == 0 && n.Anchor == ""
	if flow || quoted {
		open, ok := s.offsetOf(n)
		if !ok {
			return end
		}
		if flow {
			if closing, _, ok := scanFlow(s.text, open); ok {
				end = max(end, s.lineAt(closing))
			}
		} else if c := s.text[open]; c == '"' || c == '\'' {
			if closing, ok := quotedEnd(s.text, open); ok {
				end = max(end, s.lineAt(closing))
			}
		}
		return end
	}
	for _, c := range n.Content {
		end = s.lastTokenLine(c, end)
	}
	return end
}

// lastNode returns the node of n's subtree that starts last in the file.
func lastNode(n *yaml.Node) *yaml.Node {
	best := n
	var walk func(*yaml.Node)
	walk = func(c *yaml.Node) {
		if c.Line > best.Line || (c.Line == best.Line && c.Column > best.Column) {
			best = c
		}
		for _, d := range c.Content {
			walk(d)
		}
	}
	walk(n)
	return best
}

// indentStep is the indentation the file uses for one nesting level: first as seen on the way to the edit,
// else the most common step in the document, else two spaces.
func (s *source) indentStep(chain []link) int {
	for i := len(chain) - 1; i >= 0; i-- {
		v := chain[i].value
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if d := v.Content[0].Column - chain[i].key.Column; d > 0 {
				return d
			}
		}
	}
	counts := map[int]int{}
	for _, d := range s.docs {
		countSteps(d, counts)
	}
	best, bestN := 2, 0
	steps := make([]int, 0, len(counts))
	for d := range counts {
		steps = append(steps, d)
	}
	sort.Ints(steps)
	for _, d := range steps {
		if counts[d] > bestN {
			best, bestN = d, counts[d]
		}
	}
	return best
}

func countSteps(n *yaml.Node, counts map[int]int) {
	if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Line > k.Line {
				if d := v.Content[0].Column - k.Column; d > 0 {
					counts[d]++
				}
			}
		}
	}
	for _, c := range n.Content {
		countSteps(c, counts)
	}
}

// insertAfter builds the splice that puts lines after line n (1-based), replacing line n's content with head
// when head is not empty. New lines take line n's line break; when line n ends the file without one, the
// new last line does not get one either.
func (s *source) insertAfter(n int, head string, lines []string) (*splice, error) {
	if n < 1 || n > len(s.lines) {
		return nil, refuse(CodeUnsupported, "line %d is outside the file", n)
	}
	l := s.lines[n-1]
	if head == "" {
		head = string(s.text[l.start:l.end])
	}
	eol := s.eolOf(n)
	hasEOL := l.next > l.end
	var b strings.Builder
	b.WriteString(head)
	for i, ln := range lines {
		b.WriteString(eol)
		b.WriteString(ln)
		if i == len(lines)-1 && hasEOL {
			b.WriteString(eol)
		}
	}
	return &splice{from: n - 1, to: n, text: b.String()}, nil
}

// insertBefore builds the splice that puts lines before line n (1-based), each with the file's line break;
// the new entry they hold comes first in its collection.
func (s *source) insertBefore(n int, lines []string) (*splice, error) {
	if n < 1 || n > len(s.lines) {
		return nil, refuse(CodeUnsupported, "line %d is outside the file", n)
	}
	eol := s.eolOf(n)
	var b strings.Builder
	for _, ln := range lines {
		b.WriteString(ln)
		b.WriteString(eol)
	}
	return &splice{from: n - 1, to: n - 1, text: b.String(), first: true}, nil
}

// replaceLine builds the splice that replaces the content of line n (1-based), keeping its line break.
func (s *source) replaceLine(n int, content string) (*splice, error) {
	if n < 1 || n > len(s.lines) {
		return nil, refuse(CodeUnsupported, "line %d is outside the file", n)
	}
	l := s.lines[n-1]
	return &splice{from: n - 1, to: n, text: content + string(s.text[l.end:l.next])}, nil
}

func (s *source) original() []byte {
	if s.bom {
		return append(append([]byte{}, utf8BOM...), s.text...)
	}
	return s.text
}
