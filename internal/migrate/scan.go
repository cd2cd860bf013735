package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/manifest"
)

// scan renders every root once and finds the plain files defining
// Namespaces. It runs on the first Locate only: most cycles have no
// namespace to move.
func (c *Checkout) scan() {
	if c.scanned {
		return
	}
	c.scanned = true
	read := map[string]bool{}
	for _, r := range c.roots {
		rr := c.render(r)
		c.renders = append(c.renders, rr)
		for f := range rr.reads {
			read[f] = true
		}
	}
	for _, start := range c.starts() {
		_ = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p != start && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() || d.Type()&fs.ModeSymlink != 0 || !yamlName(d.Name()) {
				return nil
			}
			rel := c.rel(p)
			// A file beside a kustomization that does not list it is applied
			// by nothing: Flux applies the kustomization, not the directory.
			if read[rel] || c.hasKustomization(filepath.Dir(p)) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(data, []byte("Namespace")) || bytes.Contains(data, []byte("{{")) {
				return nil
			}
			docs, err := namespaceDocs(rel, data)
			if err == nil {
				c.plain = append(c.plain, docs...)
			}
			return nil
		})
	}
}

func (c *Checkout) render(r manifest.Root) *rootRender {
	rr := &rootRender{dir: r.Dir, file: r.File, reads: map[string]bool{}, includes: map[string]bool{}, namespaces: map[string]renderedNamespace{}}
	kpath := c.abs(path.Join(r.Dir, r.File))
	data, err := os.ReadFile(kpath)
	if err == nil {
		data, err = manifest.WithOriginAnnotations(data)
	}
	if err != nil {
		rr.err = err
		return rr
	}
	rm, reads, err := manifest.Render(c.root, c.abs(r.Dir), map[string][]byte{kpath: data})
	for _, p := range reads {
		rel := c.rel(p)
		rr.reads[rel] = true
		if slices.Contains(kustomizationNames, path.Base(rel)) && path.Dir(rel) != r.Dir {
			rr.includes[path.Dir(rel)] = true
		}
	}
	if err != nil {
		rr.err = err
		return rr
	}
	for _, res := range rm.Resources() {
		if res.GetKind() != "Namespace" || res.GetApiVersion() != "v1" {
			continue
		}
		ns := renderedNamespace{labels: res.GetLabels()}
		if origin, err := res.GetOrigin(); err == nil && origin != nil && origin.Repo == "" && origin.Path != "" {
			if p, err := filepath.EvalSymlinks(filepath.Join(c.abs(r.Dir), filepath.FromSlash(origin.Path))); err == nil && manifest.Within(c.root, p) {
				ns.origin = c.rel(p)
			}
		}
		rr.namespaces[res.GetName()] = ns
	}
	return rr
}

func (c *Checkout) starts() []string {
	if len(c.paths) == 0 {
		return []string{c.root}
	}
	var out []string
	for _, p := range c.paths {
		clean := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(p, "./")))
		if filepath.IsAbs(clean) {
			continue
		}
		if r, err := filepath.EvalSymlinks(filepath.Join(c.root, clean)); err == nil && manifest.Within(c.root, r) {
			out = append(out, r)
		}
	}
	return out
}

func (c *Checkout) hasKustomization(dir string) bool {
	for _, name := range kustomizationNames {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

// read reads a repo-relative file, refusing one a symlink places outside
// the checkout.
func (c *Checkout) read(rel string) ([]byte, error) {
	p, err := filepath.EvalSymlinks(c.abs(rel))
	if err != nil {
		return nil, err
	}
	if !manifest.Within(c.root, p) {
		return nil, fmt.Errorf("%s: %w", rel, errOutside)
	}
	return os.ReadFile(p)
}

func (c *Checkout) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

func (c *Checkout) rel(p string) string {
	r, err := filepath.Rel(c.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

func yamlName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// namespaceDocs reads the Namespace documents of a YAML (or JSON) stream,
// List items included.
func namespaceDocs(file string, data []byte) ([]namespaceDoc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []namespaceDoc
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(node.Content) == 0 {
			continue
		}
		root := node.Content[0]
		items := []*yaml.Node{root}
		if list := mapValue(root, "items"); list != nil && list.Kind == yaml.SequenceNode && strings.HasSuffix(scalar(mapValue(root, "kind")), "List") {
			items = list.Content
		}
		for _, item := range items {
			if scalar(mapValue(item, "kind")) != "Namespace" {
				continue
			}
			meta := mapValue(item, "metadata")
			doc := namespaceDoc{path: file, name: scalar(mapValue(meta, "name")), labels: map[string]string{}}
			if labels := mapValue(meta, "labels"); labels != nil && labels.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(labels.Content); i += 2 {
					doc.labels[labels.Content[i].Value] = labels.Content[i+1].Value
				}
			}
			if doc.name != "" {
				out = append(out, doc)
			}
		}
	}
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var found *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			found = n.Content[i+1]
		}
	}
	return found
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
