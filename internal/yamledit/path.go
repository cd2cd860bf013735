package yamledit

import (
	yaml "go.yaml.in/yaml/v3"
)

// Path leads from a node to one below it: mapping keys, and sequence indexes. An edit of a shape built on
// this package names where it writes with a Path, so that every refusal names the place the same way.
type Path []step

// Keys is the path through the mapping keys ks.
func Keys(ks ...string) Path { return keys(ks...) }

// ParsePath reads the dot-separated keys of p, [i] indexing a sequence ("spec.sources[1].helm.values"): the
// way configuration names a place in a GitOps object.
func ParsePath(p string) (Path, error) { return parseListPath(p) }

// Key returns a new path: p followed by the keys ks.
func (p Path) Key(ks ...string) Path { return append(p.clone(), keys(ks...)...) }

// Index returns a new path: p followed by item i of a sequence.
func (p Path) Index(i int) Path { return append(p.clone(), step{index: i}) }

// Append returns a new path: p followed by q.
func (p Path) Append(q Path) Path { return append(p.clone(), q...) }

func (p Path) clone() Path { return append(Path{}, p...) }

// String names the place in refusals: "spec.sources[1].helm", or "the document root".
func (p Path) String() string { return pathString(p) }

// Find returns the node p reaches from n for reading, or nil when p leads nowhere: aliases are followed and
// merge keys ignored, as everywhere this package reads.
func (p Path) Find(n *yaml.Node) *yaml.Node {
	if n = deref(n); n == nil {
		return nil
	}
	return mappingAt(n, p)
}

// StringAt returns the string value of key in mapping m, or "" when it is missing or not a scalar.
func StringAt(m *yaml.Node, key string) string { return scalarAt(m, key) }

// ReadStringMap reads the mapping of strings at p below n; nil when it is absent or null. A merge key, or a
// value that is not a string, is refused: the map would be read incompletely.
func ReadStringMap(n *yaml.Node, p Path) (map[string]string, error) { return readStringMap(n, p) }
