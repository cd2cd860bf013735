package assemble

import (
	"context"
	"path/filepath"
	"time"

	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/manifest"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// ChartPullTimeout bounds each request to a chart repository.
const ChartPullTimeout = 30 * time.Second

// ChartPuller is the puller of the charts kedge renders, caching them next
// to the repository's clone, outside the checkout.
func ChartPuller(cfg *config.Config) (*chartpull.Puller, error) {
	dir, err := CacheDir(cfg)
	if err != nil {
		return nil, err
	}
	return &chartpull.Puller{Dir: filepath.Clean(dir) + "-charts", Timeout: ChartPullTimeout}, nil
}

// PullCharts pulls every chart of a chart repository that the cluster's
// Argo CD Applications name, at the version each pins, and, with an index,
// every chart the repository's Flux HelmReleases take from the cluster's
// HelmRepositories. A chart that cannot be pulled is kept with the reason,
// which the plan reports.
func PullCharts(ctx context.Context, set *objects.Set, ix *manifest.Index, p *chartpull.Puller) map[string]manifest.PulledChart {
	out := map[string]manifest.PulledChart{}
	pull := func(ref chartpull.Ref) {
		key := manifest.ChartKey(ref.RepoURL, ref.Chart, ref.Version)
		if _, done := out[key]; done {
			return
		}
		archive, err := p.Pull(ctx, ref)
		if err != nil {
			out[key] = manifest.PulledChart{Error: err.Error()}
			return
		}
		out[key] = manifest.PulledChart{Archive: archive}
	}
	for _, s := range argoChartSources(set) {
		pull(chartpull.Ref{RepoURL: s.RepoURL, Chart: s.Chart, Version: s.TargetRevision})
	}
	if ix != nil {
		for _, c := range ix.HelmRepositoryCharts(set.HelmRepositories) {
			pull(chartpull.Ref{RepoURL: c.RepoURL, Chart: c.Chart, Version: c.Version})
		}
	}
	return out
}

// argoChartSources are the sources of the cluster's Applications that name
// a chart of a chart repository.
func argoChartSources(set *objects.Set) []objects.ApplicationSource {
	var out []objects.ApplicationSource
	for i := range set.Applications {
		for _, s := range route.ApplicationSources(&set.Applications[i]) {
			if s.Chart != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
