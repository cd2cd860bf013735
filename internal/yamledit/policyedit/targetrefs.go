// Package policyedit moves an Istio policy from the pods its selector picks to the objects its targetRefs
// name, as an exact edit of the file that holds it: the selector's lines become the targetRefs' lines and
// every other byte stays.
package policyedit

import (
	"fmt"
	"maps"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kedge-io/kedge/internal/yamledit"
)

// TargetRef is one entry of an Istio policy's spec.targetRefs.
type TargetRef struct {
	Group, Kind, Name string
}

// ReplaceSelectorWithTargetRefs attaches an Istio policy (AuthorizationPolicy, RequestAuthentication) to what
// refs name instead of the pods its selector picks: the lines of `spec.selector`, which must hold exactly
// `matchLabels` equal to selector, are replaced by a block `spec.targetRefs` at the same place and indentation,
// each entry written `kind`, `group`, `name` as Istio's documentation writes them, its list dashes placed as the
// object's other lists are. Nothing else changes. It reports changed=false, with src as is, when the object
// already has exactly those targetRefs and no selector. A comment inside the selector, which the edit would
// drop, is refused.
func ReplaceSelectorWithTargetRefs(src []byte, t yamledit.Target, selector map[string]string, refs []TargetRef) ([]byte, bool, error) {
	if len(refs) == 0 {
		return nil, false, yamledit.Refuse(yamledit.CodeInvalidInput, "no targetRefs to attach %s to", t)
	}
	for _, r := range refs {
		if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
			return nil, false, yamledit.Refuse(yamledit.CodeInvalidInput, "target name %q is invalid: %s", r.Name, errs[0])
		}
		if r.Kind == "" || strings.ContainsAny(r.Kind+r.Group, " :#{}[]\"'") {
			return nil, false, yamledit.Refuse(yamledit.CodeInvalidInput, "target kind %q (group %q) is invalid", r.Kind, r.Group)
		}
	}
	f, obj, err := yamledit.OpenTarget(src, t)
	if err != nil {
		return nil, false, err
	}
	specAt := obj.Path.Key("spec")
	sk, spec, err := f.FindKey(obj.Node, "spec", obj.Path)
	switch {
	case err != nil:
		return nil, false, err
	case sk == nil:
		return nil, false, yamledit.Refuse(yamledit.CodeNotFound, "%s has no spec", t)
	case spec.Kind != yaml.MappingNode || spec.Style&yaml.FlowStyle != 0:
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "the spec of %s is not a block mapping (line %d)", t, spec.Line)
	}
	if err := f.CheckCollection(spec, specAt); err != nil {
		return nil, false, err
	}
	k, v, err := f.FindKey(spec, "selector", specAt)
	if err != nil {
		return nil, false, err
	}
	if k == nil {
		if hasTargetRefs(spec, refs) {
			return f.Original(), false, nil
		}
		return nil, false, yamledit.Refuse(yamledit.CodeNotFound, "%s has no spec.selector", t)
	}
	if tk, _, _ := f.FindKey(spec, "targetRefs", specAt); tk != nil {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "%s has both spec.selector and spec.targetRefs (line %d)", t, tk.Line)
	}
	if err := plainSelector(f, k, v, selector); err != nil {
		return nil, false, err
	}
	indent := k.Column - 1
	// Istio's documentation's style, dash under the key, where the spec
	// writes no block list to follow.
	offset, content := yamledit.SequenceStyle(spec)
	pad := strings.Repeat(" ", indent+offset)
	lines := []string{strings.Repeat(" ", indent) + "targetRefs:"}
	for _, r := range refs {
		lines = append(lines,
			yamledit.SequenceItem(indent+offset, content, "kind: "+yamledit.Scalar(r.Kind)),
			pad+strings.Repeat(" ", max(content, 2))+"group: "+yamledit.DoubleQuoted(r.Group),
			pad+strings.Repeat(" ", max(content, 2))+"name: "+yamledit.Scalar(r.Name))
	}
	end := f.EndLine(v, indent)
	eol := f.EOL(k.Line)
	var b strings.Builder
	for i, ln := range lines {
		b.WriteString(ln)
		if i < len(lines)-1 {
			b.WriteString(eol)
		}
	}
	b.WriteString(f.LineBreak(end))
	sp := f.ReplaceLines(k.Line, end, b.String())
	out, err := f.Commit(obj.Doc, sp, func(root *yaml.Node) error { return expectTargetRefs(root, specAt, refs) })
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// plainSelector checks that `selector:` heads a block of its own lines holding exactly `matchLabels`, a block
// mapping of strings equal to want, with no comment the edit would drop.
func plainSelector(f *yamledit.File, k, v *yaml.Node, want map[string]string) error {
	if err := f.CheckBlockKey(k); err != nil {
		return err
	}
	if k.LineComment != "" || v.LineComment != "" {
		return yamledit.Refuse(yamledit.CodeUnsupported, "a comment on spec.selector (line %d) would be lost", k.Line)
	}
	if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 || v.Line == k.Line {
		return yamledit.Refuse(yamledit.CodeUnsupported, "spec.selector is not a block mapping of its own lines (line %d)", k.Line)
	}
	if err := f.CheckCollection(v, yamledit.Keys("spec", "selector")); err != nil {
		return err
	}
	if len(v.Content) != 2 || v.Content[0].Value != "matchLabels" {
		return yamledit.Refuse(yamledit.CodeUnsupported, "spec.selector holds more than matchLabels (line %d)", k.Line)
	}
	got, err := yamledit.ReadStringMap(v, yamledit.Keys("matchLabels"))
	if err != nil {
		return err
	}
	if !maps.Equal(got, want) {
		return yamledit.Refuse(yamledit.CodeVerification, "spec.selector.matchLabels in the file is not the one the cluster has (line %d)", k.Line)
	}
	var comment func(n *yaml.Node) bool
	comment = func(n *yaml.Node) bool {
		if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
			return true
		}
		for _, c := range n.Content {
			if comment(c) {
				return true
			}
		}
		return false
	}
	if comment(v) {
		return yamledit.Refuse(yamledit.CodeUnsupported, "a comment inside spec.selector (lines %d to %d) would be lost", k.Line, f.EndLine(v, k.Column-1))
	}
	return nil
}

// hasTargetRefs tells a spec that already attaches to exactly refs.
func hasTargetRefs(spec *yaml.Node, refs []TargetRef) bool {
	v := yamledit.Keys("targetRefs").Find(spec)
	if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) != len(refs) {
		return false
	}
	for i, item := range v.Content {
		r := refs[i]
		if yamledit.StringAt(item, "kind") != r.Kind || yamledit.StringAt(item, "group") != r.Group || yamledit.StringAt(item, "name") != r.Name || len(item.Content) != 6 {
			return false
		}
	}
	return true
}

// expectTargetRefs applies the intended edit to the meaning of a document: the spec's selector entry becomes
// a targetRefs entry in its place.
func expectTargetRefs(root *yaml.Node, specAt yamledit.Path, refs []TargetRef) error {
	spec := specAt.Find(root)
	if spec == nil || spec.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a mapping", specAt)
	}
	for i := 0; i+1 < len(spec.Content); i += 2 {
		if k := spec.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "selector" {
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, r := range refs {
				seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
					str("kind"), str(r.Kind), str("group"), str(r.Group), str("name"), str(r.Name),
				}})
			}
			spec.Content[i], spec.Content[i+1] = str("targetRefs"), seq
			return nil
		}
	}
	return yamledit.Refuse(yamledit.CodeVerification, "no selector in spec")
}

// str is a string in an intended meaning.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
