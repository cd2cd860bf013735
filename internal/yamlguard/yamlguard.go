// Package yamlguard refuses YAML whose decoding would cost far more than its
// size suggests, before anything expands it: aliases nested into aliases
// ("billion laughs") make a few hundred bytes expand to gigabytes in every
// decoder that resolves them (kustomize's kyaml does, for every file of a
// build), and a parse of an oversized or absurdly deep file holds memory and
// a core for as long as it runs.
//
// The check parses into yaml.v3 nodes, which keeps each alias as one node
// pointing at its anchor: the cost of expanding is computed, never paid.
package yamlguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// The budgets of a repository file. No manifest a person writes comes near
// them; each bounds what one hostile file can cost a build.
const (
	// MaxFileBytes bounds one file of a GitOps repository. Bundles of many
	// CustomResourceDefinitions run to a few MiB; a parsed YAML node tree
	// takes some ten times its text, so this keeps one file's parse within
	// about 100 MiB.
	MaxFileBytes = 8 << 20
	// MaxDepth bounds how deeply collections nest. Kubernetes objects, CRD
	// schemas included, nest a few dozen levels; the parser's own limit
	// (10,000) is far above what any decoder walks cheaply.
	MaxDepth = 200
	// aliasRatio and aliasSlack bound what aliases may add: the expanded
	// content may be at most aliasRatio times the written content plus
	// aliasSlack bytes. Anchors shared by a handful of containers stay far
	// below it; nested aliases multiply and exceed it within a few levels.
	aliasRatio = 10
	aliasSlack = 1 << 20
)

// Limits says which budgets apply; a zero field is not checked.
type Limits struct {
	MaxBytes int64
	MaxDepth int
}

// Repository is the budget of a file in a GitOps checkout.
var Repository = Limits{MaxBytes: MaxFileBytes, MaxDepth: MaxDepth}

// AliasesOnly checks alias expansion alone: for inputs that are large by
// nature (a cluster snapshot's List of every pod) and whose depth the
// decoders already bound.
var AliasesOnly = Limits{}

// Error says which budget a file exceeds, and by how much.
type Error struct {
	// Budget is "size", "aliasing" or "depth".
	Budget string
	Found  int64
	Limit  int64
}

func (e *Error) Error() string {
	switch e.Budget {
	case "size":
		return fmt.Sprintf("file of %d bytes exceeds the budget of %d bytes", e.Found, e.Limit)
	case "aliasing":
		return fmt.Sprintf("excessive aliasing: aliases expand the content to %d bytes, beyond the budget of %d", e.Found, e.Limit)
	default:
		return fmt.Sprintf("nesting depth %d exceeds the budget of %d", e.Found, e.Limit)
	}
}

// IsOverBudget reports whether err comes from a budget.
func IsOverBudget(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Check tells whether data stays within the limits. Text that does not
// parse is not judged: whoever decodes it reports the syntax error.
func Check(data []byte, l Limits) error {
	if l.MaxBytes > 0 && int64(len(data)) > l.MaxBytes {
		return &Error{Budget: "size", Found: int64(len(data)), Limit: l.MaxBytes}
	}
	if l.MaxDepth == 0 && !MayHaveAlias(data) {
		return nil
	}
	return checkParsed(data, l)
}

func checkParsed(data []byte, l Limits) (err error) {
	defer func() {
		// The parser has panicked on malformed input before; the caller's
		// own parse reports such a file.
		if recover() != nil {
			err = nil
		}
	}()
	m := NewMeter(l)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if dec.Decode(&doc) != nil {
			return nil // the end, or a syntax error the caller's parse reports
		}
		if err := m.Add(&doc); err != nil {
			return err
		}
	}
}

// ReadAll reads r up to limit bytes (no limit when 0), failing with a size
// Error beyond it without reading the rest.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	if limit <= 0 {
		return io.ReadAll(r)
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &Error{Budget: "size", Found: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// MayHaveAlias reports whether data holds a '*' where an alias could begin:
// at the start, or after white space, a flow indicator or ':'. A quoted
// '*' ("*", '*.example.com') never qualifies; a false yes only costs a
// parse.
func MayHaveAlias(data []byte) bool {
	for i := bytes.IndexByte(data, '*'); i >= 0; {
		if i == 0 || aliasMayFollow(data[i-1]) {
			return true
		}
		next := bytes.IndexByte(data[i+1:], '*')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

func aliasMayFollow(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '[', '{', ',', ':':
		return true
	}
	// The last byte of a byte order mark, or of any other non-ASCII
	// character a lenient parser might take for white space.
	return c >= 0x80
}

// Meter accumulates the documents of one file: the alias budget holds for
// the file as a whole, so many small expansions cannot add up.
type Meter struct {
	limits   Limits
	written  int64
	expanded int64
}

// NewMeter starts measuring a file.
func NewMeter(l Limits) *Meter { return &Meter{limits: l} }

// Add measures one parsed document.
func (m *Meter) Add(doc *yaml.Node) error {
	w := &walk{memo: map[*yaml.Node]measure{}}
	m.written = saturatingAdd(m.written, written(doc))
	got := w.expand(doc, 0)
	m.expanded = saturatingAdd(m.expanded, got.weight)
	if limit := aliasRatio*m.written + aliasSlack; m.expanded > limit {
		return &Error{Budget: "aliasing", Found: m.expanded, Limit: limit}
	}
	// The document node itself is no nesting level.
	if depth := got.depth - 1; m.limits.MaxDepth > 0 && depth > m.limits.MaxDepth {
		return &Error{Budget: "depth", Found: int64(depth), Limit: int64(m.limits.MaxDepth)}
	}
	return nil
}

// weight is what a node adds to the decoded content: its text and one for
// its place.
func weight(n *yaml.Node) int64 { return 1 + int64(len(n.Value)) }

// written is the content as the file writes it: an alias counts as its name.
func written(n *yaml.Node) int64 {
	total := weight(n)
	for _, c := range n.Content {
		total = saturatingAdd(total, written(c))
	}
	return total
}

type measure struct {
	weight int64
	depth  int
}

type walk struct {
	memo map[*yaml.Node]measure
}

// maxWalkDepth stops following aliases that reach themselves (the parser
// refuses those, but nothing here may loop on them).
const maxWalkDepth = 20000

// expand measures n with every alias replaced by its anchor's content.
// Anchored nodes are measured once, so the walk is linear in the written
// size however far the aliases multiply.
func (w *walk) expand(n *yaml.Node, level int) measure {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if got, ok := w.memo[n]; ok {
		return got
	}
	if level > maxWalkDepth {
		return measure{weight: 1, depth: 1}
	}
	if n.Anchor != "" {
		w.memo[n] = measure{weight: 1, depth: 1} // an alias inside its own anchor counts once
	}
	got := measure{weight: weight(n), depth: 1}
	for _, c := range n.Content {
		sub := w.expand(c, level+1)
		got.weight = saturatingAdd(got.weight, sub.weight)
		got.depth = max(got.depth, 1+sub.depth)
	}
	if n.Anchor != "" {
		w.memo[n] = got
	}
	return got
}

const saturated = int64(1) << 60

func saturatingAdd(a, b int64) int64 {
	if a+b > saturated || a+b < 0 {
		return saturated
	}
	return a + b
}
