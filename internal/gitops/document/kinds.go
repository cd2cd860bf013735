package document

import "strings"

// Group is the API group of an apiVersion; "" for the core group.
func Group(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}

// IsNamespace reports whether the object is a Namespace.
func IsNamespace(apiVersion, kind string) bool { return apiVersion == "v1" && kind == "Namespace" }

// IsWorkload reports whether objects of this kind carry the pod template
// kedge restarts.
func IsWorkload(apiVersion, kind string) bool {
	group := Group(apiVersion)
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return group == "apps" || group == "extensions"
	case "Rollout":
		return group == "argoproj.io"
	}
	return false
}

// HelmReleaseGroup is Flux helm-controller's API group.
const HelmReleaseGroup = "helm.toolkit.fluxcd.io"

// IsHelmRelease reports whether the object is a Flux HelmRelease.
func IsHelmRelease(apiVersion, kind string) bool {
	return kind == "HelmRelease" && Group(apiVersion) == HelmReleaseGroup
}

// IsApplication reports whether the object is an Argo CD Application.
func IsApplication(apiVersion, kind string) bool {
	return kind == "Application" && Group(apiVersion) == "argoproj.io"
}

// IsFluxKustomization reports whether the object is a Flux Kustomization.
func IsFluxKustomization(apiVersion, kind string) bool {
	return kind == "Kustomization" && Group(apiVersion) == "kustomize.toolkit.fluxcd.io"
}

// IsIndexed reports whether the index keeps objects of this kind: the
// workloads kedge restarts and the HelmReleases that render workloads.
// Everything else is irrelevant to a plan and would only cost memory on
// large repositories.
func IsIndexed(apiVersion, kind string) bool {
	return IsWorkload(apiVersion, kind) || IsHelmRelease(apiVersion, kind)
}

// fluxSubstituteKey, set to "disabled" as a label or annotation, keeps
// kustomize-controller from substituting variables in an object.
const fluxSubstituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// SubstituteDisabled reports whether an object's labels or annotations opt
// it out of Flux's post-build substitution.
func SubstituteDisabled(labels, annotations map[string]string) bool {
	return labels[fluxSubstituteKey] == "disabled" || annotations[fluxSubstituteKey] == "disabled"
}
