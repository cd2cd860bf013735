package migrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// buildMu serialises kustomize builds: the kustomize API keeps
// process-wide state that is not safe for concurrent builds
// (kubernetes-sigs/kustomize#3659).
var buildMu sync.Mutex

var errOutside = errors.New("path resolves outside the repository")

// checkoutFS is what a build sees: the checkout on disk, read-only and
// confined to it (symlinks resolved), with some files replaced by other
// bytes, recording every file read so an edit can be traced to the roots
// it reaches.
type checkoutFS struct {
	root    string // absolute, symlinks resolved
	replace map[string][]byte
	reads   map[string]bool
}

var _ filesys.FileSystem = (*checkoutFS)(nil)

func newCheckoutFS(root string, replace map[string][]byte) *checkoutFS {
	return &checkoutFS{root: root, replace: replace, reads: map[string]bool{}}
}

func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (c *checkoutFS) resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, ok := c.replace[abs]; ok {
		return abs, nil
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if !inside(c.root, resolved) {
		return "", fmt.Errorf("%s: %w", p, errOutside)
	}
	return resolved, nil
}

func (c *checkoutFS) Create(string) (filesys.File, error) { return nil, errors.New("read-only") }
func (c *checkoutFS) Mkdir(string) error                  { return errors.New("read-only") }
func (c *checkoutFS) MkdirAll(string) error               { return errors.New("read-only") }
func (c *checkoutFS) RemoveAll(string) error              { return errors.New("read-only") }
func (c *checkoutFS) WriteFile(string, []byte) error      { return errors.New("read-only") }

func (c *checkoutFS) Open(p string) (filesys.File, error) {
	r, err := c.resolve(p)
	if err != nil {
		return nil, err
	}
	if _, ok := c.replace[r]; ok {
		return nil, errors.New("replaced files are read with ReadFile only")
	}
	return os.Open(r)
}

func (c *checkoutFS) IsDir(p string) bool {
	r, err := c.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := c.replace[r]; ok {
		return false
	}
	info, err := os.Stat(r)
	return err == nil && info.IsDir()
}

func (c *checkoutFS) Exists(p string) bool {
	_, err := c.resolve(p)
	return err == nil
}

func (c *checkoutFS) ReadDir(p string) ([]string, error) {
	r, err := c.resolve(p)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(r)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (c *checkoutFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r, err := c.resolve(p)
	if err != nil {
		return "", "", err
	}
	if c.IsDir(r) {
		return filesys.ConfirmedDir(r), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(r)), filepath.Base(r), nil
}

func (c *checkoutFS) Glob(pattern string) ([]string, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range filesys.RemoveHiddenFiles(matches) {
		if _, err := c.resolve(m); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (c *checkoutFS) ReadFile(p string) ([]byte, error) {
	r, err := c.resolve(p)
	if err != nil {
		return nil, err
	}
	if data, ok := c.replace[r]; ok {
		c.reads[r] = true
		return data, nil
	}
	data, err := os.ReadFile(r)
	if err == nil {
		c.reads[r] = true
	}
	return data, err
}

func (c *checkoutFS) Walk(p string, fn filepath.WalkFunc) error {
	r, err := c.resolve(p)
	if err != nil {
		return err
	}
	return filepath.Walk(r, fn)
}

// build renders one kustomize root the way Flux does: no plugins, any file
// inside the checkout.
func build(fs *checkoutFS, dir string) (_ resmap.ResMap, err error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	// Malformed input has made kustomize panic; one bad root must not take
	// the cycle down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	return krusty.MakeKustomizer(opts).Run(fs, dir)
}

// withOrigins switches on buildMetadata originAnnotations in a top
// kustomization, which kustomize then applies to every base: each rendered
// object names the file it came from.
func withOrigins(data []byte) ([]byte, error) {
	node, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	if meta := node.Field("buildMetadata"); meta != nil && meta.Value != nil {
		for _, v := range meta.Value.YNode().Content {
			if v.Value == types.OriginAnnotations {
				return data, nil
			}
		}
		if err := meta.Value.PipeE(kyaml.Append(kyaml.NewScalarRNode(types.OriginAnnotations).YNode())); err != nil {
			return nil, err
		}
	} else if err := node.PipeE(kyaml.SetField("buildMetadata", kyaml.NewListRNode(types.OriginAnnotations))); err != nil {
		return nil, err
	}
	out, err := node.String()
	return []byte(out), err
}
