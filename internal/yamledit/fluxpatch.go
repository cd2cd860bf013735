package yamledit

import (
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// PatchEntry is one item of a Flux Kustomization's spec.patches: an inline
// strategic-merge patch and the kind and name of the objects it targets.
type PatchEntry struct {
	Patch string
	Kind  string
	Name  string
}

// SetFluxKustomizationPatch makes object doc of the file (counted as
// Target.Document counts), a Flux Kustomization, carry
// entry in spec.patches. The first existing item that owns (reading its
// patch text and target) is replaced by entry, lines and all; without one,
// entry is appended after the last item, or spec gets a patches: key at its
// end. Nothing changes when the owned item already says entry. Every other
// line stays byte for byte, and the result must re-parse to exactly that
// change.
func SetFluxKustomizationPatch(src []byte, doc int, entry PatchEntry, owns func(patch string, target map[string]string) bool) (out []byte, changed bool, err error) {
	if err := validEntry(entry); err != nil {
		return nil, false, err
	}
	s, err := load(src)
	if err != nil {
		return nil, false, err
	}
	objs := s.objects()
	if doc < 0 || doc >= len(objs) || objs[doc].path != nil || objs[doc].kind != "Kustomization" {
		return nil, false, refuse(CodeNotFound, "object %d of the file is not a Kustomization document", doc)
	}
	root := objs[doc].node
	doc = objs[doc].doc
	if root.Kind != yaml.MappingNode || root.Style&yaml.FlowStyle != 0 {
		return nil, false, refuse(CodeUnsupported, "the Kustomization is not a block mapping (line %d)", root.Line)
	}
	if err := s.checkCollection(root, nil); err != nil {
		return nil, false, err
	}
	_, spec, err := s.findKey(root, "spec", nil)
	if err != nil {
		return nil, false, err
	}
	if spec == nil || spec.Kind != yaml.MappingNode || spec.Style&yaml.FlowStyle != 0 || len(spec.Content) == 0 {
		return nil, false, refuse(CodeUnsupported, "the Kustomization's spec is not a block mapping")
	}
	at := keys("spec")
	if err := s.checkCollection(spec, at); err != nil {
		return nil, false, err
	}
	if err := s.simpleKeys(spec); err != nil {
		return nil, false, err
	}
	k, patches, err := s.findKey(spec, "patches", at)
	if err != nil {
		return nil, false, err
	}
	item := entryNode(entry)
	if k == nil {
		indent := spec.Content[0].Column - 1
		offset, content := sequenceStyle(spec)
		lines := append([]string{strings.Repeat(" ", indent) + "patches:"}, entryLines(indent+offset, content, entry)...)
		end := s.endLine(spec, indent)
		if s.endsWithoutBreak(end) {
			return nil, false, refuse(CodeUnsupported, "the Kustomization ends without a line break after spec")
		}
		sp, err := s.insertAfter(end, "", lines)
		if err != nil {
			return nil, false, err
		}
		out, err := s.commit(doc, sp, func(r *cnode) error { return expectAppend(r, at, "patches", item, false) })
		return out, err == nil, err
	}
	at = append(at, step{key: "patches", index: -1})
	if err := s.checkCollection(patches, at); err != nil {
		return nil, false, err
	}
	if patches.Kind != yaml.SequenceNode || patches.Style&yaml.FlowStyle != 0 || len(patches.Content) == 0 {
		return nil, false, refuse(CodeUnsupported, "spec.patches is not a block list with items (line %d)", patches.Line)
	}
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
		return nil, false, refuse(CodeUnsupported, "the Kustomization ends without a line break after spec.patches")
	}
	sp, err := s.insertAfter(end, "", entryLines(dash, content, entry))
	if err != nil {
		return nil, false, err
	}
	out, err = s.commit(doc, sp, func(r *cnode) error { return expectAppend(r, at[:1], "patches", item, false) })
	return out, err == nil, err
}

// replaceItem rewrites the lines of item i of the patches list, which must
// start on its dash's line, with entry.
func (s *source) replaceItem(doc int, at []step, i int, it *yaml.Node, dash, content int, entry PatchEntry, item *cnode) ([]byte, bool, error) {
	first := s.content(it.Line)
	if it.Column-1 != dash+content || strings.TrimSpace(first[:it.Column-1]) != "-" {
		return nil, false, refuse(CodeUnsupported, "item %d of spec.patches does not start on its dash's line (line %d)", i, it.Line)
	}
	end := s.endLine(it, dash)
	if s.endsWithoutBreak(end) {
		return nil, false, refuse(CodeUnsupported, "the Kustomization ends without a line break after spec.patches")
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
			return refuse(CodeVerification, "spec.patches has no item %d", i)
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
