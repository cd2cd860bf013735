package migrate

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// kustomizationNames are the file names kustomize reads, in its order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Checkout finds where a Namespace and its istio.io/rev label are written
// in a GitOps checkout, and computes the label edit, from the manifest
// index: the Namespaces each kustomize root renders (with the file each
// comes from, kustomize's own answer) and the plain files define, and the
// labels each kustomization sets. Every edit is verified by rendering each
// root that reads the edited file again. The checkout is never written.
type Checkout struct {
	ix      *index.Index
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

// NewCheckout reads what the index knows of the checkout's Namespaces.
func NewCheckout(ix *index.Index) *Checkout {
	c := &Checkout{ix: ix}
	byDir := map[string]*rootRender{}
	for _, r := range ix.Roots() {
		if r.Problem != nil {
			continue
		}
		rr := &rootRender{dir: r.Dir, file: r.File, reads: setOf(r.Reads()), includes: setOf(r.Includes()), namespaces: map[string]renderedNamespace{}}
		byDir[r.Dir] = rr
		c.renders = append(c.renders, rr)
	}
	for _, ns := range ix.Namespaces() {
		if ns.Root == "" {
			c.plain = append(c.plain, namespaceDoc{path: ns.Origin, name: ns.Name, labels: ns.Labels})
		} else if rr := byDir[ns.Root]; rr != nil {
			rr.namespaces[ns.Name] = renderedNamespace{labels: ns.Labels, origin: ns.Origin}
		}
	}
	return c
}

func setOf(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, v := range list {
		out[v] = true
	}
	return out
}

// LabelEdit is the change of one namespace's label in one file, and the
// policies its move to ambient mode carries over. Path is empty when only
// policies change (Git already labels the namespace).
type LabelEdit struct {
	Namespace string
	Path      string
	Before    []byte
	After     []byte
	apply     func([]byte) ([]byte, bool, error)
	// Policies are the files that carry policies over with the move.
	Policies []*PolicyEdit
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
// tool that applied the Namespace (locate.HintsIn).
func (c *Checkout) Locate(m *drift.Migration, hints locate.Hints) *LabelEdit {
	d, where, ok := c.find(m.Namespace, hints)
	if !ok {
		return c.block(m, where)
	}
	if len(m.RemoveLabels) > 0 || m.ToAmbient() {
		return c.locateInDocument(m, d)
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

	if holder := c.patchHolder(d, key); holder != "" {
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: holder,
			Detail: key + "=" + value + " of Namespace " + m.Namespace + " is set by a patch in " + holder + ", which kedge does not edit"})
	}
	// The value applied is the one written last in the build: the root's
	// own kustomization, then those it includes, then the document. When
	// no candidate can be edited, the refusal of the one that decides the
	// value is the reason; the others' would only mislead.
	var decisive *refusedCandidate
	for _, cand := range c.candidates(d, key, value) {
		edit, err := c.try(cand, m, key)
		if err == nil {
			m.Manifest = drift.Manifest{Status: drift.ManifestFound, Path: cand.path, Edit: cand.edit}
			return edit
		}
		if decisive == nil || (decisive.edit != drift.EditKustomizeLabels && cand.edit == drift.EditKustomizeLabels) {
			decisive = &refusedCandidate{candidate: cand, reason: refusalText(err)}
		}
	}
	if decisive != nil {
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: decisive.path, Detail: "edit refused: " + decisive.path + ": " + decisive.reason})
	}
	return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: d.origin,
		Detail: key + "=" + value + " of Namespace " + m.Namespace + " is set by something kedge cannot edit (a replacement, a generator or a component of " + d.where + ")"})
}

type refusedCandidate struct {
	candidate
	reason string
}

// patchHolder returns the file whose patch sets the label on the
// Namespace in its root's build (a patch file, or a kustomization with an
// inline patch), "" when none does.
func (c *Checkout) patchHolder(d deployment, key string) string {
	if d.root == nil {
		return ""
	}
	files := make([]string, 0, len(d.root.reads))
	for f := range d.root.reads {
		if f != d.origin {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		docs, err := c.ix.NamespacesIn(f)
		if err != nil {
			continue
		}
		for _, doc := range docs {
			if _, sets := doc.Labels[key]; sets && doc.Name == d.name {
				return f
			}
		}
	}
	return ""
}

// Find says where the namespace is defined, without looking at its label:
// for a migration that is blocked anyway, the file to change by hand.
func (c *Checkout) Find(namespace string, hints locate.Hints) drift.Manifest {
	d, where, ok := c.find(namespace, hints)
	if !ok {
		return where
	}
	return drift.Manifest{Status: drift.ManifestFound, Path: d.origin}
}

func (c *Checkout) find(namespace string, hints locate.Hints) (deployment, drift.Manifest, bool) {
	switch {
	case hints.Helm != "":
		return deployment{}, drift.Manifest{Status: drift.ManifestHelm, Detail: "the Namespace is rendered by " + hints.Helm}, false
	case hints.OtherRepo != "":
		return deployment{}, drift.Manifest{Status: drift.ManifestNoRepo, Detail: hints.Via + " applies it from " + hints.OtherRepo + ", not this repository"}, false
	}
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
func (c *Checkout) deployments(name string, hints locate.Hints) []deployment {
	var all []deployment
	for _, r := range c.renders {
		if ns, ok := r.namespaces[name]; ok {
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

func (c *Checkout) isRoot(dir string) bool { return c.renderAt(dir) != nil }

// renderAt returns the root at dir, nil when dir is not a root.
func (c *Checkout) renderAt(dir string) *rootRender {
	for _, r := range c.renders {
		if r.dir == dir {
			return r
		}
	}
	return nil
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
		// A kustomization whose own build does not read the Namespace's
		// file labels other namespaces, not this one.
		if r := c.renderAt(path.Dir(f)); r != nil && d.origin != "" && !r.reads[d.origin] {
			continue
		}
		if c.ix.KustomizationSets(f, key, value) {
			out = append(out, candidate{path: f, edit: drift.EditKustomizeLabels, set: setInKustomization, rendered: true})
		}
	}
	return out
}

// namespaceDocIn finds the Namespace document a rendered Namespace comes
// from: the one of the same name, else the file's only Namespace (a
// kustomization's namespace: field renames Namespace objects).
func (c *Checkout) namespaceDocIn(file, name string) (namespaceDoc, error) {
	docs, err := c.ix.NamespacesIn(file)
	if err != nil {
		return namespaceDoc{}, err
	}
	for _, d := range docs {
		if d.Name == name {
			return namespaceDoc{path: file, name: d.Name, labels: d.Labels}, nil
		}
	}
	if len(docs) == 1 {
		return namespaceDoc{path: file, name: docs[0].Name, labels: docs[0].Labels}, nil
	}
	return namespaceDoc{}, fmt.Errorf("%s: no Namespace document renders %s", file, name)
}
