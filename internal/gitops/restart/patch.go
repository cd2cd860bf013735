package restart

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// PatchTarget names the document a strategic-merge patch selects: kustomize
// matches it by kind and the name (and namespace, when given) written in
// the base.
type PatchTarget struct {
	Kind, Name, Namespace string
}

// PatchDocument renders one strategic-merge patch document setting the
// restart's annotations on the target's pod template, values
// double-quoted as yamledit writes them.
func PatchDocument(r Restart, t PatchTarget) ([]byte, error) {
	// Tagged as strings, values that would read back as another type (a
	// workload named "9") are quoted.
	scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	quoted := func(v string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: yaml.DoubleQuotedStyle}
	}
	mapping := func(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

	annotations := mapping()
	for _, k := range slices.Sorted(maps.Keys(r.Set)) {
		annotations.Content = append(annotations.Content, scalar(k), quoted(r.Set[k]))
	}
	metadata := mapping(scalar("name"), scalar(t.Name))
	if t.Namespace != "" {
		metadata.Content = append(metadata.Content, scalar("namespace"), scalar(t.Namespace))
	}
	doc := mapping(
		scalar("apiVersion"), scalar(r.APIVersion),
		scalar("kind"), scalar(t.Kind),
		scalar("metadata"), metadata,
		scalar("spec"), mapping(
			scalar("template"), mapping(
				scalar("metadata"), mapping(
					scalar("annotations"), annotations))),
	)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	err := enc.Encode(doc)
	if err == nil {
		err = enc.Close()
	}
	return buf.Bytes(), err
}

// AppendDocument adds a document at the end of a stream without touching
// the bytes before it.
func AppendDocument(stream, doc []byte, separate bool) []byte {
	out := bytes.Clone(stream)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if separate {
		out = append(out, "---\n"...)
	}
	return append(out, doc...)
}

// RestartShaped returns the pod template annotations of a patch that sets
// nothing else (besides the name it is written for), or nil: only such a
// patch can be kedge's.
func RestartShaped(patch string) map[string]string {
	var doc map[string]any
	if sigsyaml.Unmarshal([]byte(patch), &doc) != nil {
		return nil
	}
	for k := range doc {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "spec" {
			return nil
		}
	}
	md, _ := doc["metadata"].(map[string]any)
	for k := range md {
		if k != "name" {
			return nil
		}
	}
	spec, _ := doc["spec"].(map[string]any)
	if len(spec) != 1 {
		return nil
	}
	tpl, _ := spec["template"].(map[string]any)
	tmd, _ := tpl["metadata"].(map[string]any)
	ann, _ := tmd["annotations"].(map[string]any)
	if len(tpl) != 1 || len(tmd) != 1 || len(ann) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range ann {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		out[k] = s
	}
	return out
}

// WithRestartPatch returns the render's template annotations with those a
// restart patch sets on top, as a kustomize build applies it.
func WithRestartPatch(rendered map[string]string, patch string) map[string]string {
	out := maps.Clone(rendered)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, RestartShaped(patch))
	return out
}

// Listed is a GitOps object's patch list as the repository writes it, and
// the name kedge's entry would select: where a patch site finds the entry
// kedge wrote before.
type Listed struct {
	Patches []ListedPatch
	Target  string
}

// ListedPatch is one entry of a patch list. Other is set when it names a
// file or options besides a target and a patch: never kedge's.
type ListedPatch struct {
	Patch  string
	Target map[string]string
	Other  bool
}

// entry returns kedge's entry for kind, or nil.
func (l Listed) entry(kind string) *ListedPatch {
	for i, p := range l.Patches {
		if !p.Other && len(p.Target) == 2 && p.Target["kind"] == kind && p.Target["name"] == l.Target && RestartShaped(p.Patch) != nil {
			return &l.Patches[i]
		}
	}
	return nil
}

// HasRestart reports whether the list carries kedge's entry for kind.
func (l Listed) HasRestart(kind string) bool { return l.entry(kind) != nil }

// AnnotationsOver returns the render's template annotations with those of
// kedge's entry on top, as the object's build applies them.
func (l Listed) AnnotationsOver(rendered map[string]string, kind string) map[string]string {
	if p := l.entry(kind); p != nil {
		return WithRestartPatch(rendered, p.Patch)
	}
	return rendered
}

// PatchListSite is a restart written as an entry of a GitOps object's patch
// list: a Flux Kustomization's spec.patches, an Argo CD Application
// source's kustomize.patches. The entry selects the workload's document by
// kind and name.
type PatchListSite interface {
	Site
	// Document is the GitOps object's place in the file.
	Document() int
	// List is where its patch list sits.
	List() yamledit.PatchList
	// Target is the name the entry selects, as the object's build sees the
	// document.
	Target() string
}

// PatchListKind writes restarts into the patch lists of the GitOps objects
// of one file; What names the object ("a Flux Kustomization"). An entry
// kedge wrote before for the same document is updated in place, never
// duplicated.
type PatchListKind struct{ What string }

func (k PatchListKind) Name() string { return k.What + "'s patches" }

func (k PatchListKind) Write(ix *index.Index, file string, restarts []Restart) ([]FileEdit, error) {
	return WriteEach(ix, file, restarts, func(data []byte, r Restart) ([]byte, bool, error) {
		site := r.Site.(PatchListSite)
		entry, err := patchEntry(r, site.Target())
		if err != nil {
			return nil, false, err
		}
		return yamledit.SetPatchEntry(data, site.Document(), site.List(), entry, ownsEntry(r, site.Target()))
	})
}

// WriteEach writes each restart into file with write, in workload order,
// and returns the file's edit, or none when nothing changed.
func WriteEach(ix *index.Index, file string, restarts []Restart, write func(data []byte, r Restart) ([]byte, bool, error)) ([]FileEdit, error) {
	before, err := ix.ReadFile(file)
	if err != nil {
		return nil, err
	}
	after := before
	restarts = ByID(restarts)
	for _, r := range restarts {
		out, changed, err := write(after, r)
		if err != nil {
			return nil, err
		}
		if changed {
			after = out
		}
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return []FileEdit{{Path: file, Before: before, After: after, Workloads: IDs(restarts)}}, nil
}

func (k PatchListKind) Intents(restarts []Restart) []Intent { return OneIntentEach(restarts) }

// patchEntry is kedge's entry for one restart: the patch document an
// overlay would get, selecting the document by kind and name.
func patchEntry(r Restart, target string) (yamledit.PatchEntry, error) {
	doc, err := PatchDocument(r, PatchTarget{Kind: r.ID.Kind, Name: target})
	if err != nil {
		return yamledit.PatchEntry{}, err
	}
	return yamledit.PatchEntry{Patch: string(doc), Kind: r.ID.Kind, Name: target}, nil
}

// ownsEntry recognises kedge's entry for the same document: it selects the
// document by kind and name alone and sets kedge's annotations only.
func ownsEntry(r Restart, name string) func(string, map[string]string) bool {
	return func(patch string, target map[string]string) bool {
		if len(target) != 2 || target["kind"] != r.ID.Kind || target["name"] != name {
			return false
		}
		ann := RestartShaped(patch)
		for k := range r.Set {
			if _, ok := ann[k]; !ok {
				return false
			}
		}
		return ann != nil
	}
}

// OneIntentEach is the intent of each restart: its workload's annotations.
func OneIntentEach(restarts []Restart) []Intent {
	out := make([]Intent, len(restarts))
	for i, r := range restarts {
		out[i] = Intent{ID: r.ID, Set: r.Set, Source: r.Site.Source(), Site: r.Site, Renames: r.Renames}
	}
	return out
}

// MixedError refuses a file that restarts of several kinds would write.
func MixedError(kinds []Kind) error {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name()
	}
	slices.Sort(names)
	return fmt.Errorf("the file would take restarts as %s; kedge writes one kind of restart in a file", joinAnd(names))
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := ""
	for i, s := range items {
		switch {
		case i == 0:
		case i == len(items)-1:
			out += " and "
		default:
			out += ", "
		}
		out += s
	}
	return out
}
