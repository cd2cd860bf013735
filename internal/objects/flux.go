package objects

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// OCIRepository is the part of a Flux source.toolkit.fluxcd.io
// OCIRepository kedge reads: the registry repository (oci://host/path) a
// HelmRelease's chartRef or a Kustomization takes its artifact from.
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              OCIRepositorySpec `json:"spec,omitempty"`
}

// OCIRepositorySpec is the repository's URL.
type OCIRepositorySpec struct {
	URL string `json:"url,omitempty"`
}

// PostBuild is the part of a Flux Kustomization's spec.postBuild that
// changes identities: the variables substituted in every rendered object.
// Patches, components and common metadata are read from the repository's
// copy of the Kustomization instead, so the cache holds no patch bodies.
type PostBuild struct {
	// SubstituteStrategy "Always" substitutes even without variables (for
	// expressions with defaults); the default, "WithVariables", does not.
	SubstituteStrategy string                `json:"substituteStrategy,omitempty"`
	Substitute         map[string]string     `json:"substitute,omitempty"`
	SubstituteFrom     []SubstituteReference `json:"substituteFrom,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret, in the Kustomization's
// namespace, whose data keys are variables.
type SubstituteReference struct {
	Kind     string `json:"kind,omitempty"`
	Name     string `json:"name,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}
