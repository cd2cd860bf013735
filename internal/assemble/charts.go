package assemble

import (
	"context"
	"path/filepath"
	"time"

	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/manifest"
	"github.com/kedge-io/kedge/internal/objects"
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
// Argo CD Applications name, at the version each pins. A chart that cannot
// be pulled is kept with the reason, which the plan reports.
func PullCharts(ctx context.Context, set *objects.Set, p *chartpull.Puller) map[string]manifest.PulledChart {
	out := map[string]manifest.PulledChart{}
	for i := range set.Applications {
		app := &set.Applications[i]
		sources := app.Spec.Sources
		if len(sources) == 0 && app.Spec.Source != nil {
			sources = []objects.ApplicationSource{*app.Spec.Source}
		}
		for _, s := range sources {
			key := manifest.ChartKey(s.RepoURL, s.Chart, s.TargetRevision)
			if s.Chart == "" {
				continue
			}
			if _, done := out[key]; done {
				continue
			}
			archive, err := p.Pull(ctx, chartpull.Ref{RepoURL: s.RepoURL, Chart: s.Chart, Version: s.TargetRevision})
			if err != nil {
				out[key] = manifest.PulledChart{Error: err.Error()}
				continue
			}
			out[key] = manifest.PulledChart{Archive: archive}
		}
	}
	return out
}
