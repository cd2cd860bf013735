package yamledit

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// step is one hop from a node to a child: a mapping key, or a sequence index when index >= 0.
type step struct {
	key   string
	index int
}

func keys(ks ...string) []step {
	out := make([]step, len(ks))
	for i, k := range ks {
		out[i] = step{key: k, index: -1}
	}
	return out
}

func (st step) isIndex() bool { return st.index >= 0 }

func pathString(path []step) string {
	if len(path) == 0 {
		return "the document root"
	}
	var b strings.Builder
	for i, st := range path {
		if st.isIndex() {
			fmt.Fprintf(&b, "[%d]", st.index)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(st.key)
	}
	return b.String()
}

// object is one Kubernetes object of the file: a document, or an item of a `kind: List` document.
type object struct {
	doc                   int    // index into source.docs
	path                  []step // from the document's root to the object's mapping
	node                  *yaml.Node
	kind, name, namespace string
}

// root returns the content of document i, or nil for an empty document.
func (s *source) root(i int) *yaml.Node {
	d := s.docs[i]
	if len(d.Content) == 0 {
		return nil
	}
	r := d.Content[0]
	if r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null" {
		return nil
	}
	return r
}

func (s *source) objects() []object {
	var objs []object
	for i := range s.docs {
		r := s.root(i)
		if r == nil {
			continue
		}
		kind := scalarAt(r, "kind")
		if items := lookupValue(r, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(kind, "List") {
			for j, item := range items.Content {
				objs = append(objs, describe(i, []step{{key: "items", index: -1}, {index: j}}, item))
			}
			continue
		}
		objs = append(objs, describe(i, nil, r))
	}
	return objs
}

func describe(doc int, path []step, n *yaml.Node) object {
	o := object{doc: doc, path: path, node: n, kind: scalarAt(n, "kind")}
	if md := lookupValue(n, "metadata"); md != nil {
		o.name, o.namespace = scalarAt(md, "name"), scalarAt(md, "namespace")
	}
	return o
}

// loadEditable parses src and finds t in it, as a document whose own
// collection may be edited in place (no anchor, alias or merge on it).
func loadEditable(src []byte, t Target) (*source, *object, error) {
	s, obj, err := loadTarget(src, t)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkCollection(obj.node, obj.path); err != nil {
		return nil, nil, err
	}
	return s, obj, nil
}

// loadTarget parses src and finds t in it.
func loadTarget(src []byte, t Target) (*source, *object, error) {
	s, err := load(src)
	if err != nil {
		return nil, nil, err
	}
	obj, err := s.locate(t)
	if err != nil {
		return nil, nil, err
	}
	return s, obj, nil
}

func (s *source) locate(t Target) (*object, error) {
	var found []object
	var positions []string
	for i, o := range s.objects() {
		if o.kind != t.Kind || o.name != t.Name {
			continue
		}
		if t.Namespace != "" && o.namespace != "" && o.namespace != t.Namespace {
			continue
		}
		if t.Document != AnyDocument && t.Document != i {
			continue
		}
		found = append(found, o)
		positions = append(positions, fmt.Sprintf("%d (line %d)", i, o.node.Line))
	}
	switch len(found) {
	case 0:
		return nil, refuse(CodeNotFound, "no %s in the file", t)
	case 1:
		return &found[0], nil
	default:
		return nil, refuse(CodeAmbiguous, "%d objects match %s: objects %s", len(found), t, strings.Join(positions, ", "))
	}
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// lookupValue returns the value of key in mapping m for reading: aliases are followed, merge keys ignored.
func lookupValue(m *yaml.Node, key string) *yaml.Node {
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := deref(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return deref(m.Content[i+1])
		}
	}
	return nil
}

func scalarAt(m *yaml.Node, key string) string {
	if v := lookupValue(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0))
}

// readStringMap reads the string map at path below n; nil when it is absent or null.
func readStringMap(n *yaml.Node, path []step) (map[string]string, error) {
	cur := deref(n)
	for i, st := range path {
		if cur.Kind != yaml.MappingNode {
			return nil, refuse(CodeUnsupported, "%s is not a mapping", pathString(path[:i]))
		}
		for j := 0; j < len(cur.Content); j += 2 {
			if isMergeKey(cur.Content[j]) {
				return nil, refuse(CodeAnchor, "%s has a merge key (line %d)", pathString(path[:i]), cur.Content[j].Line)
			}
		}
		next := lookupValue(cur, st.key)
		if next == nil || isNull(next) {
			return nil, nil
		}
		cur = next
	}
	if cur.Kind != yaml.MappingNode {
		return nil, refuse(CodeUnsupported, "%s is not a mapping (line %d)", pathString(path), cur.Line)
	}
	out := make(map[string]string, len(cur.Content)/2)
	for j := 0; j+1 < len(cur.Content); j += 2 {
		k, v := deref(cur.Content[j]), deref(cur.Content[j+1])
		if isMergeKey(k) {
			return nil, refuse(CodeAnchor, "%s has a merge key (line %d)", pathString(path), k.Line)
		}
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return nil, refuse(CodeUnsupported, "%s holds a value that is not a string (line %d)", pathString(path), k.Line)
		}
		if isNull(v) {
			out[k.Value] = ""
			continue
		}
		out[k.Value] = v.Value
	}
	return out, nil
}
