package drift

import "github.com/kedge-io/kedge/internal/objects"

// PodOwners tells, for the pods of namespace, the workload Compute groups
// each under: the kind and name of its Workload or Skipped entry. That is
// the target of a Flagger Canary for the pods of its primary, the
// Deployment a Rollout's workloadRef names for the Rollout's pods, and an
// operator's resource for the pods of a workload it owns. Only the
// namespace's objects are indexed.
func PodOwners(set *objects.Set, namespace string) func(*objects.Pod) (kind, name string) {
	ix := newIndex(inNamespace(set, namespace))
	return func(p *objects.Pod) (string, string) {
		o := ix.ownerOf(p)
		return o.kind, o.name
	}
}

// inNamespace is the part of set an owner is resolved from, for one
// namespace: the workloads, their ReplicaSets and the Canaries.
func inNamespace(set *objects.Set, namespace string) *objects.Set {
	return &objects.Set{
		ReplicaSets:  only(set.ReplicaSets, namespace),
		Deployments:  only(set.Deployments, namespace),
		StatefulSets: only(set.StatefulSets, namespace),
		DaemonSets:   only(set.DaemonSets, namespace),
		Jobs:         only(set.Jobs, namespace),
		CronJobs:     only(set.CronJobs, namespace),
		Rollouts:     only(set.Rollouts, namespace),
		Canaries:     onlyValues(set.Canaries, namespace),
	}
}

func only[P interface{ GetNamespace() string }](items []P, namespace string) []P {
	var out []P
	for _, item := range items {
		if item.GetNamespace() == namespace {
			out = append(out, item)
		}
	}
	return out
}

func onlyValues(items []objects.Canary, namespace string) []objects.Canary {
	var out []objects.Canary
	for _, item := range items {
		if item.Namespace == namespace {
			out = append(out, item)
		}
	}
	return out
}
