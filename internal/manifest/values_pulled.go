package manifest

import (
	"fmt"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// An Argo CD source that names a chart of a chart repository (repoURL and
// chart:, the version in targetRevision) is rendered from a copy of the
// chart pulled outside the checkout before the plan: the index reads files
// only. A chart that could not be pulled keeps the status helm, with why.

// PulledChart is the outcome of pulling one chart: its archive, or why
// there is none.
type PulledChart struct {
	Archive string
	Error   string
}

// WithPulledCharts returns the hints with the pulled charts (by ChartKey)
// of their chart sources filled in.
func WithPulledCharts(h Hints, pulled map[string]PulledChart) Hints {
	h.pulled = pulled
	if len(h.ChartSources) == 0 {
		return h
	}
	sources := make([]ChartSource, len(h.ChartSources))
	for i, c := range h.ChartSources {
		if p, ok := pulled[c.Key()]; ok {
			c.Archive, c.PullError = p.Archive, p.Error
		}
		sources[i] = c
	}
	h.ChartSources = sources
	return h
}

// ChartSource is one chart: source of an Application.
type ChartSource struct {
	Source                  ArgoSourceRef
	RepoURL, Chart, Version string
	// Archive is the pulled chart's file; empty when it was not pulled.
	Archive string
	// PullError says why it was not pulled.
	PullError string
}

// Key names the chart as pulled charts are looked up.
func (c ChartSource) Key() string { return ChartKey(c.RepoURL, c.Chart, c.Version) }

// ChartRef is a chart of a chart repository (HTTP or OCI) at a version or
// semver constraint.
type ChartRef struct {
	RepoURL, Chart, Version string
}

// Key names the chart as pulled charts are looked up.
func (c ChartRef) Key() string { return ChartKey(c.RepoURL, c.Chart, c.Version) }

// ChartKey names a chart of a chart repository at a version.
func ChartKey(repoURL, chart, version string) string {
	return repoURL + " " + chart + " " + version
}

func chartSources(app *objects.Application) []ChartSource {
	var out []ChartSource
	for _, s := range argoSources(app) {
		if s.src.Chart == "" {
			continue
		}
		out = append(out, ChartSource{
			Source:  ArgoSourceRef{Namespace: app.Namespace, Name: app.Name, At: s.at},
			RepoURL: s.src.RepoURL, Chart: s.src.Chart, Version: s.src.TargetRevision,
		})
	}
	return out
}

// locatePulledChart finds the chart value restarting w among the pulled
// charts the hints name; ok is false when none of them renders w.
func (ix *Index) locatePulledChart(w drift.Workload, hints Hints) (Location, bool) {
	for _, c := range hints.ChartSources {
		via := fmt.Sprintf("%s renders chart %s %s from %s", hints.Via, c.Chart, c.Version, c.RepoURL)
		helm := func(detail string) (Location, bool) {
			return Location{Manifest: drift.Manifest{Status: drift.ManifestHelm, Detail: detail}}, true
		}
		if c.Archive == "" {
			if c.PullError == "" {
				continue
			}
			return helm(via + "; " + c.PullError)
		}
		m, src := ix.argoManifestOf(c.Source, ".")
		if m == nil {
			return helm(via + "; its Application is not in the repository")
		}
		if src.Helm != nil && len(src.Helm.ValueFiles) > 0 {
			return helm(via + "; its values files are read from the chart repository, which kedge does not")
		}
		values, err := ix.argoChartValues("", src.Helm)
		if err != nil {
			return helm(fmt.Sprintf("%s; reading its values: %v", via, err))
		}
		site := &valuesSite{manifest: m, at: c.Source.At, chartArchive: c.Archive, release: argoReleaseName(m, src),
			namespace: m.App.Spec.Destination.Namespace, workload: w.Kind + "/" + w.Name}
		if site.namespace == "" {
			site.namespace = w.Namespace
		}
		key, before, err := ix.findPodAnnotationValue(site.chart(), values, site.workload)
		if before != nil && before[site.workload] == nil {
			continue
		}
		if err != nil {
			return helm(fmt.Sprintf("%s: %v", via, err))
		}
		return argoValuesLocation(m, site, key, before), true
	}
	return Location{}, false
}
