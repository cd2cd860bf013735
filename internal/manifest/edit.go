package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// Default annotation keys (docs/design.md, "The restart annotation": kedge's own key, not kubectl's, so a
// manual rollout restart is not reverted by the GitOps controller).
const (
	DefaultRestartAnnotation = "kedge.io/restartedAt"
	DefaultTargetAnnotation  = "kedge.io/restart-target"
)

// Annotations are the pod template annotation keys kedge writes.
type Annotations struct {
	// Restart is the key whose change rolls the pods.
	Restart string
	// Target records what the restart was for (revision@image), so a
	// workload already bumped for the same target is left alone.
	Target string
}

func (a Annotations) withDefaults() Annotations {
	if a.Restart == "" {
		a.Restart = DefaultRestartAnnotation
	}
	if a.Target == "" {
		a.Target = DefaultTargetAnnotation
	}
	return a
}

// TargetValue is what a restart answers: the desired revision and image,
// e.g. "1-25-0@docker.io/istio/proxyv2:1.25.0"; "no-sidecar" when no sidecar
// is wanted any more.
func TargetValue(d drift.Desired) string {
	if d.Revision == "" && d.Image == "" {
		return "no-sidecar"
	}
	if d.Image == "" {
		return d.Revision
	}
	return d.Revision + "@" + d.Image
}

// RestartValue is the restart annotation's value for a workload and target.
// It is derived from them, never from the clock, so that a rerun for the
// same drift writes the same bytes and makes no new commit.
func RestartValue(w drift.Workload, target string) string {
	sum := sha256.Sum256([]byte(w.Namespace + "/" + w.Kind + "/" + w.Name + "\n" + target))
	return hex.EncodeToString(sum[:6])
}

// WorkloadID names a workload of the plan.
type WorkloadID struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

func (id WorkloadID) String() string { return id.Kind + " " + id.Namespace + "/" + id.Name }

// FileEdit is one file's change: Before is nil when the file is created.
type FileEdit struct {
	Path      string // repo-relative, slash-separated
	Before    []byte
	After     []byte
	Created   bool
	Workloads []WorkloadID
}

// Refusal is a file kedge will not touch, and why; the workloads it would
// have restarted stay drifted and are reported.
type Refusal struct {
	Namespace string       `json:"namespace"`
	Path      string       `json:"path"`
	Reason    string       `json:"reason"`
	Workloads []WorkloadID `json:"workloads"`
}

// EditSet is every change for one plan, by namespace (one branch and pull
// request each, all branched from the same base).
type EditSet struct {
	Namespaces map[string][]FileEdit
	Refused    []Refusal
}

// NamespaceNames returns the namespaces with edits, sorted.
func (s EditSet) NamespaceNames() []string { return sortedKeys(s.Namespaces) }

// All returns every edit of every namespace, in namespace then path order.
func (s EditSet) All() []FileEdit {
	var out []FileEdit
	for _, ns := range s.NamespaceNames() {
		out = append(out, s.Namespaces[ns]...)
	}
	return out
}

type podTemplateEdit struct {
	target yamledit.Target
	set    map[string]string
	id     WorkloadID
	// apiVersion is written in a new patch document.
	apiVersion string
}

// pendingFile collects the edits of one file in one namespace.
type pendingFile struct {
	path    string
	inPlace []podTemplateEdit
	// patchRoot is set for kedge's patch file in an overlay.
	patchRoot string
	patches   []podTemplateEdit
	// flux are the patches that go in the Flux Kustomizations of this
	// file.
	flux []fluxEdit
	// releases are restarts through one HelmRelease's post-renderer.
	releases []releaseRestart
	// argo are the patches that go in the Argo CD Applications of this
	// file.
	argo []argoEdit
	// values are the chart values set in the Argo CD Applications of this
	// file.
	values []valuesEdit
}

// planned is one workload's restart, before it is written.
type planned struct {
	loc  Location
	edit podTemplateEdit
}

// IDOf names a workload of the plan.
func IDOf(w drift.Workload) WorkloadID { return WorkloadID{w.Namespace, w.Kind, w.Name} }

// Outcomes are what the edit stage makes of each workload, in the plan's
// terms: where it is defined, how it is edited, or why it is not.
type Outcomes map[WorkloadID]drift.Manifest

// Edits computes the edits restarting every workload found at its
// location; a workload without a location is located with no hints.
// Workloads already restarted for their target get the edit
// "already-bumped" and no change. Nothing is written to the checkout, and no
// file kedge cannot read or edit safely stops the others: it is reported in
// Refused, and its workloads' outcome is "refused".
func (ix *Index) Edits(workloads []drift.Workload, locs Locations, ann Annotations) (EditSet, Outcomes) {
	set, outcomes, _ := ix.EditsAfter(PriorEdits{}, workloads, locs, EditOptions{Annotations: ann})
	return set, outcomes
}

// EditOptions are what edits are computed with.
type EditOptions struct {
	Annotations Annotations
	// OmitBefore leaves every FileEdit's Before out of the results. Before
	// is read only to show a diff; a caller that keeps the results between
	// plans and never shows one (the service) then keeps half the file
	// contents it would.
	OmitBefore bool
}

// EditsAfter is Edits given the results of an earlier call on this
// checkout, and returns its own for the next. A namespace whose planned
// restarts are the same, and none of whose inputs changed since (see
// editInputs), keeps its earlier edits and refusals: it is neither edited
// nor verified again, the bulk of an unchanged cycle's work otherwise.
func (ix *Index) EditsAfter(prior PriorEdits, workloads []drift.Workload, locs Locations, opts EditOptions) (EditSet, Outcomes, PriorEdits) {
	ann := opts.Annotations.withDefaults()
	set := EditSet{Namespaces: map[string][]FileEdit{}}
	outcomes := make(Outcomes, len(workloads))
	byNamespace := map[string][]planned{}
	for _, w := range workloads {
		id := IDOf(w)
		loc, ok := locs[id]
		if !ok {
			loc = ix.LocateOne(w, Hints{})
		}
		outcomes[id] = loc.Manifest
		if loc.Manifest.Status != drift.ManifestFound {
			continue
		}
		target := TargetValue(w.Desired)
		if loc.TemplateAnnotations[ann.Target] == target {
			outcomes[id] = withEdit(loc.Manifest, drift.EditAlreadyBumped)
			continue
		}
		if (loc.Manifest.Edit == drift.EditOverlayPatch || loc.release != nil && loc.release.overlay) && loc.Root == "" && loc.flux == nil && loc.argo == nil {
			set.Refused = append(set.Refused, Refusal{Namespace: w.Namespace, Path: loc.Source.Path, Reason: loc.Manifest.Detail, Workloads: []WorkloadID{id}})
			continue
		}
		apiVersion := loc.Source.APIVersion
		if loc.release != nil {
			apiVersion = workloadAPIVersion(w)
		}
		byNamespace[w.Namespace] = append(byNamespace[w.Namespace], planned{loc: loc, edit: podTemplateEdit{
			set:        map[string]string{ann.Restart: RestartValue(w, target), ann.Target: target},
			id:         id,
			apiVersion: apiVersion,
		}})
	}

	// Namespaces are edited and verified concurrently: verifying renders
	// every root an edit reaches, twice, and a fleet has thousands.
	verifier := newVerifier(ix)
	namespaces := sortedKeys(byNamespace)
	results := make([]*namespaceResult, len(namespaces))
	applied := &appliedComparisons{}
	inParallel(len(namespaces), func(i int) {
		items := byNamespace[namespaces[i]]
		if prev := prior.reusable(ix, namespaces[i], items, applied, opts.OmitBefore); prev != nil {
			reused := *prev
			reused.reused = true
			results[i] = &reused
			return
		}
		results[i] = ix.editNamespace(items, verifier)
	})
	next := PriorEdits{namespaces: make(map[string]*namespaceResult, len(namespaces)), located: locatedOn(ix, workloads, locs), omitBefore: opts.OmitBefore}
	for i, ns := range namespaces {
		r := results[i]
		if !r.reused {
			// Copied here, one after another, rather than as each
			// namespace ends: a namespace's contents outlive the cycle, and
			// allocated amid the verifier's garbage they would each keep a
			// mostly empty stretch of the heap from being given back.
			r.edits = withoutSpareCapacity(r.edits, opts.OmitBefore)
		}
		next.namespaces[ns] = r
		for _, refusal := range r.refused {
			refusal.Namespace = ns
			set.Refused = append(set.Refused, refusal)
		}
		if len(r.edits) > 0 {
			set.Namespaces[ns] = r.edits
		}
		for _, id := range r.patched {
			outcomes[id] = withEdit(outcomes[id], drift.EditOverlayPatch)
		}
	}
	SortRefusals(set.Refused)
	return set, outcomes.WithRefusals(set.Refused), next
}

// editNamespace edits and verifies one namespace's restarts, turning those
// an overlay overrides into patches in it, and records what it read.
func (ix *Index) editNamespace(items []planned, verifier *verifier) *namespaceResult {
	edits, refused, overridden, pending := ix.namespaceEdits(items, verifier)
	r := &namespaceResult{items: items}
	if patched, moved := ix.patchOverridden(items, overridden); len(moved) > 0 {
		edits, refused, _, _ = ix.namespaceEdits(patched, verifier)
		r.patched = moved
	}
	r.edits, r.refused = edits, refused
	r.inputs = ix.recordInputs(items, pending, len(overridden) > 0)
	return r
}

// withoutSpareCapacity returns the edits with contents copied to their
// length, and without Before when omitBefore is set: a namespace's result
// is kept for the next cycle, and the buffers its files were read and
// written into can be twice their length.
func withoutSpareCapacity(edits []FileEdit, omitBefore bool) []FileEdit {
	out := make([]FileEdit, len(edits))
	for i, e := range edits {
		if omitBefore {
			e.Before = nil
		} else {
			e.Before = exactly(e.Before)
		}
		e.After = exactly(e.After)
		out[i] = e
	}
	return out
}

func exactly(b []byte) []byte {
	if cap(b) == len(b) {
		return b
	}
	return bytes.Clone(b)
}

// WithRefusals returns the outcomes with every found workload that a
// refusal names marked refused.
func (o Outcomes) WithRefusals(refusals []Refusal) Outcomes {
	out := maps.Clone(o)
	for _, r := range refusals {
		for _, id := range r.Workloads {
			if m, ok := out[id]; ok && m.Status == drift.ManifestFound {
				out[id] = refused(m, r)
			}
		}
	}
	return out
}

func withEdit(m drift.Manifest, edit string) drift.Manifest {
	m.Edit = edit
	return m
}

// refused is a found workload's outcome when the edit of a file it needs
// was refused: the file and the reason are its detail.
func refused(m drift.Manifest, r Refusal) drift.Manifest {
	detail := r.Reason
	if !strings.HasPrefix(detail, r.Path) {
		detail = r.Path + ": " + detail
	}
	return drift.Manifest{Status: drift.ManifestRefused, Path: m.Path, Detail: detail}
}

// SortRefusals orders refusals by namespace, then path.
func SortRefusals(list []Refusal) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Path < b.Path
	})
}

// namespaceEdits writes and verifies the restarts of one namespace. It also
// returns the workloads whose restart an in-place edit cannot carry because
// an overlay overrides their template annotations, and the files it read
// to edit.
func (ix *Index) namespaceEdits(items []planned, verifier *verifier) ([]FileEdit, []Refusal, map[WorkloadID]bool, []string) {
	pending := map[string]*pendingFile{}
	add := func(p string) *pendingFile {
		if pending[p] == nil {
			pending[p] = &pendingFile{path: p}
		}
		return pending[p]
	}
	var intended []intent
	var releases []releaseRestart
	for _, it := range items {
		e, loc := it.edit, it.loc
		if loc.release != nil {
			r := releaseRestart{id: e.id, loc: loc, patch: yamledit.RestartPatch{APIVersion: e.apiVersion, Kind: e.id.Kind, Name: e.id.Name, Annotations: e.set}}
			releases = append(releases, r)
			f := add(loc.Source.Path)
			if loc.release.overlay {
				f = add(path.Join(loc.Root, releasePatchFile(ix.roots[loc.Root], loc.Source.Name)))
				f.patchRoot = loc.Root
			}
			f.releases = append(f.releases, r)
			continue
		}
		intended = append(intended, intent{id: e.id, set: e.set, source: loc.Source, flux: loc.flux, argo: loc.argo, values: loc.values, hints: loc.hints})
		if loc.values != nil {
			f := add(loc.values.file())
			f.values = append(f.values, valuesEdit{site: loc.values, edit: e})
			continue
		}
		if loc.argo != nil {
			f := add(loc.argo.manifest.File)
			f.argo = append(f.argo, argoEdit{site: loc.argo, edit: e})
			continue
		}
		if loc.flux != nil {
			f := add(loc.flux.manifest.File)
			f.flux = append(f.flux, fluxEdit{site: loc.flux, edit: e})
			continue
		}
		switch loc.Manifest.Edit {
		case drift.EditInPlace:
			e.target = yamledit.Target{Kind: loc.Source.Kind, Name: loc.Source.Name, Namespace: loc.Source.Namespace, Document: loc.Source.Document}
			f := add(loc.Source.Path)
			f.inPlace = append(f.inPlace, e)
		case drift.EditOverlayPatch:
			e.target = yamledit.Target{Kind: loc.Source.Kind, Name: loc.Source.Name, Namespace: loc.Source.Namespace, Document: yamledit.AnyDocument}
			f := add(path.Join(loc.Root, restartPatchFile(ix.roots[loc.Root].File)))
			f.patchRoot = loc.Root
			f.patches = append(f.patches, e)
		}
	}
	intended = append(intended, releaseIntents(releases)...)
	var edits []FileEdit
	var refused []Refusal
	for _, p := range sortedKeys(pending) {
		fe, refusal := ix.applyFile(pending[p])
		if refusal != nil {
			refused = append(refused, *refusal)
			continue
		}
		edits = append(edits, fe...)
	}
	edits, failed, overridden := verifier.check(edits, intended)
	sort.Slice(edits, func(i, j int) bool { return edits[i].Path < edits[j].Path })
	return edits, append(refused, failed...), overridden, sortedKeys(pending)
}

// patchOverridden returns the items with the in-place restarts that an
// overlay overrides turned into patches in that overlay, which kustomize
// applies after the overlay's own patches, and the workloads it moved.
func (ix *Index) patchOverridden(items []planned, overridden map[WorkloadID]bool) ([]planned, []WorkloadID) {
	out := slices.Clone(items)
	var moved []WorkloadID
	for i := range out {
		it := &out[i]
		if !overridden[it.edit.id] || it.loc.Manifest.Edit != drift.EditInPlace || it.loc.Root == "" {
			continue
		}
		w := drift.Workload{Namespace: it.edit.id.Namespace, Kind: it.edit.id.Kind, Name: it.edit.id.Name}
		if !ix.patchSafe(it.loc.Root, it.loc.Source, w, it.loc.hints) {
			continue
		}
		it.loc.Manifest.Edit = drift.EditOverlayPatch
		moved = append(moved, it.edit.id)
	}
	return out, moved
}

// applyFile computes one pending file's change, plus the kustomization
// change an overlay patch needs. A refusal leaves every file of it untouched.
func (ix *Index) applyFile(f *pendingFile) ([]FileEdit, *Refusal) {
	if f.patchRoot != "" && len(f.releases) > 0 {
		return ix.applyReleasePatch(f)
	}
	if f.patchRoot != "" {
		return ix.applyPatchFile(f)
	}
	if len(f.values) > 0 {
		return ix.applyValues(f)
	}
	if len(f.argo) > 0 {
		return ix.applyArgoPatches(f)
	}
	if len(f.flux) > 0 {
		return ix.applyFluxPatches(f)
	}
	before, err := ix.readInside(f.path)
	if err != nil {
		return nil, f.refusal(err)
	}
	after := before
	var ids []WorkloadID
	sort.Slice(f.inPlace, func(i, j int) bool { return f.inPlace[i].id.String() < f.inPlace[j].id.String() })
	for _, e := range f.inPlace {
		ids = append(ids, e.id)
		out, changed, err := yamledit.SetPodTemplateAnnotations(after, e.target, e.set)
		if err != nil {
			return nil, f.refusal(err)
		}
		if changed {
			after = out
		}
	}
	after, err = setReleaseRestarts(after, f.releases)
	if err != nil {
		return nil, f.refusal(err)
	}
	for _, r := range f.releases {
		ids = append(ids, r.id)
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return []FileEdit{{Path: f.path, Before: before, After: after, Workloads: ids}}, nil
}

// readInside reads a repo-relative file, refusing one that a symlink
// places outside the checkout.
func (ix *Index) readInside(rel string) ([]byte, error) {
	return ix.fs.ReadFile(rel)
}

// refusal is the file's refusal, naming every workload its edits restart.
func (f *pendingFile) refusal(err error) *Refusal {
	r := refusalFor(f.path, f.inPlace, err)
	for _, rel := range f.releases {
		r.Workloads = append(r.Workloads, rel.id)
	}
	return r
}

func refusalFor(p string, edits []podTemplateEdit, err error) *Refusal {
	r := &Refusal{Path: p, Reason: err.Error()}
	var refused *yamledit.RefusedError
	if errors.As(err, &refused) {
		r.Reason = refused.Reason
	}
	for _, e := range edits {
		r.Workloads = append(r.Workloads, e.id)
	}
	return r
}

func (ix *Index) applyPatchFile(f *pendingFile) ([]FileEdit, *Refusal) {
	root := ix.roots[f.patchRoot]
	if root == nil {
		return nil, refusalFor(f.path, f.patches, errors.New("unknown kustomize root "+f.patchRoot))
	}
	before, err := ix.readInside(f.path)
	created := errors.Is(err, os.ErrNotExist)
	if err != nil && !created {
		return nil, refusalFor(f.path, f.patches, err)
	}
	sort.Slice(f.patches, func(i, j int) bool { return f.patches[i].id.String() < f.patches[j].id.String() })
	after := bytes.Clone(before)
	if created {
		after = []byte(patchFileHeader)
	}
	var ids []WorkloadID
	for _, e := range f.patches {
		ids = append(ids, e.id)
		docs, err := parseDocuments(after)
		if err != nil {
			return nil, refusalFor(f.path, f.patches, err)
		}
		exists := false
		for _, d := range docs {
			if d.Kind == e.target.Kind && d.Name == e.target.Name {
				exists = true
			}
		}
		if exists {
			out, changed, err := yamledit.SetPodTemplateAnnotations(after, e.target, e.set)
			if err != nil {
				return nil, refusalFor(f.path, f.patches, err)
			}
			if changed {
				after = out
			}
			continue
		}
		doc, err := patchDocument(e)
		if err != nil {
			return nil, refusalFor(f.path, f.patches, err)
		}
		after = appendDocument(after, doc, len(docs) > 0)
	}
	out, failed, err := ix.patchFileEdits(f.path, root, before, after, created, ids, func(kustomization []byte) ([]byte, bool, error) {
		return yamledit.AddKustomizationPatch(kustomization, path.Base(f.path))
	})
	if err != nil {
		return nil, refusalFor(failed, f.patches, err)
	}
	return out, nil
}

// patchFileEdits are the edits of an overlay patch file: the file, when it
// is new or changed, and its root's kustomization, when listing the file
// (which list does) changes it. On error it names the file at fault.
func (ix *Index) patchFileEdits(file string, root *Root, before, after []byte, created bool, ids []WorkloadID, list func([]byte) ([]byte, bool, error)) ([]FileEdit, string, error) {
	var out []FileEdit
	if created || !bytes.Equal(before, after) {
		fe := FileEdit{Path: file, After: after, Created: created, Workloads: ids}
		if !created {
			fe.Before = before
		}
		out = append(out, fe)
	}
	kpath := path.Join(root.Dir, root.File)
	kbefore, err := ix.readInside(kpath)
	if err != nil {
		return nil, kpath, err
	}
	kafter, changed, err := list(kbefore)
	if err != nil {
		return nil, kpath, err
	}
	if changed {
		out = append(out, FileEdit{Path: kpath, Before: kbefore, After: kafter, Workloads: ids})
	}
	return out, "", nil
}

const patchFileHeader = "# Pod template annotations by which kedge restarts workloads of this overlay,\n" +
	"# written here because the files that define them are shared or overridden.\n"

// patchDocument renders one strategic-merge patch document: the identity as
// the base writes it (kustomize matches patches against it) and the pod
// template annotations, values double-quoted as yamledit writes them.
func patchDocument(e podTemplateEdit) ([]byte, error) {
	// Tagged as strings, values that would read back as another type (a
	// workload named "9") are quoted.
	scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	quoted := func(v string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: yaml.DoubleQuotedStyle}
	}
	mapping := func(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

	annotations := mapping()
	keys := make([]string, 0, len(e.set))
	for k := range e.set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		annotations.Content = append(annotations.Content, scalar(k), quoted(e.set[k]))
	}
	metadata := mapping(scalar("name"), scalar(e.target.Name))
	if e.target.Namespace != "" {
		metadata.Content = append(metadata.Content, scalar("namespace"), scalar(e.target.Namespace))
	}
	doc := mapping(
		scalar("apiVersion"), scalar(e.apiVersion),
		scalar("kind"), scalar(e.target.Kind),
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

// appendDocument adds a document at the end of a stream without touching
// the bytes before it.
func appendDocument(stream, doc []byte, separate bool) []byte {
	out := bytes.Clone(stream)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if separate {
		out = append(out, "---\n"...)
	}
	return append(out, doc...)
}
