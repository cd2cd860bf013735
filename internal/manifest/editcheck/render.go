package editcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// Restart is a workload a patch restarts, and the pod template annotations
// it gets.
type Restart struct {
	Namespace, Kind, Name string
	Annotations           map[string]string
}

func (r Restart) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Render builds a kustomize root as Flux does: plugins off, any file of the
// checkout may be loaded.
func Render(dir string) ([]map[string]any, error) {
	objs, _, err := render(dir)
	return objs, err
}

// recordingFS is the disk, noting every file a build reads. A file over
// the repository budget reads as an error, as it does for kedge: kustomize
// would expand its aliases without bound.
type recordingFS struct {
	filesys.FileSystem
	reads map[string]bool
}

func (r recordingFS) ReadFile(p string) ([]byte, error) {
	data, err := r.FileSystem.ReadFile(p)
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			if resolved, err := filepath.EvalSymlinks(abs); err == nil {
				abs = resolved
			}
			r.reads[abs] = true
		}
	}
	return data, err
}

func render(dir string) ([]map[string]any, map[string]bool, error) {
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	fs := recordingFS{FileSystem: filesys.MakeFsOnDisk(), reads: map[string]bool{}}
	rm, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	var out []map[string]any
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, m)
	}
	return out, fs.reads, nil
}

// ReadObjects reads every object of a YAML or JSON file, List items one by
// one.
func ReadObjects(p string) ([]map[string]any, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if err := yamlguard.Check(data, yamlguard.Repository); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if obj == nil {
			continue
		}
		if items, ok := obj["items"].([]any); ok && strings.HasSuffix(fmt.Sprint(obj["kind"]), "List") {
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					out = append(out, m)
				}
			}
			continue
		}
		out = append(out, obj)
	}
}

var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Roots lists the kustomize roots of a checkout (repo-relative,
// slash-separated) and tells which of them other roots include as a base or
// component: those are inputs, not necessarily applied as they render.
func Roots(repo string) (roots []string, included map[string]bool, err error) {
	included = map[string]bool{}
	err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repo && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if !d.IsDir() {
			return nil
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
			if info, err := os.Stat(target); err == nil && info.IsDir() && kustomizationIn(target) != nil {
				if r, err := filepath.Rel(repo, target); err == nil {
					included[filepath.ToSlash(r)] = true
				}
			}
		}
		return nil
	})
	sort.Strings(roots)
	return roots, included, err
}

func kustomizationIn(dir string) *types.Kustomization {
	for _, name := range kustomizationFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var k types.Kustomization
		if sigsyaml.Unmarshal(data, &k) != nil {
			return &types.Kustomization{}
		}
		return &k
	}
	return nil
}

// Result is what comparing a checkout before and after a patch found.
type Result struct {
	// Restarted are the restarts seen applied, under the workload's own
	// identity, in a render that is deployed as it is.
	Restarted map[string]bool
	// Problems are changes beyond the intended restart annotations.
	Problems []string
}

// Check is one patch to hold to its promises.
type Check struct {
	// Before and After are the checkout without and with the patch.
	Before, After string
	// Changed are the repo-relative paths the patch touches.
	Changed []string
	// Restarts are the workloads the patch may restart.
	Restarts []Restart
	// TargetNamespaces maps repo-relative directories to the namespace the
	// GitOps controller forces on everything it applies from them (Flux's
	// targetNamespace).
	TargetNamespaces map[string]string
}

// CompareRepos renders every kustomize root of both checkouts, and reads
// the changed files that no kustomization reads (plain manifests a GitOps
// controller applies as they are), and checks that the only differences are
// the annotations of the restarts.
func CompareRepos(c Check) (Result, error) {
	before, after, changed, restarts := c.Before, c.After, c.Changed, c.Restarts
	res := Result{Restarted: map[string]bool{}}
	roots, included, err := Roots(before)
	if err != nil {
		return res, err
	}
	reached := map[string]bool{}
	note := func(repo string, reads map[string]bool) error {
		top, err := filepath.EvalSymlinks(repo)
		if err != nil {
			return err
		}
		for p := range reads {
			if rel, err := filepath.Rel(top, p); err == nil {
				reached[filepath.ToSlash(rel)] = true
			}
		}
		return nil
	}
	for _, root := range roots {
		b, reads, err := render(filepath.Join(before, filepath.FromSlash(root)))
		if err != nil {
			continue // a root that never built (remote base, broken) is not the patch's doing
		}
		if err := note(before, reads); err != nil {
			return res, err
		}
		a, reads, err := render(filepath.Join(after, filepath.FromSlash(root)))
		if err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: builds before the patch, not after: %v", root, err))
			continue
		}
		if err := note(after, reads); err != nil {
			return res, err
		}
		compare(root, b, a, !included[root], c.forced(root), restarts, &res)
	}
	for _, f := range changed {
		if reached[f] {
			continue
		}
		if _, err := os.Stat(filepath.Join(before, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: created, but no kustomization reads it", f))
			continue
		}
		b, err := ReadObjects(filepath.Join(before, filepath.FromSlash(f)))
		if err != nil {
			return res, err
		}
		a, err := ReadObjects(filepath.Join(after, filepath.FromSlash(f)))
		if err != nil {
			return res, err
		}
		compare(f, b, a, true, c.forced(f), restarts, &res)
	}
	return res, nil
}

// forced returns the namespace forced on what is applied from p.
func (c Check) forced(p string) string {
	best, ns := -1, ""
	for dir, n := range c.TargetNamespaces {
		if (dir == "." || p == dir || strings.HasPrefix(p, dir+"/")) && len(dir) > best {
			best, ns = len(dir), n
		}
	}
	return ns
}

func compare(where string, before, after []map[string]any, deployed bool, forced string, restarts []Restart, res *Result) {
	if len(before) != len(after) {
		res.Problems = append(res.Problems, fmt.Sprintf("%s: %d objects instead of %d", where, len(after), len(before)))
		return
	}
	for i := range before {
		b, a := before[i], after[i]
		id := identity(a)
		if identity(b) != id {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %s rendered where %s was", where, id, identity(b)))
			continue
		}
		if reflect.DeepEqual(b, a) {
			continue
		}
		r := restartCarried(a, restarts)
		if r == nil {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %s changed without carrying an intended restart", where, id))
			continue
		}
		if deployed {
			ns := id.Namespace
			if forced != "" {
				ns = forced
			}
			if id.Kind != r.Kind || id.Name != r.Name || (ns != "" && ns != r.Namespace) {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: %s carries the restart of %s", where, id, r))
				continue
			}
		}
		var keys []string
		for k := range r.Annotations {
			keys = append(keys, k)
		}
		stripped := func(o map[string]any) map[string]any {
			c := deepCopy(o)
			stripTemplateAnnotations(c, keys)
			return c
		}
		if !reflect.DeepEqual(stripped(b), stripped(a)) {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %s changed beyond the restart annotations", where, id))
			continue
		}
		if deployed {
			res.Restarted[r.String()] = true
		}
	}
}

type objectID struct{ Namespace, Kind, Name string }

func (id objectID) String() string { return id.Kind + " " + id.Namespace + "/" + id.Name }

func identity(o map[string]any) objectID {
	md, _ := o["metadata"].(map[string]any)
	kind, _ := o["kind"].(string)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return objectID{Namespace: ns, Kind: kind, Name: name}
}

// restartCarried returns the restart whose annotations the object carries.
// Restart values differ per workload, so an object carries at most one.
func restartCarried(o map[string]any, restarts []Restart) *Restart {
	got := templateAnnotations(o)
	for i := range restarts {
		all := len(restarts[i].Annotations) > 0
		for k, v := range restarts[i].Annotations {
			if got[k] != v {
				all = false
			}
		}
		if all {
			return &restarts[i]
		}
	}
	return nil
}

func templateAnnotations(o map[string]any) map[string]string {
	spec, _ := o["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	md, _ := tpl["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	out := map[string]string{}
	for k, v := range ann {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// stripTemplateAnnotations removes keys, and the mappings left empty.
func stripTemplateAnnotations(o map[string]any, keys []string) {
	spec, _ := o["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	md, _ := tpl["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		return
	}
	for _, k := range keys {
		delete(ann, k)
	}
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	if len(md) == 0 {
		delete(tpl, "metadata")
	}
}

func deepCopy(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = deepCopyValue(x)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopy(x)
	case []any:
		c := make([]any, len(x))
		for i := range x {
			c[i] = deepCopyValue(x[i])
		}
		return c
	}
	return v
}
