// Package helmedit makes the exact edits of the places where a chart's render is steered from Git: kedge's
// restart entry among a Flux HelmRelease's post-renderers (and the overlay patch file that adds it to a shared
// release), the chart values of a HelmRelease or an Argo CD Application, and an Argo CD source's Helm
// parameters. Each edit is planned in the file's own layout and committed through yamledit's verification.
package helmedit

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kedge-io/kedge/internal/yamledit"
)

// A Flux HelmRelease restarts what its chart renders through spec.postRenderers: each entry's kustomize
// patches are applied by helm-controller to the rendered manifests before they are installed
// (https://fluxcd.io/flux/components/helm/helmreleases/#post-renderers). kedge owns one entry there. It is
// recognised by RestartMarker, the first line of each of its patches: the text of a patch survives every
// kustomize build and every reformatting of the file, where a YAML comment beside it would not.
const RestartMarker = "# kedge: restart"

// RestartPatch is one workload that kedge's post-renderer entry restarts: a kustomize patch targeting the
// object by group, kind and name as the chart renders it, setting pod template annotations.
type RestartPatch struct {
	APIVersion, Kind, Name string
	Annotations            map[string]string
}

// Key names the workload the patch targets.
func (p RestartPatch) Key() string { return p.Kind + "/" + p.Name }

// ReleaseRestarts reads kedge's entries from a HelmRelease's spec.postRenderers as decoded from JSON or YAML:
// the pod template annotations they set, by the Key of each workload. Nil when there is no such entry. A
// render may hold more than one (an overlay's patch adding one to a release that has its own): post-renderers
// run in order, so a later entry's value is the one the workload gets.
func ReleaseRestarts(postRenderers any) map[string]map[string]string {
	items, _ := postRenderers.([]any)
	var out map[string]map[string]string
	for _, item := range items {
		for _, p := range restartPatchesOf(item) {
			if out == nil {
				out = map[string]map[string]string{}
			}
			if out[p.Key()] == nil {
				out[p.Key()] = map[string]string{}
			}
			maps.Copy(out[p.Key()], p.Annotations)
		}
	}
	return out
}

// IsRestartEntry tells whether a post-renderer entry, decoded from JSON or YAML, is kedge's.
func IsRestartEntry(entry any) bool { return restartPatchesOf(entry) != nil }

// restartPatchesOf returns the patches of a post-renderer entry when it is kedge's, nil otherwise.
func restartPatchesOf(entry any) []RestartPatch {
	m, _ := entry.(map[string]any)
	k, _ := m["kustomize"].(map[string]any)
	patches, _ := k["patches"].([]any)
	var out []RestartPatch
	for _, p := range patches {
		pm, _ := p.(map[string]any)
		text, _ := pm["patch"].(string)
		if !strings.HasPrefix(text, RestartMarker+"\n") {
			continue
		}
		var body struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
			Spec struct {
				Template struct {
					Metadata struct {
						Annotations map[string]string `yaml:"annotations"`
					} `yaml:"metadata"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if yaml.Unmarshal([]byte(text), &body) != nil {
			continue
		}
		target, _ := pm["target"].(map[string]any)
		kind, _ := target["kind"].(string)
		name, _ := target["name"].(string)
		if kind == "" || name == "" {
			continue
		}
		out = append(out, RestartPatch{APIVersion: body.APIVersion, Kind: kind, Name: name, Annotations: body.Spec.Template.Metadata.Annotations})
	}
	return out
}

// mergePatches returns the patches of existing with those of set replacing the ones for the same workload,
// sorted by workload: the annotations of a workload kedge restarted before and does not restart now stay as
// they are, since removing them would restart it again.
func mergePatches(existing, set []RestartPatch) []RestartPatch {
	byKey := map[string]RestartPatch{}
	for _, p := range existing {
		byKey[p.Key()] = p
	}
	for _, p := range set {
		if old, ok := byKey[p.Key()]; ok {
			ann := maps.Clone(old.Annotations)
			if ann == nil {
				ann = map[string]string{}
			}
			maps.Copy(ann, p.Annotations)
			p.Annotations = ann
		}
		byKey[p.Key()] = p
	}
	keys := slices.Sorted(maps.Keys(byKey))
	out := make([]RestartPatch, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func validatePatches(patches []RestartPatch) error {
	if len(patches) == 0 {
		return yamledit.Refuse(yamledit.CodeInvalidInput, "no workload to restart")
	}
	for _, p := range patches {
		if !yamledit.RestartableKind(p.Kind) {
			return yamledit.Refuse(yamledit.CodeInvalidInput, "kind %q has no restartable pod template at spec.template", p.Kind)
		}
		if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
			return yamledit.Refuse(yamledit.CodeInvalidInput, "workload name %q is invalid: %s", p.Name, errs[0])
		}
		for k, v := range p.Annotations {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return yamledit.Refuse(yamledit.CodeInvalidInput, "annotation key %q is invalid: %s", k, errs[0])
			}
			if !utf8.ValidString(v) || strings.ContainsAny(v, "\r\n") || strings.Contains(v, "{{") {
				return yamledit.Refuse(yamledit.CodeInvalidInput, "the value of annotation %q cannot be written in a patch", k)
			}
		}
	}
	return nil
}

// releaseEntryNode builds kedge's post-renderer entry: one kustomize patch per workload, each a strategic-merge
// patch (which creates the annotation mappings a chart may lack) headed by RestartMarker.
func releaseEntryNode(patches []RestartPatch) (*yaml.Node, error) {
	var items []*yaml.Node
	for _, p := range patches {
		text, err := patchText(p)
		if err != nil {
			return nil, err
		}
		target := mapNode()
		if group, _, ok := strings.Cut(p.APIVersion, "/"); ok && group != "" {
			target.Content = append(target.Content, scalarNode("group"), scalarNode(group))
		}
		target.Content = append(target.Content, scalarNode("kind"), scalarNode(p.Kind), scalarNode("name"), scalarNode(p.Name))
		patch := &yaml.Node{Kind: yaml.ScalarNode, Value: text, Style: yaml.LiteralStyle}
		items = append(items, mapNode(scalarNode("target"), target, scalarNode("patch"), patch))
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Content: items}
	return mapNode(scalarNode("kustomize"), mapNode(scalarNode("patches"), seq)), nil
}

// patchText is the strategic-merge patch of one workload, starting with RestartMarker.
func patchText(p RestartPatch) (string, error) {
	ann := mapNode()
	for _, k := range slices.Sorted(maps.Keys(p.Annotations)) {
		ann.Content = append(ann.Content, scalarNode(k), &yaml.Node{Kind: yaml.ScalarNode, Value: p.Annotations[k], Style: yaml.DoubleQuotedStyle})
	}
	doc := mapNode(
		scalarNode("apiVersion"), scalarNode(p.APIVersion),
		scalarNode("kind"), scalarNode(p.Kind),
		scalarNode("metadata"), mapNode(scalarNode("name"), scalarNode(p.Name)),
		scalarNode("spec"), mapNode(scalarNode("template"), mapNode(scalarNode("metadata"), mapNode(scalarNode("annotations"), ann))),
	)
	out, err := encode(doc, 2)
	if err != nil {
		return "", err
	}
	return RestartMarker + "\n" + string(out), nil
}

func mapNode(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

// scalarNode is a string: tagged so, the encoder quotes a value that would
// read back as another type (a workload named "9", "true" or "null").
func scalarNode(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

func encode(n *yaml.Node, indent int) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(indent)
	err := enc.Encode(n)
	if err == nil {
		err = enc.Close()
	}
	return buf.Bytes(), err
}

// indentedLines encodes n and indents every line by indent spaces; the lines of a block scalar are indented
// alike, which keeps their value.
func indentedLines(n *yaml.Node, indent, unit int) ([]string, error) {
	data, err := encode(n, unit)
	if err != nil {
		return nil, err
	}
	pad := strings.Repeat(" ", indent)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "" {
			out = append(out, l)
			continue
		}
		out = append(out, pad+l)
	}
	return out, nil
}

// SetReleaseRestarts makes the HelmRelease t carry kedge's post-renderer entry with a patch for each of
// patches, keeping the patches the entry already has for other workloads. The entry is updated in place when
// the release has it, else appended to spec.postRenderers, which is created at the end of spec when missing;
// no other line of the file changes. changed is false when the entry already says the same.
func SetReleaseRestarts(src []byte, t yamledit.Target, patches []RestartPatch) (out []byte, changed bool, err error) {
	if t.Kind != "HelmRelease" {
		return nil, false, yamledit.Refuse(yamledit.CodeInvalidInput, "kind %q is not a HelmRelease", t.Kind)
	}
	if err := validatePatches(patches); err != nil {
		return nil, false, err
	}
	f, obj, err := yamledit.OpenTarget(src, t)
	if err != nil {
		return nil, false, err
	}
	specPath := obj.Path.Key("spec")
	sk, spec, err := f.FindKey(obj.Node, "spec", obj.Path)
	if err != nil {
		return nil, false, err
	}
	if sk == nil || spec.Kind != yaml.MappingNode || spec.Style&yaml.FlowStyle != 0 || len(spec.Content) == 0 {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "the HelmRelease has no block mapping spec")
	}
	if err := f.CheckCollection(spec, specPath); err != nil {
		return nil, false, err
	}
	for i := 0; i < len(spec.Content); i += 2 {
		if err := f.CheckBlockKey(spec.Content[i]); err != nil {
			return nil, false, err
		}
	}
	unit := f.IndentUnit(sk, spec)
	pk, list, err := f.FindKey(spec, "postRenderers", specPath)
	if err != nil {
		return nil, false, err
	}
	if pk == nil {
		return addPostRenderers(f, obj.Doc, spec, specPath, unit, mergePatches(nil, patches))
	}
	listPath := specPath.Key("postRenderers")
	if err := f.CheckCollection(list, listPath); err != nil {
		return nil, false, err
	}
	if list.Kind != yaml.SequenceNode || list.Style&yaml.FlowStyle != 0 || len(list.Content) == 0 {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "spec.postRenderers is not a block list (line %d)", pk.Line)
	}
	for i, item := range list.Content {
		var decoded any
		if err := item.Decode(&decoded); err != nil {
			return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "cannot read post-renderer %d: %v", i, err)
		}
		if existing := restartPatchesOf(decoded); existing != nil {
			return replaceEntry(f, obj.Doc, list, listPath, i, unit, mergePatches(existing, patches))
		}
	}
	return appendEntry(f, obj.Doc, list, listPath, unit, mergePatches(nil, patches))
}

// addPostRenderers writes `postRenderers:` with kedge's entry after the last key of spec.
func addPostRenderers(f *yamledit.File, doc int, spec *yaml.Node, specPath yamledit.Path, unit int, patches []RestartPatch) ([]byte, bool, error) {
	entry, err := releaseEntryNode(patches)
	if err != nil {
		return nil, false, err
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{entry}}
	indent := spec.Content[0].Column - 1
	body, err := indentedLines(seq, indent+unit, unit)
	if err != nil {
		return nil, false, err
	}
	lines := append([]string{strings.Repeat(" ", indent) + "postRenderers:"}, body...)
	var sp *yamledit.Splice
	if end := f.EndLine(spec, indent); !f.EndsWithoutBreak(end) || !f.StartsLine(spec.Content[0]) {
		sp, err = f.InsertAfter(end, "", lines)
	} else {
		sp, err = f.InsertBefore(spec.Content[0].Line, lines)
	}
	if err != nil {
		return nil, false, err
	}
	out, err := f.Commit(doc, sp, func(root *yaml.Node) error {
		m := specPath.Find(root)
		if m == nil || m.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping", specPath)
		}
		added := []*yaml.Node{scalarNode("postRenderers"), seq}
		if sp.First() {
			m.Content = append(added, m.Content...)
		} else {
			m.Content = append(m.Content, added...)
		}
		return nil
	})
	return out, err == nil, err
}

// releaseEntryLines renders kedge's entry as an item of a block list whose dashes sit at column dash.
func releaseEntryLines(patches []RestartPatch, dash, unit int) ([]string, *yaml.Node, error) {
	entry, err := releaseEntryNode(patches)
	if err != nil {
		return nil, nil, err
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{entry}}
	lines, err := indentedLines(seq, dash, unit)
	if err != nil {
		return nil, nil, err
	}
	return lines, entry, nil
}

// appendEntry adds kedge's entry after the release's own post-renderers.
func appendEntry(f *yamledit.File, doc int, list *yaml.Node, listPath yamledit.Path, unit int, patches []RestartPatch) ([]byte, bool, error) {
	dash := list.Column - 1
	lines, want, err := releaseEntryLines(patches, dash, unit)
	if err != nil {
		return nil, false, err
	}
	end := f.EndLine(list, dash)
	if f.EndsWithoutBreak(end) {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "spec.postRenderers ends the file without a line break")
	}
	sp, err := f.InsertAfter(end, "", lines)
	if err != nil {
		return nil, false, err
	}
	out, err := f.Commit(doc, sp, func(root *yaml.Node) error {
		l := listPath.Find(root)
		if l == nil || l.Kind != yaml.SequenceNode {
			return fmt.Errorf("postRenderers is not a list")
		}
		l.Content = append(l.Content, want)
		return nil
	})
	return out, err == nil, err
}

// replaceEntry rewrites the lines of kedge's entry, item i of the list; nothing changes when the entry
// already means what it would be written as.
func replaceEntry(f *yamledit.File, doc int, list *yaml.Node, listPath yamledit.Path, i, unit int, patches []RestartPatch) ([]byte, bool, error) {
	item := list.Content[i]
	dash := list.Column - 1
	lines, want, err := releaseEntryLines(patches, dash, unit)
	if err != nil {
		return nil, false, err
	}
	if yamledit.Equal(item, want) {
		return f.Original(), false, nil
	}
	if item.Kind != yaml.MappingNode || item.Style&yaml.FlowStyle != 0 || !startsItemLine(f, item, dash) {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "kedge's post-renderer (line %d) is not written as `- kustomize:`", item.Line)
	}
	first := item.Line
	last := f.EndLine(item, dash)
	if i+1 < len(list.Content) {
		// The next item's own lines (and comments above it) are not kedge's.
		last = min(last, list.Content[i+1].Line-1)
	}
	if f.EndsWithoutBreak(last) {
		return nil, false, yamledit.Refuse(yamledit.CodeUnsupported, "kedge's post-renderer ends the file without a line break")
	}
	eol := f.EOL(first)
	sp := f.ReplaceLines(first, last, strings.Join(lines, eol)+eol)
	out, err := f.Commit(doc, sp, func(root *yaml.Node) error {
		l := listPath.Find(root)
		if l == nil || l.Kind != yaml.SequenceNode || i >= len(l.Content) {
			return fmt.Errorf("postRenderers has no item %d", i)
		}
		l.Content[i] = want
		return nil
	})
	return out, err == nil, err
}

// startsItemLine tells whether item is written right after its dash, which sits at column dash.
func startsItemLine(f *yamledit.File, item *yaml.Node, dash int) bool {
	text := f.Line(item.Line)
	if len(text) <= dash || text[dash] != '-' || strings.TrimSpace(text[:dash]) != "" {
		return false
	}
	b, ok := f.ByteColumn(item)
	return ok && strings.TrimSpace(text[dash+1:b]) == ""
}

// ReleasePatchFile is kedge's JSON 6902 patch of a HelmRelease in an overlay: it adds kedge's post-renderer
// entry to a release whose file other overlays share. Op is "add" at AddPath: "/spec/postRenderers/-"
// appends to the release's own list, "/spec/postRenderers" creates the list for a release without one.
type ReleasePatchFile struct {
	AddPath string
	Patches []RestartPatch
}

// Post-renderer list paths of a JSON 6902 patch.
const (
	AppendPostRenderer  = "/spec/postRenderers/-"
	CreatePostRenderers = "/spec/postRenderers"
)

// ReadReleasePatchFile reads a patch file kedge wrote; ok is false when data is not one.
func ReadReleasePatchFile(data []byte) (f ReleasePatchFile, ok bool) {
	var ops []struct {
		Op    string `yaml:"op"`
		Path  string `yaml:"path"`
		Value any    `yaml:"value"`
	}
	if yaml.Unmarshal(data, &ops) != nil || len(ops) != 1 || ops[0].Op != "add" {
		return f, false
	}
	entry := ops[0].Value
	switch ops[0].Path {
	case AppendPostRenderer:
	case CreatePostRenderers:
		list, _ := entry.([]any)
		if len(list) != 1 {
			return f, false
		}
		entry = list[0]
	default:
		return f, false
	}
	patches := restartPatchesOf(entry)
	if patches == nil {
		return f, false
	}
	return ReleasePatchFile{AddPath: ops[0].Path, Patches: patches}, true
}

// Render writes the patch file: header (comment lines, each with its own line break) and one add operation.
// set is merged into the file's patches as SetReleaseRestarts merges them.
func (f ReleasePatchFile) Render(header string, set []RestartPatch) ([]byte, error) {
	patches := mergePatches(f.Patches, set)
	if err := validatePatches(patches); err != nil {
		return nil, err
	}
	entry, err := releaseEntryNode(patches)
	if err != nil {
		return nil, err
	}
	value := entry
	if f.AddPath == CreatePostRenderers {
		value = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{entry}}
	} else if f.AddPath != AppendPostRenderer {
		return nil, yamledit.Refuse(yamledit.CodeInvalidInput, "post-renderer path %q", f.AddPath)
	}
	op := mapNode(scalarNode("op"), scalarNode("add"), scalarNode("path"), scalarNode(f.AddPath), scalarNode("value"), value)
	body, err := encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{op}}, 2)
	if err != nil {
		return nil, err
	}
	return append([]byte(header), body...), nil
}
