package editcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ClusterAppliers reads, from a directory of cluster objects (a snapshot),
// the Flux Kustomizations and Argo CD Applications that apply a checkout
// of the repository at repoURL (any repository when empty; the branch, when
// not empty, the cluster must follow), with what each builds: a Kustomization of one of the
// repository's GitRepositories, or of an ExternalArtifact whose path
// fluxDirs maps ("namespace/name" to the repository directory), with the
// post-build variables its ConfigMaps and its own substitute set; an
// Application with the sources that read the repository.
func ClusterAppliers(dir, repoURL, branch string, fluxDirs map[string]string) ([]Applier, error) {
	objs, err := readObjects(dir)
	if err != nil {
		return nil, err
	}
	same := func(url, rev string) bool {
		return (repoURL == "" || sameRepository(url, repoURL)) && (branch == "" || rev == "" || rev == branch)
	}
	var out []Applier
	for _, o := range objs {
		switch {
		case o.GetKind() == "Kustomization" && strings.HasPrefix(o.GetAPIVersion(), "kustomize.toolkit.fluxcd.io/"):
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "kind")
			name, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "name")
			ns, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "namespace")
			if ns == "" {
				ns = o.GetNamespace()
			}
			a := Applier{Object: o}
			switch kind {
			case "", "GitRepository":
				g := find(objs, "GitRepository", ns, name)
				if g == nil {
					continue
				}
				url, _, _ := unstructured.NestedString(g.Object, "spec", "url")
				ref, _, _ := unstructured.NestedString(g.Object, "spec", "ref", "branch")
				if !same(url, ref) {
					continue
				}
			case "ExternalArtifact":
				d, ok := fluxDirs[o.GetNamespace()+"/"+o.GetName()]
				if !ok {
					continue
				}
				a.Dir = d
			default:
				continue
			}
			a.Vars = fluxVars(o, objs)
			out = append(out, a)
		case o.GetKind() == "Application" && strings.HasPrefix(o.GetAPIVersion(), "argoproj.io/"):
			a := Applier{Object: o, Refs: map[string]bool{}}
			sources := sourcesOf(o)
			for i, src := range sources {
				url, _ := src["repoURL"].(string)
				rev, _ := src["targetRevision"].(string)
				if rev == "HEAD" {
					rev = ""
				}
				if !same(url, rev) {
					continue
				}
				if ref, _ := src["ref"].(string); ref != "" {
					a.Refs[ref] = true
				}
				if p, _ := src["path"].(string); p != "" {
					a.Sources = append(a.Sources, i)
				}
			}
			for i, src := range sources {
				if c, _ := src["chart"].(string); c != "" {
					a.Sources = append(a.Sources, i)
				}
			}
			if len(a.Sources) > 0 {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// TargetNamespaces are the directories the appliers build with a
// namespace forced on everything: Flux's targetNamespace.
func TargetNamespaces(appliers []Applier) map[string]string {
	out := map[string]string{}
	for _, a := range appliers {
		if a.Object.GetKind() != "Kustomization" {
			continue
		}
		ns, _, _ := unstructured.NestedString(a.Object.Object, "spec", "targetNamespace")
		dir := a.Dir
		if dir == "" {
			dir, _, _ = unstructured.NestedString(a.Object.Object, "spec", "path")
		}
		dir = strings.Trim(strings.TrimPrefix(dir, "./"), "/")
		if dir == "" {
			dir = "."
		}
		if ns != "" {
			out[dir] = ns
		}
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

// fluxVars are the variables a Kustomization's post-build substitution
// knows: the ConfigMaps it names, then its inline ones; nil without a
// postBuild. A Secret's values are not in a snapshot.
func fluxVars(o *unstructured.Unstructured, objs []*unstructured.Unstructured) map[string]string {
	pb, ok, _ := unstructured.NestedMap(o.Object, "spec", "postBuild")
	if !ok {
		return nil
	}
	out := map[string]string{}
	from, _ := pb["substituteFrom"].([]any)
	for _, f := range from {
		ref, _ := f.(map[string]any)
		name, _ := ref["name"].(string)
		if ref["kind"] != "ConfigMap" {
			continue
		}
		if cm := find(objs, "ConfigMap", o.GetNamespace(), name); cm != nil {
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			for k, v := range data {
				out[k] = v
			}
		}
	}
	sub, _ := pb["substitute"].(map[string]any)
	for k, v := range sub {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// readObjects reads every object of the YAML and JSON files below dir.
func readObjects(dir string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			o := &unstructured.Unstructured{}
			if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if len(o.Object) > 0 {
				out = append(out, o)
			}
		}
	})
	return out, err
}
