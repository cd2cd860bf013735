// Package synth generates a synthetic fleet at any size: the objects of a
// cluster running Istio (webhooks, injector ConfigMaps, namespaces,
// workloads, ReplicaSets and injected pods as the API server holds them) and
// the GitOps repository those workloads are deployed from (Flux overlays per
// namespace, some built on shared bases, Argo CD directories and plain
// files). Both are derived from one seeded model, so a plan computed from
// the cluster against the repository finds a manifest for every workload,
// and the same seed always produces the same bytes.
//
// The fleet is what performance is measured on: the sizes of a large
// cluster, and the shapes that stress the code paths (workload names that
// repeat across namespaces, bases shared by hundreds of overlays, pods of
// several revisions with native and classic sidecars).
package synth

import (
	"errors"
	"fmt"
)

// Spec sizes a fleet. Counts are totals; namespaces get an even share of the
// workloads and workloads an even share of the pods.
type Spec struct {
	// Seed picks names, profiles and every other choice; the same Spec
	// always yields the same fleet.
	Seed uint64
	// Cluster names the cluster (Flux and Argo CD objects mention it).
	Cluster string
	// Namespaces, Workloads and Pods are exact totals. Workloads are the
	// restartable top-level owners (Deployments, StatefulSets, DaemonSets,
	// Argo Rollouts).
	Namespaces int
	Workloads  int
	Pods       int
	// Drift is the fraction of namespaces whose pods run something else
	// than Istio would inject now; every workload of such a namespace
	// drifts. The count is exactly floor(Namespaces × Drift).
	Drift float64
	// RepoURL is the GitOps repository's address, as Flux GitRepository
	// and Argo CD Application objects name it.
	RepoURL string
}

// Default values for the optional Spec fields.
const (
	DefaultCluster = "synthetic"
	DefaultRepoURL = "https://github.com/example-org/gitops"
)

// FleetSpec is the largest cluster kedge is sized for: 100,000 pods in
// 5,000 namespaces and 20,000 workloads, half of the namespaces drifting.
func FleetSpec() Spec {
	return Spec{Seed: 1, Namespaces: 5000, Workloads: 20000, Pods: 100000, Drift: 0.5}
}

func (s Spec) withDefaults() Spec {
	if s.Cluster == "" {
		s.Cluster = DefaultCluster
	}
	if s.RepoURL == "" {
		s.RepoURL = DefaultRepoURL
	}
	return s
}

// Validate reports counts that cannot be laid out: every namespace holds
// at least one workload and every workload at least one pod.
func (s Spec) Validate() error {
	var errs []error
	if s.Namespaces < 1 {
		errs = append(errs, fmt.Errorf("namespaces: %d, want at least 1", s.Namespaces))
	}
	if s.Workloads < s.Namespaces {
		errs = append(errs, fmt.Errorf("workloads: %d, want at least one per namespace (%d)", s.Workloads, s.Namespaces))
	}
	if s.Pods < s.Workloads {
		errs = append(errs, fmt.Errorf("pods: %d, want at least one per workload (%d)", s.Pods, s.Workloads))
	}
	if s.Drift < 0 || s.Drift > 1 {
		errs = append(errs, fmt.Errorf("drift: %g, want a fraction between 0 and 1", s.Drift))
	}
	return errors.Join(errs...)
}

// share is the i-th of n near-equal parts of total.
func share(total, n, i int) int {
	q, r := total/n, total%n
	if i < r {
		return q + 1
	}
	return q
}

// drifts spreads floor(n × fraction) drifting namespaces evenly over the
// index range, so any prefix of the fleet drifts in the same proportion.
func drifts(i int, fraction float64) bool {
	return int(float64(i+1)*fraction) > int(float64(i)*fraction)
}
