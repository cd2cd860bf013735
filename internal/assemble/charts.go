package assemble

import (
	"context"
	"path/filepath"
	"time"

	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/helmrelease"
	"github.com/kedge-io/kedge/internal/gitops/index"
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
func PullCharts(ctx context.Context, set *objects.Set, ix *index.Index, p *chartpull.Puller) map[string]chart.Pulled {
	out := map[string]chart.Pulled{}
	pull := func(ref chartpull.Ref) {
		key := chart.Key(ref.RepoURL, ref.Chart, ref.Version)
		if _, done := out[key]; done {
			return
		}
		archive, err := p.Pull(ctx, ref)
		if err != nil {
			out[key] = chart.Pulled{Error: err.Error()}
			return
		}
		out[key] = chart.Pulled{Archive: archive}
	}
	for _, s := range argoChartSources(set) {
		pull(chartpull.Ref{RepoURL: s.RepoURL, Chart: s.Chart, Version: s.TargetRevision})
	}
	if ix != nil {
		for _, c := range helmrelease.RepositoryCharts(ix, set.HelmRepositories) {
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
