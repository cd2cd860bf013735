package waves

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/objects"
)

var (
	merged = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	grace  = 30 * time.Minute
	wave   = Wave{Name: "canary", Soak: 10 * time.Minute, MaxProxyRestarts: 1}
)

func readyPod(name string, since time.Time) Pod {
	return Pod{Name: name, Ready: true, ReadySince: since}
}

func deployment(pods ...Pod) Workload {
	return Workload{Kind: "Deployment", Name: "api", Found: true, Counted: true, Replicas: int32(len(pods)), Available: int32(len(pods)), Pods: pods}
}

// Each row names the API field its outcome turns on.
func TestJudge(t *testing.T) {
	ready := merged.Add(2 * time.Minute)
	tests := []struct {
		name  string
		field string
		wl    Workload
		now   time.Time
		want  Verdict
	}{
		{"deleted workload", "the Deployment object itself", Workload{Kind: "Deployment", Name: "api"}, merged, Verdict{Health: Gone}},
		{"GitOps has not applied the merge", "plan: pod sidecar.istio.io/status revision and istio-proxy image",
			func() Workload { w := deployment(readyPod("a", ready)); w.Drifted = true; return w }(), merged.Add(time.Minute), Verdict{Health: RollingOut}},
		{"still drifting after the grace time", "plan: pod sidecar.istio.io/status revision and istio-proxy image",
			func() Workload { w := deployment(readyPod("a", ready)); w.Drifted = true; return w }(), merged.Add(grace),
			Verdict{Health: Unhealthy, Why: "still runs another proxy 30m0s after the merge"}},
		{"moved to ambient mode, not yet captured", "pod annotation ambient.istio.io/redirection",
			func() Workload { w := deployment(readyPod("a", ready)); w.Uncaptured = "a"; return w }(), merged.Add(time.Minute), Verdict{Health: RollingOut}},
		{"not captured after the grace time", "pod annotation ambient.istio.io/redirection",
			func() Workload { w := deployment(readyPod("a", ready)); w.Uncaptured = "a"; return w }(), merged.Add(grace),
			Verdict{Health: Unhealthy, Why: "pod a is not captured by ztunnel (no ambient.istio.io/redirection: enabled) 30m0s after the merge"}},
		{"pod not yet Ready", "pod status.conditions[Ready].status",
			deployment(Pod{Name: "a"}), merged.Add(time.Minute), Verdict{Health: RollingOut}},
		{"pod not Ready after the grace time", "pod status.conditions[Ready].status",
			deployment(Pod{Name: "a"}), merged.Add(grace), Verdict{Health: Unhealthy, Why: "pod a not Ready 30m0s after the merge"}},
		{"fewer replicas available", "Deployment status.availableReplicas vs spec.replicas",
			func() Workload { w := deployment(readyPod("a", ready)); w.Replicas = 2; return w }(), merged.Add(time.Minute), Verdict{Health: RollingOut}},
		{"no pods of a Rollout", "Rollout pods (no status read)",
			Workload{Kind: "Rollout", Name: "api", Found: true}, merged.Add(time.Minute), Verdict{Health: RollingOut}},
		{"scaled to zero soaks from the merge", "Deployment spec.replicas",
			Workload{Kind: "Deployment", Name: "api", Found: true, Counted: true}, merged.Add(time.Minute), Verdict{Health: Soaking, SoakEnds: merged.Add(10 * time.Minute)}},
		{"ready, soaking", "pod status.conditions[Ready].lastTransitionTime",
			deployment(readyPod("a", ready), readyPod("b", merged.Add(time.Minute))), merged.Add(5 * time.Minute), Verdict{Health: Soaking, SoakEnds: ready.Add(10 * time.Minute)}},
		{"ready before the merge soaks from merged_at", "PR merged_at",
			deployment(readyPod("a", merged.Add(-time.Hour))), merged.Add(5 * time.Minute), Verdict{Health: Soaking, SoakEnds: merged.Add(10 * time.Minute)}},
		{"soaked", "pod status.conditions[Ready].lastTransitionTime",
			deployment(readyPod("a", ready)), ready.Add(10 * time.Minute), Verdict{Health: Healthy}},
		{"proxy restarts within the limit", "pod status.containerStatuses[istio-proxy].restartCount",
			deployment(Pod{Name: "a", Ready: true, ReadySince: ready, ProxyRestarts: 1}), ready.Add(time.Hour), Verdict{Health: Healthy}},
		{"proxy restarts above the limit", "pod status.containerStatuses[istio-proxy].restartCount",
			deployment(Pod{Name: "a", Ready: true, ReadySince: ready, ProxyRestarts: 2}), merged.Add(time.Minute),
			Verdict{Health: Unhealthy, Why: "istio-proxy of pod a restarted 2 times (max 1)"}},
		{"crash looping container", "pod status.containerStatuses[*].state.waiting.reason",
			deployment(Pod{Name: "a", Waiting: "CrashLoopBackOff"}), merged.Add(time.Minute), Verdict{Health: Unhealthy, Why: "pod a: CrashLoopBackOff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Judge(wave, grace, merged, tt.now, tt.wl), "reads %s", tt.field)
		})
	}
}

var three = []Wave{
	{Name: "canary", Soak: 10 * time.Minute},
	{Name: "non-critical", Soak: 10 * time.Minute, MaxUnhealthy: 1},
	{Name: "rest"},
}

func member(ns string, wave int, p Progress, workloads ...Workload) Member {
	return Member{Namespace: ns, Wave: wave, Progress: p, MergedAt: merged, Workloads: workloads}
}

func states(r Rollout) []State {
	out := make([]State, 0, len(r.Waves))
	for _, w := range r.Waves {
		out = append(out, w.State)
	}
	return out
}

func crashing(name string) Workload {
	w := deployment(Pod{Name: name + "-0", Waiting: "CrashLoopBackOff"})
	w.Name = name
	return w
}

// Each row names the fact the wave's state turns on.
func TestEvaluate(t *testing.T) {
	soaked := merged.Add(time.Hour)
	healthy := deployment(readyPod("a", merged.Add(time.Minute)))
	tests := []struct {
		name     string
		field    string
		members  []Member
		now      time.Time
		want     []State
		active   int
		blocking []string
	}{
		{"new target: only the first wave opens", "no PR carries the target in its state block",
			[]Member{member("a", 0, Pending), member("b", 1, Pending), member("c", 2, Pending)}, merged,
			[]State{StateInProgress, StateWaiting, StateWaiting}, 0, nil},
		{"open PR keeps the wave in progress", "PR state open",
			[]Member{member("a", 0, Open), member("b", 1, Pending)}, merged,
			[]State{StateInProgress, StateWaiting, StateWaiting}, 0, nil},
		{"merged and soaking", "PR merged_at, pod Ready lastTransitionTime",
			[]Member{member("a", 0, Merged, healthy), member("b", 1, Pending)}, merged.Add(5 * time.Minute),
			[]State{StateSoaking, StateWaiting, StateWaiting}, 0, nil},
		{"merged and soaked: the next wave opens", "PR merged_at, pod Ready lastTransitionTime",
			[]Member{member("a", 0, Merged, healthy), member("b", 1, Pending)}, soaked,
			[]State{StateDone, StateInProgress, StateWaiting}, 1, nil},
		{"closed unmerged counts as done", "PR state closed, merged false",
			[]Member{member("a", 0, Skipped), member("b", 1, Pending)}, merged,
			[]State{StateDone, StateInProgress, StateWaiting}, 1, nil},
		{"a wave with nothing to do is done", "no namespace of the wave drifts to the target",
			[]Member{member("c", 2, Pending)}, merged,
			[]State{StateDone, StateDone, StateInProgress}, 2, nil},
		{"unhealthy blocks the rollout", "pod containerStatuses state.waiting.reason",
			[]Member{member("a", 0, Merged, crashing("api")), member("b", 1, Pending)}, soaked,
			[]State{StateBlocked, StateWaiting, StateWaiting}, 0, []string{"a/Deployment/api"}},
		{"unhealthy within maxUnhealthy", "waves[1].maxUnhealthy",
			[]Member{member("b", 1, Merged, crashing("api")), member("c", 2, Pending)}, soaked,
			[]State{StateDone, StateDone, StateInProgress}, 2, nil},
		{"beyond maxUnhealthy", "waves[1].maxUnhealthy",
			[]Member{member("b", 1, Merged, crashing("api"), crashing("worker")), member("c", 2, Pending)}, soaked,
			[]State{StateDone, StateBlocked, StateWaiting}, 1, []string{"b/Deployment/api", "b/Deployment/worker"}},
		{"resumed by label", "namespace label rollout.resumeLabel = target id",
			[]Member{{Namespace: "a", Progress: Merged, MergedAt: merged, Resumed: true, Workloads: []Workload{crashing("api")}}, member("b", 1, Pending)}, soaked,
			[]State{StateDone, StateInProgress, StateWaiting}, 1, nil},
		{"namespaces no wave selects come last", "namespace labels and name",
			[]Member{member("a", 0, Skipped), member("z", 3, Pending)}, merged,
			[]State{StateDone, StateDone, StateDone, StateInProgress}, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate("1-25-0@proxyv2:1.25.0", three, tt.members, grace, tt.now)
			assert.Equal(t, tt.want, states(r), "reads %s", tt.field)
			assert.Equal(t, tt.active, r.Active)
			var blocking []string
			for _, w := range r.Waves {
				for _, b := range w.Blocking {
					blocking = append(blocking, b.Namespace+"/"+b.Kind+"/"+b.Name)
				}
			}
			assert.Equal(t, tt.blocking, blocking)
			_, blocked := r.Blocked()
			assert.Equal(t, tt.blocking != nil, blocked)
		})
	}
}

func TestSoakEndsIsTheLastWorkloads(t *testing.T) {
	late := deployment(readyPod("b", merged.Add(4*time.Minute)))
	r := Evaluate("t", three, []Member{member("a", 0, Merged, deployment(readyPod("a", merged.Add(time.Minute))), late)}, grace, merged.Add(5*time.Minute))
	assert.Equal(t, merged.Add(14*time.Minute), r.Waves[0].SoakEnds)
}

func TestOf(t *testing.T) {
	ws := []Wave{
		{Name: "canary", Names: []string{"canary-*"}},
		{Name: "non-critical", Labels: map[string]string{"tier": "non-critical"}},
		{Name: "named and labelled", Names: []string{"shop"}, Labels: map[string]string{"team": "shop"}},
	}
	tests := []struct {
		ns     string
		labels map[string]string
		want   int
	}{
		{"canary-1", nil, 0},
		{"canary-2", map[string]string{"tier": "non-critical"}, 0},
		{"orders", map[string]string{"tier": "non-critical"}, 1},
		{"shop", map[string]string{"team": "shop"}, 2},
		{"shop", nil, 3},
		{"other", nil, 3},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Of(ws, tt.ns, tt.labels), tt.ns)
	}
	assert.Equal(t, RestName, Name(ws, 3))
}

func TestTargetIDIsALabelValue(t *testing.T) {
	id := TargetID(TargetKey("1-25-0", "docker.io/istio/proxyv2:1.25.0"))
	assert.Regexp(t, `^t-[0-9a-f]{10}$`, id)
	assert.NotEqual(t, id, TargetID(TargetKey("1-26-0", "docker.io/istio/proxyv2:1.26.0")))
}

func TestRead(t *testing.T) {
	two := int32(2)
	since := metav1.NewTime(merged.Add(time.Minute))
	controller := true
	ref := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: &controller}}
	}
	pod := func(name string, ready corev1.ConditionStatus, restarts int32, deleted bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, OwnerReferences: ref("ReplicaSet", "api-5d")}}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: since}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app"}, {Name: "istio-proxy", RestartCount: restarts}}
		if deleted {
			p.DeletionTimestamp = &since
		}
		return p
	}
	set := &objects.Set{
		Deployments: []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}, Spec: appsv1.DeploymentSpec{Replicas: &two}, Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}},
		ReplicaSets: []*objects.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-5d", OwnerReferences: ref("Deployment", "api")}}},
		Pods:        objects.Pods(pod("api-5d-a", corev1.ConditionTrue, 0, false), pod("api-5d-b", corev1.ConditionFalse, 3, false), pod("api-5d-old", corev1.ConditionTrue, 0, true)),
	}
	got := Read(set, "shop", "Deployment", "api", false)
	require.True(t, got.Found)
	assert.Equal(t, Workload{Kind: "Deployment", Name: "api", Found: true, Counted: true, Replicas: 2, Available: 1, Pods: []Pod{
		{Name: "api-5d-a", Ready: true, ReadySince: since.Time},
		{Name: "api-5d-b", ReadySince: since.Time, ProxyRestarts: 3},
	}}, got)
	assert.False(t, Read(set, "shop", "Deployment", "gone", false).Found)

	// In ambient mode, a pod without a sidecar that istio-cni has not
	// marked captured keeps the move from being done.
	set.Namespaces = []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"istio.io/dataplane-mode": "ambient"}}}}
	assert.Equal(t, "api-5d-a", Read(set, "shop", "Deployment", "api", false).Uncaptured)
	captured := pod("api-5d-a", corev1.ConditionTrue, 0, false)
	captured.Annotations = map[string]string{"ambient.istio.io/redirection": "enabled"}
	other := pod("api-5d-b", corev1.ConditionTrue, 0, false)
	other.Labels = map[string]string{"istio.io/dataplane-mode": "none"}
	set.Pods = objects.Pods(captured, other)
	assert.Empty(t, Read(set, "shop", "Deployment", "api", false).Uncaptured, "captured, or left out of ambient mode by its own label")
}

// TestReadCountsThePodsTheWorkloadRestarts: a Flagger Canary's target is
// judged by its primary's pods, a Deployment a Rollout's workloadRef names
// by the Rollout's, as the plan attributes them.
func TestReadCountsThePodsTheWorkloadRestarts(t *testing.T) {
	zero := int32(0)
	controller := true
	ref := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &controller}}
	}
	pod := func(name, rs string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, OwnerReferences: ref("apps/v1", "ReplicaSet", rs)}}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	meta := func(name string, owners []metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "shop", Name: name, OwnerReferences: owners}
	}
	set := &objects.Set{
		Deployments: []*appsv1.Deployment{
			{ObjectMeta: meta("podinfo", nil), Spec: appsv1.DeploymentSpec{Replicas: &zero}},
			{ObjectMeta: meta("podinfo-primary", ref("flagger.app/v1beta1", "Canary", "podinfo"))},
			{ObjectMeta: meta("api", nil), Spec: appsv1.DeploymentSpec{Replicas: &zero}},
		},
		Canaries: []objects.Canary{{ObjectMeta: meta("podinfo", nil), Spec: objects.CanarySpec{
			TargetRef: objects.CanaryTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"}}}},
		Rollouts: []*objects.Rollout{{ObjectMeta: meta("api", nil), Spec: objects.RolloutSpec{
			WorkloadRef: &objects.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}}}},
		ReplicaSets: []*objects.ReplicaSet{
			{ObjectMeta: meta("podinfo-primary-5d", ref("apps/v1", "Deployment", "podinfo-primary"))},
			{ObjectMeta: meta("api-7c", ref("argoproj.io/v1alpha1", "Rollout", "api"))},
		},
		Pods: objects.Pods(pod("podinfo-primary-5d-a", "podinfo-primary-5d"), pod("api-7c-a", "api-7c"), pod("api-7c-b", "api-7c")),
	}
	podinfo := Read(set, "shop", "Deployment", "podinfo", false)
	assert.Equal(t, []Pod{{Name: "podinfo-primary-5d-a", Ready: true}}, podinfo.Pods)
	assert.Empty(t, notReady(podinfo), "a target scaled to zero between analyses is judged by its primary")
	api := Read(set, "shop", "Deployment", "api", false)
	assert.Equal(t, []Pod{{Name: "api-7c-a", Ready: true}, {Name: "api-7c-b", Ready: true}}, api.Pods)
	assert.Empty(t, Read(set, "shop", "Rollout", "api", false).Pods, "the Rollout's pods are the Deployment's to restart")
}

// TestMayOpen: namespaces of done waves and of the active one get their PRs;
// a blocked active wave holds even its own namespaces still without one.
func TestMayOpen(t *testing.T) {
	waves := []Status{{State: StateDone}, {State: StateInProgress}, {State: StateWaiting}}
	blocked := []Status{{State: StateDone}, {State: StateBlocked}, {State: StateWaiting}}
	tests := []struct {
		name    string
		rollout Rollout
		wave    int
		want    bool
	}{
		{"a done wave", Rollout{Waves: waves, Active: 1}, 0, true},
		{"the active wave", Rollout{Waves: waves, Active: 1}, 1, true},
		{"a later wave", Rollout{Waves: waves, Active: 1}, 2, false},
		{"the blocked active wave", Rollout{Waves: blocked, Active: 1}, 1, false},
		{"a done wave before a blocked one", Rollout{Waves: blocked, Active: 1}, 0, true},
		{"every wave done", Rollout{Waves: waves[:1], Active: 1}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.rollout.MayOpen(tt.wave))
		})
	}
}
