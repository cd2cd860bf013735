package migrate

import (
	"bytes"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// locateInDocument moves a namespace whose move also takes labels off it
// (istio-injection=enabled, or the injection labels of a move to ambient):
// the removals and the labels set are edited in the Namespace document, in
// one file, so the change is one exact edit.
// When a kustomization's labels set the labels to remove instead, the
// change is made there (see inKustomization); a label written anywhere else
// (a patch, a generator) blocks the move with the file to change by hand.
func (c *Checkout) locateInDocument(m *drift.Migration, d deployment) *LabelEdit {
	if edit, done := c.alreadyMoved(m, d); done {
		return edit
	}
	doc, blockedBy := c.documentOf(d)
	if blockedBy != "" {
		return c.inKustomizationOr(m, d, blockedAt{d.origin, blockedBy})
	}
	changes := []labelChange{}
	for _, key := range m.RemoveLabels {
		value, set := d.labels[key]
		switch {
		case !set:
			return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: d.origin,
				Detail: "Git does not set " + key + " on Namespace " + m.Namespace + ", the cluster has it: it is set outside Git"})
		case doc.labels[key] != value:
			return c.inKustomizationOr(m, d, c.spread(m, d, key, value))
		}
		changes = append(changes, labelChange{key: key, from: value, remove: true})
	}
	sets, why := c.setChanges(m, d, doc)
	if why.detail != "" {
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: why.path, Detail: why.detail})
	}
	return c.tryDocument(m, doc, d.root != nil, append(changes, sets...))
}

// blockedAt is why a label cannot be changed, and the file to change by
// hand.
type blockedAt struct{ path, detail string }

// setChanges are the labels the move sets in the document: istio.io/rev to
// To, or the ambient labels. A label Git sets elsewhere than the document,
// or to another value than the cluster's, is why it cannot.
func (c *Checkout) setChanges(m *drift.Migration, d deployment, doc namespaceDoc) ([]labelChange, blockedAt) {
	if m.ToAmbient() {
		var out []labelChange
		for _, key := range sortedKeys(m.SetLabels) {
			value, set := d.labels[key]
			if set && doc.labels[key] != value {
				return nil, c.spread(m, d, key, value)
			}
			out = append(out, labelChange{key: key, from: value, to: m.SetLabels[key]})
		}
		return out, blockedAt{}
	}
	rev, revSet := d.labels[mesh.LabelRev]
	switch {
	case revSet && m.FromAmbient():
		return nil, blockedAt{d.origin, "Git sets " + mesh.LabelRev + "=" + rev + " on Namespace " + m.Namespace + ", the cluster runs it in ambient mode"}
	case revSet && rev != m.From:
		return nil, blockedAt{d.origin, "Git sets " + mesh.LabelRev + "=" + rev + " on Namespace " + m.Namespace + ", the cluster has " + m.From}
	case revSet && doc.labels[mesh.LabelRev] != rev:
		return nil, c.spread(m, d, mesh.LabelRev, rev)
	}
	return []labelChange{{key: mesh.LabelRev, from: rev, to: m.To}}, blockedAt{}
}

// spread is why a label the Namespace's document does not write cannot be
// changed with the document's: the kustomizations that set it (labels or
// commonLabels), or the patch, named; kedge changes a namespace's labels
// in one file.
func (c *Checkout) spread(m *drift.Migration, d deployment, key, value string) blockedAt {
	var setters []string
	how := "its labels"
	if d.root != nil {
		for _, cand := range c.candidates(d, key, value) {
			if cand.edit == drift.EditKustomizeLabels {
				setters = append(setters, cand.path)
			}
		}
		if len(setters) == 0 {
			if holder := c.patchHolder(d, key); holder != "" {
				setters, how = append(setters, holder), "a patch"
			}
		}
	}
	if len(setters) == 0 {
		return blockedAt{d.origin, key + "=" + value + " of Namespace " + m.Namespace + " is not set by " + d.origin + " but by something kedge does not edit with it (a generator, a replacement or a remote base)"}
	}
	other := "the other labels"
	for _, k := range m.RemoveLabels {
		if k != key {
			other = k
			break
		}
	}
	return blockedAt{setters[0], key + "=" + value + " of Namespace " + m.Namespace + " is set by " + strings.Join(setters, ", ") + " (" + how + "), while " + other + " is written in " + d.origin +
		": kedge changes a namespace's labels in one file; move " + key + " into " + d.origin + ", or " + other + " into " + setters[0]}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// inKustomizationOr makes the change in the kustomization that sets the
// labels to remove, or blocks the move: with the kustomization's refusal
// when there is one, else with why.
func (c *Checkout) inKustomizationOr(m *drift.Migration, d deployment, why blockedAt) *LabelEdit {
	edit, refusal := c.inKustomization(m, d)
	if edit != nil {
		return edit
	}
	if refusal != nil {
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: refusal.path, Detail: "edit refused: " + refusal.path + ": " + refusal.reason})
	}
	return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: why.path, Detail: why.detail})
}

// inKustomization replaces the namespace's labels where a kustomization of
// its root sets the first label to remove (labels pairs or commonLabels,
// includeSelectors or a Component alike): the new labels go in the same
// mappings, the old ones leave. Rendering each root that reads the file
// proves the Namespace is the only object that changes.
func (c *Checkout) inKustomization(m *drift.Migration, d deployment) (*LabelEdit, *refusedCandidate) {
	if d.root == nil || len(m.RemoveLabels) == 0 {
		return nil, nil
	}
	anchor := m.RemoveLabels[0]
	var changes []labelChange
	for _, key := range m.RemoveLabels {
		changes = append(changes, labelChange{key: key, from: d.labels[key], remove: true})
	}
	set := map[string]string{mesh.LabelRev: m.To}
	if m.ToAmbient() {
		set = m.SetLabels
	}
	for _, key := range sortedKeys(set) {
		changes = append(changes, labelChange{key: key, from: d.labels[key], to: set[key]})
	}
	apply := func(src []byte) ([]byte, bool, error) {
		return yamledit.ReplaceKustomizationLabels(src, anchor, set, m.RemoveLabels)
	}
	var refused *refusedCandidate
	for _, cand := range c.candidates(d, anchor, d.labels[anchor]) {
		if cand.edit != drift.EditKustomizeLabels {
			continue
		}
		before, err := c.ix.ReadFile(cand.path)
		if err == nil {
			var after []byte
			if after, _, err = apply(before); err == nil {
				err = c.verifyChanges(cand.path, after, m.Namespace, changes)
			}
			if err == nil {
				m.Manifest = drift.Manifest{Status: drift.ManifestFound, Path: cand.path, Edit: drift.EditKustomizeLabels}
				return &LabelEdit{Namespace: m.Namespace, Path: cand.path, Before: before, After: after, apply: apply}, nil
			}
		}
		if refused == nil {
			refused = &refusedCandidate{candidate: cand, reason: refusalText(err)}
		}
	}
	return nil, refused
}

// alreadyMoved tells a namespace Git has moved already: no label to remove,
// istio.io/rev at the target.
func (c *Checkout) alreadyMoved(m *drift.Migration, d deployment) (*LabelEdit, bool) {
	for _, key := range m.RemoveLabels {
		if _, set := d.labels[key]; set {
			return nil, false
		}
	}
	if m.ToAmbient() {
		for k, v := range m.SetLabels {
			if got, set := d.labels[k]; !set || got != v {
				return nil, false
			}
		}
	} else if d.labels[mesh.LabelRev] != m.To {
		return nil, false
	}
	m.Manifest = drift.Manifest{Status: drift.ManifestFound, Path: d.origin, Edit: drift.EditLabelAlreadySet}
	return nil, true
}

// documentOf is the Namespace document of a deployment, or why kedge will
// not edit it.
func (c *Checkout) documentOf(d deployment) (namespaceDoc, string) {
	if d.doc != nil {
		return *d.doc, ""
	}
	if d.origin == "" {
		return namespaceDoc{}, "Namespace " + d.name + " is generated in " + d.where + ", not written in a file"
	}
	doc, err := c.namespaceDocIn(d.origin, d.name)
	if err != nil {
		return namespaceDoc{}, err.Error()
	}
	return doc, ""
}

// labelChange is one label of a namespace edit: from its value before
// ("" when absent) to its value after, or removed.
type labelChange struct {
	key, from, to string
	remove        bool
}

func (l labelChange) String() string {
	if l.remove {
		return "remove " + l.key + "=" + l.from
	}
	return l.key + "=" + l.to
}

// tryDocument edits the Namespace document and, when kustomize roots read
// it, verifies the edit by rendering them.
func (c *Checkout) tryDocument(m *drift.Migration, doc namespaceDoc, rendered bool, changes []labelChange) *LabelEdit {
	target := yamledit.Target{Kind: "Namespace", Name: doc.name, Document: yamledit.AnyDocument}
	apply := func(src []byte) ([]byte, bool, error) {
		out := src
		for _, ch := range changes {
			var err error
			if ch.remove {
				out, _, err = yamledit.RemoveMetadataLabel(out, target, ch.key)
			} else {
				out, _, err = yamledit.SetMetadataLabel(out, target, ch.key, ch.to)
			}
			if err != nil {
				return nil, false, err
			}
		}
		return out, !bytes.Equal(out, src), nil
	}
	refused := func(reason string) *LabelEdit {
		return c.block(m, drift.Manifest{Status: drift.ManifestFound, Path: doc.path, Detail: "edit refused: " + doc.path + ": " + reason})
	}
	before, err := c.ix.ReadFile(doc.path)
	if err != nil {
		return refused(err.Error())
	}
	after, _, err := apply(before)
	if err != nil {
		return refused(refusalText(err))
	}
	if rendered {
		if err := c.verifyChanges(doc.path, after, m.Namespace, changes); err != nil {
			return refused(err.Error())
		}
	}
	m.Manifest = drift.Manifest{Status: drift.ManifestFound, Path: doc.path, Edit: drift.EditInPlace}
	return &LabelEdit{Namespace: m.Namespace, Path: doc.path, Before: before, After: after, apply: apply}
}
