package objects

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Canary is the part of a Flagger flagger.app Canary kedge reads: the
// workload it delivers. Flagger runs that workload's template in a copy of
// it named <targetRef.name>-primary, which it creates with the Canary as its
// controller, and copies the target's template onto the primary when its
// analysis promotes a change (docs/design.md, "What runs the pods").
type Canary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CanarySpec `json:"spec,omitempty"`
}

// CanarySpec names the target workload.
type CanarySpec struct {
	TargetRef CanaryTargetRef `json:"targetRef,omitempty"`
}

// CanaryTargetRef is a workload of the Canary's namespace: a Deployment or
// a DaemonSet (apps/v1) for the Canaries that run a primary.
type CanaryTargetRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
}
