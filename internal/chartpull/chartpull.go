// Package chartpull fetches Helm charts from HTTP chart repositories (an
// index.yaml and the packaged charts it lists) and from OCI registries into a cache directory
// outside the GitOps checkout, so that the pure parts of kedge can render
// them as files. Every request has a deadline; a repository that cannot be
// reached, or whose index or chart is broken, is an error naming it, never
// a guess.
package chartpull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// maxBytes caps an index or a chart archive: a chart repository answering
// with more is broken or hostile.
const maxBytes = 64 << 20

// Puller fetches charts into Dir.
type Puller struct {
	// Dir is the cache directory; charts are kept by repository, name and
	// version and fetched once.
	Dir string
	// Client makes the requests; its Timeout (or Timeout below) bounds
	// each one.
	Client *http.Client
	// Timeout bounds each request when the client has none.
	Timeout time.Duration
}

// Ref names a chart as a Flux HelmRepository or an Argo CD Helm source
// does: the repository's URL, the chart's name and the version (a semver
// version or constraint; empty for the latest stable one).
type Ref struct {
	RepoURL, Chart, Version string
}

func (r Ref) String() string {
	v := r.Version
	if v == "" {
		v = "latest"
	}
	return fmt.Sprintf("chart %s %s from %s", r.Chart, v, r.RepoURL)
}

// Pull returns the path of the chart's archive in the cache, fetching the
// repository's index and the archive when the version is not there yet.
func (p *Puller) Pull(ctx context.Context, ref Ref) (string, error) {
	if isOCI(ref.RepoURL) {
		return p.pullOCI(ctx, ref)
	}
	if u, err := url.Parse(ref.RepoURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%s: only http, https and OCI chart repositories are read", ref)
	}
	dir := filepath.Join(p.Dir, repoKey(ref.RepoURL))
	if exact := filepath.Join(dir, archiveName(ref.Chart, ref.Version)); isExactVersion(ref.Version) && fileExists(exact) {
		return exact, nil
	}
	index, err := p.index(ctx, ref.RepoURL)
	if err != nil {
		return "", fmt.Errorf("%s: reading the repository's index: %w", ref, err)
	}
	cv, err := index.get(ref.Chart, ref.Version)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	target := filepath.Join(dir, archiveName(ref.Chart, cv.Version))
	if fileExists(target) {
		return target, nil
	}
	if len(cv.URLs) == 0 {
		return "", fmt.Errorf("%s: the index lists no URL for version %s", ref, cv.Version)
	}
	archiveURL, err := resolve(ref.RepoURL, cv.URLs[0])
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	data, err := p.get(ctx, archiveURL)
	if err != nil {
		return "", fmt.Errorf("%s: fetching %s: %w", ref, archiveURL, err)
	}
	if cv.Digest != "" {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != cv.Digest {
			return "", fmt.Errorf("%s: %s does not match the index's digest", ref, archiveURL)
		}
	}
	if err := writeAtomically(target, data); err != nil {
		return "", err
	}
	return target, nil
}

// indexFile is the part of a chart repository's index.yaml kedge reads
// (https://helm.sh/docs/topics/chart_repository/#the-index-file).
type indexFile struct {
	APIVersion string                    `json:"apiVersion"`
	Entries    map[string][]chartVersion `json:"entries"`
}

type chartVersion struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// get picks the highest version of chart that satisfies the constraint, as
// Helm does: empty means the latest stable version (no pre-release).
func (i *indexFile) get(chart, version string) (*chartVersion, error) {
	if version == "" {
		version = "*"
	}
	constraint, err := semver.NewConstraint(version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", version, err)
	}
	var best *chartVersion
	var bestV *semver.Version
	for k := range i.Entries[chart] {
		cv := &i.Entries[chart][k]
		v, err := semver.NewVersion(cv.Version)
		if err != nil || !constraint.Check(v) {
			continue
		}
		if bestV == nil || v.GreaterThan(bestV) {
			best, bestV = cv, v
		}
	}
	if best == nil {
		if len(i.Entries[chart]) == 0 {
			return nil, errors.New("the repository's index has no such chart")
		}
		return nil, fmt.Errorf("the repository's index has no version of the chart matching %q", version)
	}
	return best, nil
}

func (p *Puller) index(ctx context.Context, repoURL string) (*indexFile, error) {
	indexURL, err := resolve(repoURL, "index.yaml")
	if err != nil {
		return nil, err
	}
	data, err := p.get(ctx, indexURL)
	if err != nil {
		return nil, err
	}
	var index indexFile
	if err := yaml.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("%s is not a chart repository index: %w", indexURL, err)
	}
	if index.APIVersion == "" || index.Entries == nil {
		return nil, fmt.Errorf("%s is not a chart repository index: no apiVersion or entries", indexURL)
	}
	return &index, nil
}

func (p *Puller) get(ctx context.Context, u string) ([]byte, error) {
	client := p.Client
	if client == nil {
		client = &http.Client{}
	}
	if client.Timeout == 0 && p.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", u, maxBytes)
	}
	return data, nil
}

// resolve reads ref relative to the repository's URL, as the index's
// relative chart URLs are meant.
func resolve(repoURL, ref string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repoURL, "/") + "/")
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return base.ResolveReference(r).String(), nil
}

// repoKey is a repository's directory in the cache.
func repoKey(repoURL string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(repoURL, "/")))
	return hex.EncodeToString(sum[:8])
}

func archiveName(chart, version string) string {
	return path.Base(chart) + "-" + version + ".tgz"
}

// isExactVersion reports whether version names one version rather than a
// range.
func isExactVersion(v string) bool {
	return v != "" && !strings.ContainsAny(v, "<>=~^*xX|, ")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// writeAtomically writes the file under a temporary name and renames it:
// a pull cut short never leaves a partial archive in the cache.
func writeAtomically(target string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".pull-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), target)
}
