package render

import (
	"errors"
	"fmt"
	"path/filepath"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	fluxfs "github.com/fluxcd/pkg/kustomize/filesys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kedge-io/kedge/internal/repofs"
)

// FluxKustomization writes, for the Flux Kustomization obj (the whole
// object, spec included), the kustomization kustomize-controller builds at
// the absolute directory dir of the checkout at root: the directory's own
// kustomization, or one generated listing its manifests and the
// kustomization directories below it, with the Kustomization's
// targetNamespace, namePrefix, nameSuffix, patches, images and components
// (those missing skipped under ignoreMissingComponents) written into it.
// It is kustomize-controller's own generator (github.com/fluxcd/pkg/kustomize
// Generator.GenerateManifest), reading the checkout through Flux's file
// system confined to root; nothing is written. It returns the
// kustomization's content and its path relative to root.
func FluxKustomization(root, dir string, obj map[string]any) ([]byte, string, error) {
	gen := fluxkustomize.NewGenerator(root, unstructured.Unstructured{Object: obj})
	data, file, _, err := gen.GenerateManifest(dir)
	var outside *fluxfs.ConstraintError
	if errors.As(err, &outside) {
		rel, _ := filepath.Rel(root, outside.Path)
		return nil, "", &repofs.OutsideError{Path: filepath.ToSlash(rel)}
	}
	if err != nil {
		return nil, "", err
	}
	rel, err := filepath.Rel(root, file)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, "", fmt.Errorf("%s: the kustomization is outside the repository", file)
	}
	return data, filepath.ToSlash(rel), nil
}
