package drift

import (
	"time"

	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// Reason says why a workload must be restarted. The values are part of the
// plan's JSON contract.
type Reason string

const (
	ReasonMissingSidecar  Reason = "missing-sidecar"
	ReasonProxyImage      Reason = "proxy-image"
	ReasonRevision        Reason = "revision"
	ReasonUnwantedSidecar Reason = "unwanted-sidecar"
)

// SkipReason says why drifted pods cannot be fixed by a pod template
// annotation. The values are part of the plan's JSON contract.
type SkipReason string

const (
	SkipNotRestartable SkipReason = "not-restartable"
	SkipNoOwner        SkipReason = "no-owner"
	SkipConflict       SkipReason = "conflict"
	SkipOptedOut       SkipReason = "opted-out"
	// SkipOnDelete: a StatefulSet or DaemonSet with updateStrategy
	// OnDelete replaces a pod only when the pod is deleted, so a template
	// change restarts nothing; its pods must be deleted.
	SkipOnDelete SkipReason = "on-delete"
)

// Manifest statuses and edit kinds (docs/design.md, "Contracts").
const (
	ManifestFound     = "found"
	ManifestRefused   = "refused"
	ManifestNotFound  = "not-found"
	ManifestHelm      = "helm"
	ManifestAmbiguous = "ambiguous"
	ManifestNoRepo    = "no-repo"

	EditInPlace       = "in-place"
	EditOverlayPatch  = "overlay-patch"
	EditAlreadyBumped = "already-bumped"
	// EditHelmPostRenderer is a kustomize patch in a Flux HelmRelease's
	// spec.postRenderers (or an overlay's patch adding it there), which
	// helm-controller applies to what the chart renders.
	EditHelmPostRenderer = "helm-post-renderer"
	// EditHelmValues is a chart value that reaches the workload's pod
	// template annotations, set where the release's values are written (an
	// Argo CD Application's helm source, a Flux HelmRelease's spec.values).
	EditHelmValues = "helm-values"
	// EditHelmTemplate is the restart annotations written in the chart
	// template of the repository that renders the workload, when one
	// release alone renders the chart and no value of it reaches the pod
	// template.
	EditHelmTemplate = "helm-template"
)

// Plan is what kedge would do for one cluster. Its JSON form is a contract.
type Plan struct {
	Cluster   string     `json:"cluster"`
	Workloads []Workload `json:"workloads"`
	Skipped   []Skipped  `json:"skipped"`
	// Migrations are the namespaces migration policies select, moving or
	// blocked; see Migration.
	Migrations []Migration `json:"migrations,omitempty"`
}

// Workload is one top-level owner with at least one drifted pod.
type Workload struct {
	Namespace string   `json:"namespace"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Reasons   []Reason `json:"reasons"`
	Pods      PodCount `json:"pods"`
	Current   Current  `json:"current"`
	Desired   Desired  `json:"desired"`
	Manifest  Manifest `json:"manifest"`
	// OldestDriftedPodStart is when the oldest drifted pod started; the
	// dashboard shows its age.
	OldestDriftedPodStart *time.Time `json:"oldestDriftedPodStart,omitempty"`

	// Labels and Annotations are the workload object's own metadata. GitOps
	// tracking (Flux labels, Argo CD tracking-id) lives there; they are not
	// part of the JSON contract.
	Labels      map[string]string `json:"-"`
	Annotations map[string]string `json:"-"`
	// APIVersion of the workload object (apps/v1, argoproj.io/v1alpha1).
	APIVersion string `json:"-"`
	// Via is the controller that runs the workload's template in the pods
	// that drift; nil when the workload runs its pods itself.
	Via *Via `json:"via,omitempty"`
}

// Via is a controller that carries a change of a workload's pod template to
// pods it runs itself: the workload is edited in Git like any other, and Via
// replaces the pods.
type Via struct {
	// Kind is KindCanary (Flagger analyses the edited target and promotes
	// its template to Primary) or KindRollout (an Argo Rollout whose
	// spec.workloadRef takes its template from the workload).
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion"`
	// Primary is the workload Flagger runs the promoted template in,
	// <target>-primary; empty for a Rollout, whose own pods run it.
	Primary string `json:"primary,omitempty"`
}

// PodCount is how many of a workload's live pods drift.
type PodCount struct {
	Total   int `json:"total"`
	Drifted int `json:"drifted"`
}

// Current is what the drifted pods run now, distinct values sorted.
type Current struct {
	Revisions []string `json:"revisions"`
	Images    []string `json:"images"`
}

// Desired is what a pod created now would be injected with. Revision is
// "default" for the unnamed revision and "" (with Image "") when no sidecar
// is wanted.
type Desired struct {
	Revision string `json:"revision"`
	Image    string `json:"image"`
}

// Manifest is where the workload is defined in the GitOps repository.
type Manifest struct {
	Status string `json:"status"`
	Path   string `json:"path,omitempty"`
	Edit   string `json:"edit,omitempty"`
	// Detail explains not-found, helm (which release) and refusals.
	Detail string `json:"detail,omitempty"`
	// Fallback says why the workload is restarted by Edit and not by the
	// edit the configuration prefers (helm.prefer: values).
	Fallback string `json:"fallback,omitempty"`
	// Candidates are the paths an ambiguous workload may come from.
	Candidates []string `json:"candidates,omitempty"`
	// Repository is the repository ("owner/name", "@branch" when a
	// branch is named) Path is in, when several are planned; for no-repo,
	// the repository the cluster applies the workload from.
	Repository string `json:"repository,omitempty"`
}

// Skipped is a drifted top-level owner (or bare pod) kedge will not act on.
type Skipped struct {
	Namespace string     `json:"namespace"`
	Kind      string     `json:"kind"`
	Name      string     `json:"name"`
	Reason    SkipReason `json:"reason"`
	// Detail is human-readable context, e.g. the conflicting revisions.
	Detail string `json:"detail,omitempty"`
}

// WithManifests returns a copy of the plan in which each workload carries
// the manifest view manifestOf gives it (when it gives one); the plan it is
// called on is left as it was.
func (p Plan) WithManifests(manifestOf func(Workload) (Manifest, bool)) Plan {
	out := p
	out.Workloads = make([]Workload, len(p.Workloads))
	for i, w := range p.Workloads {
		if m, ok := manifestOf(w); ok {
			w.Manifest = m
		}
		out.Workloads[i] = w
	}
	return out
}

// ProxyImages counts every namespace's live pods by the proxy image they
// run ("" for pods without a sidecar). Terminating and finished pods are
// not counted, as Compute does not count them.
func ProxyImages(set *objects.Set) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, p := range set.Pods {
		if !p.Live() {
			continue
		}
		image, _ := mesh.RunningProxy(p)
		if out[p.Namespace] == nil {
			out[p.Namespace] = map[string]int{}
		}
		out[p.Namespace][image]++
	}
	return out
}
