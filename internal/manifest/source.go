package manifest

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// ProblemOverBudget is a file the index refused to parse because it
// exceeds a budget (size, alias expansion, nesting depth): decoding it, as
// kustomize would, could take the whole process down.
const ProblemOverBudget ProblemKind = "over-budget"

// document is one object of a source file (a YAML document, or an item of
// a `kind: List` document), with the identity as the file writes it.
type document struct {
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

// parseDocuments reads the identity of every object in a YAML (or JSON)
// stream. The nodes it parses keep aliases unexpanded; a stream whose
// aliases or nesting exceed the repository budget is refused with a
// *yamlguard.Error.
func parseDocuments(data []byte) ([]document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	meter := yamlguard.NewMeter(yamlguard.Repository)
	var docs []document
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
		kind := scalarAt(root, "kind")
		if items := lookup(root, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(kind, "List") {
			for _, item := range items.Content {
				d := describeDocument(len(docs), item)
				d.List = true
				docs = append(docs, d)
			}
			continue
		}
		docs = append(docs, describeDocument(len(docs), root))
	}
}

// eachObjectNode calls fn with every top-level object of a YAML stream and
// its index as parseDocuments counts it. The items of a List are counted
// one by one but not handed out: kedge never writes into them. A document
// that does not parse or exceeds the budget ends the walk.
func eachObjectNode(data []byte, fn func(index int, n *yaml.Node)) {
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
		if items := lookup(n, "items"); items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(scalarAt(n, "kind"), "List") {
			index += len(items.Content)
			continue
		}
		fn(index, n)
		index++
	}
}

func describeDocument(index int, n *yaml.Node) document {
	d := document{Index: index}
	if n.Kind == yaml.MappingNode {
		d.APIVersion = scalarAt(n, "apiVersion")
		d.Kind = scalarAt(n, "kind")
		d.Name = scalarAt(n, "metadata", "name")
		d.Namespace = scalarAt(n, "metadata", "namespace")
		d.TemplateAnnotations = stringMapAt(n, "spec", "template", "metadata", "annotations")
		if isNamespaceKind(d.APIVersion, d.Kind) {
			d.Labels = stringMapAt(n, "metadata", "labels")
		}
		d.SubstituteDisabled = substituteDisabled(stringMapAt(n, "metadata", "labels"), stringMapAt(n, "metadata", "annotations"))
		if isHelmReleaseKind(d.APIVersion, d.Kind) {
			var pr any
			if v := lookup(n, "spec", "postRenderers"); v != nil && v.Decode(&pr) == nil {
				d.Release = releaseRender(pr)
			} else {
				d.Release = releaseRender(nil)
			}
		}
	}
	return d
}

// lookup walks mapping keys; nil when any step is missing or not a mapping.
func lookup(n *yaml.Node, path ...string) *yaml.Node {
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

func scalarAt(n *yaml.Node, path ...string) string {
	v := lookup(n, path...)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

func stringMapAt(n *yaml.Node, path ...string) map[string]string {
	v := lookup(n, path...)
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

// isWorkloadKind reports whether objects of this kind carry the pod template
// kedge restarts. Only these are indexed: everything else is irrelevant to a
// plan and would only cost memory on large repositories.
func isNamespaceKind(apiVersion, kind string) bool { return apiVersion == "v1" && kind == "Namespace" }

func isWorkloadKind(apiVersion, kind string) bool {
	group := apiGroup(apiVersion)
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return group == "apps" || group == "extensions"
	case "Rollout":
		return group == "argoproj.io"
	}
	return false
}

func apiGroup(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}

// isYAMLName reports whether a file name is one kustomize and Flux read as
// manifests.
func isYAMLName(name string) bool {
	switch strings.ToLower(pathExt(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func pathExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// ProblemDeprecated is a kustomization using a field kustomize still
// accepts but has deprecated; kustomize prints a warning for it on every
// build, which kedge keeps off its own output and reports here instead.
const ProblemDeprecated ProblemKind = "deprecated"

// overBudget reports the file at absolute path p when err is a budget's
// refusal, once however many roots read the file.
func (ix *Index) overBudget(p string, err error) {
	var over *yamlguard.Error
	if errors.As(err, &over) {
		ix.overBudgetMessage(p, over.Error())
	}
}

// overBudgetMessage reports the file at p over budget, once.
func (ix *Index) overBudgetMessage(p, why string) {
	pr := Problem{Path: ix.rel(p), Kind: ProblemOverBudget, Err: why}
	if !slices.Contains(ix.Problems, pr) {
		ix.Problems = append(ix.Problems, pr)
	}
}

// deprecations reports the deprecated fields of a kustomization, and logs
// them at debug level where kustomize would have printed them.
func (ix *Index) deprecations(kf *kustomizationFile) {
	file := ix.rel(filepath.Join(kf.dir, kf.name))
	for _, w := range kf.deprecated {
		slog.Debug("kustomization uses a deprecated field", "file", file, "warning", w)
		ix.Problems = append(ix.Problems, Problem{Path: file, Kind: ProblemDeprecated, Err: w})
	}
}
