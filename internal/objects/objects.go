// Package objects holds the cluster objects kedge reads, as plain values.
//
// Every source (a snapshot directory or the live cluster) produces a Set; the
// pure core (mesh model, drift plan, manifest location) consumes one. Keeping
// the set free of clients and caches is what lets the core be tested with
// literals.
package objects

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set is every object kedge reads from one cluster.
//
// Pods and workloads, the bulk of a cluster, are pointers to values a
// source may share with its own store (the live source's cache); the rest
// are values. Like every value of a Set, none is ever written.
type Set struct {
	Namespaces                    []corev1.Namespace
	Pods                          []*Pod
	ConfigMaps                    []corev1.ConfigMap
	ReplicaSets                   []*ReplicaSet
	Deployments                   []*appsv1.Deployment
	StatefulSets                  []*appsv1.StatefulSet
	DaemonSets                    []*appsv1.DaemonSet
	Jobs                          []*batchv1.Job
	CronJobs                      []*batchv1.CronJob
	Rollouts                      []*Rollout
	MutatingWebhookConfigurations []admissionregistrationv1.MutatingWebhookConfiguration
	Applications                  []Application
	Kustomizations                []Kustomization
	GitRepositories               []GitRepository
	HelmRepositories              []HelmRepository
	ProxyConfigs                  []ProxyConfig
	// Canaries are Flagger's: the pods of a Canary's primary are restarted
	// through its target's template.
	Canaries []Canary
	// Nodes, AuthorizationPolicies and Gateways tell whether a namespace
	// can move to ambient mode: ztunnel on every node, and a waypoint for
	// the policies only a waypoint enforces.
	Nodes                 []corev1.Node
	AuthorizationPolicies []AuthorizationPolicy
	Gateways              []Gateway
	// OCIRepositories and AppProjects say where the cluster takes charts
	// from, and where its Applications may: kedge pulls charts from no
	// other host.
	OCIRepositories []OCIRepository
	AppProjects     []AppProject
	// The other objects Istio's sidecar-to-ambient migration guide names
	// (see istio.go), and the Services a waypoint serves.
	PeerAuthentications    []PeerAuthentication
	RequestAuthentications []RequestAuthentication
	EnvoyFilters           []EnvoyFilter
	WasmPlugins            []WasmPlugin
	VirtualServices        []VirtualService
	HTTPRoutes             []HTTPRoute
	Services               []corev1.Service
}

// Copies returns a pointer to a shallow copy of each item, for a Set
// built from values.
func Copies[T any](items []T) []*T {
	if items == nil {
		return nil
	}
	out := make([]*T, len(items))
	for i := range items {
		c := items[i]
		out[i] = &c
	}
	return out
}

// Rollout is the part of an argoproj.io/v1alpha1 Rollout kedge needs. Only
// the fields read are declared, so the CRD's schema changes do not matter.
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RolloutSpec `json:"spec,omitempty"`
}

// RolloutSpec carries either an inline pod template or a reference to a
// Deployment whose template the Rollout uses.
type RolloutSpec struct {
	Template    corev1.PodTemplateSpec `json:"template,omitempty"`
	WorkloadRef *WorkloadRef           `json:"workloadRef,omitempty"`
}

// WorkloadRef points a Rollout at the workload holding its pod template.
type WorkloadRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
}

// Application is the part of an Argo CD Application kedge needs to find the
// Git directory an object was rendered from.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ApplicationSpec `json:"spec,omitempty"`
}

// ApplicationSpec holds a single source or several.
type ApplicationSpec struct {
	// Project names the AppProject whose sourceRepos the sources must
	// match; empty is Argo CD's "default".
	Project     string                 `json:"project,omitempty"`
	Source      *ApplicationSource     `json:"source,omitempty"`
	Sources     []ApplicationSource    `json:"sources,omitempty"`
	Destination ApplicationDestination `json:"destination,omitempty"`
}

// ApplicationSource is one Git (or Helm) source of an Application.
type ApplicationSource struct {
	RepoURL        string `json:"repoURL,omitempty"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	Chart          string `json:"chart,omitempty"`
	// Ref names a source whose files the others' Helm value files read
	// ($ref/path); it applies nothing itself unless it has a path.
	Ref string `json:"ref,omitempty"`
	// Directory configures a source of plain manifests.
	Directory *ApplicationSourceDirectory `json:"directory,omitempty"`
	// Kustomize configures a kustomize source; set, it makes the source
	// one even without a kustomization file.
	Kustomize *ApplicationSourceKustomize `json:"kustomize,omitempty"`
	// Helm configures a Helm source: the chart in Path, or Chart.
	Helm *ApplicationSourceHelm `json:"helm,omitempty"`
}

// ApplicationSourceHelm is what Argo CD passes to Helm when it renders a
// chart (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/).
type ApplicationSourceHelm struct {
	ReleaseName string   `json:"releaseName,omitempty"`
	ValueFiles  []string `json:"valueFiles,omitempty"`
	// Values is a YAML document in a string; ValuesObject, when set, is
	// used in its place.
	Values       string          `json:"values,omitempty"`
	ValuesObject map[string]any  `json:"valuesObject,omitempty"`
	Parameters   []HelmParameter `json:"parameters,omitempty"`
	// IgnoreMissingValueFiles skips a values file that does not exist
	// instead of failing the render.
	IgnoreMissingValueFiles bool `json:"ignoreMissingValueFiles,omitempty"`
}

// HelmParameter is one --set (or --set-string) of an Argo CD Helm source.
type HelmParameter struct {
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ForceString bool   `json:"forceString,omitempty"`
}

// ApplicationDestination is where an Application deploys.
type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Kustomization is the part of a Flux kustomize.toolkit.fluxcd.io
// Kustomization kedge needs.
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              KustomizationSpec `json:"spec,omitempty"`
}

// KustomizationSpec says which directory of which source is applied, and
// into which namespace.
type KustomizationSpec struct {
	Path            string         `json:"path,omitempty"`
	TargetNamespace string         `json:"targetNamespace,omitempty"`
	SourceRef       CrossObjectRef `json:"sourceRef,omitempty"`
	// NamePrefix and NameSuffix replace those of the path's kustomization.
	NamePrefix string `json:"namePrefix,omitempty"`
	NameSuffix string `json:"nameSuffix,omitempty"`
	// PostBuild substitutes variables in what the path renders.
	PostBuild *PostBuild `json:"postBuild,omitempty"`
}

// CrossObjectRef names a Flux source.
type CrossObjectRef struct {
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// GitRepository is the part of a Flux source.toolkit.fluxcd.io GitRepository
// kedge needs.
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GitRepositorySpec `json:"spec,omitempty"`
}

// GitRepositorySpec is the repository URL and ref.
type GitRepositorySpec struct {
	URL string            `json:"url,omitempty"`
	Ref *GitRepositoryRef `json:"ref,omitempty"`
}

// GitRepositoryRef is the branch (or tag, semver range, reference name,
// commit) Flux follows.
type GitRepositoryRef struct {
	Branch string `json:"branch,omitempty"`
	Tag    string `json:"tag,omitempty"`
	SemVer string `json:"semver,omitempty"`
	Name   string `json:"name,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// HelmRepository is the part of a Flux source.toolkit.fluxcd.io
// HelmRepository kedge needs: where the charts of a HelmRelease naming it
// are pulled from.
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HelmRepositorySpec `json:"spec,omitempty"`
}

// HelmRepositorySpec is the repository's URL (oci:// for type oci) and
// type.
type HelmRepositorySpec struct {
	URL  string `json:"url,omitempty"`
	Type string `json:"type,omitempty"`
}

// ProxyConfig is the part of an Istio networking.istio.io ProxyConfig kedge
// needs: which proxies it applies to and the image type it gives them.
type ProxyConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ProxyConfigSpec `json:"spec,omitempty"`
}

// ProxyConfigSpec is the selector and image of a ProxyConfig. Selector nil
// (absent) and Selector with no labels differ: Istio applies the first to
// the whole namespace and the second to nothing.
type ProxyConfigSpec struct {
	Selector *WorkloadSelector `json:"selector,omitempty"`
	Image    *ProxyImage       `json:"image,omitempty"`
}

// WorkloadSelector picks pods by their labels.
type WorkloadSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// ProxyImage says which build of the proxy image to use: "default",
// "distroless" or "debug".
type ProxyImage struct {
	ImageType string `json:"imageType,omitempty"`
}

// ReplicaSet is what kedge reads of a ReplicaSet: its metadata, the link
// from a pod to its Deployment or Rollout. A cluster holds several for
// each Deployment, and their spec and status are never read.
type ReplicaSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// ReplicaSetOf returns what kedge reads of rs; it shares rs's maps and
// slices.
func ReplicaSetOf(rs *appsv1.ReplicaSet) ReplicaSet {
	return ReplicaSet{TypeMeta: rs.TypeMeta, ObjectMeta: rs.ObjectMeta}
}
