package locate

import (
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/argo"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/flux"
	"github.com/kedge-io/kedge/internal/gitops/helmrelease"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// Hints narrow where a workload can come from, read from the GitOps tool
// that applied it. The zero value means "no idea": every root and plain file
// is searched.
type Hints struct {
	// Paths are repo-relative directories the workload is applied from (a
	// Flux Kustomization's spec.path, an Argo CD Application's source paths).
	Paths []string
	// TargetNamespace is a Flux Kustomization's spec.targetNamespace: every
	// object of the path lands there whatever the files say.
	TargetNamespace string
	// Helm names the Helm release (or Argo CD Application with a chart
	// source) that renders the workload; its YAML is not in Git.
	Helm string
	// Release is the Flux HelmRelease that renders the workload; its file
	// gets the restart as a post-renderer patch.
	Release *helmrelease.Ref
	// ChartSources are the sources of an Argo CD Application that name a
	// chart of a chart repository (chart:), with the chart when it was
	// pulled.
	ChartSources []argo.ChartSource
	// pulled are the charts pulled before the plan, by ChartKey: those of a
	// HelmRelease's HelmRepository.
	pulled map[string]chart.Pulled
	// helmRepositories are the cluster's, where a HelmRelease's chart
	// comes from.
	helmRepositories []objects.HelmRepository
	// PreferValues restarts a workload of a Flux HelmRelease through a
	// chart value in its spec.values when its chart has one, rather than
	// through a post-renderer.
	PreferValues bool
	// Charts is set when the tracking object renders Helm charts besides
	// the Paths (an Argo CD Application with several sources): a workload
	// not found under the paths comes from a chart.
	Charts string
	// OtherRepo is set when the tracking object's source is another
	// repository than the indexed one.
	OtherRepo string
	// NoRepo, when set, says why the tracking object applies the workload
	// from no Git repository kedge can write to: an OCIRepository, a
	// Bucket, an ExternalArtifact kedge does not map to the repository.
	NoRepo string
	// Via names the tracking object, for messages.
	Via string
	// Directories say how an Argo CD Application reads each of the Paths
	// it applies; a path without one is read as Flux reads it.
	Directories []argo.Directory
	// Flux is the Flux Kustomization applying the workload: its name
	// prefix, suffix and post-build substitution change identities, and its
	// copy in the repository may carry kedge's patch.
	Flux *flux.Kustomization
	// Applied lists every path of the indexed repository that the
	// cluster's GitOps objects apply, whatever workload they carry: a file
	// that two of them deploy into different namespaces is shared even when
	// no kustomization says so.
	Applied []Applied
	// appliedByPath indexes Applied: HintsIn hands one list, thousands of
	// entries in a fleet, to every workload.
	appliedByPath map[string][]int
	// readers name, by repo-relative values file, the Argo CD Application
	// sources of the cluster that read it.
	readers map[string][]string
}

// Applied is one directory of the repository a GitOps object applies.
type Applied struct {
	Path string
	// Namespace is where the objects without a namespace land (Flux
	// targetNamespace, Argo CD destination namespace).
	Namespace string
	// Force is set when Namespace replaces the namespace the objects carry
	// too, as Flux's targetNamespace does.
	Force bool
	Via   string
	// Directory is set when an Argo CD Application applies Path: what it
	// reads there.
	Directory *argo.Directory
}

// HintsIn returns a function reading a workload's hints from the Flux and
// Argo CD objects of the cluster. repoURLs are the addresses the indexed
// repository goes by (its GitHub address, a mirror kedge clones); when none
// is given, every source is assumed to be that repository. The checkout's
// index, when given, maps the paths of an ExternalArtifact its
// ArtifactGenerators produce to the repository.
func HintsIn(ix *index.Index, set *objects.Set, repoURLs ...string) func(drift.Workload) Hints {
	want := map[string]bool{}
	for _, u := range repoURLs {
		if n := route.NormalizeURL(u); n != "" {
			want[n] = true
		}
	}
	return HintsFromIn(ix, set, func(s route.Source) bool { return len(want) == 0 || s.URL == "" || want[route.NormalizeURL(s.URL)] })
}

// HintsFrom is HintsIn for a checkout that answers the sources indexed
// reports true for: with several checkouts, each one answers its own
// repository branch, and a source another answers is OtherRepo here.
func HintsFrom(set *objects.Set, indexed func(route.Source) bool) func(drift.Workload) Hints {
	return HintsFromIn(nil, set, indexed)
}

// HintsFromIn is HintsFrom with the checkout's index (see HintsIn).
func HintsFromIn(ix *index.Index, set *objects.Set, indexed func(route.Source) bool) func(drift.Workload) Hints {
	applied := appliedPaths(ix, set, indexed)
	byPath := appliedByPath(applied)
	var readers map[string][]string
	if set != nil {
		readers = argo.ValuesReaders(set.Applications, func(app *objects.Application, s objects.ApplicationSource) bool {
			return indexed(route.ArgoSource(app, s))
		})
	}
	return func(w drift.Workload) Hints {
		if set == nil {
			return Hints{}
		}
		h := workloadHints(ix, set, w, indexed)
		h.readers = readers
		if h.Release != nil {
			h = releaseHints(set, h, applied)
			h.helmRepositories = set.HelmRepositories
		}
		if (h.Helm == "" || h.Release != nil) && h.OtherRepo == "" && h.NoRepo == "" {
			h.Applied, h.appliedByPath = applied, byPath
		}
		return h
	}
}

// releaseHints narrows the search for a workload's HelmRelease to what the
// cluster's GitOps objects apply from the indexed repository: a HelmRelease
// of the same name elsewhere in it may be another cluster's. A cluster
// without GitOps objects tells nothing, and the whole repository is
// searched.
func releaseHints(set *objects.Set, h Hints, applied []Applied) Hints {
	if len(set.Kustomizations) == 0 && len(set.Applications) == 0 {
		return h
	}
	for _, a := range applied {
		if !slices.Contains(h.Paths, a.Path) {
			h.Paths = append(h.Paths, a.Path)
		}
	}
	if len(h.Paths) == 0 {
		return Hints{Helm: h.Release.String() + " renders it; the cluster's Flux and Argo CD objects apply nothing from this repository"}
	}
	return h
}

// appliedPaths lists what the cluster's Flux Kustomizations and Argo CD
// Applications apply from the indexed repository.
func appliedPaths(ix *index.Index, set *objects.Set, indexed func(route.Source) bool) []Applied {
	if set == nil {
		return nil
	}
	var out []Applied
	for i := range set.Kustomizations {
		k := &set.Kustomizations[i]
		src := flux.SourceOf(ix, set, k)
		if src.NoRepo == "" && indexed(gitSource(set, k, src)) {
			out = append(out, Applied{
				Path: src.Path, Namespace: k.Spec.TargetNamespace, Force: k.Spec.TargetNamespace != "",
				Via: kustomizationVia(k, src),
			})
		}
	}
	for _, app := range set.Applications {
		for _, s := range argo.Sources(&app) {
			if s.Src.Chart == "" && s.Src.Path != "" && indexed(route.ArgoSource(&app, s.Src)) {
				out = append(out, Applied{
					Path: cleanRepoPath(s.Src.Path), Namespace: app.Spec.Destination.Namespace,
					Via: argo.Via(&app), Directory: directoryOf(&app, s, indexed),
				})
			}
		}
	}
	return out
}

// gitSource is where the cluster applies a Kustomization's path from in
// Git: its GitRepository, or, for an ExternalArtifact kedge maps, the
// GitRepository the artifact copies from.
func gitSource(set *objects.Set, k *objects.Kustomization, src flux.Source) route.Source {
	c := *k
	c.Spec.SourceRef, c.Spec.Path = src.GitRepository, src.Path
	return route.FluxSource(set, &c)
}

// kustomizationVia names a Kustomization in messages, with the artifact
// its path is read through.
func kustomizationVia(k *objects.Kustomization, src flux.Source) string {
	if src.Via == "" {
		return route.KustomizationVia(k)
	}
	return route.KustomizationVia(k) + " " + src.Via
}

// workloadHints reads the tracking metadata of one workload.
func workloadHints(ix *index.Index, set *objects.Set, w drift.Workload, indexed func(route.Source) bool) Hints {
	if name := w.Labels[route.FluxHelmNameLabel]; name != "" {
		ref := helmrelease.Ref{Namespace: w.Labels[route.FluxHelmNamespaceLabel], Name: name}
		return Hints{Helm: ref.String(), Release: &ref}
	}
	if k := route.KustomizationOf(set, w); k != nil {
		src := flux.SourceOf(ix, set, k)
		via := kustomizationVia(k, src)
		if src.NoRepo != "" {
			return Hints{NoRepo: src.NoRepo, Via: via}
		}
		h := Hints{
			Paths:           []string{src.Path},
			TargetNamespace: k.Spec.TargetNamespace,
			Via:             via,
			Flux:            flux.Of(ix, set, *k),
		}
		if gs := gitSource(set, k, src); !indexed(gs) {
			h.OtherRepo = gs.URL
		}
		return h
	}
	if app := route.ApplicationOf(set, w); app != nil {
		return applicationHints(app, indexed)
	}
	return Hints{}
}

// Applier names the GitOps object that applies a workload, from its
// tracking metadata alone; "" when it carries none.
func Applier(w drift.Workload) string {
	if name := w.Labels[route.FluxHelmNameLabel]; name != "" {
		// The HelmRelease is what changes; helm-controller upgrades the
		// release with it, which restarts the workload.
		return "Flux helm-controller (upgrading HelmRelease " + w.Labels[route.FluxHelmNamespaceLabel] + "/" + name + ")"
	}
	if name := w.Labels[route.FluxKustomizeNameLabel]; name != "" {
		return "Flux Kustomization " + w.Labels[route.FluxKustomizeNamespaceLabel] + "/" + name
	}
	if id := w.Annotations[route.ArgoTrackingIDAnnotation]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return "Argo CD Application " + app
	}
	if app := w.Labels[route.ArgoInstanceLabel]; app != "" {
		return "Argo CD Application " + app
	}
	return ""
}

func applicationHints(app *objects.Application, indexed func(route.Source) bool) Hints {
	via := argo.Via(app)
	h := Hints{Via: via}
	var charts, others []string
	for _, as := range argo.Sources(app) {
		s := as.Src
		switch {
		case s.Chart != "":
			charts = append(charts, s.Chart)
		case !indexed(route.ArgoSource(app, s)):
			others = append(others, s.RepoURL)
		case s.Path != "":
			h.Paths = append(h.Paths, cleanRepoPath(s.Path))
			h.Directories = append(h.Directories, *directoryOf(app, as, indexed))
		}
	}
	if len(h.Paths) > 0 {
		if len(charts) > 0 {
			h.Charts = via + " (chart " + strings.Join(charts, ", ") + ")"
			h.ChartSources = chartSources(app, indexed)
		}
		return h
	}
	if len(charts) > 0 {
		return Hints{Helm: via + " (chart " + strings.Join(charts, ", ") + ")", Via: via, ChartSources: chartSources(app, indexed)}
	}
	if len(others) > 0 {
		h.OtherRepo = others[0]
	}
	return h
}

// cleanRepoPath turns a tool's path into the repo-relative form of the
// index.
func cleanRepoPath(p string) string { return route.CleanPath(p) }

// WithPulledCharts returns the hints with the pulled charts (by chart.Key)
// of their chart sources filled in.
func WithPulledCharts(h Hints, pulled map[string]chart.Pulled) Hints {
	h.pulled = pulled
	h.ChartSources = argo.WithPulled(h.ChartSources, pulled)
	return h
}

// withoutApplied leaves out the applied paths and their index, and the
// readers of values files: they are the cluster's whole, handed to every
// workload, and compared apart or read only by chart values (which are
// never reused).
func (h Hints) withoutApplied() Hints {
	h.Applied, h.appliedByPath, h.readers = nil, nil, nil
	return h
}

// directoryOf is how an Application applies one of its paths, with its
// ref sources, which its values files may name.
func directoryOf(app *objects.Application, s argo.Source, indexed func(route.Source) bool) *argo.Directory {
	d := argo.DirectoryOf(app, s)
	d.Refs = refsOf(app, indexed)
	return d
}

// chartSources are the chart: sources of an Application, with its ref
// sources.
func chartSources(app *objects.Application, indexed func(route.Source) bool) []argo.ChartSource {
	out := argo.ChartSources(app)
	for i := range out {
		out[i].Refs = refsOf(app, indexed)
	}
	return out
}

func refsOf(app *objects.Application, indexed func(route.Source) bool) []argo.Ref {
	return argo.RefsOf(app, func(s objects.ApplicationSource) bool { return indexed(route.ArgoSource(app, s)) })
}
