package index

import (
	"path"
	"strings"
)

// A Flux Kustomization whose path holds no kustomization file applies what
// kustomize-controller's generator (github.com/fluxcd/pkg/kustomize,
// Generator.GenerateManifest) lists in the kustomization it writes there:
// every .yaml and .yml manifest below the path, and every directory below
// it that holds a kustomization file as one resource, whose build is what
// that directory renders and which the walk does not descend into
// (docs/design.md, "Sources"). The home-lab layout of a Kustomization over
// kubernetes/apps, each namespace a kustomization listing the ks.yaml of
// its apps, applies the namespaces' renders and nothing of the apps' own
// directories below them.

// HasKustomization reports whether the repo-relative directory holds a
// kustomization file of any kind (a Kustomization, a Component, one that
// failed to build).
func (ix *Index) HasKustomization(dir string) bool { return ix.kustomizationDirs[dir] }

// GeneratedApplies reports whether the kustomization kustomize-controller
// generates for dir, a directory without one, renders o: o's root is a
// directory below dir with no kustomization between them, or o is read from
// a .yaml or .yml file below dir with no kustomization from its directory up
// to dir.
func (ix *Index) GeneratedApplies(dir string, o *Object) bool {
	if ix.kustomizationDirs[dir] {
		return false
	}
	if o.Root != "" {
		return o.Root != dir && Under(o.Root, dir) && !ix.kustomizationBetween(path.Dir(o.Root), dir)
	}
	file := o.Source.Path
	if !Under(file, dir) || file == dir {
		return false
	}
	if ext := path.Ext(file); ext != ".yaml" && ext != ".yml" {
		return false
	}
	return !ix.kustomizationBetween(path.Dir(file), dir)
}

// kustomizationBetween reports whether p or a directory above it, up to
// dir (excluded), holds a kustomization file.
func (ix *Index) kustomizationBetween(p, dir string) bool {
	for p != dir && p != "." && p != "/" && p != "" {
		if ix.kustomizationDirs[p] {
			return true
		}
		if !strings.Contains(p, "/") {
			return false
		}
		p = path.Dir(p)
	}
	return false
}
