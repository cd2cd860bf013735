package route

import (
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// GitOps tracking metadata (docs/design.md, "Tracking metadata"): what Flux and Argo CD write on the
// objects they apply.
const (
	FluxKustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	FluxKustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	FluxHelmNameLabel           = "helm.toolkit.fluxcd.io/name"
	FluxHelmNamespaceLabel      = "helm.toolkit.fluxcd.io/namespace"
	ArgoTrackingIDAnnotation    = "argocd.argoproj.io/tracking-id"
	ArgoInstanceLabel           = "app.kubernetes.io/instance"
)

// KustomizationOf finds the Flux Kustomization whose labels w carries; nil
// when it carries none or the cluster has no such Kustomization.
func KustomizationOf(set *objects.Set, w drift.Workload) *objects.Kustomization {
	name := w.Labels[FluxKustomizeNameLabel]
	if set == nil || name == "" {
		return nil
	}
	ns := w.Labels[FluxKustomizeNamespaceLabel]
	for i := range set.Kustomizations {
		if k := &set.Kustomizations[i]; k.Name == name && k.Namespace == ns {
			return k
		}
	}
	return nil
}

// GitRepositoryOf finds the GitRepository a Kustomization reads; nil when
// its source is of another kind (an OCIRepository, a Bucket) or not in the
// cluster. A sourceRef without a namespace is in the Kustomization's.
func GitRepositoryOf(set *objects.Set, k *objects.Kustomization) *objects.GitRepository {
	ref := k.Spec.SourceRef
	if ref.Kind != "" && ref.Kind != "GitRepository" {
		return nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = k.Namespace
	}
	for i := range set.GitRepositories {
		if g := &set.GitRepositories[i]; g.Name == ref.Name && g.Namespace == ns {
			return g
		}
	}
	return nil
}

// ApplicationOf finds the Argo CD Application tracking w: by the
// tracking-id annotation (annotation tracking, the default since Argo CD 3)
// when it names this very object, else by the instance label (label
// tracking).
func ApplicationOf(set *objects.Set, w drift.Workload) *objects.Application {
	if set == nil {
		return nil
	}
	if id := w.Annotations[ArgoTrackingIDAnnotation]; id != "" {
		app, gk, nsName, ok := ParseTrackingID(id)
		_, kind, _ := strings.Cut(gk, "/")
		if ok && kind == w.Kind && nsName == w.Namespace+"/"+w.Name {
			if a := findApplication(set, app); a != nil {
				return a
			}
		}
	}
	if name := w.Labels[ArgoInstanceLabel]; name != "" {
		return findApplication(set, name)
	}
	return nil
}

// ParseTrackingID splits "<app>:<group>/<Kind>:<namespace>/<name>".
func ParseTrackingID(id string) (app, groupKind, nsName string, ok bool) {
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

// ApplicationSources lists the sources Argo CD reads: spec.sources when it
// has items (spec.source is then ignored), else spec.source
// (https://argo-cd.readthedocs.io/en/stable/user-guide/multiple_sources/).
func ApplicationSources(app *objects.Application) []objects.ApplicationSource {
	if len(app.Spec.Sources) > 0 {
		return app.Spec.Sources
	}
	if app.Spec.Source != nil {
		return []objects.ApplicationSource{*app.Spec.Source}
	}
	return nil
}

// KustomizationVia names a Flux Kustomization in messages.
func KustomizationVia(k *objects.Kustomization) string {
	return "Flux Kustomization " + k.Namespace + "/" + k.Name
}

// ApplicationVia names an Argo CD Application in messages.
func ApplicationVia(app *objects.Application) string {
	if app.Namespace == "" {
		return "Argo CD Application " + app.Name
	}
	return "Argo CD Application " + app.Namespace + "/" + app.Name
}
