// Package document reads the objects a GitOps repository's files write:
// their identities, the kinds kedge cares about, and the bodies of
// rendered objects. It reads bytes it is given and nothing else.
package document

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// Document is one object of a source file (a YAML document, or an item of
// a `kind: List` document), with the identity as the file writes it.
type Document struct {
	// Index is the object's position in the file counting from 0, skipping
	// empty documents and counting every List item: the order kyaml's readers
	// (and yamledit's Target.Document) use.
	Index      int
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	// TemplateAnnotations are spec.template.metadata.annotations.
	TemplateAnnotations map[string]string
	// Labels are metadata.labels; kept for Namespaces only, whose
	// istio.io/rev label migrations move.
	Labels map[string]string
	// List is set for the items of a List document.
	List bool
	// SubstituteDisabled is set when the object opts out of Flux's
	// post-build substitution.
	SubstituteDisabled bool
	// Release is set for a Flux HelmRelease.
	Release *ReleaseRender
}

// Parse reads the identity of every object in a YAML (or JSON) stream. The
// nodes it parses keep aliases unexpanded; a stream whose aliases or
// nesting exceed the repository budget is refused with a *yamlguard.Error.
func Parse(data []byte) ([]Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	meter := yamlguard.NewMeter(yamlguard.Repository)
	var docs []Document
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(node.Content) == 0 {
			continue
		}
		if err := meter.Add(&node); err != nil {
			return nil, err
		}
		root := node.Content[0]
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue
		}
		kind := Scalar(root, "kind")
		if items := Lookup(root, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(kind, "List") {
			for _, item := range items.Content {
				d := describe(len(docs), item)
				d.List = true
				docs = append(docs, d)
			}
			continue
		}
		docs = append(docs, describe(len(docs), root))
	}
}

// EachObject calls fn with each object node of a stream (List documents
// counted by their items, which fn is not called for), numbered as Parse
// numbers them; it stops at the first document that does not parse or
// exceeds the budget.
func EachObject(data []byte, fn func(index int, n *yaml.Node)) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	meter := yamlguard.NewMeter(yamlguard.Repository)
	for index := 0; ; {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil || meter.Add(&node) != nil {
			return
		}
		if len(node.Content) == 0 {
			continue
		}
		n := node.Content[0]
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			continue
		}
		if items := Lookup(n, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(Scalar(n, "kind"), "List") {
			index += len(items.Content)
			continue
		}
		fn(index, n)
		index++
	}
}

func describe(index int, n *yaml.Node) Document {
	d := Document{Index: index}
	if n.Kind == yaml.MappingNode {
		d.APIVersion = Scalar(n, "apiVersion")
		d.Kind = Scalar(n, "kind")
		d.Name = Scalar(n, "metadata", "name")
		d.Namespace = Scalar(n, "metadata", "namespace")
		d.TemplateAnnotations = StringMap(n, "spec", "template", "metadata", "annotations")
		if IsNamespace(d.APIVersion, d.Kind) {
			d.Labels = StringMap(n, "metadata", "labels")
		}
		d.SubstituteDisabled = SubstituteDisabled(StringMap(n, "metadata", "labels"), StringMap(n, "metadata", "annotations"))
		if IsHelmRelease(d.APIVersion, d.Kind) {
			var pr any
			if v := Lookup(n, "spec", "postRenderers"); v != nil && v.Decode(&pr) == nil {
				d.Release = NewReleaseRender(pr)
			} else {
				d.Release = NewReleaseRender(nil)
			}
		}
	}
	return d
}

// ObjectAt decodes object doc of a file, counted as Parse counts (each item
// of a List one object).
func ObjectAt(data []byte, doc int) (map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	meter := yamlguard.NewMeter(yamlguard.Repository)
	for index := 0; ; {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no object %d in the file", doc)
		}
		if err != nil {
			return nil, err
		}
		if err := meter.Add(&node); err != nil {
			return nil, err
		}
		if len(node.Content) == 0 {
			continue
		}
		n := node.Content[0]
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			continue
		}
		if items := Lookup(n, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(Scalar(n, "kind"), "List") {
			if doc < index+len(items.Content) {
				var out map[string]any
				return out, items.Content[doc-index].Decode(&out)
			}
			index += len(items.Content)
			continue
		}
		if index == doc {
			var out map[string]any
			return out, n.Decode(&out)
		}
		index++
	}
}

// Lookup walks mapping keys; nil when any step is missing or not a mapping.
func Lookup(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

// Scalar is the scalar at path, "" when there is none.
func Scalar(n *yaml.Node, path ...string) string {
	v := Lookup(n, path...)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// StringMap is the mapping of scalars at path.
func StringMap(n *yaml.Node, path ...string) map[string]string {
	v := Lookup(n, path...)
	if v == nil || v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return nil
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i+1].Kind == yaml.ScalarNode {
			out[v.Content[i].Value] = v.Content[i+1].Value
		}
	}
	return out
}

// IsYAMLName reports whether a file name is one kustomize and Flux read as
// manifests.
func IsYAMLName(name string) bool {
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i:]
	}
	switch strings.ToLower(ext) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// ReleaseRender is what a HelmRelease, as the repository renders it, says
// about post-renderers.
type ReleaseRender struct {
	// PostRenderers counts its spec.postRenderers entries, kedge's included.
	PostRenderers int
	// Restarts are the pod template annotations kedge's entry sets, by
	// "Kind/name" of the workload it targets.
	Restarts map[string]map[string]string
}

// NewReleaseRender reads a HelmRelease's spec.postRenderers.
func NewReleaseRender(postRenderers any) *ReleaseRender {
	list, _ := postRenderers.([]any)
	return &ReleaseRender{PostRenderers: len(list), Restarts: helmedit.ReleaseRestarts(postRenderers)}
}

// ID names an object as a cluster runs it.
type ID struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

func (id ID) String() string { return id.Kind + " " + id.Namespace + "/" + id.Name }
