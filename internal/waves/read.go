package waves

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// stuckReasons are container waiting reasons that do not clear without a
// change to the pod or its image; a pod showing one is unhealthy at once.
var stuckReasons = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
}

// Read collects what the gate reads of one workload from the cluster's
// objects. drifted says whether the plan still lists it.
func Read(set *objects.Set, namespace, kind, name string, drifted bool) Workload {
	wl := Workload{Kind: kind, Name: name, Drifted: drifted}
	switch kind {
	case "Deployment":
		for _, d := range set.Deployments {
			if d.Namespace == namespace && d.Name == name {
				wl.Found, wl.Counted = true, true
				wl.Replicas, wl.Available = replicas(d.Spec.Replicas), d.Status.AvailableReplicas
			}
		}
	case "StatefulSet":
		for _, s := range set.StatefulSets {
			if s.Namespace == namespace && s.Name == name {
				wl.Found, wl.Counted = true, true
				wl.Replicas, wl.Available = replicas(s.Spec.Replicas), s.Status.AvailableReplicas
			}
		}
	case "DaemonSet":
		for _, d := range set.DaemonSets {
			if d.Namespace == namespace && d.Name == name {
				wl.Found, wl.Counted = true, true
				wl.Replicas, wl.Available = d.Status.DesiredNumberScheduled, d.Status.NumberAvailable
			}
		}
	case "Rollout":
		for _, r := range set.Rollouts {
			if r.Namespace == namespace && r.Name == name {
				wl.Found = true
			}
		}
	}
	if !wl.Found {
		return wl
	}
	// The pods are those the plan counts for the workload: a Flagger
	// Canary's target also answers for its primary's pods, a Deployment a
	// Rollout's workloadRef names for the Rollout's.
	ownerOf := drift.PodOwners(set, namespace)
	inAmbient := false
	for i := range set.Namespaces {
		if ns := &set.Namespaces[i]; ns.Name == namespace {
			inAmbient = ns.Labels[ambient.LabelDataplaneMode] == ambient.ModeAmbient
		}
	}
	for _, p := range set.Pods {
		if p.Namespace != namespace || !p.Live() {
			continue
		}
		if k, n := ownerOf(p); k == kind && n == name {
			wl.Pods = append(wl.Pods, podOf(p))
			if inAmbient && wl.Uncaptured == "" && p.Proxy == nil && !ambient.Excluded(p) && !ambient.Captured(p) {
				wl.Uncaptured = p.Name
			}
		}
	}
	return wl
}

// replicas is spec.replicas, which the API server defaults to 1.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func podOf(p *objects.Pod) Pod {
	out := Pod{
		Name: p.Name, Ready: p.Ready == corev1.ConditionTrue, ReadySince: p.ReadySince.Time, ProxyRestarts: p.ProxyRestarts,
	}
	for _, w := range p.Waiting {
		if stuckReasons[w.Reason] {
			out.Waiting = w.Reason
			break
		}
	}
	return out
}
