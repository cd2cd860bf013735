package restart

import (
	"bytes"
	"errors"
	"os"
	"path"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/yamledit"
)

// Overlay is a restart written as a strategic-merge patch in a kustomize
// overlay (kedge-restart-patch.yaml, listed under the overlay's patches:),
// for a workload whose file is shared by several overlays or overridden by
// one: the patch restarts the overlay's render alone.
type Overlay struct {
	// Root is the overlay's directory; RootFile its kustomization file.
	Root, RootFile string
	Src            index.Source
}

func (s Overlay) File() string         { return path.Join(s.Root, index.RestartPatchFile(s.RootFile)) }
func (s Overlay) Kind() Kind           { return overlayKind{} }
func (s Overlay) Source() index.Source { return s.Src }

type overlayKind struct{}

func (overlayKind) Name() string { return "kedge's patch in an overlay" }

const patchFileHeader = "# Pod template annotations by which kedge restarts workloads of this overlay,\n" +
	"# written here because the files that define them are shared or overridden.\n"

func (overlayKind) Write(ix *index.Index, file string, restarts []Restart) ([]FileEdit, error) {
	site := restarts[0].Site.(Overlay)
	root := ix.RootAt(site.Root)
	if root == nil {
		return nil, errors.New("unknown kustomize root " + site.Root)
	}
	before, err := ix.ReadFile(file)
	created := errors.Is(err, os.ErrNotExist)
	if err != nil && !created {
		return nil, err
	}
	after := bytes.Clone(before)
	if created {
		after = []byte(patchFileHeader)
	}
	restarts = ByID(restarts)
	for _, r := range restarts {
		src := r.Site.Source()
		t := yamledit.Target{Kind: src.Kind, Name: src.Name, Namespace: src.Namespace, Document: yamledit.AnyDocument}
		docs, err := document.Parse(after)
		if err != nil {
			return nil, err
		}
		exists := false
		for _, d := range docs {
			if d.Kind == t.Kind && d.Name == t.Name {
				exists = true
			}
		}
		if exists {
			out, changed, err := yamledit.SetPodTemplateAnnotations(after, t, r.Set)
			if err != nil {
				return nil, err
			}
			if changed {
				after = out
			}
			continue
		}
		doc, err := PatchDocument(r, PatchTarget{Kind: t.Kind, Name: t.Name, Namespace: t.Namespace})
		if err != nil {
			return nil, err
		}
		after = AppendDocument(after, doc, len(docs) > 0)
	}
	return OverlayFileEdits(ix, file, root, before, after, created, IDs(restarts), func(kustomization []byte) ([]byte, bool, error) {
		return yamledit.AddKustomizationPatch(kustomization, path.Base(file))
	})
}

func (overlayKind) Intents(restarts []Restart) []Intent { return OneIntentEach(restarts) }

// FileError is an error of a file other than the one whose restarts
// failed: the overlay's kustomization, which a patch file is listed in.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// OverlayFileEdits are the edits of a patch file kedge keeps in an
// overlay: the file, when it is new or changed, and its root's
// kustomization, when listing the file (which list does) changes it. An
// error of the kustomization is a *FileError naming it.
func OverlayFileEdits(ix *index.Index, file string, root *index.Root, before, after []byte, created bool, ids []WorkloadID, list func([]byte) ([]byte, bool, error)) ([]FileEdit, error) {
	var out []FileEdit
	if created || !bytes.Equal(before, after) {
		fe := FileEdit{Path: file, After: after, Created: created, Workloads: ids}
		if !created {
			fe.Before = before
		}
		out = append(out, fe)
	}
	kpath := path.Join(root.Dir, root.File)
	kbefore, err := ix.ReadFile(kpath)
	if err != nil {
		return nil, &FileError{Path: kpath, Err: err}
	}
	kafter, changed, err := list(kbefore)
	if err != nil {
		return nil, &FileError{Path: kpath, Err: err}
	}
	if changed {
		out = append(out, FileEdit{Path: kpath, Before: kbefore, After: kafter, Workloads: ids})
	}
	return out, nil
}
