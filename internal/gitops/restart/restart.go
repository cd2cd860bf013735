// Package restart is the vocabulary every source and edit kind shares: the
// annotations a restart writes and their values, a restart planned for one
// workload, the site it is written at, and the edits and refusals a plan
// makes of them. A site is one place a restart can be written (a
// workload's own document, kedge's patch in an overlay, an entry of a
// GitOps object's patch list, a HelmRelease post-renderer, a chart value);
// each kind of site is one implementation of Kind, so adding a kind is
// adding a file in the package of the source it belongs to.
package restart

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// Default annotation keys (docs/design.md, "The restart annotation": kedge's
// own key, not kubectl's, so a manual rollout restart is not reverted by the
// GitOps controller).
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

// WithDefaults fills in kedge's own keys where none is set.
func (a Annotations) WithDefaults() Annotations {
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

// GroupRestartValue is the restart annotation's value for workloads that
// share one chart value: one restart of all of them, derived like
// RestartValue from who they are and the target.
func GroupRestartValue(ids []WorkloadID, target string) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = id.Namespace + "/" + id.Kind + "/" + id.Name
	}
	slices.Sort(names)
	sum := sha256.Sum256([]byte(strings.Join(names, ",") + "\n" + target))
	return hex.EncodeToString(sum[:6])
}

// Grouped is a site whose value several drifted workloads share (a chart
// value that reaches exactly them): they are restarted by one value.
type Grouped interface{ Group() []WorkloadID }

// ValueFor is the restart annotation's value for w at its site.
func ValueFor(w drift.Workload, site Site, target string) string {
	if g, ok := site.(Grouped); ok {
		if ids := g.Group(); len(ids) > 1 {
			return GroupRestartValue(ids, target)
		}
	}
	return RestartValue(w, target)
}

// WorkloadID names a workload of the plan.
type WorkloadID = document.ID

// IDOf names a workload of the plan.
func IDOf(w drift.Workload) WorkloadID {
	return WorkloadID{Namespace: w.Namespace, Kind: w.Kind, Name: w.Name}
}

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

// Refuse is the refusal of file for the restarts, naming every workload.
func Refuse(file string, restarts []Restart, err error) *Refusal {
	r := &Refusal{Path: file, Reason: err.Error()}
	var refused *yamledit.RefusedError
	if errors.As(err, &refused) {
		r.Reason = refused.Reason
	}
	for _, e := range restarts {
		r.Workloads = append(r.Workloads, e.ID)
	}
	return r
}

// Restart is one workload's restart as planned: the annotations it sets,
// at its site.
type Restart struct {
	ID WorkloadID
	// Set are the pod template annotations to write.
	Set map[string]string
	// APIVersion is the workload's own, written in a new patch document.
	APIVersion string
	Site       Site
	// Renames is how the GitOps object applying the workload renames what
	// it renders; nil when it does not.
	Renames Renamer
}

// IDs names the workloads of restarts, in order.
func IDs(restarts []Restart) []WorkloadID {
	out := make([]WorkloadID, len(restarts))
	for i, r := range restarts {
		out[i] = r.ID
	}
	return out
}

// ByID orders restarts by their workload's name, as every kind writes
// them.
func ByID(restarts []Restart) []Restart {
	out := slices.Clone(restarts)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out
}

// A Site is where one workload's restart is written.
type Site interface {
	// File is the repo-relative file the restart is written in.
	File() string
	// Kind writes the restarts of its sites in one file.
	Kind() Kind
	// Source is the document that defines the workload the site restarts.
	Source() index.Source
}

// A Kind writes restarts into a file of the checkout. Restarts of several
// kinds never share a file unless a kind says it can.
type Kind interface {
	// Name names the kind in refusals ("a Flux Kustomization").
	Name() string
	// Write writes the restarts (each of this kind, each of file) and
	// returns the edits: the file's, and any other file the edit needs (an
	// overlay's kustomization listing kedge's patch file). An error
	// refuses every one of them.
	Write(ix *index.Index, file string, restarts []Restart) ([]FileEdit, error)
	// Intents are what a render of the result must show for the restarts.
	Intents(restarts []Restart) []Intent
}

// Companion is a Kind that can share a file with restarts of the kinds it
// goes with: it writes after them, into what they wrote.
type Companion interface {
	Kind
	GoesWith(other Kind) bool
	// WriteAfter writes the restarts into data, the file as restarts of
	// other kinds left it.
	WriteAfter(data []byte, restarts []Restart) ([]byte, error)
}

// Conditional is a site that may turn out impossible to write: a patch in
// an overlay for a file no overlay renders alone.
type Conditional interface{ Possible() bool }

// Possible reports whether a site can be written; a nil site cannot.
func Possible(s Site) bool {
	if s == nil {
		return false
	}
	c, ok := s.(Conditional)
	return !ok || c.Possible()
}

// Versioned is a site whose patch names the workload by the live object's
// API version rather than its document's: a HelmRelease's post-renderer,
// whose workloads have no document in the repository.
type Versioned interface{ APIVersionOf(w drift.Workload) string }

// Intent is what a render must show after an edit: the workload's pod
// template annotations set, and nothing else of what the edit reaches
// changed.
type Intent struct {
	ID     WorkloadID
	Set    map[string]string
	Source index.Source
	Site   Site
	// Renames is the restart's.
	Renames Renamer
	// Compare, when set, stands for the annotations check: a HelmRelease
	// whose post-renderer kedge writes is compared by it.
	Compare func(before, after map[string]any) error
}

// Renamer is how the GitOps object applying a workload gives a rendered
// object another identity (a Flux Kustomization's prefix or substitution,
// an Argo CD source's kustomize block).
type Renamer interface {
	// RendersAs reports whether o, as the object applies it, is the
	// intended workload id.
	RendersAs(ix *index.Index, o *index.Object, id WorkloadID) bool
}

// Checker is a site whose edit changes how the GitOps object builds its
// path or chart: the check renders it as the controller would, before and
// after.
type Checker interface {
	// CheckKey groups the intents one check covers: one Flux Kustomization
	// document, one Application source.
	CheckKey() string
	// Check renders the site before and after the edit e of its file, and
	// reports a change beyond the intents, keyed by the identities the
	// render gives them.
	Check(ix *index.Index, e FileEdit, intents map[WorkloadID]Intent) error
	// Rendered is the identity the site's render gives its workload.
	Rendered() WorkloadID
}

// Prefixed says why a refusal names its file: the reason as it stands
// when it starts with the path already.
func Prefixed(path, reason string) string {
	if strings.HasPrefix(reason, path) {
		return reason
	}
	return path + ": " + reason
}

// Found is where a source says a workload is defined, and the site its
// restart is written at (nil when it cannot be written).
type Found struct {
	// Manifest is the plan's view of it.
	Manifest drift.Manifest
	// Source is the file and document defining the workload (found only).
	Source index.Source
	// Root is the kustomize root that renders the workload; for an
	// overlay-patch edit, the root whose kustomization gets the patch.
	// Empty for plain files.
	Root string
	// TemplateAnnotations are the workload's rendered pod template
	// annotations.
	TemplateAnnotations map[string]string
	Site                Site
}

// Reads says what a site's edit reads beyond the files its restarts name,
// for a later plan to tell whether the edit still holds.
type Reads int

const (
	// ReadsFiles: the files of the restarts, their roots and their
	// readers.
	ReadsFiles Reads = iota
	// ReadsIndex: more of the index (a GitOps object's patch list and
	// what its build reads); it holds on that index only.
	ReadsIndex
	// ReadsCharts: charts, rendered for values or pulled; never the
	// index's to stamp, so never reused.
	ReadsCharts
)

// Reader is a site whose edit reads more than its files.
type Reader interface{ Reads() Reads }

// ReadsOf is what a site's edit reads.
func ReadsOf(s Site) Reads {
	if r, ok := s.(Reader); ok {
		return r.Reads()
	}
	return ReadsFiles
}
