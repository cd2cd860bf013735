package yamledit

import (
	yaml "go.yaml.in/yaml/v3"
)

// The edits of particular GitOps shapes (a HelmRelease's post-renderers, chart values, an Istio policy's
// targetRefs) live in packages of their own and are built on what follows: they open a file, read it through
// the same guards as every edit here (anchors, duplicate keys, tabs, layouts that cannot be spliced), plan the
// lines they write in the file's own layout, and commit them through the same verification, so that no shape
// can write a change this package would not prove.

// File is a parsed file opened for one edit.
type File struct{ s *source }

// Object is one Kubernetes object of an opened file.
type Object struct {
	// Doc is the document that holds the object; Commit and SetScalar take it.
	Doc int
	// Path leads from the document's root to the object's mapping (an item of a `kind: List` document).
	Path Path
	Node *yaml.Node
}

func objectOf(o *object) Object { return Object{Doc: o.doc, Path: o.path, Node: o.node} }

// Open parses src with the limits and refusals of every edit here.
func Open(src []byte) (*File, error) {
	s, err := load(src)
	if err != nil {
		return nil, err
	}
	return &File{s}, nil
}

// OpenTarget parses src and finds t in it, as an object whose own mapping may be edited in place: no anchor,
// alias, merge key or repeated key on it.
func OpenTarget(src []byte, t Target) (*File, Object, error) {
	s, obj, err := loadEditable(src, t)
	if err != nil {
		return nil, Object{}, err
	}
	return &File{s}, objectOf(obj), nil
}

// OpenDocument parses src and returns its object doc (counted as Target.Document counts), which must be a
// whole document of kind: the GitOps objects kedge edits by position are never List items.
func OpenDocument(src []byte, doc int, kind string) (*File, Object, error) {
	s, obj, err := loadDocumentOfKind(src, doc, kind)
	if err != nil {
		return nil, Object{}, err
	}
	return &File{s}, objectOf(&obj), nil
}

// Documents counts the file's documents, empty ones included.
func (f *File) Documents() int { return len(f.s.docs) }

// Original returns the file as it was given: the result of an edit that changes nothing.
func (f *File) Original() []byte { return f.s.original() }

// FindKey returns the key and value nodes of key in mapping m, found at at; both nil when it is missing. A
// key written twice, an anchor on the key or the value, an alias value and a tab indenting the key are
// refused: an edit there would change, or miss, other places.
func (f *File) FindKey(m *yaml.Node, key string, at Path) (k, v *yaml.Node, err error) {
	return f.s.findKey(m, key, at)
}

// Lookup follows p, which ends with a key, from n through FindKey's guards and returns the last key and its
// value; a missing key or item is refused (CodeNotFound).
func (f *File) Lookup(n *yaml.Node, p Path) (k, v *yaml.Node, err error) {
	for i, st := range p {
		if st.isIndex() {
			if n.Kind != yaml.SequenceNode || st.index >= len(n.Content) {
				return nil, nil, refuse(CodeNotFound, "%s has no item %d", pathString(p[:i]), st.index)
			}
			n = n.Content[st.index]
			continue
		}
		if n.Kind != yaml.MappingNode {
			return nil, nil, refuse(CodeNotFound, "%s is not a mapping", pathString(p[:i]))
		}
		if k, v, err = f.s.findKey(n, st.key, p[:i]); err != nil {
			return nil, nil, err
		}
		if v == nil {
			return nil, nil, refuse(CodeNotFound, "%s is missing", pathString(p[:i+1]))
		}
		n = v
	}
	return k, v, nil
}

// CheckCollection refuses a collection, found at at, that an anchor shares, that is an alias, that merges
// keys from elsewhere or that repeats a key: editing it in place would change, or miss, other places.
func (f *File) CheckCollection(n *yaml.Node, at Path) error { return f.s.checkCollection(n, at) }

// CheckBlockKey refuses a block key that is not written `key:` first on its line after blanks and dashes:
// only such keys tell where their entry's lines are and how lines written beside them are indented.
func (f *File) CheckBlockKey(k *yaml.Node) error {
	if err := f.s.refuseTabBefore(k, "a key"); err != nil {
		return err
	}
	_, err := f.s.colonAfterKey(k)
	return err
}

// IndentUnit is the indentation the file uses for one nesting level: as the block mapping v under key k
// shows it, else the most common step in the file, else two spaces.
func (f *File) IndentUnit(k, v *yaml.Node) int { return f.s.indentStep([]link{{k, v}}) }

// SequenceStyle reads how mapping m writes its block lists: how far a dash sits right of its key (0 for
// `key:\n- item`) and how far an item sits right of its dash; without lists it follows `kustomize edit`.
func SequenceStyle(m *yaml.Node) (offset, content int) { return sequenceStyle(m) }

// SequenceItem writes the first line of a block list item: the dash at column dash, entry content columns
// right of it.
func SequenceItem(dash, content int, entry string) string { return seqItem(dash, content, entry) }

// Scalar writes s plain when every Kubernetes YAML reader reads it back as the same string, else
// double-quoted.
func Scalar(s string) string { return writeScalar(s, plainIfSafe) }

// DoubleQuoted writes s as a double-quoted scalar that stays on one line and reads back byte for byte.
func DoubleQuoted(s string) string { return doubleQuote(s) }

// Line returns line n (1-based) without its line break; a line past the end of the file is empty.
func (f *File) Line(n int) string { return f.s.content(n) }

// Lines counts the file's lines.
func (f *File) Lines() int { return len(f.s.lines) }

// LineBreak returns the line break that ends line n (1-based): "" on a last line without one.
func (f *File) LineBreak(n int) string {
	l := f.s.lines[n-1]
	return string(f.s.text[l.end:l.next])
}

// EOL returns the line break to write after a new line near line n: line n's own, or the file's first when
// line n has none.
func (f *File) EOL(n int) string { return f.s.eolOf(n) }

// ByteColumn returns the byte index of n within its line (the parser counts columns in characters); ok is
// false when it lies past the end of the line.
func (f *File) ByteColumn(n *yaml.Node) (int, bool) { return f.s.byteCol(n.Line, n.Column) }

// StartsLine tells whether only spaces precede n on its line.
func (f *File) StartsLine(n *yaml.Node) bool { return f.s.startsLine(n) }

// EndLine returns the last line of block collection n, whose entries are indented by indent: the line of
// its last node and the more indented lines that continue it, comments included.
func (f *File) EndLine(n *yaml.Node, indent int) int { return f.s.endLine(n, indent) }

// EndsWithoutBreak tells whether line n is the file's last line and has no line break: lines added after
// it would have to rewrite it to give it one.
func (f *File) EndsWithoutBreak(n int) bool { return f.s.endsWithoutBreak(n) }

// Splice is a planned change of whole lines of a File, applied only by Commit.
type Splice struct{ sp *splice }

// First tells that the splice puts its new entry before the existing ones of its collection: the intended
// meaning given to Commit must put it there too.
func (sp *Splice) First() bool { return sp.sp.first }

func wrap(sp *splice, err error) (*Splice, error) {
	if err != nil {
		return nil, err
	}
	return &Splice{sp}, nil
}

// InsertAfter puts lines after line n (1-based), replacing line n's content with head when head is not
// empty. New lines take line n's line break; when line n ends the file without one, so does the last new
// line.
func (f *File) InsertAfter(n int, head string, lines []string) (*Splice, error) {
	return wrap(f.s.insertAfter(n, head, lines))
}

// InsertBefore puts lines before line n (1-based), each with the file's line break; the new entry they hold
// comes first in its collection.
func (f *File) InsertBefore(n int, lines []string) (*Splice, error) {
	return wrap(f.s.insertBefore(n, lines))
}

// ReplaceLines puts text, whole lines with their breaks, in place of lines first to last (1-based,
// inclusive); last = first-1 inserts text before line first.
func (f *File) ReplaceLines(first, last int, text string) *Splice {
	return &Splice{&splice{from: first - 1, to: last, text: text}}
}

// Commit applies sp and proves the result, or refuses it: outside the spliced lines every byte must be the
// original one, and the re-parsed file must mean the original plus exactly the change intend makes to a copy
// of the root of document doc (scalars it adds need their tag, "!!str" for a string, since a plain "true" or
// "1" would mean something else).
func (f *File) Commit(doc int, sp *Splice, intend func(root *yaml.Node) error) ([]byte, error) {
	return f.s.commit(doc, sp.sp, func(root *cnode) error {
		n := copyNode(f.s.docs[doc].Content[0], map[*yaml.Node]*yaml.Node{})
		if err := intend(n); err != nil {
			return err
		}
		*root = *canon(n)
		return nil
	})
}

// copyNode copies n deeply; an alias in the copy names the copy of its anchored node (anchors come before
// their aliases in a document), so that the copy stands on its own like a fresh parse.
func copyNode(n *yaml.Node, copies map[*yaml.Node]*yaml.Node) *yaml.Node {
	c := *n
	copies[n] = &c
	if a, ok := copies[n.Alias]; ok {
		c.Alias = a
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, d := range n.Content {
		c.Content[i] = copyNode(d, copies)
	}
	return &c
}

// Equal tells whether a and b mean the same: kind, resolved tag, scalar text, anchor and children in order,
// whatever their layout and comments.
func Equal(a, b *yaml.Node) bool { return canon(a).equal(canon(b)) }

// SetScalar sets key=value in the mapping at p below the root of document doc, creating the mappings it
// lacks, as every edit of a scalar here does.
func (f *File) SetScalar(doc int, p Path, key, value string) ([]byte, bool, error) {
	return f.s.setScalar(doc, p, key, value)
}

// Refuse is the refusal of an edit built on this package: the caller keeps the file as it was.
func Refuse(code RefusalCode, format string, args ...any) *RefusedError {
	return refuse(code, format, args...)
}

// RestartableKind tells whether objects of kind have a pod template at spec.template whose annotations
// restart their pods.
func RestartableKind(kind string) bool { return podTemplateKinds[kind] }
