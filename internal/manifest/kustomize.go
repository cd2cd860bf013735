package manifest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// kustomizationFileNames are the names kustomize recognises, in its order.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// errOutsideRepo is returned for any path that resolves outside the checkout.
var errOutsideRepo = errors.New("path resolves outside the repository")

// kustomizationFile is what kedge reads from a kustomization before building
// it: enough to refuse remote bases (kustomize would shell out to git) and to
// know which files it reaches even when the build fails.
type kustomizationFile struct {
	dir  string // absolute, symlinks resolved
	name string
	kind string
	// dirRefs are resources, bases and components entries, as written.
	refs []string
	// files are other paths it names (patches, generators' sources are not
	// needed: they are never workloads).
	files []string
	// labels are the values commonLabels and labels entries set, by key.
	labels map[string][]string
	// deprecated are kustomize's warnings about fields it still accepts
	// but will drop.
	deprecated []string
	// inlineNamespaces are the Namespace documents of its inline patches.
	inlineNamespaces []document
	// namePrefix and nameSuffix are its own, which a Flux Kustomization's
	// replace.
	namePrefix, nameSuffix string
}

func readKustomizationFile(dir, name string) (*kustomizationFile, error) {
	data, err := readRegular(filepath.Join(dir, name))
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if yamlguard.IsOverBudget(err) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		return nil, err
	}
	var k types.Kustomization
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	kf := &kustomizationFile{dir: dir, name: name, kind: k.Kind, labels: map[string][]string{}, deprecated: deprecationsOf(&k),
		namePrefix: k.NamePrefix, nameSuffix: k.NameSuffix}
	for key, v := range k.CommonLabels { //nolint:staticcheck // still applied by kustomize
		kf.labels[key] = append(kf.labels[key], v)
	}
	for _, l := range k.Labels {
		for key, v := range l.Pairs {
			kf.labels[key] = append(kf.labels[key], v)
		}
	}
	kf.refs = append(kf.refs, k.Resources...)
	kf.refs = append(kf.refs, k.Bases...) //nolint:staticcheck // old kustomizations still use bases
	kf.refs = append(kf.refs, k.Components...)
	kf.files = append(kf.files, k.Crds...)
	for _, p := range k.Patches {
		if p.Path != "" {
			kf.files = append(kf.files, p.Path)
		}
	}
	for _, p := range k.PatchesJson6902 { //nolint:staticcheck // still accepted by kustomize
		if p.Path != "" {
			kf.files = append(kf.files, p.Path)
		}
	}
	for _, p := range k.Patches {
		kf.inlineNamespaces = append(kf.inlineNamespaces, namespaceDocuments(p.Patch)...)
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // still accepted by kustomize
		if s := string(p); strings.Contains(s, "\n") {
			kf.inlineNamespaces = append(kf.inlineNamespaces, namespaceDocuments(s)...)
		}
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // still accepted by kustomize
		// An inline patch is YAML text, not a path.
		if s := string(p); !strings.Contains(s, "\n") {
			kf.files = append(kf.files, s)
		}
	}
	return kf, nil
}

// deprecationsOf returns the warnings kustomize prints for k, without the
// "# Warning: " it starts them with.
func deprecationsOf(k *types.Kustomization) []string {
	var out []string
	if warnings := k.CheckDeprecatedFields(); warnings != nil {
		for _, w := range *warnings {
			out = append(out, strings.TrimPrefix(w, "# Warning: "))
		}
	}
	return out
}

var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// isRemoteRef mirrors the rules by which kustomize decides that a resources
// entry is a remote repository or URL rather than a local path: a scheme, an
// SCP-style user@, or a bare github.com host.
func isRemoteRef(ref string) bool {
	r := strings.TrimPrefix(ref, "git::")
	lower := strings.ToLower(r)
	for _, scheme := range []string{"https://", "http://", "ssh://", "file://"} {
		if strings.HasPrefix(lower, scheme) {
			return true
		}
	}
	if scpUser.MatchString(r) {
		return true
	}
	return strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:")
}

// withOriginAnnotations returns the kustomization with buildMetadata
// originAnnotations switched on. The kustomize API has no option for it: the
// kustomize build reads it from the top kustomization file only, and passes
// it down to every base.
func withOriginAnnotations(data []byte) ([]byte, error) {
	node, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	meta := node.Field("buildMetadata")
	if meta != nil && meta.Value != nil {
		for _, v := range meta.Value.YNode().Content {
			if v.Value == types.OriginAnnotations {
				return data, nil
			}
		}
		if err := meta.Value.PipeE(kyaml.Append(kyaml.NewScalarRNode(types.OriginAnnotations).YNode())); err != nil {
			return nil, err
		}
	} else if err := node.PipeE(kyaml.SetField("buildMetadata",
		kyaml.NewListRNode(types.OriginAnnotations))); err != nil {
		return nil, err
	}
	out, err := node.String()
	return []byte(out), err
}

// guardFS is the file system a kustomize build sees: the disk, read-only,
// confined to the checkout (symlinks resolved), with optional replaced or
// added files, and a record of every file read. A file over the
// repository budget (yamlguard) reads as an error: kustomize expands every
// alias of every file it reads, so this is the last place to refuse one.
type guardFS struct {
	root string // absolute, symlinks resolved
	// replace maps absolute resolved paths to the bytes a build must see.
	replace map[string][]byte
	reads   map[string]struct{}
	// budget judges a file read from disk (absolute resolved path); builds
	// of one index share its verdicts.
	budget func(path string, data []byte) error
	// refused maps the absolute resolved paths of files over budget to why.
	refused map[string]error
	// listed records the directories listed (false) or walked (true): a
	// file added there can change the build without any read file changing.
	listed map[string]bool
}

var _ filesys.FileSystem = (*guardFS)(nil)

func newGuardFS(root string, replace map[string][]byte) *guardFS {
	return &guardFS{
		root: root, replace: replace, reads: map[string]struct{}{}, refused: map[string]error{}, listed: map[string]bool{},
		budget: func(_ string, data []byte) error { return yamlguard.Check(data, yamlguard.Repository) },
	}
}

// within reports whether the resolved path p lies inside root.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (g *guardFS) resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, ok := g.replace[abs]; ok {
		return abs, nil
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if !within(g.root, resolved) {
		return "", fmt.Errorf("%s: %w", p, errOutsideRepo)
	}
	return resolved, nil
}

func (g *guardFS) Create(string) (filesys.File, error) { return nil, errors.New("read-only") }
func (g *guardFS) Mkdir(string) error                  { return errors.New("read-only") }
func (g *guardFS) MkdirAll(string) error               { return errors.New("read-only") }
func (g *guardFS) RemoveAll(string) error              { return errors.New("read-only") }
func (g *guardFS) WriteFile(string, []byte) error      { return errors.New("read-only") }

func (g *guardFS) Open(p string) (filesys.File, error) {
	r, err := g.resolve(p)
	if err != nil {
		return nil, err
	}
	if _, ok := g.replace[r]; ok {
		return nil, errors.New("open is not supported for replaced files")
	}
	if err := regular(r); err != nil {
		return nil, err
	}
	return os.Open(r)
}

func (g *guardFS) IsDir(p string) bool {
	r, err := g.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := g.replace[r]; ok {
		return false
	}
	info, err := os.Stat(r)
	return err == nil && info.IsDir()
}

func (g *guardFS) Exists(p string) bool {
	_, err := g.resolve(p)
	return err == nil
}

func (g *guardFS) ReadDir(p string) ([]string, error) {
	r, err := g.resolve(p)
	if err != nil {
		return nil, err
	}
	g.list(r, false)
	entries, err := os.ReadDir(r)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

func (g *guardFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r, err := g.resolve(p)
	if err != nil {
		return "", "", err
	}
	if g.IsDir(r) {
		return filesys.ConfirmedDir(r), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(r)), filepath.Base(r), nil
}

func (g *guardFS) Glob(pattern string) ([]string, error) {
	g.listGlob(pattern)
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range filesys.RemoveHiddenFiles(matches) {
		if _, err := g.resolve(m); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (g *guardFS) ReadFile(p string) ([]byte, error) {
	r, err := g.resolve(p)
	if err != nil {
		return nil, err
	}
	data, replaced := g.replace[r]
	if replaced {
		err = yamlguard.Check(data, yamlguard.Repository)
	} else if data, err = readRegular(r); err == nil {
		err = g.budget(r, data)
	}
	if yamlguard.IsOverBudget(err) {
		g.reads[r] = struct{}{}
		g.refused[r] = err
		return nil, fmt.Errorf("%s: %w", relTo(g.root, r), err)
	}
	if err != nil {
		return nil, err
	}
	g.reads[r] = struct{}{}
	return data, nil
}

func (g *guardFS) Walk(p string, fn filepath.WalkFunc) error {
	r, err := g.resolve(p)
	if err != nil {
		return err
	}
	g.list(r, true)
	return filepath.Walk(r, fn)
}

// list records that the build listed dir, or the whole tree below it.
func (g *guardFS) list(dir string, tree bool) {
	g.listed[dir] = g.listed[dir] || tree
}

// listGlob records what a glob lists: the directory of its pattern, or the
// tree below the part before the first wildcard when a directory is one.
func (g *guardFS) listGlob(pattern string) {
	dir := filepath.Dir(pattern)
	if i := strings.IndexAny(dir, "*?[\\"); i >= 0 {
		g.list(filepath.Dir(dir[:i]+"x"), true)
		return
	}
	g.list(dir, false)
}

// errNotRegular is returned for a path that is a device, socket or named
// pipe: reading one could block forever or never end.
var errNotRegular = errors.New("not a regular file")

func regular(p string) error {
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", p, errNotRegular)
	}
	return nil
}

// readRegular reads a file, refusing anything but a regular file and
// anything beyond the repository's size budget (without reading it).
func readRegular(p string) ([]byte, error) {
	if err := regular(p); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return yamlguard.ReadAll(f, yamlguard.MaxFileBytes)
}

// kustomizeBuild renders one kustomize root. Plugins are off (no exec, no Go
// plugins) and load restrictions are the ones Flux uses: any file inside the
// checkout, which guardFS enforces.
func kustomizeBuild(fs *guardFS, dir string) (_ resmap.ResMap, err error) {
	// Malformed input has made kustomize panic before; a bad root must not
	// take the whole index down with it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	kustomizeStderr.acquire()
	defer kustomizeStderr.release()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	return krusty.MakeKustomizer(opts).Run(fs, dir)
}

// kustomizeStderr keeps kustomize's warnings off kedge's output. kustomize
// prints "# Warning: 'commonLabels' is deprecated…" to os.Stderr on every
// build of a kustomization using a deprecated field, with no option to
// stop it; the index reports those fields as problems instead. While any
// build runs, os.Stderr is a pipe: its warning lines go to the debug log,
// every other line to the real standard error. The Go runtime writes its
// own crash reports to the file descriptor, not through os.Stderr, so
// those are never caught.
var kustomizeStderr stderrCapture

type stderrCapture struct {
	mu     sync.Mutex
	builds int
	real   *os.File
	pipe   *os.File // nil when no pipe could be made: builds print as they would
	// routed is closed when everything written to the pipe has been routed.
	routed chan struct{}
}

func (c *stderrCapture) acquire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.builds++
	if c.builds > 1 {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	c.real, c.pipe, c.routed = os.Stderr, w, make(chan struct{})
	os.Stderr = w
	go routeStderr(r, c.real, c.routed)
}

func (c *stderrCapture) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.builds--
	if c.builds > 0 || c.pipe == nil {
		return
	}
	os.Stderr = c.real
	_ = c.pipe.Close()
	c.pipe = nil
	// A build's output is routed by the time the build returns.
	<-c.routed
}

// kustomizeWarning starts every warning kustomize prints about a
// kustomization.
const kustomizeWarning = "# Warning: "

// routeStderr reads the captured standard error until every build has
// released it.
func routeStderr(r, real *os.File, routed chan<- struct{}) {
	defer close(routed)
	defer r.Close()
	lines := bufio.NewReader(r)
	for {
		line, err := lines.ReadString('\n')
		if strings.HasPrefix(line, kustomizeWarning) {
			slog.Debug("kustomize warning", "warning", strings.TrimSpace(strings.TrimPrefix(line, kustomizeWarning)))
		} else if line != "" {
			_, _ = io.WriteString(real, line)
		}
		if err != nil {
			return
		}
	}
}

// Render renders the kustomize root dir of the checkout at root exactly as
// the index does (no plugins, any file inside the checkout and nothing
// outside it), with replace standing in for the content of files (absolute
// paths). It also returns the absolute paths of the files the build read,
// so a caller editing one of them knows which roots to render again.
func Render(root, dir string, replace map[string][]byte) (resmap.ResMap, []string, error) {
	fs := newGuardFS(root, replace)
	rm, err := kustomizeBuild(fs, dir)
	reads := make([]string, 0, len(fs.reads))
	for p := range fs.reads {
		reads = append(reads, p)
	}
	sort.Strings(reads)
	return rm, reads, err
}

// WithOriginAnnotations switches on buildMetadata originAnnotations in a
// top kustomization's content, so every rendered object names its source.
func WithOriginAnnotations(data []byte) ([]byte, error) { return withOriginAnnotations(data) }

// Within reports whether the resolved path p lies inside root.
func Within(root, p string) bool { return within(root, p) }

// namespaceDocuments are the Namespace documents of an inline patch; a
// patch kedge cannot parse has none it could name.
func namespaceDocuments(patch string) []document {
	if patch == "" {
		return nil
	}
	docs, err := parseDocuments([]byte(patch))
	if err != nil {
		return nil
	}
	var out []document
	for _, d := range docs {
		if isNamespaceKind(d.APIVersion, d.Kind) {
			out = append(out, d)
		}
	}
	return out
}
