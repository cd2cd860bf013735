package waves

import (
	"fmt"
	"time"
)

// Pod is what the gate reads of one pod.
type Pod struct {
	Name string
	// Ready and ReadySince are status.conditions[type=Ready]: its status
	// and lastTransitionTime.
	Ready      bool
	ReadySince time.Time
	// ProxyRestarts is the istio-proxy container's restartCount (in
	// status.containerStatuses, or initContainerStatuses for a native
	// sidecar).
	ProxyRestarts int32
	// Waiting is a container's state.waiting.reason when it is one that
	// does not clear without a change (CrashLoopBackOff, image pull
	// errors).
	Waiting string
}

// Workload is what the gate reads of one workload a merged PR restarted.
type Workload struct {
	Kind, Name string
	// Found is false when the workload is gone from the cluster.
	Found bool
	// Drifted is set while the plan still lists it: some pod runs another
	// proxy than the target.
	Drifted bool
	// Uncaptured, in a namespace in ambient mode, names a pod without a
	// sidecar that ztunnel does not capture yet: the move is not done.
	Uncaptured string
	// Replicas and Available are spec.replicas and status.availableReplicas
	// (a DaemonSet's desiredNumberScheduled and numberAvailable). Counted
	// is false for kinds kedge reads no status of (Argo Rollouts): their
	// pods alone decide.
	Replicas, Available int32
	Counted             bool
	Pods                []Pod
}

// Health is the gate's verdict on one workload.
type Health string

const (
	// Gone: deleted; it neither passes nor blocks the wave.
	Gone Health = "gone"
	// RollingOut: not yet on the target, or not yet Ready and available,
	// within rollout.grace of the merge.
	RollingOut Health = "rolling-out"
	// Soaking: healthy, for less than the wave's soak time.
	Soaking Health = "soaking"
	// Healthy: healthy for the soak time.
	Healthy Health = "healthy"
	// Unhealthy: blocks the wave (beyond maxUnhealthy).
	Unhealthy Health = "unhealthy"
)

// Verdict is Judge's answer.
type Verdict struct {
	Health Health
	// SoakEnds is when a Soaking workload will have soaked.
	SoakEnds time.Time
	// Why says what made it Unhealthy.
	Why string
}

// Judge is the health gate of one workload a PR merged at mergedAt
// restarted. The soak time runs from the later of the merge and the last of
// its pods turning Ready, both read from the API (merged_at, the Ready
// condition's lastTransitionTime), so it survives a restart of kedge, and a
// pod that turns unready and back starts it again.
func Judge(w Wave, grace time.Duration, mergedAt, now time.Time, wl Workload) Verdict {
	if !wl.Found {
		return Verdict{Health: Gone}
	}
	if why := broken(w, wl); why != "" {
		return Verdict{Health: Unhealthy, Why: why}
	}
	late := now.Sub(mergedAt) >= grace
	if wl.Drifted {
		return pastGrace(late, "still runs another proxy "+grace.String()+" after the merge")
	}
	if wl.Uncaptured != "" {
		return pastGrace(late, "pod "+wl.Uncaptured+" is not captured by ztunnel (no ambient.istio.io/redirection: enabled) "+grace.String()+" after the merge")
	}
	if why := notReady(wl); why != "" {
		return pastGrace(late, why+" "+grace.String()+" after the merge")
	}
	start := mergedAt
	for _, p := range wl.Pods {
		if p.ReadySince.After(start) {
			start = p.ReadySince
		}
	}
	if ends := start.Add(w.Soak); now.Before(ends) {
		return Verdict{Health: Soaking, SoakEnds: ends}
	}
	return Verdict{Health: Healthy}
}

func pastGrace(late bool, why string) Verdict {
	if late {
		return Verdict{Health: Unhealthy, Why: why}
	}
	return Verdict{Health: RollingOut}
}

// broken names what makes a workload unhealthy whatever the time: proxy
// restarts above the limit or a container stuck waiting.
func broken(w Wave, wl Workload) string {
	for _, p := range wl.Pods {
		if p.ProxyRestarts > w.MaxProxyRestarts {
			return fmt.Sprintf("istio-proxy of pod %s restarted %d times (max %d)", p.Name, p.ProxyRestarts, w.MaxProxyRestarts)
		}
		if p.Waiting != "" {
			return fmt.Sprintf("pod %s: %s", p.Name, p.Waiting)
		}
	}
	return ""
}

// notReady names the first thing missing for a workload to be Ready and
// available, or "".
func notReady(wl Workload) string {
	for _, p := range wl.Pods {
		if !p.Ready {
			return "pod " + p.Name + " not Ready"
		}
	}
	if wl.Counted && wl.Available < wl.Replicas {
		return fmt.Sprintf("%d of %d replicas available", wl.Available, wl.Replicas)
	}
	if len(wl.Pods) == 0 && (!wl.Counted || wl.Replicas > 0) {
		return "no pods"
	}
	return ""
}
