package synth

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

// Fleet is a generated cluster and the GitOps repository it is deployed
// from.
type Fleet struct {
	Spec Spec
	// Set is every object of the cluster. Callers may read it; writing it
	// with snapshot.Write gives the snapshot directory.
	Set *objects.Set
	// Pods and ReplicaSets are those of Set in full, as the API server
	// serves them: what a snapshot holds and what is loaded into an API
	// server.
	Pods        []corev1.Pod
	ReplicaSets []appsv1.ReplicaSet

	model *model
}

// New generates the fleet spec describes.
func New(spec Spec) (*Fleet, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec = spec.withDefaults()
	m := newModel(spec)
	set, pods, replicaSets := buildCluster(m)
	return &Fleet{Spec: spec, Set: set, Pods: pods, ReplicaSets: replicaSets, model: m}, nil
}

// RepoFiles calls fn with every file of the GitOps repository (slash
// separated path relative to the repository root, content), in a fixed
// order, and stops at the first error fn returns.
func (f *Fleet) RepoFiles(fn func(path string, content []byte) error) error {
	return f.model.repoFiles(fn)
}

// WriteRepo writes the GitOps repository below dir and returns how many
// files it wrote.
func (f *Fleet) WriteRepo(dir string) (int, error) {
	return writeFiles(dir, f.RepoFiles)
}

// RepoFileCount is how many files WriteRepo writes, without writing them.
func (f *Fleet) RepoFileCount() int {
	n := 0
	_ = f.RepoFiles(func(string, []byte) error { n++; return nil })
	return n
}

// Expectation is what a plan of the fleet against its repository must
// show; tests and benchmarks check their runs against it.
type Expectation struct {
	// DriftedNamespaces are the namespaces with drifted workloads, sorted.
	DriftedNamespaces []string
	// DriftedWorkloads is how many workloads drift; each one is found in
	// the repository.
	DriftedWorkloads int
	// SharedBaseWorkloads is how many drifted workloads come from a base
	// that several namespaces deploy, and need an overlay patch rather than
	// an edit in place.
	SharedBaseWorkloads int
}

// Expect returns what the plan must show.
func (f *Fleet) Expect() Expectation {
	var e Expectation
	users := map[string]int{}
	for _, ns := range f.model.namespaces {
		for _, w := range ns.workloads {
			if w.base != "" {
				users[w.base]++
			}
		}
	}
	for i := range f.model.namespaces {
		ns := &f.model.namespaces[i]
		if !ns.drifted {
			continue
		}
		e.DriftedNamespaces = append(e.DriftedNamespaces, ns.name)
		e.DriftedWorkloads += len(ns.workloads)
		for _, w := range ns.workloads {
			if users[w.base] > 1 {
				e.SharedBaseWorkloads++
			}
		}
	}
	slices.Sort(e.DriftedNamespaces)
	return e
}
