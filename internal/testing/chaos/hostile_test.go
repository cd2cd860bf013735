package chaos

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/testing/treecopy"
)

// The hostile-repository corpus: repositories written by someone who wants
// kedge to leak a secret, run a command, reach an address or exhaust
// itself. See testdata/hostile/README.md.
const hostileCorpus = "../../../testdata/hostile"

// The bounds of a whole `kedge plan` on a hostile repository: what the
// deployment gives the pod (deploy/: 1 GiB), and a plan's time.
const (
	hostilePlanTime   = 30 * time.Second
	hostilePlanMemory = 1 << 30
	// hostileKill stops a runaway well after the bound it broke, so that
	// the case reports how far past the bound it went.
	hostileKill = 90 * time.Second
)

// hostileCase is testdata/hostile/<case>/case.yaml.
type hostileCase struct {
	About string `json:"about"`
	// Config is laid over the plan's configuration file.
	Config map[string]any `json:"config"`
	// Remove deletes files of the demo world (paths as in generate)
	// before the case's files are laid over it.
	Remove   []string      `json:"remove"`
	Generate []hostileFile `json:"generate"`
	// Workloads are the hostile files' effect on the plan: each drifted
	// workload's manifest status, and words its detail holds (the file to
	// blame). Every other workload must be located as without the case.
	Workloads []hostileWorkload `json:"workloads"`
	// Problems are the files the plan reports as not indexed: the only
	// problems beyond the demo's.
	Problems []hostileProblem `json:"problems"`
	// SameAsDemo says the plan is the demo's: every workload located as
	// without the case, and no problem beyond the demo's.
	SameAsDemo bool `json:"sameAsDemo"`
	// Slow says why the case waits for the render deadline.
	Slow string `json:"slow"`
}

// hostileWorkload is a workload's status and words its detail holds.
type hostileWorkload struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

type hostileProblem struct {
	// Path is the problem's path, or with Beneath set, a directory whose
	// every problem of Kind (itself included) the entry stands for.
	Path    string `json:"path"`
	Beneath bool   `json:"beneath"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail"`
}

func (w hostileProblem) matches(p tableProblem) bool {
	if w.Beneath {
		return p.Kind == w.Kind && (p.Path == w.Path || strings.HasPrefix(p.Path, w.Path+"/"))
	}
	return p.Path == w.Path && p.Kind == w.Kind
}

// hostileFile is a file the harness makes because Git cannot hold it: a
// symbolic link (to a path of the world, relative or absolute), a named
// pipe, a file too large to keep, a chart of bombs, a diamond of bases.
// Path is relative to the world (gitops/..., outside/..., cluster/...).
type hostileFile struct {
	Path string `json:"path"`
	// Symlink is the link's target, placeholders expanded; with Relative
	// it is made relative to the link's directory.
	Symlink  string `json:"symlink"`
	Relative bool   `json:"relative"`
	FIFO     bool   `json:"fifo"`
	// HugeYAML is a size: a valid manifest of about that many bytes.
	HugeYAML int `json:"hugeYAML"`
	// Archives fills the directory Path with Count subchart archives of
	// Bytes uncompressed each.
	Archives *struct {
		Count int `json:"count"`
		Bytes int `json:"bytes"`
		// Nested puts the payload one archive deeper.
		Nested bool `json:"nested"`
	} `json:"archives"`
	// Archive writes a subchart archive whose entries are given by name:
	// content, or "symlink:TARGET" / "hardlink:TARGET" for a link entry
	// (placeholders expanded), names kept as written ("../x", "/x").
	Archive map[string]string `json:"archive"`
	// Diamond makes a kustomize root at Path whose bases form a diamond
	// Depth levels deep: every level includes the next twice, under two
	// name prefixes, so the build doubles at each level.
	Diamond *struct {
		Depth int `json:"depth"`
		// Components makes every level below the root a Component, so
		// that the root is the only build.
		Components bool `json:"components"`
	} `json:"diamond"`
}

// hostileWorld is the directory one case runs in: the checkouts, the
// cluster snapshot, what lies beside the checkouts, the secrets, and the
// child's home, temporary directory and fake programs.
type hostileWorld struct {
	root    string
	canary  *canary
	key     secretFile
	token   secretFile
	config  string
	bin     string
	marks   string
	tmp     string
	home    string
	outside string
}

// World roots a case may lay files in.
var hostileRoots = []string{"gitops", "team-reviews", "cluster", "outside"}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	root := t.TempDir()
	w := &hostileWorld{
		root: root, canary: newCanary(t),
		bin: filepath.Join(root, "bin"), marks: filepath.Join(root, "marks"),
		tmp: filepath.Join(root, "tmp"), home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside"),
	}
	treecopy.Copy(t, DemoRepo, filepath.Join(root, "gitops"))
	treecopy.Copy(t, DemoTeamRepo, filepath.Join(root, "team-reviews"))
	treecopy.Copy(t, DemoCluster, filepath.Join(root, "cluster"))
	for _, d := range []string{w.tmp, w.home, w.outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	installFakePrograms(t, w.bin, w.marks)
	// A Kubernetes client that reads the environment (a chart's lookup
	// function with a cluster to look in) would reach the canary.
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: canary}\n", w.canary.URL())
	require.NoError(t, os.WriteFile(filepath.Join(w.home, "kubeconfig"), []byte(kubeconfig), 0o600))
	w.key = newKeySecret(t, filepath.Join(root, "secret", "app.pem"))
	w.token = newTokenSecret(t, filepath.Join(root, "secret", "token"), "ghs_")
	return w
}

// expand replaces the placeholders of a case's files and links.
func (w *hostileWorld) expand(s string) string {
	return strings.NewReplacer(
		"@@CANARY@@", w.canary.Addr(),
		"@@SECRET@@", w.key.Path,
		"@@TOKEN@@", w.token.Path,
		"@@SECRETDIR@@", filepath.Dir(w.key.Path),
		"@@OUTSIDE@@", w.outside,
		"@@MARK@@", filepath.Join(w.bin, markProgram),
		"@@WORLD@@", w.root,
	).Replace(s)
}

// expandCase expands the placeholders of the case's expectations.
func (w *hostileWorld) expandCase(c hostileCase) hostileCase {
	out := c
	out.Workloads = make([]hostileWorkload, len(c.Workloads))
	for i, wl := range c.Workloads {
		wl.Detail = w.expand(wl.Detail)
		out.Workloads[i] = wl
	}
	out.Problems = make([]hostileProblem, len(c.Problems))
	for i, p := range c.Problems {
		p.Detail = w.expand(p.Detail)
		out.Problems[i] = p
	}
	return out
}

// layCase lays the case's files over the world, placeholders expanded.
func (w *hostileWorld) layCase(t *testing.T, dir string, c hostileCase) {
	t.Helper()
	for _, p := range c.Remove {
		require.NoError(t, os.RemoveAll(filepath.Join(w.root, filepath.FromSlash(p))))
	}
	for _, r := range hostileRoots {
		src := filepath.Join(dir, r)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			target := filepath.Join(w.root, rel)
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.WriteFile(target, []byte(w.expand(string(data))), 0o644)
		})
		require.NoError(t, err)
	}
	for _, g := range c.Generate {
		w.generate(t, g)
	}
	for _, g := range c.Generate {
		if g.Symlink != "" {
			// A link that leads nowhere would probe nothing.
			_, err := os.Stat(filepath.Join(w.root, filepath.FromSlash(g.Path)))
			require.NoError(t, err, "the link %s resolves", g.Path)
		}
	}
}

func (w *hostileWorld) generate(t *testing.T, g hostileFile) {
	t.Helper()
	require.True(t, slices.Contains(hostileRoots, strings.SplitN(g.Path, "/", 2)[0]), "generate %s: not under %v", g.Path, hostileRoots)
	full := filepath.Join(w.root, filepath.FromSlash(g.Path))
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	if g.Archives == nil && g.Diamond == nil && g.Archive == nil {
		require.NoError(t, os.RemoveAll(full))
	}
	switch {
	case g.Symlink != "":
		target := w.expand(g.Symlink)
		if g.Relative {
			if !filepath.IsAbs(target) {
				target = filepath.Join(w.root, filepath.FromSlash(target))
			}
			rel, err := filepath.Rel(filepath.Dir(full), target)
			require.NoError(t, err)
			target = rel
		}
		require.NoError(t, os.Symlink(target, full))
	case g.FIFO:
		require.NoError(t, syscall.Mkfifo(full, 0o644))
	case g.HugeYAML > 0:
		require.NoError(t, os.WriteFile(full, hugeYAML(g.HugeYAML), 0o644))
	case g.Archives != nil:
		require.NoError(t, os.MkdirAll(full, 0o755))
		archive := bombArchive(t, g.Archives.Bytes, g.Archives.Nested)
		for i := range g.Archives.Count {
			require.NoError(t, os.WriteFile(filepath.Join(full, fmt.Sprintf("bomb-%02d-1.0.0.tgz", i)), archive, 0o644))
		}
	case g.Archive != nil:
		require.NoError(t, os.WriteFile(full, w.linkArchive(t, g.Archive), 0o644))
	case g.Diamond != nil:
		writeDiamond(t, full, g.Diamond.Depth, g.Diamond.Components)
	default:
		t.Fatalf("generate %s: nothing to make", g.Path)
	}
}

// bombArchives caches the archives of a size: compressing a 95 MiB
// payload takes a while, and every copy is the same.
var (
	bombArchivesMu sync.Mutex
	bombArchives   = map[string][]byte{}
)

// bombArchive is a packaged chart holding a file of size zero bytes
// (gzip shrinks it about a thousand times); nested, the chart holds its
// payload as a subchart archive of its own.
func bombArchive(t *testing.T, size int, nested bool) []byte {
	t.Helper()
	bombArchivesMu.Lock()
	defer bombArchivesMu.Unlock()
	return bombArchiveLocked(t, size, nested)
}

func bombArchiveLocked(t *testing.T, size int, nested bool) []byte {
	t.Helper()
	key := fmt.Sprint(size, nested)
	if a, ok := bombArchives[key]; ok {
		return a
	}
	files := map[string][]byte{
		"Chart.yaml": []byte("apiVersion: v2\nname: bomb\nversion: 1.0.0\n"),
	}
	if nested {
		files["charts/inner-1.0.0.tgz"] = bombArchiveLocked(t, size, false)
	} else {
		files["files/zeros"] = make([]byte, size)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "bomb/" + name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	bombArchives[key] = buf.Bytes()
	return buf.Bytes()
}

// linkArchive packs entries as a gzipped tar, link entries as links.
func (w *hostileWorld) linkArchive(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		content := w.expand(entries[name])
		h := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(content))}
		if target, ok := strings.CutPrefix(content, "symlink:"); ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, target, 0
		} else if target, ok := strings.CutPrefix(content, "hardlink:"); ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, target, 0
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(content))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// writeDiamond writes a kustomize root at dir over a diamond of bases:
// level i includes level i+1 twice (as a- and b-), and the last level
// holds one ConfigMap.
func writeDiamond(t *testing.T, dir string, depth int, components bool) {
	t.Helper()
	kind := "Kustomization"
	apiVersion := "kustomize.config.k8s.io/v1beta1"
	if components {
		kind, apiVersion = "Component", "kustomize.config.k8s.io/v1alpha1"
	}
	field := "resources"
	if components {
		field = "components"
	}
	level := func(i int) string { return filepath.Join(dir, fmt.Sprintf("level-%02d", i)) }
	write := func(d, content string) {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "kustomization.yaml"), []byte(content), 0o644))
	}
	write(dir, fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n%s:\n  - level-01/a\n  - level-01/b\n", field))
	for i := 1; i <= depth; i++ {
		for _, side := range []string{"a", "b"} {
			next := fmt.Sprintf("  - ../../level-%02d/a\n  - ../../level-%02d/b\n", i+1, i+1)
			if i == depth {
				next = "  - ../configmap.yaml\n"
			}
			f := field
			if i == depth {
				f = "resources"
			}
			write(filepath.Join(level(i), side), fmt.Sprintf("apiVersion: %s\nkind: %s\nnamePrefix: %s-\n%s:\n%s", apiVersion, kind, side, f, next))
		}
		if i == depth {
			require.NoError(t, os.WriteFile(filepath.Join(level(i), "configmap.yaml"),
				[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaf\n  namespace: diamond\ndata:\n  k: v\n"), 0o644))
		}
	}
}

// writeConfig writes the plan's configuration file: the demo cluster's
// name and snapshot, with the case's settings laid over.
func (w *hostileWorld) writeConfig(t *testing.T, over map[string]any) {
	t.Helper()
	doc := map[string]any{
		"cluster": Cluster,
		"source":  map[string]any{"snapshot": filepath.Join(w.root, "cluster")},
		"repo":    map[string]any{"owner": Owner, "name": RepoName},
	}
	mergeMaps(doc, over)
	data, err := yaml.Marshal(doc)
	require.NoError(t, err)
	w.config = filepath.Join(w.root, "kedge.yaml")
	require.NoError(t, os.WriteFile(w.config, data, 0o600))
}

func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// plan runs `kedge plan` over both checkouts, as `make demo` does, in a
// bounded child process whose only way out is the canary.
func (w *hostileWorld) plan(t *testing.T) kedgeOutcome {
	t.Helper()
	run := kedgeRun{
		Args: []string{"plan", "--config", w.config, "--output", "table",
			"--repo", Owner + "/" + RepoName + "=" + filepath.Join(w.root, "gitops"),
			"--repo", Owner + "/" + TeamRepoName + "=" + filepath.Join(w.root, "team-reviews")},
		Env: []string{
			"PATH=" + w.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"HOME=" + w.home, "TMPDIR=" + w.tmp, "KUBECONFIG=" + filepath.Join(w.home, "kubeconfig"),
			"HTTP_PROXY=" + w.canary.URL(), "HTTPS_PROXY=" + w.canary.URL(), "ALL_PROXY=" + w.canary.URL(),
			"http_proxy=" + w.canary.URL(), "https_proxy=" + w.canary.URL(),
		},
		Deadline: hostileKill, MemoryLimit: 2 * hostilePlanMemory,
	}
	return run.run(t, kedgeBinary(t))
}

// planTable is what the plan's table says.
type planTable struct {
	// Workloads maps "Kind namespace/name" to its repository and manifest
	// cells.
	Workloads map[string]string
	// Problems are the NOT INDEXED and DEPRECATED rows.
	Problems []tableProblem
	// Refused are the "refused to edit" lines.
	Refused []string
}

type tableProblem struct{ Path, Kind, Detail string }

// parseTable reads `kedge plan --output table` for several repositories.
func parseTable(t *testing.T, out string) planTable {
	t.Helper()
	pt := planTable{Workloads: map[string]string{}}
	section := ""
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		switch {
		case line == "":
			section = ""
			continue
		case len(fields) > 0 && (fields[0] == "NAMESPACE" || fields[0] == "SKIPPED" || fields[0] == "NOT" || fields[0] == "DEPRECATED"):
			section = fields[0]
			continue
		case strings.HasPrefix(line, "refused to edit "):
			pt.Refused = append(pt.Refused, line)
			continue
		}
		switch section {
		case "NAMESPACE":
			require.GreaterOrEqual(t, len(fields), 9, "workload row %q", line)
			id := fields[1] + " " + fields[0] + "/" + fields[2]
			pt.Workloads[id] = cellsAfter(line, 7)
		case "NOT", "DEPRECATED":
			require.GreaterOrEqual(t, len(fields), 2, "problem row %q", line)
			p := tableProblem{Path: strings.TrimPrefix(fields[0], Owner+"/"+RepoName+":"), Kind: fields[1], Detail: cellsAfter(line, 2)}
			pt.Problems = append(pt.Problems, p)
		}
	}
	require.NotEmpty(t, pt.Workloads, "no workload rows in %s", out)
	return pt
}

// cellsAfter is the rest of a table row after its first n cells.
func cellsAfter(line string, n int) string {
	rest := strings.TrimLeft(line, " ")
	for range n {
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			return ""
		}
		rest = strings.TrimLeft(rest[i:], " ")
	}
	return rest
}

// hostileBaseline is the demo's plan run through the same harness: the
// plan every case must keep for the workloads it does not name.
type hostileBaseline struct {
	table planTable
}

// TestHostileRepositories plans the demo cluster against the demo
// repositories with each case of testdata/hostile laid over them, by
// running `kedge plan` (the binary, with a configuration file) in a
// bounded child process, and holds each case to the same promises: the
// plan finishes and reports the hostile files as the case says (a refusal
// or over-budget naming the file); no connection reaches the canary the
// case points its URLs at; no program runs (the fake git, ssh, shell... on
// PATH and the --upload-pack target leave no mark, and kedge's process
// tree holds only kedge and its render workers); no file outside kedge's
// temporary chart directory changes; the secret key and token beside the
// checkout appear in no output; the whole plan stays within 1 GiB of
// resident memory (kedge and its workers together) and 30 s; and every
// other workload is located exactly as without the case.
func TestHostileRepositories(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kedge binary on every hostile repository")
	}
	base := newHostileWorld(t)
	base.writeConfig(t, nil)
	demo := base.plan(t)
	require.Zero(t, demo.ExitCode, "the demo plan: %s", demo.Stderr)
	baseline := hostileBaseline{table: parseTable(t, string(demo.Stdout))}
	checkContained(t, base, demo, treeState{}, nil)
	t.Logf("demo plan: %s, peak %d MiB, %d workers", demo.Wall.Round(time.Millisecond), demo.Peak>>20, demo.Workers)

	entries, err := os.ReadDir(hostileCorpus)
	require.NoError(t, err)
	var summaryMu sync.Mutex
	var summary []string
	ran := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(hostileCorpus, e.Name())
		var c hostileCase
		readCase(t, filepath.Join(dir, "case.yaml"), &c)
		ran++
		t.Run(e.Name(), func(t *testing.T) {
			// Each case is its own process tree, measured on its own; a
			// plan mostly waits on its workers.
			t.Parallel()
			require.NotEmpty(t, c.About, "say what the case is")
			require.True(t, len(c.Workloads)+len(c.Problems) > 0 || c.SameAsDemo, "say what the plan reports")
			require.False(t, c.SameAsDemo && len(c.Workloads)+len(c.Problems) > 0, "a plan the demo's reports nothing of its own")
			w := newHostileWorld(t)
			c := w.expandCase(c)
			w.layCase(t, dir, c)
			w.writeConfig(t, c.Config)
			before := snapshotTree(t, w.root, w.kedgeCache)
			out := w.plan(t)
			summaryMu.Lock()
			summary = append(summary, fmt.Sprintf("%-44s %6s %5d MiB", e.Name(), out.Wall.Round(10*time.Millisecond), out.Peak>>20))
			summaryMu.Unlock()
			require.False(t, out.TimedOut, "the plan was still running after %s", hostileKill)
			require.Zero(t, out.ExitCode, "a hostile repository must not stop the plan: %s", out.Stderr)
			checkContained(t, w, out, before, nil)
			checkHostilePlan(t, c, baseline, parseTable(t, string(out.Stdout)), string(out.Stdout))
			if t.Failed() {
				t.Logf("the plan:\n%s\nits standard error:\n%s", out.Stdout, out.Stderr)
			}
		})
	}
	require.NotZero(t, ran, "no cases")
	t.Cleanup(func() {
		sort.Strings(summary)
		t.Logf("case, wall time, peak RSS (kedge and its workers):\n%s", strings.Join(summary, "\n"))
	})
}

// kedgeCache skips the directory kedge may write to: its temporary chart
// directory (removed when the plan ends), which the temporary directory's
// own times reflect.
func (w *hostileWorld) kedgeCache(rel string) bool {
	return rel == "tmp" || strings.HasPrefix(rel, "tmp/kedge-charts-")
}

// checkContained holds a run of kedge to what a hostile repository must
// never get from it.
func checkContained(t *testing.T, w *hostileWorld, out kedgeOutcome, before treeState, extraOutputs map[string][]byte) {
	t.Helper()
	assert.False(t, out.Overran, "kedge and its workers grew past %d MiB and were killed", 2*hostilePlanMemory>>20)
	assert.LessOrEqual(t, out.Peak, int64(hostilePlanMemory), "peak resident memory of kedge and its workers")
	assert.LessOrEqual(t, out.Wall, hostilePlanTime, "time of the whole plan")
	assert.Empty(t, w.canary.Reached(), "a request left for the canary")
	assert.Empty(t, marksLeft(t, w.marks), "a program was run")
	assert.Empty(t, out.Foreign, "processes other than kedge and its render workers")
	if len(before) > 0 {
		assert.Empty(t, before.diff(snapshotTree(t, w.root, w.kedgeCache)), "files changed outside kedge's cache")
		entries, err := os.ReadDir(w.tmp)
		require.NoError(t, err)
		assert.Empty(t, entries, "kedge left files in its temporary directory")
	}
	outputs := map[string][]byte{"stdout": out.Stdout, "stderr": out.Stderr}
	maps.Copy(outputs, extraOutputs)
	for name, data := range outputs {
		for _, s := range []secretFile{w.key, w.token} {
			assert.False(t, s.leakIn(data), "%s holds part of %s", name, filepath.Base(s.Path))
		}
	}
}

// checkHostilePlan holds the plan to the case and every workload the case
// does not name to the demo's plan.
func checkHostilePlan(t *testing.T, c hostileCase, baseline hostileBaseline, got planTable, raw string) {
	t.Helper()
	named := map[string]bool{}
	for _, want := range c.Workloads {
		named[want.ID] = true
		cell, ok := got.Workloads[want.ID]
		if !assert.True(t, ok, "%s is not in the plan:\n%s", want.ID, raw) {
			continue
		}
		// The cell is the repository, then the status and its detail.
		manifest := cellsAfter(cell, 1)
		if want.Status != "" {
			assert.True(t, strings.HasPrefix(manifest, want.Status+" "), "%s: status %q, want %s", want.ID, manifest, want.Status)
		}
		assert.Contains(t, manifest, want.Detail, "%s: the detail names the file", want.ID)
	}
	for id, cell := range baseline.table.Workloads {
		if named[id] {
			continue
		}
		assert.Equal(t, cell, got.Workloads[id], "%s is located as without the hostile files", id)
	}
	for id := range got.Workloads {
		_, known := baseline.table.Workloads[id]
		assert.True(t, known || named[id], "%s: a workload the demo does not plan", id)
	}
	var extra []tableProblem
	for _, p := range got.Problems {
		if !slices.Contains(baseline.table.Problems, p) {
			extra = append(extra, p)
		}
	}
	for _, want := range c.Problems {
		found := slices.ContainsFunc(got.Problems, func(p tableProblem) bool {
			return want.matches(p) && strings.Contains(p.Detail, want.Detail)
		})
		assert.True(t, found, "problem %s %s (%q) not reported", want.Path, want.Kind, want.Detail)
	}
	for _, p := range extra {
		listed := slices.ContainsFunc(c.Problems, func(w hostileProblem) bool { return w.matches(p) })
		assert.True(t, listed, "problem beyond the demo's that the case does not list: %+v", p)
	}
	assert.Equal(t, baseline.table.Refused, got.Refused, "refusals to edit")
}
