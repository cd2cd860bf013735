package restart

import (
	"bytes"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// InPlace is a restart written on the workload's own document: the
// annotation lines of its pod template, and nothing else of the file.
type InPlace struct{ Src index.Source }

func (s InPlace) File() string         { return s.Src.Path }
func (s InPlace) Kind() Kind           { return inPlaceKind{} }
func (s InPlace) Source() index.Source { return s.Src }

type inPlaceKind struct{}

func (inPlaceKind) Name() string { return "the workloads' own documents" }

func (inPlaceKind) Write(ix *index.Index, file string, restarts []Restart) ([]FileEdit, error) {
	before, err := ix.ReadFile(file)
	if err != nil {
		return nil, err
	}
	after, err := inPlaceKind{}.WriteAfter(before, restarts)
	if err != nil || bytes.Equal(before, after) {
		return nil, err
	}
	return []FileEdit{{Path: file, Before: before, After: after, Workloads: IDs(ByID(restarts))}}, nil
}

// WriteAfter sets the restarts' annotations on their documents of data.
func (inPlaceKind) WriteAfter(data []byte, restarts []Restart) ([]byte, error) {
	for _, r := range ByID(restarts) {
		src := r.Site.Source()
		t := yamledit.Target{Kind: src.Kind, Name: src.Name, Namespace: src.Namespace, Document: src.Document}
		out, changed, err := yamledit.SetPodTemplateAnnotations(data, t, r.Set)
		if err != nil {
			return nil, err
		}
		if changed {
			data = out
		}
	}
	return data, nil
}

func (inPlaceKind) Intents(restarts []Restart) []Intent { return OneIntentEach(restarts) }

// IsInPlace reports whether a kind writes workloads' own documents: a
// HelmRelease post-renderer written in its own file goes with it.
func IsInPlace(k Kind) bool { _, ok := k.(inPlaceKind); return ok }
