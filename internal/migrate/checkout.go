package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/manifest"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// kustomizationNames are the file names kustomize reads, in its order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Checkout finds where a Namespace and its istio.io/rev label are written
// in a GitOps checkout, and computes the label edit. Kustomize roots are
// rendered with the kustomize library, origin annotations on, so the file
// a rendered Namespace comes from is kustomize's own answer; every edit is
// verified by rendering each root that reads the edited file again. The
// checkout is never written.
type Checkout struct {
	root  string // absolute, symlinks resolved
	roots []manifest.Root
	paths []string

	scanned bool
	renders []*rootRender
	plain   []namespaceDoc
}

type rootRender struct {
	dir  string // repo-relative
	file string
	// reads are the repo-relative files the build read.
	reads map[string]bool
	// includes are the repo-relative directories of the other
	// kustomizations the build read.
	includes   map[string]bool
	namespaces map[string]renderedNamespace
	err        error
}

type renderedNamespace struct {
	labels map[string]string
	// origin is the repo-relative file the Namespace is written in; ""
	// when a generator or a remote base produced it.
	origin string
}

// namespaceDoc is a Namespace document of a file.
type namespaceDoc struct {
	path   string
	name   string
	labels map[string]string
}

// NewCheckout reads the checkout the index was built from. paths are the
// sub-trees kedge works in (repo.paths); empty is the whole repository.
func NewCheckout(ix *manifest.Index, paths []string) *Checkout {
	c := &Checkout{root: ix.Root(), paths: paths}
	for _, r := range ix.Roots() {
		if r.Problem == nil {
			c.roots = append(c.roots, r)
		}
	}
	return c
}

// LabelEdit is the change of one namespace's label in one file.
type LabelEdit struct {
	Namespace string
	Path      string
	Before    []byte
	After     []byte
	apply     func([]byte) ([]byte, bool, error)
}

// Onto makes the same label change in another version of the file, one
// that also carries restart edits.
func (e *LabelEdit) Onto(src []byte) ([]byte, error) {
	out, _, err := e.apply(src)
	return out, err
}

// Locate finds where the namespace's istio.io/rev label is set and
// computes its change to m.To. It fills m.Manifest and, when the label
// cannot be changed safely, blocks m. The edit is nil when nothing is to be
// written: blocked, or Git already says m.To. hints come from the GitOps
// tool that applied the Namespace (manifest.HintsFor).
func (c *Checkout) Locate(m *drift.Migration, hints manifest.Hints) *LabelEdit {
	d, where, ok := c.find(m.Namespace, hints)
	if !ok {
		return c.block(m, where)
	}
	key := mesh.LabelRev
	value, set := d.labels[key]
	switch {
	case set && value == m.To:
		m.Manifest = drift.Manifest{Status: drift.ManifestFound, Path: d.origin, Edit: drift.EditLabelAlreadySet}
		return nil
	case !set:
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: d.origin,
			Detail: "Git does not set " + key + " on Namespace " + m.Namespace + ", the cluster has " + m.From + ": it is set outside Git"})
	case value != m.From:
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: d.origin,
			Detail: "Git sets " + key + "=" + value + " on Namespace " + m.Namespace + ", the cluster has " + m.From})
	}

	var reasons []string
	for _, cand := range c.candidates(d, key, value) {
		edit, err := c.try(cand, m, key)
		if err == nil {
			m.Manifest = drift.Manifest{Status: drift.ManifestFound, Path: cand.path, Edit: cand.edit}
			return edit
		}
		reasons = append(reasons, cand.path+": "+refusalText(err))
	}
	detail := key + "=" + value + " of Namespace " + m.Namespace + " is set by something kedge cannot edit (a patch, a replacement, a generator or a component of " + d.where + ")"
	if len(reasons) > 0 {
		detail = "edit refused: " + strings.Join(reasons, "; ")
	}
	return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: d.origin, Detail: detail})
}

// Find says where the namespace is defined, without looking at its label:
// for a migration that is blocked anyway, the file to change by hand.
func (c *Checkout) Find(namespace string, hints manifest.Hints) drift.Manifest {
	d, where, ok := c.find(namespace, hints)
	if !ok {
		return where
	}
	return drift.Manifest{Status: drift.ManifestFound, Path: d.origin}
}

func (c *Checkout) find(namespace string, hints manifest.Hints) (deployment, drift.Manifest, bool) {
	switch {
	case hints.Helm != "":
		return deployment{}, drift.Manifest{Status: drift.ManifestHelm, Detail: "the Namespace is rendered by " + hints.Helm}, false
	case hints.OtherRepo != "":
		return deployment{}, drift.Manifest{Status: drift.ManifestNotFound, Detail: hints.Via + " applies it from " + hints.OtherRepo}, false
	}
	c.scan()
	deps := c.deployments(namespace, hints)
	switch len(deps) {
	case 0:
		return deployment{}, drift.Manifest{Status: drift.ManifestNotFound, Detail: "no Namespace " + namespace + " in the repository"}, false
	case 1:
		return deps[0], drift.Manifest{}, true
	}
	var where []string
	for _, d := range deps {
		where = append(where, d.where)
	}
	return deployment{}, drift.Manifest{
		Status: drift.ManifestAmbiguous, Candidates: where,
		Detail: "several kustomize roots or files define Namespace " + namespace,
	}, false
}

func (c *Checkout) block(m *drift.Migration, where drift.Manifest) *LabelEdit {
	m.Manifest = where
	m.Blocked = drift.BlockManifest
	m.Detail = where.Detail
	return nil
}

func refusalText(err error) string {
	var refused *yamledit.RefusedError
	if errors.As(err, &refused) {
		return refused.Reason
	}
	return err.Error()
}

// deployment is one place the namespace is applied from: a kustomize root
// rendering it, or a plain file.
type deployment struct {
	name   string
	root   *rootRender
	doc    *namespaceDoc
	labels map[string]string
	// origin is the file the Namespace is written in.
	origin string
	where  string
}

// deployments lists where the namespace is applied from: every root
// rendering it that no other such root includes, and plain files, narrowed
// to the paths the GitOps tool applies when that leaves any.
func (c *Checkout) deployments(name string, hints manifest.Hints) []deployment {
	var all []deployment
	for _, r := range c.renders {
		if ns, ok := r.namespaces[name]; ok && r.err == nil {
			all = append(all, deployment{name: name, root: r, labels: ns.labels, origin: ns.origin, where: r.dir})
		}
	}
	for i := range c.plain {
		doc := &c.plain[i]
		if doc.name == name {
			all = append(all, deployment{name: name, doc: doc, labels: doc.labels, origin: doc.path, where: doc.path})
		}
	}
	if len(hints.Paths) > 0 {
		var scoped []deployment
		for _, d := range all {
			if c.inScope(d, hints.Paths) {
				scoped = append(scoped, d)
			}
		}
		if len(scoped) > 0 {
			all = scoped
		}
	}
	var top []deployment
	for _, d := range all {
		included := false
		for _, other := range all {
			if other.root != nil && d.root != nil && other.root != d.root && other.root.includes[d.root.dir] {
				included = true
				break
			}
		}
		if !included {
			top = append(top, d)
		}
	}
	return top
}

// inScope mirrors how Flux and Argo CD apply a path: a kustomize root
// applies itself; any other directory applies the tree beneath it.
func (c *Checkout) inScope(d deployment, paths []string) bool {
	for _, p := range paths {
		isRoot := c.isRoot(p)
		switch {
		case d.root != nil && d.root.dir == p:
			return true
		case d.root != nil && !isRoot && under(d.root.dir, p):
			return true
		case d.doc != nil && !isRoot && under(d.doc.path, p):
			return true
		}
	}
	return false
}

func (c *Checkout) isRoot(dir string) bool {
	for _, r := range c.roots {
		if r.Dir == dir {
			return true
		}
	}
	return false
}

func under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// candidate is one file whose edit might change the label.
type candidate struct {
	path string
	edit string
	set  func(src []byte, value string) ([]byte, bool, error)
	// rendered is true when kustomize roots read the file: the edit is
	// then verified by rendering them. A plain file is verified by
	// yamledit itself.
	rendered bool
}

// candidates are the files that write the label's current value: the
// Namespace's own document first, then each kustomization the root reads
// that sets it in labels or commonLabels, its own kustomization first.
func (c *Checkout) candidates(d deployment, key, value string) []candidate {
	setInDocument := func(name string) func([]byte, string) ([]byte, bool, error) {
		target := yamledit.Target{Kind: "Namespace", Name: name, Document: yamledit.AnyDocument}
		return func(src []byte, v string) ([]byte, bool, error) {
			return yamledit.SetMetadataLabel(src, target, key, v)
		}
	}
	if d.doc != nil {
		return []candidate{{path: d.doc.path, edit: drift.EditInPlace, set: setInDocument(d.doc.name)}}
	}
	var out []candidate
	if d.origin != "" {
		if doc, err := c.namespaceDocIn(d.origin, d.name); err == nil && doc.labels[key] == value {
			out = append(out, candidate{path: d.origin, edit: drift.EditInPlace, set: setInDocument(doc.name), rendered: true})
		}
	}
	own := path.Join(d.root.dir, d.root.file)
	kfiles := []string{own}
	for f := range d.root.reads {
		if f != own && slices.Contains(kustomizationNames, path.Base(f)) {
			kfiles = append(kfiles, f)
		}
	}
	sort.Strings(kfiles[1:])
	setInKustomization := func(src []byte, v string) ([]byte, bool, error) { return yamledit.SetKustomizationLabel(src, key, v) }
	for _, f := range kfiles {
		if c.kustomizationSets(f, key, value) {
			out = append(out, candidate{path: f, edit: drift.EditKustomizeLabels, set: setInKustomization, rendered: true})
		}
	}
	return out
}

// namespaceDocIn finds the Namespace document a rendered Namespace comes
// from: the one of the same name, else the file's only Namespace (a
// kustomization's namespace: field renames Namespace objects).
func (c *Checkout) namespaceDocIn(file, name string) (namespaceDoc, error) {
	data, err := c.read(file)
	if err != nil {
		return namespaceDoc{}, err
	}
	docs, err := namespaceDocs(file, data)
	if err != nil {
		return namespaceDoc{}, err
	}
	for _, d := range docs {
		if d.name == name {
			return d, nil
		}
	}
	if len(docs) == 1 {
		return docs[0], nil
	}
	return namespaceDoc{}, fmt.Errorf("%s: no Namespace document renders %s", file, name)
}

// kustomizationSets reports whether a kustomization sets the label to the
// value in commonLabels or in the pairs of a labels entry.
func (c *Checkout) kustomizationSets(file, key, value string) bool {
	data, err := c.read(file)
	if err != nil {
		return false
	}
	var k types.Kustomization
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return false
	}
	if v, ok := k.CommonLabels[key]; ok && v == value { //nolint:staticcheck // still applied by kustomize
		return true
	}
	for _, l := range k.Labels {
		if v, ok := l.Pairs[key]; ok && v == value {
			return true
		}
	}
	return false
}

// try computes a candidate's edit and verifies it.
func (c *Checkout) try(cand candidate, m *drift.Migration, key string) (*LabelEdit, error) {
	before, err := c.read(cand.path)
	if err != nil {
		return nil, err
	}
	after, changed, err := cand.set(before, m.To)
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, fmt.Errorf("the file already says %s=%s", key, m.To)
	}
	if cand.rendered {
		if err := c.verify(cand.path, after, m.Namespace, key, m.From, m.To); err != nil {
			return nil, err
		}
	}
	to := m.To
	return &LabelEdit{
		Namespace: m.Namespace, Path: cand.path, Before: before, After: after,
		apply: func(src []byte) ([]byte, bool, error) { return cand.set(src, to) },
	}, nil
}

// verify renders every root that reads the edited file, before and after,
// and accepts the edit only when the sole difference is the namespace's
// label going from one value to the other. A commonLabels entry that also
// labels workloads (and rewrites their immutable selectors), or a patch
// that sets the label again later, fails here instead of reaching Git.
func (c *Checkout) verify(file string, after []byte, namespace, key, from, to string) error {
	replace := map[string][]byte{c.abs(file): after}
	checked := 0
	for _, r := range c.renders {
		if r.err != nil || !r.reads[file] {
			continue
		}
		checked++
		before, err := c.objects(r, nil)
		if err != nil {
			return fmt.Errorf("rendering %s: %w", r.dir, err)
		}
		edited, err := c.objects(r, replace)
		if err != nil {
			return fmt.Errorf("rendering %s with the edit: %w", r.dir, err)
		}
		if err := compare(before, edited, namespace, key, from, to); err != nil {
			return fmt.Errorf("in %s, %w", r.dir, err)
		}
	}
	if checked == 0 {
		return fmt.Errorf("no kustomize root reads %s", file)
	}
	return nil
}

type objectID struct{ apiVersion, kind, namespace, name string }

func (id objectID) String() string {
	if id.namespace == "" {
		return id.kind + " " + id.name
	}
	return id.kind + " " + id.namespace + "/" + id.name
}

func (c *Checkout) objects(r *rootRender, replace map[string][]byte) (map[objectID]map[string]any, error) {
	rm, err := build(newCheckoutFS(c.root, replace), c.abs(r.dir))
	if err != nil {
		return nil, err
	}
	out := map[objectID]map[string]any{}
	for _, res := range rm.Resources() {
		body, err := res.Map()
		if err != nil {
			return nil, err
		}
		out[objectID{res.GetApiVersion(), res.GetKind(), res.GetNamespace(), res.GetName()}] = body
	}
	return out, nil
}

func compare(before, after map[objectID]map[string]any, namespace, key, from, to string) error {
	var changed []string
	seen := false
	for id, b := range before {
		a, ok := after[id]
		if !ok {
			changed = append(changed, id.String()+" (gone)")
			continue
		}
		if id.kind == "Namespace" && id.name == namespace && id.namespace == "" {
			seen = true
			if got := labelOf(b, key); got != from {
				return fmt.Errorf("Namespace %s is rendered with %s=%s, not %s", namespace, key, got, from)
			}
			if got := labelOf(a, key); got != to {
				return fmt.Errorf("Namespace %s is still rendered with %s=%s: something later in the build sets it", namespace, key, got)
			}
			b = withLabel(b, key, to)
		}
		if !equalJSON(a, b) {
			changed = append(changed, id.String())
		}
	}
	for id := range after {
		if _, ok := before[id]; !ok {
			changed = append(changed, id.String()+" (new)")
		}
	}
	if len(changed) > 0 {
		sort.Strings(changed)
		if len(changed) > 3 {
			changed = append(changed[:3], fmt.Sprintf("%d more", len(changed)-3))
		}
		return fmt.Errorf("the edit also changes %s", strings.Join(changed, ", "))
	}
	if !seen {
		return fmt.Errorf("the build does not render Namespace %s", namespace)
	}
	return nil
}

func labelOf(body map[string]any, key string) string {
	meta, _ := body["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	v, _ := labels[key].(string)
	return v
}

// withLabel returns a copy of body with one label set, sharing what it
// does not change.
func withLabel(body map[string]any, key, value string) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		out[k] = v
	}
	meta := map[string]any{}
	if m, ok := body["metadata"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	labels := map[string]any{}
	if l, ok := meta["labels"].(map[string]any); ok {
		for k, v := range l {
			labels[k] = v
		}
	}
	labels[key] = value
	meta["labels"] = labels
	out["metadata"] = meta
	return out
}

func equalJSON(a, b map[string]any) bool {
	ja, errA := sigsyaml.Marshal(a)
	jb, errB := sigsyaml.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// scan renders every root once and finds the plain files defining
// Namespaces. It runs on the first Locate only: most cycles have no
// namespace to move.
func (c *Checkout) scan() {
	if c.scanned {
		return
	}
	c.scanned = true
	read := map[string]bool{}
	for _, r := range c.roots {
		rr := c.render(r)
		c.renders = append(c.renders, rr)
		for f := range rr.reads {
			read[f] = true
		}
	}
	for _, start := range c.starts() {
		_ = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p != start && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() || d.Type()&fs.ModeSymlink != 0 || !yamlName(d.Name()) {
				return nil
			}
			rel := c.rel(p)
			// A file beside a kustomization that does not list it is applied
			// by nothing: Flux applies the kustomization, not the directory.
			if read[rel] || c.hasKustomization(filepath.Dir(p)) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(data, []byte("Namespace")) || bytes.Contains(data, []byte("{{")) {
				return nil
			}
			docs, err := namespaceDocs(rel, data)
			if err == nil {
				c.plain = append(c.plain, docs...)
			}
			return nil
		})
	}
}

func (c *Checkout) render(r manifest.Root) *rootRender {
	rr := &rootRender{dir: r.Dir, file: r.File, reads: map[string]bool{}, includes: map[string]bool{}, namespaces: map[string]renderedNamespace{}}
	kpath := c.abs(path.Join(r.Dir, r.File))
	data, err := os.ReadFile(kpath)
	if err == nil {
		data, err = withOrigins(data)
	}
	if err != nil {
		rr.err = err
		return rr
	}
	cfs := newCheckoutFS(c.root, map[string][]byte{kpath: data})
	rm, err := build(cfs, c.abs(r.Dir))
	for p := range cfs.reads {
		rel := c.rel(p)
		rr.reads[rel] = true
		if slices.Contains(kustomizationNames, path.Base(rel)) && path.Dir(rel) != r.Dir {
			rr.includes[path.Dir(rel)] = true
		}
	}
	if err != nil {
		rr.err = err
		return rr
	}
	for _, res := range rm.Resources() {
		if res.GetKind() != "Namespace" || res.GetApiVersion() != "v1" {
			continue
		}
		ns := renderedNamespace{labels: res.GetLabels()}
		if origin, err := res.GetOrigin(); err == nil && origin != nil && origin.Repo == "" && origin.Path != "" {
			if p, err := filepath.EvalSymlinks(filepath.Join(c.abs(r.Dir), filepath.FromSlash(origin.Path))); err == nil && inside(c.root, p) {
				ns.origin = c.rel(p)
			}
		}
		rr.namespaces[res.GetName()] = ns
	}
	return rr
}

func (c *Checkout) starts() []string {
	if len(c.paths) == 0 {
		return []string{c.root}
	}
	var out []string
	for _, p := range c.paths {
		clean := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(p, "./")))
		if filepath.IsAbs(clean) {
			continue
		}
		if r, err := filepath.EvalSymlinks(filepath.Join(c.root, clean)); err == nil && inside(c.root, r) {
			out = append(out, r)
		}
	}
	return out
}

func (c *Checkout) hasKustomization(dir string) bool {
	for _, name := range kustomizationNames {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

// read reads a repo-relative file, refusing one a symlink places outside
// the checkout.
func (c *Checkout) read(rel string) ([]byte, error) {
	p, err := filepath.EvalSymlinks(c.abs(rel))
	if err != nil {
		return nil, err
	}
	if !inside(c.root, p) {
		return nil, fmt.Errorf("%s: %w", rel, errOutside)
	}
	return os.ReadFile(p)
}

func (c *Checkout) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

func (c *Checkout) rel(p string) string {
	r, err := filepath.Rel(c.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

func yamlName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// namespaceDocs reads the Namespace documents of a YAML (or JSON) stream,
// List items included.
func namespaceDocs(file string, data []byte) ([]namespaceDoc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []namespaceDoc
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(node.Content) == 0 {
			continue
		}
		root := node.Content[0]
		items := []*yaml.Node{root}
		if list := mapValue(root, "items"); list != nil && list.Kind == yaml.SequenceNode && strings.HasSuffix(scalar(mapValue(root, "kind")), "List") {
			items = list.Content
		}
		for _, item := range items {
			if scalar(mapValue(item, "kind")) != "Namespace" {
				continue
			}
			meta := mapValue(item, "metadata")
			doc := namespaceDoc{path: file, name: scalar(mapValue(meta, "name")), labels: map[string]string{}}
			if labels := mapValue(meta, "labels"); labels != nil && labels.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(labels.Content); i += 2 {
					doc.labels[labels.Content[i].Value] = labels.Content[i+1].Value
				}
			}
			if doc.name != "" {
				out = append(out, doc)
			}
		}
	}
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var found *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			found = n.Content[i+1]
		}
	}
	return found
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
