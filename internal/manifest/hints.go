package manifest

import (
	"path"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// GitOps tracking metadata (DESIGN §3).
const (
	fluxKustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	fluxKustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	fluxHelmNameLabel           = "helm.toolkit.fluxcd.io/name"
	fluxHelmNamespaceLabel      = "helm.toolkit.fluxcd.io/namespace"
	argoTrackingIDAnnotation    = "argocd.argoproj.io/tracking-id"
	argoInstanceLabel           = "app.kubernetes.io/instance"
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
	Release *ReleaseRef
	// ChartSources are the sources of an Argo CD Application that name a
	// chart of a chart repository (chart:), with the chart when it was
	// pulled.
	ChartSources []ChartSource
	// pulled are the charts pulled before the plan, by ChartKey: those of a
	// HelmRelease's HelmRepository.
	pulled map[string]PulledChart
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
	// Via names the tracking object, for messages.
	Via string
	// Directories say how an Argo CD Application reads each of the Paths
	// it applies; a path without one is read as Flux reads it.
	Directories []ArgoDirectory
	// Flux is the Flux Kustomization applying the workload: its name
	// prefix, suffix and post-build substitution change identities, and its
	// copy in the repository may carry kedge's patch.
	Flux *FluxKustomization
	// Applied lists every path of the indexed repository that the
	// cluster's GitOps objects apply, whatever workload they carry: a file
	// that two of them deploy into different namespaces is shared even when
	// no kustomization says so.
	Applied []Applied
	// appliedByPath indexes Applied: HintsFor hands one list, thousands of
	// entries in a fleet, to every workload.
	appliedByPath map[string][]int
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
	Directory *ArgoDirectory
}

// HintsFor returns a function reading a workload's hints from the Flux and
// Argo CD objects of the cluster. repoURLs are the addresses the indexed
// repository goes by (its GitHub address, a mirror kedge clones); when none
// is given, every source is assumed to be that repository.
func HintsFor(set *objects.Set, repoURLs ...string) func(drift.Workload) Hints {
	want := map[string]bool{}
	for _, u := range repoURLs {
		if n := normalizeRepoURL(u); n != "" {
			want[n] = true
		}
	}
	sameRepo := func(u string) bool { return len(want) == 0 || u == "" || want[normalizeRepoURL(u)] }
	applied := appliedPaths(set, sameRepo)
	byPath := appliedByPath(applied)
	return func(w drift.Workload) Hints {
		if set == nil {
			return Hints{}
		}
		h := workloadHints(set, w, sameRepo)
		if h.Release != nil {
			h = releaseHints(set, h, applied)
			h.helmRepositories = set.HelmRepositories
		}
		if (h.Helm == "" || h.Release != nil) && h.OtherRepo == "" {
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
func appliedPaths(set *objects.Set, sameRepo func(string) bool) []Applied {
	if set == nil {
		return nil
	}
	var out []Applied
	for _, k := range set.Kustomizations {
		if sameRepo(gitRepositoryURL(set, k)) {
			out = append(out, Applied{
				Path: cleanRepoPath(k.Spec.Path), Namespace: k.Spec.TargetNamespace, Force: k.Spec.TargetNamespace != "",
				Via: "Flux Kustomization " + k.Namespace + "/" + k.Name,
			})
		}
	}
	for _, app := range set.Applications {
		for _, s := range argoSources(&app) {
			if s.src.Chart == "" && s.src.Path != "" && sameRepo(s.src.RepoURL) {
				out = append(out, Applied{
					Path: cleanRepoPath(s.src.Path), Namespace: app.Spec.Destination.Namespace,
					Via: argoVia(&app), Directory: argoDirectoryOf(&app, s),
				})
			}
		}
	}
	return out
}

// workloadHints reads the tracking metadata of one workload.
func workloadHints(set *objects.Set, w drift.Workload, sameRepo func(string) bool) Hints {
	if name := w.Labels[fluxHelmNameLabel]; name != "" {
		ref := ReleaseRef{Namespace: w.Labels[fluxHelmNamespaceLabel], Name: name}
		return Hints{Helm: ref.String(), Release: &ref}
	}
	if name := w.Labels[fluxKustomizeNameLabel]; name != "" {
		ns := w.Labels[fluxKustomizeNamespaceLabel]
		for _, k := range set.Kustomizations {
			if k.Name != name || k.Namespace != ns {
				continue
			}
			h := Hints{
				Paths:           []string{cleanRepoPath(k.Spec.Path)},
				TargetNamespace: k.Spec.TargetNamespace,
				Via:             "Flux Kustomization " + ns + "/" + name,
				Flux:            fluxHint(set, k),
			}
			if url := gitRepositoryURL(set, k); !sameRepo(url) {
				h.OtherRepo = url
			}
			return h
		}
	}
	if app := argoApplication(set, w); app != nil {
		return applicationHints(app, sameRepo)
	}
	return Hints{}
}

// Applier names the GitOps object that applies a workload, from its
// tracking metadata alone; "" when it carries none.
func Applier(w drift.Workload) string {
	if name := w.Labels[fluxHelmNameLabel]; name != "" {
		// The HelmRelease is what changes; helm-controller upgrades the
		// release with it, which restarts the workload.
		return "Flux helm-controller (upgrading HelmRelease " + w.Labels[fluxHelmNamespaceLabel] + "/" + name + ")"
	}
	if name := w.Labels[fluxKustomizeNameLabel]; name != "" {
		return "Flux Kustomization " + w.Labels[fluxKustomizeNamespaceLabel] + "/" + name
	}
	if id := w.Annotations[argoTrackingIDAnnotation]; id != "" {
		app, _, _ := strings.Cut(id, ":")
		return "Argo CD Application " + app
	}
	if app := w.Labels[argoInstanceLabel]; app != "" {
		return "Argo CD Application " + app
	}
	return ""
}

func gitRepositoryURL(set *objects.Set, k objects.Kustomization) string {
	ref := k.Spec.SourceRef
	if ref.Kind != "" && ref.Kind != "GitRepository" {
		return ""
	}
	ns := ref.Namespace
	if ns == "" {
		ns = k.Namespace
	}
	for _, g := range set.GitRepositories {
		if g.Name == ref.Name && g.Namespace == ns {
			return g.Spec.URL
		}
	}
	return ""
}

// argoApplication finds the Application tracking w: by the tracking-id
// annotation (annotation tracking, the default since Argo CD 3) when it names
// this very object, else by the instance label (label tracking).
func argoApplication(set *objects.Set, w drift.Workload) *objects.Application {
	if id := w.Annotations[argoTrackingIDAnnotation]; id != "" {
		app, gk, nsName, ok := parseTrackingID(id)
		_, kind, _ := strings.Cut(gk, "/")
		if ok && kind == w.Kind && nsName == w.Namespace+"/"+w.Name {
			if a := findApplication(set, app); a != nil {
				return a
			}
		}
	}
	if name := w.Labels[argoInstanceLabel]; name != "" {
		return findApplication(set, name)
	}
	return nil
}

// parseTrackingID splits "<app>:<group>/<Kind>:<namespace>/<name>".
func parseTrackingID(id string) (app, groupKind, nsName string, ok bool) {
	parts := strings.SplitN(id, ":", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// findApplication resolves an Argo CD instance name: "<name>", or
// "<namespace>_<name>" for applications outside the control plane namespace.
func findApplication(set *objects.Set, instance string) *objects.Application {
	for i := range set.Applications {
		if set.Applications[i].Name == instance {
			return &set.Applications[i]
		}
	}
	if ns, name, ok := strings.Cut(instance, "_"); ok {
		for i := range set.Applications {
			if set.Applications[i].Name == name && set.Applications[i].Namespace == ns {
				return &set.Applications[i]
			}
		}
	}
	return nil
}

func applicationHints(app *objects.Application, sameRepo func(string) bool) Hints {
	via := argoVia(app)
	h := Hints{Via: via}
	var charts, others []string
	for _, as := range argoSources(app) {
		s := as.src
		switch {
		case s.Chart != "":
			charts = append(charts, s.Chart)
		case !sameRepo(s.RepoURL):
			others = append(others, s.RepoURL)
		case s.Path != "":
			h.Paths = append(h.Paths, cleanRepoPath(s.Path))
			h.Directories = append(h.Directories, *argoDirectoryOf(app, as))
		}
	}
	if len(h.Paths) > 0 {
		if len(charts) > 0 {
			h.Charts = via + " (chart " + strings.Join(charts, ", ") + ")"
			h.ChartSources = chartSources(app)
		}
		return h
	}
	if len(charts) > 0 {
		return Hints{Helm: via + " (chart " + strings.Join(charts, ", ") + ")", Via: via, ChartSources: chartSources(app)}
	}
	if len(others) > 0 {
		h.OtherRepo = others[0]
	}
	return h
}

// cleanRepoPath turns a tool's path ("./apps/shop/", "apps/shop") into the
// repo-relative form of the index ("apps/shop"; "." for the root).
func cleanRepoPath(p string) string {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return "."
	}
	return path.Clean(p)
}

// normalizeRepoURL reduces the spellings of one repository (https, ssh,
// scp-like, with or without .git) to host/path.
func normalizeRepoURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	scp := false
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	} else {
		scp = true
	}
	if at := strings.LastIndex(u, "@"); at >= 0 && at < strings.IndexAny(u+"/", "/") {
		u = u[at+1:]
	}
	if scp {
		u = strings.Replace(u, ":", "/", 1)
	}
	host, rest, _ := strings.Cut(u, "/")
	if h, _, ok := strings.Cut(host, ":"); ok && !scp {
		host = h // drop a port
	}
	rest = strings.TrimSuffix(strings.TrimSuffix(rest, "/"), ".git")
	// Compared without case: GitHub (and most forges) ignore it in paths.
	return strings.ToLower(host + "/" + rest)
}
