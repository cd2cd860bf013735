// Package templated tells a YAML text a template wrote (Helm's
// `{{- if }}`, an unquoted `{{ .Values.x }}`) from plain YAML that merely
// holds template text in its strings (`"{{ .Release.Name }}"`, which a
// chart or External Secrets templates later): the first is not what a
// controller applies, and no edit of it is exact.
package templated

import (
	"bytes"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

var templateOpen = []byte("{{")

// Line is the first line (from 1) of text holding template text ({{)
// outside a YAML string or comment, 0 when there is none. docs are text's
// documents as parsed, parsed false when it did not parse. When it parsed,
// every {{ of the text must lie in a scalar's value or a comment: any
// other is YAML syntax (a flow mapping `{{`) written by a template. When
// it did not, any {{ outside a comment line is taken for template text.
func Line(text []byte, docs []*yaml.Node, parsed bool) int {
	if !bytes.Contains(text, templateOpen) {
		return 0
	}
	lines := bytes.Split(text, []byte("\n"))
	candidate := func(inStrings map[int]bool) int {
		for i, content := range lines {
			if !bytes.Contains(content, templateOpen) || bytes.HasPrefix(bytes.TrimLeft(content, " \t"), []byte("#")) || inStrings[i+1] {
				continue
			}
			return i + 1
		}
		return 0
	}
	if !parsed {
		return candidate(nil)
	}
	inside := 0
	starts := map[int]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || n.Kind == yaml.AliasNode {
			return
		}
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			inside += strings.Count(c, "{{")
		}
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "{{") {
			inside += strings.Count(n.Value, "{{")
			// A block or multi-line scalar spans the lines after its start.
			for k := range strings.Count(n.Value, "\n") + 1 {
				starts[n.Line+k] = true
			}
			if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				for k := range strings.Count(n.Value, "\n") + 2 {
					starts[n.Line+k] = true
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range docs {
		walk(d)
	}
	if bytes.Count(text, templateOpen) <= inside {
		return 0
	}
	if n := candidate(starts); n > 0 {
		return n
	}
	return candidate(nil)
}
