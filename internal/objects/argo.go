package objects

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// AppProject is the part of an Argo CD AppProject kedge reads: the
// repositories its Applications may take sources from. Argo CD refuses an
// Application a source its project's sourceRepos do not match
// (https://argo-cd.readthedocs.io/en/stable/user-guide/projects/).
type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppProjectSpec `json:"spec,omitempty"`
}

// AppProjectSpec holds the project's source repository globs; one starting
// with "!" denies what it matches.
type AppProjectSpec struct {
	SourceRepos []string `json:"sourceRepos,omitempty"`
}

// ApplicationSourceDirectory is how an Argo CD Application reads a source
// of plain manifests: by default only the files at the top of its path, each
// kept or dropped by the include and exclude globs matched against its path
// relative to the source's path.
type ApplicationSourceDirectory struct {
	Recurse bool   `json:"recurse,omitempty"`
	Include string `json:"include,omitempty"`
	Exclude string `json:"exclude,omitempty"`
}

// ApplicationSourceKustomize holds what Argo CD writes into the kustomization
// of a kustomize source's path before it builds it
// (https://argo-cd.readthedocs.io/en/stable/user-guide/kustomize/): the name
// prefix, suffix and namespace replace the kustomization's own; labels,
// images, patches and components are added to it.
type ApplicationSourceKustomize struct {
	NamePrefix   string            `json:"namePrefix,omitempty"`
	NameSuffix   string            `json:"nameSuffix,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	CommonLabels map[string]string `json:"commonLabels,omitempty"`
	// ForceCommonLabels lets commonLabels replace labels the kustomization
	// sets already.
	ForceCommonLabels bool `json:"forceCommonLabels,omitempty"`
	// Images are `kustomize edit set image` arguments.
	Images     []string         `json:"images,omitempty"`
	Patches    []KustomizePatch `json:"patches,omitempty"`
	Components []string         `json:"components,omitempty"`
	// IgnoreMissingComponents skips components whose directory is missing.
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`
}

// KustomizePatch is one patch an Application adds to its kustomization.
type KustomizePatch struct {
	Path    string            `json:"path,omitempty"`
	Patch   string            `json:"patch,omitempty"`
	Target  map[string]string `json:"target,omitempty"`
	Options map[string]bool   `json:"options,omitempty"`
}
