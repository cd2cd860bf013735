package editcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// build renders one kustomize root of a checkout as Flux does (plugins off,
// any file of the checkout may be loaded), and when it builds, notes in read
// every repo-relative file it read.
func build(repo, root string, read map[string]bool) ([]*unstructured.Unstructured, error) {
	top, err := resolved(repo)
	if err != nil {
		return nil, err
	}
	disk := readsOf{FileSystem: filesys.MakeFsOnDisk(), read: map[string]bool{}}
	out, err := kustomizeBuild(disk, filepath.Join(repo, filepath.FromSlash(root)))
	if err != nil {
		return nil, err
	}
	for p := range disk.read {
		if rel, err := filepath.Rel(top, p); err == nil {
			read[filepath.ToSlash(rel)] = true
		}
	}
	return out, nil
}

// readsOf is the disk, noting the files a build reads.
type readsOf struct {
	filesys.FileSystem
	read map[string]bool
}

// A file over the repository budget reads as an error, as it does for
// kedge: kustomize would expand its aliases without bound.
func (d readsOf) ReadFile(p string) ([]byte, error) {
	data, err := d.FileSystem.ReadFile(p)
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if err == nil {
		if real, err := resolved(p); err == nil {
			d.read[real] = true
		}
	}
	return data, err
}

func resolved(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// pathIn is the directory a GitOps object's path ("./apps/web") names in
// a checkout.
func pathIn(repo, p string) (string, error) {
	top, err := resolved(repo)
	return filepath.Join(top, filepath.FromSlash(strings.TrimPrefix(p, "./"))), err
}

// convert re-reads a generic value (a spec, a source) as the struct into.
func convert(value, into any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// decodeFile decodes every object of a YAML or JSON file of the checkout.
func decodeFile(p string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(p)
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if err != nil {
		return nil, err
	}
	objs, err := decodeStream(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return objs, nil
}

// decodeStream decodes every object of a YAML or JSON stream, List items
// one by one, as generic maps.
func decodeStream(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		o := &unstructured.Unstructured{}
		if len(raw) == 0 {
			continue // a document of comments alone
		}
		if err := json.Unmarshal(raw, &o.Object); err != nil {
			return nil, err
		}
		if o.Object == nil {
			continue // null
		}
		if !o.IsList() {
			out = append(out, o)
			continue
		}
		err := o.EachListItem(func(item runtime.Object) error {
			out = append(out, item.(*unstructured.Unstructured))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
}

var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Roots lists the kustomize roots of a checkout (repo-relative,
// slash-separated) and tells which of them other roots include as a base or
// component: those are inputs, not necessarily applied as they render.
func Roots(repo string) (roots []string, included map[string]bool, err error) {
	included = map[string]bool{}
	err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != repo && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		k := kustomizationIn(p)
		if k == nil {
			return nil
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil {
			return err
		}
		roots = append(roots, filepath.ToSlash(rel))
		for _, ref := range append(append(append([]string{}, k.Resources...), k.Bases...), k.Components...) { //nolint:staticcheck // bases are still read
			target := filepath.Join(p, filepath.FromSlash(ref))
			if kustomizationIn(target) == nil {
				continue
			}
			if r, err := filepath.Rel(repo, target); err == nil {
				included[filepath.ToSlash(r)] = true
			}
		}
		return nil
	})
	sort.Strings(roots)
	return roots, included, err
}

// readKustomization reads the kustomization of dir and names its file; a
// nil kustomization when there is none.
func readKustomization(dir string) (*types.Kustomization, string, error) {
	for _, name := range kustomizationFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var k types.Kustomization
		return &k, filepath.Join(dir, name), yaml.Unmarshal(data, &k)
	}
	return nil, "", nil
}

// kustomizationIn reads the kustomization of dir; nil when there is none,
// empty when it does not parse.
func kustomizationIn(dir string) *types.Kustomization {
	k, _, err := readKustomization(dir)
	if err != nil {
		return &types.Kustomization{}
	}
	return k
}

// buildEdited builds dir with its kustomization file replaced by k, as a
// GitOps controller does after writing its own options into it.
func buildEdited(dir, file string, k *types.Kustomization) ([]*unstructured.Unstructured, error) {
	generated, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	return kustomizeBuild(overlaid{FileSystem: filesys.MakeFsOnDisk(), path: file, data: generated}, dir)
}

// overlaid is the disk with one file's content replaced (or added).
type overlaid struct {
	filesys.FileSystem
	path string
	data []byte
}

func (o overlaid) ReadFile(p string) ([]byte, error) {
	if filepath.Clean(p) == o.path {
		return o.data, nil
	}
	return o.FileSystem.ReadFile(p)
}

func (o overlaid) Exists(p string) bool {
	return filepath.Clean(p) == o.path || o.FileSystem.Exists(p)
}

func (o overlaid) IsDir(p string) bool {
	return filepath.Clean(p) != o.path && o.FileSystem.IsDir(p)
}

// kustomizeBuild runs kustomize on dir from the library's defaults, with no
// load restrictions and no plugins, and decodes what it renders.
func kustomizeBuild(fs filesys.FileSystem, dir string) ([]*unstructured.Unstructured, error) {
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	rm, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		o := &unstructured.Unstructured{}
		data, err := r.MarshalJSON()
		if err == nil {
			err = json.Unmarshal(data, &o.Object)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}
