package yamledit

import (
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// PatchEntry is one item of a patches list that a GitOps object carries
// for kustomize (a Flux Kustomization's spec.patches, an Argo CD
// Application source's kustomize.patches): an inline strategic-merge patch
// and the kind and name of the objects it targets.
type PatchEntry struct {
	Patch string
	Kind  string
	Name  string
}

// PatchList names where a patches list sits in an object of a file: the
// object's kind, and the path of the mapping that holds (or gets) the
// patches key, as dot-separated keys with [i] indexing a sequence
// ("spec", "spec.sources[1].kustomize").
type PatchList struct {
	Kind string
	At   string
}

// FluxKustomizationPatches is a Flux Kustomization's spec.patches.
var FluxKustomizationPatches = PatchList{Kind: "Kustomization", At: "spec"}

// SetFluxKustomizationPatch makes object doc of the file (counted as
// Target.Document counts), a Flux Kustomization, carry entry in
// spec.patches: SetPatchEntry at that list.
func SetFluxKustomizationPatch(src []byte, doc int, entry PatchEntry, owns func(patch string, target map[string]string) bool) (out []byte, changed bool, err error) {
	return SetPatchEntry(src, doc, FluxKustomizationPatches, entry, owns)
}

// SetPatchEntry makes object doc of the file (counted as Target.Document
// counts) carry entry in the patches list that list names. The first
// existing item that owns (reading its patch text and target) is replaced by
// entry, lines and all; without one, entry is appended after the last item,
// or the mapping gets a patches: key at its end, below the mappings of the
// path it lacks. Nothing changes when the owned item already says entry.
// Every other line stays byte for byte, and the result must re-parse to
// exactly that change.
func SetPatchEntry(src []byte, doc int, list PatchList, entry PatchEntry, owns func(patch string, target map[string]string) bool) (out []byte, changed bool, err error) {
	if err := validEntry(entry); err != nil {
		return nil, false, err
	}
	path, err := parseListPath(list.At)
	if err != nil {
		return nil, false, err
	}
	s, obj, err := loadDocumentOfKind(src, doc, list.Kind)
	if err != nil {
		return nil, false, err
	}
	root := obj.node
	doc = obj.doc
	if !isBlockMapping(root) {
		return nil, false, refuse(CodeUnsupported, "the %s is not a block mapping (line %d)", list.Kind, root.Line)
	}
	if err := s.checkCollection(root, nil); err != nil {
		return nil, false, err
	}
	m, at := root, []step(nil)
	for i, st := range path {
		if st.isIndex() {
			if m.Kind != yaml.SequenceNode || m.Style&yaml.FlowStyle != 0 || st.index >= len(m.Content) {
				return nil, false, refuse(CodeNotFound, "%s has no item %d in block style", pathString(at), st.index)
			}
			m, at = m.Content[st.index], append(at, st)
			if err := s.checkCollection(m, at); err != nil {
				return nil, false, err
			}
			continue
		}
		if !isBlockMapping(m) {
			return nil, false, refuse(CodeUnsupported, "%s is not a block mapping with entries", pathString(at))
		}
		_, v, err := s.findKey(m, st.key, at)
		if err != nil {
			return nil, false, err
		}
		if v == nil {
			return s.addPatches(doc, m, at, path[i:], entry)
		}
		m, at = v, append(at, st)
		if err := s.checkCollection(m, at); err != nil {
			return nil, false, err
		}
	}
	if !isBlockMapping(m) {
		return nil, false, refuse(CodeUnsupported, "%s is not a block mapping with entries", pathString(at))
	}
	if err := s.simpleKeys(m); err != nil {
		return nil, false, err
	}
	k, patches, err := s.findKey(m, "patches", at)
	if err != nil {
		return nil, false, err
	}
	if k == nil {
		return s.addPatches(doc, m, at, nil, entry)
	}
	holder := at
	at = append(append([]step(nil), at...), step{key: "patches", index: -1})
	if err := s.checkCollection(patches, at); err != nil {
		return nil, false, err
	}
	if patches.Kind != yaml.SequenceNode || patches.Style&yaml.FlowStyle != 0 || len(patches.Content) == 0 {
		return nil, false, refuse(CodeUnsupported, "%s is not a block list with items (line %d)", pathString(at), patches.Line)
	}
	item := entryNode(entry)
	dash := patches.Column - 1
	content := 2
	if first := patches.Content[0]; first.Line == patches.Line {
		content = first.Column - patches.Column
	}
	for i, it := range patches.Content {
		if it.Kind != yaml.MappingNode || !owns(scalarAt(it, "patch"), stringMap(lookupValue(it, "target"))) {
			continue
		}
		if canon(it).equal(item) {
			return s.original(), false, nil
		}
		return s.replaceItem(doc, at, i, it, dash, content, entry, item)
	}
	end := s.endLine(patches, dash)
	if s.endsWithoutBreak(end) {
		return nil, false, refuse(CodeUnsupported, "the file ends without a line break after %s", pathString(at))
	}
	sp, err := s.insertAfter(end, "", entryLines(dash, content, entry))
	if err != nil {
		return nil, false, err
	}
	out, err = s.commit(doc, sp, func(r *cnode) error { return expectAppend(r, holder, "patches", item, false) })
	return out, err == nil, err
}

// addPatches writes the mappings of missing (keys only) and a patches key
// holding entry at the end of block mapping m, found at path at.
func (s *source) addPatches(doc int, m *yaml.Node, at, missing []step, entry PatchEntry) ([]byte, bool, error) {
	if err := s.simpleKeys(m); err != nil {
		return nil, false, err
	}
	for _, st := range missing {
		if st.isIndex() {
			return nil, false, refuse(CodeNotFound, "a list on the way to the patches is missing")
		}
	}
	indent := m.Content[0].Column - 1
	stepWidth := s.indentStep(nil)
	offset, content := sequenceStyle(m)
	var lines []string
	for _, st := range missing {
		lines = append(lines, strings.Repeat(" ", indent)+writeScalar(st.key, keyQuoting(m))+":")
		indent += stepWidth
	}
	lines = append(lines, strings.Repeat(" ", indent)+"patches:")
	lines = append(lines, entryLines(indent+offset, content, entry)...)
	end := s.endLine(m, m.Content[0].Column-1)
	if s.endsWithoutBreak(end) {
		return nil, false, refuse(CodeUnsupported, "the file ends without a line break after %s", pathString(at))
	}
	sp, err := s.insertAfter(end, "", lines)
	if err != nil {
		return nil, false, err
	}
	holder := append(append([]step(nil), at...), missing...)
	item := entryNode(entry)
	out, err := s.commit(doc, sp, func(r *cnode) error { return expectAppend(r, holder, "patches", item, false) })
	return out, err == nil, err
}

func isBlockMapping(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0
}

// parseListPath reads "spec.sources[1].kustomize" into steps.
func parseListPath(p string) ([]step, error) {
	var out []step
	if p == "" {
		return nil, nil // the document itself: a values file
	}
	for _, part := range strings.Split(p, ".") {
		key, rest, indexed := strings.Cut(part, "[")
		if key == "" {
			return nil, refuse(CodeInvalidInput, "patch list path %q has an empty key", p)
		}
		out = append(out, step{key: key, index: -1})
		if !indexed {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
		if err != nil || n < 0 || !strings.HasSuffix(rest, "]") {
			return nil, refuse(CodeInvalidInput, "patch list path %q has a bad index", p)
		}
		out = append(out, step{index: n})
	}
	return out, nil
}

// replaceItem rewrites the lines of item i of the patches list, which must
// start on its dash's line, with entry.
func (s *source) replaceItem(doc int, at []step, i int, it *yaml.Node, dash, content int, entry PatchEntry, item *cnode) ([]byte, bool, error) {
	first := s.content(it.Line)
	if it.Column-1 != dash+content || strings.TrimSpace(first[:it.Column-1]) != "-" {
		return nil, false, refuse(CodeUnsupported, "item %d of %s does not start on its dash's line (line %d)", i, pathString(at), it.Line)
	}
	end := s.endLine(it, dash)
	if s.endsWithoutBreak(end) {
		return nil, false, refuse(CodeUnsupported, "the file ends without a line break after %s", pathString(at))
	}
	eol := s.eolOf(it.Line)
	var b strings.Builder
	for _, l := range entryLines(dash, content, entry) {
		b.WriteString(l)
		b.WriteString(eol)
	}
	sp := &splice{from: it.Line - 1, to: end, text: b.String()}
	out, err := s.commit(doc, sp, func(r *cnode) error {
		seq, err := r.walk(at, false)
		if err != nil {
			return err
		}
		if seq.kind != yaml.SequenceNode || i >= len(seq.content) {
			return refuse(CodeVerification, "%s has no item %d", pathString(at), i)
		}
		seq.content[i] = item
		return nil
	})
	return out, err == nil, err
}

// entryLines writes entry as a block sequence item whose dash is at column
// dash and whose keys sit content columns right of it; the patch is a
// literal block scalar, indented two more.
func entryLines(dash, content int, entry PatchEntry) []string {
	if content < 2 {
		content = 2
	}
	keyIndent := strings.Repeat(" ", dash+content)
	lines := []string{strings.Repeat(" ", dash) + "-" + strings.Repeat(" ", content-1) + "patch: |"}
	for _, l := range strings.Split(strings.TrimSuffix(entry.Patch, "\n"), "\n") {
		lines = append(lines, keyIndent+"  "+l)
	}
	return append(lines,
		keyIndent+"target:",
		keyIndent+"  kind: "+writeScalar(entry.Kind, plainIfSafe),
		keyIndent+"  name: "+writeScalar(entry.Name, plainIfSafe),
	)
}

// entryNode is what entry means once parsed.
func entryNode(entry PatchEntry) *cnode {
	patch := strings.TrimSuffix(entry.Patch, "\n") + "\n"
	target := &cnode{kind: yaml.MappingNode, tag: "!!map", content: []*cnode{str("kind"), str(entry.Kind), str("name"), str(entry.Name)}}
	return &cnode{kind: yaml.MappingNode, tag: "!!map", content: []*cnode{str("patch"), str(patch), str("target"), target}}
}

// validEntry refuses a patch a literal block scalar cannot hold as written:
// blank or indented first lines, trailing blanks, tabs and template text.
func validEntry(entry PatchEntry) error {
	if entry.Kind == "" || entry.Name == "" || strings.ContainsAny(entry.Kind+entry.Name, " \t\r\n:#{}[]") {
		return refuse(CodeInvalidInput, "patch target %s/%s is not a plain kind and name", entry.Kind, entry.Name)
	}
	if !utf8.ValidString(entry.Patch) || strings.Contains(entry.Patch, "{{") || strings.ContainsAny(entry.Patch, "\t\r") {
		return refuse(CodeInvalidInput, "the patch holds text a block scalar cannot carry as written")
	}
	for i, l := range strings.Split(strings.TrimSuffix(entry.Patch, "\n"), "\n") {
		if l == "" || strings.HasSuffix(l, " ") || (i == 0 && strings.HasPrefix(l, " ")) {
			return refuse(CodeInvalidInput, "line %d of the patch is blank, ends in a space or starts indented", i+1)
		}
	}
	return nil
}

// stringMap reads the scalar entries of a mapping; nil for anything else.
func stringMap(n *yaml.Node) map[string]string {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := deref(n.Content[i+1]); v.Kind == yaml.ScalarNode {
			out[n.Content[i].Value] = v.Value
		}
	}
	return out
}

// loadDocumentOfKind loads src and returns its object doc (counted as
// Target.Document counts), which must be a whole document of kind: the
// GitOps objects kedge edits are never List items.
func loadDocumentOfKind(src []byte, doc int, kind string) (*source, object, error) {
	s, err := load(src)
	if err != nil {
		return nil, object{}, err
	}
	objs := s.objects()
	if doc < 0 || doc >= len(objs) || objs[doc].path != nil || objs[doc].kind != kind {
		return nil, object{}, refuse(CodeNotFound, "object %d of the file is not a %s document", doc, kind)
	}
	return s, objs[doc], nil
}
