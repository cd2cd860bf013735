package objects

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
