package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/ignore"
	"helm.sh/helm/v3/pkg/releaseutil"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// DefaultMaxChartBytes bounds what one chart may hold once every archive
// in it (its subcharts' included) is uncompressed, as source-controller
// bounds a chart (--helm-chart-max-size, 10 MiB by default,
// https://fluxcd.io/flux/components/source/options/). Helm's own limit
// applies to each archive alone, so that a small chart of many large
// subcharts would pass it.
const DefaultMaxChartBytes = 10 << 20

// MaxRenderBytes bounds the manifests one render of a chart may produce.
const MaxRenderBytes = 64 << 20

// OverBudgetError says an input exceeds a budget; File names the file
// (repo- or chart-relative) when one is to blame.
type OverBudgetError struct {
	File   string
	Budget string
}

func (e *OverBudgetError) Error() string {
	if e.File == "" {
		return "over budget: " + e.Budget
	}
	return e.File + ": over budget: " + e.Budget
}

// OutsideError says a chart reaches outside the directory it is loaded
// from: a symbolic link out of it, or the directory itself outside the
// repository. Argo CD refuses such charts since CVE-2022-31036.
type OutsideError struct {
	File string
}

func (e *OutsideError) Error() string {
	return e.File + " is a symbolic link that leaves the chart"
}

// chartFiles collects the files of the chart in dir of the checkout as
// Helm's LoadDir does (.helmignore and Helm's default rules applied,
// symbolic links followed, a byte order mark dropped), through a file
// system confined to the chart's directory: a link out of it refuses the
// chart. The total is bounded by maxBytes.
func chartFiles(fsys *repofs.FS, dir string, maxBytes int64, replace map[string][]byte) ([]*loader.BufferedFile, error) {
	sub, err := fsys.Sub(dir)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	rules := ignore.Empty()
	if data, err := sub.ReadFile(ignore.HelmIgnore); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	rules.AddDefaults()
	c := &collector{fs: sub, rules: rules, remaining: maxBytes, max: maxBytes, replace: replace}
	if err := c.walk(".", 0); err != nil {
		return nil, err
	}
	return c.files, nil
}

type collector struct {
	fs        *repofs.FS
	rules     *ignore.Rules
	files     []*loader.BufferedFile
	remaining int64
	max       int64
	// replace stands in for the content of chart-relative files.
	replace map[string][]byte
}

// maxLinkDepth bounds how many directories deep a walk follows: links
// between directories of the chart can form a cycle.
const maxLinkDepth = 64

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (c *collector) walk(dir string, depth int) error {
	if depth > maxLinkDepth {
		return fmt.Errorf("%s: directories nest deeper than %d (a cycle of symbolic links?)", dir, maxLinkDepth)
	}
	entries, err := c.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		info, err := c.fs.Stat(name)
		if repofs.IsOutside(err) {
			return &OutsideError{File: name}
		}
		if err != nil {
			return err
		}
		if info.IsDir() {
			if !c.rules.Ignore(name, info) {
				if err := c.walk(name, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if c.rules.Ignore(name, info) {
			continue
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("cannot load irregular file %s as it has file mode type bits set", name)
		}
		if info.Size() > loader.MaxDecompressedFileSize {
			return fmt.Errorf("chart file %q is larger than the maximum file size %d", name, loader.MaxDecompressedFileSize)
		}
		if info.Size() > c.remaining {
			return &OverBudgetError{File: name, Budget: fmt.Sprintf("the chart holds more than %d bytes", c.max)}
		}
		data, replaced := c.replace[name]
		if !replaced {
			data, err = c.fs.ReadFileLimit(name, c.remaining)
		} else if int64(len(data)) > c.remaining {
			err = &OverBudgetError{File: name, Budget: fmt.Sprintf("the chart holds more than %d bytes", c.max)}
		}
		if yamlguard.IsOverBudget(err) {
			return &OverBudgetError{File: name, Budget: fmt.Sprintf("the chart holds more than %d bytes", c.max)}
		}
		if err != nil {
			return err
		}
		c.remaining -= int64(len(data))
		c.files = append(c.files, &loader.BufferedFile{Name: name, Data: bytes.TrimPrefix(data, utf8BOM)})
	}
	return nil
}

// checkArchives bounds what the subchart archives among files add once
// uncompressed, archives inside archives included, to what remains of the
// chart's budget. Helm decompresses each archive against its own limit
// alone; twenty subcharts of 95 MiB each would pass it.
func checkArchives(files []*loader.BufferedFile, remaining, max int64) (int64, error) {
	for _, f := range files {
		if !isSubchartArchive(f.Name) {
			continue
		}
		if remaining <= 0 {
			return 0, &OverBudgetError{File: f.Name, Budget: fmt.Sprintf("the chart holds more than %d bytes uncompressed", max)}
		}
		inner, err := expandArchive(f.Data, remaining)
		if err != nil {
			var over *OverBudgetError
			if errors.As(err, &over) {
				return 0, &OverBudgetError{File: f.Name, Budget: fmt.Sprintf("the chart holds more than %d bytes uncompressed", max)}
			}
			return 0, fmt.Errorf("%s: %w", f.Name, err)
		}
		for _, g := range inner {
			remaining -= int64(len(g.Data))
		}
		if remaining, err = checkArchives(inner, remaining, max); err != nil {
			// The archive to blame is the one in the chart's directory;
			// the one inside it is named in the budget.
			var over *OverBudgetError
			if errors.As(err, &over) {
				return 0, &OverBudgetError{File: f.Name, Budget: over.File + " inside it: " + over.Budget}
			}
			return 0, fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return remaining, nil
}

// isSubchartArchive reports whether a chart file is a packaged subchart,
// as LoadFiles reads them: an archive directly under a charts/ directory.
func isSubchartArchive(name string) bool {
	dir, base := path.Split(name)
	return (dir == "charts/" || strings.HasSuffix(dir, "/charts/")) && !strings.HasPrefix(base, ".") && !strings.HasPrefix(base, "_") &&
		(strings.HasSuffix(base, ".tgz") || strings.HasSuffix(base, ".tar.gz"))
}

// expandArchive uncompresses a chart archive, refusing more than limit
// bytes.
func expandArchive(data []byte, limit int64) ([]*loader.BufferedFile, error) {
	saved := loader.MaxDecompressedChartSize
	loader.MaxDecompressedChartSize = limit
	defer func() { loader.MaxDecompressedChartSize = saved }()
	files, err := loader.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil && strings.Contains(err.Error(), "decompressed chart is larger than") {
		return nil, &OverBudgetError{Budget: fmt.Sprintf("more than %d bytes uncompressed", limit)}
	}
	return files, err
}

// LoadChartDir loads the chart in dir of the checkout, with replace
// (chart-relative paths) standing in for the content of files.
func LoadChartDir(fsys *repofs.FS, dir string, maxBytes int64, replace map[string][]byte) (*chart.Chart, error) {
	files, err := chartFiles(fsys, dir, maxBytes, replace)
	if err != nil {
		return nil, err
	}
	return loadFiles(files, maxBytes)
}

// LoadChartArchive loads a packaged chart, as pulled from a chart
// repository.
func LoadChartArchive(data []byte, maxBytes int64) (*chart.Chart, error) {
	files, err := expandArchive(data, maxBytes)
	if err != nil {
		var over *OverBudgetError
		if errors.As(err, &over) {
			return nil, &OverBudgetError{Budget: fmt.Sprintf("the chart holds more than %d bytes uncompressed", maxBytes)}
		}
		return nil, err
	}
	return loadFiles(files, maxBytes)
}

func loadFiles(files []*loader.BufferedFile, maxBytes int64) (*chart.Chart, error) {
	var total int64
	for _, f := range files {
		total += int64(len(f.Data))
	}
	if _, err := checkArchives(files, maxBytes-total, maxBytes); err != nil {
		return nil, err
	}
	saved := loader.MaxDecompressedChartSize
	loader.MaxDecompressedChartSize = maxBytes
	defer func() { loader.MaxDecompressedChartSize = saved }()
	return loader.LoadFiles(files)
}

// appliedOnUpgrade reports whether an object of a render is applied when
// its release is synced or upgraded: not a hook that runs only for `helm
// test`, a rollback or a deletion. helm-controller runs tests only when a
// HelmRelease enables them, and then after the upgrade
// (https://fluxcd.io/flux/components/helm/helmreleases/#test-configuration);
// Argo CD maps install and upgrade hooks to its own sync hooks and skips
// test, rollback hooks
// (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/#helm-hooks).
func appliedOnUpgrade(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	hooks, ok := annotations["helm.sh/hook"].(string)
	if !ok {
		return true
	}
	for _, h := range strings.Split(hooks, ",") {
		switch strings.TrimSpace(h) {
		case "pre-install", "post-install", "pre-upgrade", "post-upgrade", "crd-install":
			return true
		}
	}
	return false
}

// Rendered is one render of a chart: each object as JSON, by "Kind/name".
type Rendered map[string][]byte

// Templates name, for each object of a render ("Kind/name"), the chart's
// template that rendered it, relative to the chart ("templates/web.yaml");
// a subchart's object is not named.
type Templates map[string]string

// RenderChart renders a loaded chart with values, as `helm template` does
// for a release of that name and namespace, with no cluster to look
// anything up in and no DNS. Templates that are partials or not YAML
// (NOTES.txt) are left out, as Helm leaves them out of a release.
func RenderChart(chrt *chart.Chart, values map[string]any, release, namespace string) (Rendered, Templates, error) {
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}
	top, err := chartutil.ToRenderValues(chrt, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, nil, err
	}
	files, err := engine.Engine{}.Render(chrt, top)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(files))
	var size int
	for name, content := range files {
		names = append(names, name)
		size += len(content)
	}
	if size > MaxRenderBytes {
		return nil, nil, &OverBudgetError{Budget: fmt.Sprintf("the chart renders more than %d bytes", MaxRenderBytes)}
	}
	sort.Strings(names)
	out, templates := Rendered{}, Templates{}
	for _, name := range names {
		if ext := path.Ext(name); ext != ".yaml" && ext != ".yml" || strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(files[name]) {
			if err := yamlguard.Check([]byte(doc), yamlguard.Repository); err != nil {
				return nil, nil, &OverBudgetError{File: name, Budget: err.Error()}
			}
			var obj map[string]any
			if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(obj) == 0 || !appliedOnUpgrade(obj) {
				continue
			}
			kind, _ := obj["kind"].(string)
			meta, _ := obj["metadata"].(map[string]any)
			objName, _ := meta["name"].(string)
			data, err := json.Marshal(obj)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			out[kind+"/"+objName] = data
			// The engine names a template "<chart>/templates/...", a
			// subchart's "<chart>/charts/<sub>/templates/...".
			if _, rest, ok := strings.Cut(name, "/"); ok && !strings.HasPrefix(rest, "charts/") {
				templates[kind+"/"+objName] = rest
			}
		}
	}
	return out, templates, nil
}
