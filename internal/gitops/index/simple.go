package index

import (
	"path/filepath"
	"slices"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// The index reads kustomizations that only
// list files (and directories of such kustomizations), with at most a
// namespace, without kustomize: they render to their files' documents with
// the namespace set, which the index reads anyway to find sources. Most
// Flux repositories are made of them, and kustomize spends several
// milliseconds on each. Anything else, or anything unusual in them (a
// document without a name, a List, two documents with one identity) is
// left to kustomize, which also verifies every edit.

// plainKustomizationKeys are the fields a kustomization rendered without
// kustomize may have.
var plainKustomizationKeys = []string{"apiVersion", "kind", "namespace", "resources"}

// renderPlain renders the kustomization kf as kustomize would, or returns
// false when it is not plain.
func renderPlain(kf *kustomizationFile, fsys *repofs.FS, docs *DocCache) (*renderedRoot, bool) {
	return renderPlainWith(kf, fsys, docs, nil)
}

// renderPlainWith is renderPlain with some files' contents replaced (by
// absolute path), as an edit would leave them.
func renderPlainWith(kf *kustomizationFile, fsys *repofs.FS, docs *DocCache, replace map[string][]byte) (*renderedRoot, bool) {
	repoRoot := fsys.Dir()
	read := func(p string) ([]byte, error) {
		if data, ok := replace[p]; ok {
			return data, nil
		}
		return readRegular(fsys, p)
	}
	parse := func(p, rel string) ([]document.Document, error) {
		if data, ok := replace[p]; ok {
			return document.Parse(data)
		}
		return docs.get(rel)
	}
	out := &renderedRoot{reads: map[string]struct{}{}}
	rootDir := relTo(repoRoot, kf.dir)
	seen := map[string]bool{}
	ids := map[string]bool{}
	var walk func(dir, file, namespace string) bool
	walk = func(dir, file, outerNamespace string) bool {
		if seen[dir] {
			return false // a cycle: kustomize reports it
		}
		seen[dir] = true
		kpath := filepath.Join(dir, file)
		data, err := read(kpath)
		if err != nil {
			return false
		}
		out.reads[kpath] = struct{}{}
		// A kustomization over budget is left to kustomize's reading, which
		// refuses it and reports the root.
		if yamlguard.Check(data, yamlguard.Repository) != nil {
			return false
		}
		var k map[string]any
		if err := sigsyaml.Unmarshal(data, &k); err != nil {
			return false
		}
		for key := range k {
			if !slices.Contains(plainKustomizationKeys, key) {
				return false
			}
		}
		if kind, _ := k["kind"].(string); kind != "" && kind != "Kustomization" {
			return false
		}
		namespace, ok := k["namespace"].(string)
		if _, present := k["namespace"]; present && !ok {
			return false
		}
		// The outer kustomization's namespace is applied last.
		if outerNamespace != "" {
			namespace = outerNamespace
		}
		resources, ok := k["resources"].([]any)
		if _, present := k["resources"]; present && !ok {
			return false
		}
		for _, r := range resources {
			ref, ok := r.(string)
			if !ok || ref == "" || isRemoteRef(ref) {
				return false
			}
			p, err := resolveIn(fsys, filepath.Join(dir, filepath.FromSlash(ref)))
			if err != nil {
				return false
			}
			info, err := statIn(fsys, p)
			if err != nil {
				return false
			}
			if info.IsDir() {
				name := kustomizationIn(fsys, p)
				if name == "" || !walk(p, name, namespace) {
					return false
				}
				continue
			}
			if !info.Mode().IsRegular() {
				return false
			}
			rel := relTo(repoRoot, p)
			fileDocs, err := parse(p, rel)
			if err != nil || len(fileDocs) == 0 {
				return false
			}
			out.reads[p] = struct{}{}
			for _, d := range fileDocs {
				if d.APIVersion == "" || d.Kind == "" || d.Name == "" || d.List || d.Kind == "Kustomization" || d.Kind == "Component" {
					return false
				}
				// The index keeps Applications whole, as kustomize renders
				// them; the few roots holding some are left to it.
				if document.IsApplication(d.APIVersion, d.Kind) {
					return false
				}
				ns := d.Namespace
				if namespace != "" {
					ns = namespace
				}
				id := d.APIVersion + "|" + d.Kind + "|" + ns + "|" + d.Name
				if ids[id] {
					return false
				}
				ids[id] = true
				if document.IsNamespace(d.APIVersion, d.Kind) {
					// kustomize's namespace: renames Namespace objects too;
					// kustomize itself renders such a root.
					if namespace != "" && namespace != d.Name {
						return false
					}
					out.namespaces = append(out.namespaces, renderedNamespace(d.Name, d.Labels, rootDir, rel))
					continue
				}
				if isMeshKind(d.APIVersion, d.Kind) {
					out.mesh = append(out.mesh, documentMeshObject(d, ns, rootDir, rel))
					continue
				}
				if !document.IsIndexed(d.APIVersion, d.Kind) {
					continue
				}
				out.objects = append(out.objects, Object{
					APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Namespace: ns,
					TemplateAnnotations: d.TemplateAnnotations, Release: d.Release, Root: rootDir,
					SubstituteDisabled: d.SubstituteDisabled,
					Source: Source{
						Path: rel, Document: d.Index, APIVersion: d.APIVersion,
						Kind: d.Kind, Name: d.Name, Namespace: d.Namespace,
					},
				})
			}
		}
		return true
	}
	if kustomizationIn(fsys, kf.dir) != kf.name || !walk(kf.dir, kf.name, "") {
		return nil, false
	}
	out.restartPatch = readRestartPatch(fsys, kf)
	return out, true
}

// kustomizationIn returns the name of dir's kustomization file, or "" when
// it has none or several (which kustomize refuses).
func kustomizationIn(fsys *repofs.FS, dir string) string {
	found := ""
	for _, name := range KustomizationFileNames {
		if info, err := statIn(fsys, filepath.Join(dir, name)); err == nil {
			if found != "" || !info.Mode().IsRegular() {
				return ""
			}
			found = name
		}
	}
	return found
}
