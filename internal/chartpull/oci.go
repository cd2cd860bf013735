package chartpull

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The media types Helm gives a chart pushed to an OCI registry
// (helm.sh/docs/topics/registries). The legacy layer type is still read by
// Helm, so charts pushed by old clients are pulled as Helm pulls them.
const (
	helmConfigMediaType       = "application/vnd.cncf.helm.config.v1+json"
	helmChartLayerMediaType   = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	legacyChartLayerMediaType = "application/tar+gzip"
)

// isOCI reports whether a repository URL names an OCI registry: Flux's
// HelmRepository of type oci writes oci://, Argo CD's Helm sources name an
// OCI repository by host and path without a scheme.
func isOCI(repoURL string) bool {
	return strings.HasPrefix(repoURL, "oci://") || !strings.Contains(repoURL, "://")
}

// namesRegistry reports whether an OCI repository URL starts with a
// registry host, as the registry client reads one (a name with a dot or a
// port, or localhost): the client reads any other first element as a
// Docker Hub namespace, and would ask a host the policy never saw. Flux
// and Argo CD both want the registry written.
func namesRegistry(repoURL string) bool {
	first, _, _ := strings.Cut(strings.TrimPrefix(repoURL, "oci://"), "/")
	return strings.ContainsAny(first, ".:") || first == "localhost"
}

// ociRepository is the chart's repository in the registry: the URL's host
// and path followed by the chart's name, as `helm pull oci://…/<chart>`.
func ociRepository(ref Ref) string {
	base := strings.TrimSuffix(strings.TrimPrefix(ref.RepoURL, "oci://"), "/")
	return base + "/" + ref.Chart
}

// pullOCI fetches the chart layer of the manifest tagged with the version.
// A range is resolved against the repository's tags as Helm, Flux and Argo
// CD do; an exact version already in the cache needs no registry at all.
func (s *Session) pullOCI(ctx context.Context, ref Ref, v version) (string, error) {
	repoName := ociRepository(ref)
	if v.exact != nil {
		if cached, err := s.cached(repoName, ref.Chart, v.exact); err != nil || cached != "" {
			return cached, err
		}
	}
	repo, err := name.NewRepository(repoName)
	if err != nil {
		return "", fmt.Errorf("not an OCI repository: %w", err)
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(s.p.transport)}
	tag, chosen := "", v.exact
	if chosen != nil {
		tag = ociTag(chosen.Original())
	} else {
		tags, err := once(&s.mu, s.tags, repoName, func() ([]string, error) {
			tags, err := remote.List(repo, opts...)
			if err != nil {
				return nil, fmt.Errorf("listing the tags of %s: %w", repo, s.failed(ref.RepoURL, err))
			}
			return tags, nil
		})
		if err != nil {
			return "", err
		}
		if tag, chosen, err = newestTag(repo, tags, v); err != nil {
			return "", err
		}
	}
	rel, err := entry(repoName, ref.Chart, chosen.String())
	if err != nil {
		return "", err
	}
	c := cache{dir: s.p.Dir}
	if cached := c.lookup(rel); cached != "" {
		return cached, nil
	}
	data, err := chartLayer(repo.Tag(tag), opts)
	if err != nil {
		return "", s.failed(ref.RepoURL, err)
	}
	return c.store(rel, data)
}

// ociTag is the tag Helm pushes a version under: OCI tags cannot hold the
// `+` of semver build metadata, so Helm writes `_` instead.
func ociTag(version string) string {
	return strings.ReplaceAll(version, "+", "_")
}

// newestTag picks the tag of the highest version v allows among the
// repository's tags.
func newestTag(repo name.Repository, tags []string, v version) (string, *semver.Version, error) {
	var best *semver.Version
	bestTag := ""
	for _, tag := range tags {
		candidate, err := semver.StrictNewVersion(strings.ReplaceAll(tag, "_", "+"))
		if err != nil || !v.allows(candidate) {
			continue
		}
		if best == nil || candidate.GreaterThan(best) {
			best, bestTag = candidate, tag
		}
	}
	if best == nil {
		return "", nil, fmt.Errorf("%s has no tag matching %s", repo, shown(v.String()))
	}
	return bestTag, best, nil
}

// chartLayer reads the manifest at the tag and returns its chart archive,
// refusing an artifact that is not a Helm chart.
func chartLayer(tag name.Tag, opts []remote.Option) ([]byte, error) {
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		return nil, fmt.Errorf("%s is a %s, not an OCI manifest of a Helm chart", tag, desc.MediaType)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	if m.Config.MediaType != helmConfigMediaType {
		return nil, fmt.Errorf("%s has config media type %q, not a Helm chart's %q", tag, m.Config.MediaType, helmConfigMediaType)
	}
	layer, err := chartLayerDescriptor(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tag, err)
	}
	if layer.Size > maxBytes {
		return nil, fmt.Errorf("%s: the chart layer is larger than %d bytes", tag, maxBytes)
	}
	blob, err := img.LayerByDigest(layer.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tag, err)
	}
	rc, err := blob.Compressed()
	if err != nil {
		return nil, fmt.Errorf("fetching the chart layer of %s: %w", tag, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetching the chart layer of %s: %w", tag, err)
	}
	return data, nil
}

func chartLayerDescriptor(m *v1.Manifest) (v1.Descriptor, error) {
	for _, l := range m.Layers {
		if l.MediaType == helmChartLayerMediaType || l.MediaType == legacyChartLayerMediaType {
			return l, nil
		}
	}
	var got []string
	for _, l := range m.Layers {
		got = append(got, string(l.MediaType))
	}
	return v1.Descriptor{}, fmt.Errorf("no layer of media type %q (layers: %s)", helmChartLayerMediaType, strings.Join(got, ", "))
}

// withTimeout bounds a whole OCI pull by the puller's timeout: the
// registry's token, tag, manifest and blob requests share one deadline, as
// an HTTP repository's index and archive each get one.
func (s *Session) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.p.Timeout > 0 {
		return context.WithTimeout(ctx, s.p.Timeout)
	}
	return ctx, func() {}
}
