package assemble

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/helmrelease"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/untrusted"
)

// ChartPullTimeout bounds each request to a chart repository.
const ChartPullTimeout = 30 * time.Second

// chartSessionAge bounds how long a cycle's pulls are reused while the
// cluster does not change: a repository's new chart versions, or its
// recovery from a failure, are seen within it.
const chartSessionAge = 5 * time.Minute

// ChartPuller is the puller of the charts kedge renders, caching them next
// to the repository's clone, outside the checkout.
func ChartPuller(cfg *config.Config) (*chartpull.Puller, error) {
	dir, err := CacheDir(cfg)
	if err != nil {
		return nil, err
	}
	return NewChartPuller(cfg, filepath.Clean(dir)+"-charts"), nil
}

// NewChartPuller pulls charts into dir under the configuration's policy.
func NewChartPuller(cfg *config.Config, dir string) *chartpull.Puller {
	return &chartpull.Puller{Dir: dir, Timeout: ChartPullTimeout, AllowedHosts: cfg.Helm.AllowedHosts}
}

// ClusterChartHosts are the hosts the cluster names as places charts come
// from: its Flux HelmRepositories and OCIRepositories, and the Helm
// sources of its Argo CD Applications that their AppProject admits. Only
// the cluster's own objects count: what a repository's writers commit
// never adds a host.
func ClusterChartHosts(set *objects.Set) chartpull.Hosts {
	hosts := chartpull.Hosts{}
	for _, r := range set.HelmRepositories {
		hosts.Add(r.Spec.URL, "HelmRepository "+r.Namespace+"/"+r.Name)
	}
	for _, r := range set.OCIRepositories {
		hosts.Add(r.Spec.URL, "OCIRepository "+r.Namespace+"/"+r.Name)
	}
	for i := range set.Applications {
		app := &set.Applications[i]
		projects := projectOf(app, set.AppProjects)
		for _, s := range route.ApplicationSources(app) {
			if s.Chart != "" && sourcePermitted(projects, s.RepoURL) {
				hosts.Add(s.RepoURL, route.ApplicationVia(app))
			}
		}
	}
	return hosts
}

// ChartPulls pulls the charts of each cycle in one session: the
// repositories a cycle plans, one after the other with the same cluster
// Set, read each chart repository's index once between them, and a
// repository that fails fails them all at once.
type ChartPulls struct {
	Puller *chartpull.Puller
	Log    *slog.Logger

	mu      sync.Mutex
	set     *objects.Set
	session *chartpull.Session
	started time.Time
}

// Pull pulls the charts the cluster's Applications and the index's
// HelmReleases name (see PullCharts).
func (c *ChartPulls) Pull(ctx context.Context, set *objects.Set, ix *index.Index) map[string]chart.Pulled {
	c.mu.Lock()
	if c.session == nil || c.set != set || time.Since(c.started) > chartSessionAge {
		c.set, c.session, c.started = set, c.Puller.Session(ClusterChartHosts(set)), time.Now()
	}
	session := c.session
	c.mu.Unlock()
	return pullCharts(ctx, session, set, ix, c.Log)
}

// PullCharts pulls, in a session of its own, every chart of a chart
// repository that the cluster's Argo CD Applications name (the
// repository's, when the cluster shows none), at the version each pins,
// and, with an index, every chart the repository's Flux HelmReleases take
// from the cluster's HelmRepositories. A chart that cannot be pulled, or
// that policy refuses, is kept with the reason, which the plan reports.
func PullCharts(ctx context.Context, set *objects.Set, ix *index.Index, p *chartpull.Puller) map[string]chart.Pulled {
	return pullCharts(ctx, p.Session(ClusterChartHosts(set)), set, ix, nil)
}

func pullCharts(ctx context.Context, s *chartpull.Session, set *objects.Set, ix *index.Index, log *slog.Logger) map[string]chart.Pulled {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := map[string]chart.Pulled{}
	// projectRefused marks results that only an AppProject refused: another
	// Application its project admits may still pull the same chart.
	projectRefused := map[string]bool{}
	pull := func(ref chartpull.Ref, asker func() string) {
		key := chart.Key(ref.RepoURL, ref.Chart, ref.Version)
		if _, done := out[key]; done && !projectRefused[key] {
			return
		}
		delete(projectRefused, key)
		archive, err := s.Pull(ctx, ref)
		if err != nil {
			out[key] = chart.Pulled{Error: err.Error()}
			if chartpull.Refused(err) {
				log.Warn("chart pull refused", "by", asker(), "error", err.Error())
			}
			return
		}
		out[key] = chart.Pulled{Archive: archive}
	}
	apps := index.WithRepositoryApplications(set, ix).Applications
	for i := range apps {
		app := &apps[i]
		projects := projectOf(app, set.AppProjects)
		for _, src := range route.ApplicationSources(app) {
			if src.Chart == "" {
				continue
			}
			ref := chartpull.Ref{RepoURL: src.RepoURL, Chart: src.Chart, Version: src.TargetRevision}
			if !sourcePermitted(projects, src.RepoURL) {
				key := chart.Key(ref.RepoURL, ref.Chart, ref.Version)
				if _, done := out[key]; !done {
					out[key] = chart.Pulled{Error: fmt.Sprintf("%s: AppProject %s/%s does not admit %s as a source (spec.sourceRepos), so Argo CD renders nothing from it and kedge pulls nothing",
						ref, projects[0].Namespace, projects[0].Name, untrusted.Excerpt(src.RepoURL, 160))}
					projectRefused[key] = true
				}
				continue
			}
			pull(ref, func() string { return route.ApplicationVia(app) })
		}
	}
	if ix != nil {
		for _, c := range helmrelease.RepositoryCharts(ix, set.HelmRepositories) {
			ref := chartpull.Ref{RepoURL: c.RepoURL, Chart: c.Chart, Version: c.Version}
			pull(ref, func() string { return strings.Join(releasesAsking(ix, c.Chart, c.Version), ", ") })
		}
	}
	return out
}

// releasesAsking names the index's HelmReleases that ask for the chart at
// the version, for the message that refuses it.
func releasesAsking(ix *index.Index, chartName, version string) []string {
	var out []string
	for _, obj := range ix.Objects() {
		if !document.IsHelmRelease(obj.APIVersion, obj.Kind) {
			continue
		}
		data, err := ix.ReadFile(obj.Source.Path)
		if err != nil {
			continue
		}
		body, err := document.ObjectAt(data, obj.Source.Document)
		if err != nil {
			continue
		}
		if document.String(body, "spec", "chart", "spec", "chart") != chartName || document.String(body, "spec", "chart", "spec", "version") != version {
			continue
		}
		name := obj.Name
		if obj.Namespace != "" {
			name = obj.Namespace + "/" + name
		}
		out = append(out, fmt.Sprintf("HelmRelease %s (%s)", name, obj.Source.Path))
	}
	if len(out) == 0 {
		return []string{"a HelmRelease of the repository"}
	}
	return out
}
