package argo

import (
	"cmp"
	"fmt"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
)

// An Argo CD source that names a chart of a chart repository (repoURL and
// chart:, the version in targetRevision) is rendered from a copy of the
// chart pulled outside the checkout before the plan: the index reads files
// only. A chart that could not be pulled keeps the status helm, with why.

// ChartSource is one chart: source of an Application.
type ChartSource struct {
	Source                  SourceRef
	RepoURL, Chart, Version string
	// Helm is the source's helm block, as the cluster runs it; Namespace
	// the Application's destination namespace.
	Helm      *objects.ApplicationSourceHelm
	Namespace string
	// Refs are the Application's ref: sources.
	Refs []Ref
	// Archive is the pulled chart's file; empty when it was not pulled.
	Archive string
	// PullError says why it was not pulled.
	PullError string
}

// Key names the chart as pulled charts are looked up.
func (c ChartSource) Key() string { return chart.Key(c.RepoURL, c.Chart, c.Version) }

// ChartSources are the chart: sources of an Application.
func ChartSources(app *objects.Application) []ChartSource {
	var out []ChartSource
	for _, s := range Sources(app) {
		if s.Src.Chart == "" {
			continue
		}
		out = append(out, ChartSource{
			Source:  SourceRef{Namespace: app.Namespace, Name: app.Name, At: s.At},
			RepoURL: s.Src.RepoURL, Chart: s.Src.Chart, Version: s.Src.TargetRevision,
			Helm: s.Src.Helm, Namespace: app.Spec.Destination.Namespace,
		})
	}
	return out
}

// WithPulled returns the chart sources with the pulled charts (by
// ChartKey) filled in.
func WithPulled(sources []ChartSource, pulled map[string]chart.Pulled) []ChartSource {
	if len(sources) == 0 {
		return sources
	}
	out := make([]ChartSource, len(sources))
	for i, c := range sources {
		if p, ok := pulled[c.Key()]; ok {
			c.Archive, c.PullError = p.Archive, p.Error
		}
		out[i] = c
	}
	return out
}

// LocatePulledChart finds the chart value restarting w among the pulled
// charts of the Application's sources; ok is false when none of them
// renders w.
func LocatePulledChart(ix *index.Index, w drift.Workload, sources []ChartSource, via string, at Locating) (restart.Found, bool) {
	for _, c := range sources {
		via := fmt.Sprintf("%s renders chart %s %s from %s", via, c.Chart, c.Version, c.RepoURL)
		if c.Archive == "" {
			if c.PullError == "" {
				continue
			}
			return helmFound(via + "; " + c.PullError), true
		}
		ch := chart.Chart{Archive: c.Archive, Namespace: cmp.Or(c.Namespace, w.Namespace)}
		if found, renders := locateValues(ix, w, c.Source, c.Helm, c.Refs, ch, via, at); renders {
			return found, true
		}
	}
	return restart.Found{}, false
}
