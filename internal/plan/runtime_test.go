package plan_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/image"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// The runtime fixture is a cluster whose pods run what admission policies,
// progressive-delivery controllers and operators made of the injected
// proxy, one namespace per case, and the repository it is applied from.
const (
	runtimeFixture = "../../testdata/runtime"
	runtimeProxy   = "docker.io/istio/proxyv2:1.24.1"
	runtimeOld     = "docker.io/istio/proxyv2:1.23.2"
	// runtimeDigest is what Kyverno's mutateDigest appends: the digest the
	// tag resolved to when the pod was admitted.
	runtimeDigest = "sha256:0d6e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5e7f9a1b3c5d7e9f1a3b5c7d9e"
)

var runtimeStart = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// runtimeBuilder makes the API server's view of a few workloads.
type runtimeBuilder struct{ set *objects.Set }

func uidOf(kind, namespace, name string) types.UID {
	return types.UID(fmt.Sprintf("%s-%s-%s", kind, namespace, name))
}

func runtimeMeta(kind, namespace, name string, owners ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: namespace, Name: name, UID: uidOf(kind, namespace, name), OwnerReferences: owners,
		CreationTimestamp: metav1.NewTime(runtimeStart.Add(-30 * 24 * time.Hour)),
	}
}

func runtimeTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: "registry.example.com/" + app + ":1"}}},
	}
}

// pods adds n pods made from template by owner, each with a sidecar
// running proxy ("" for none).
func (b *runtimeBuilder) pods(namespace, prefix string, n int, owner metav1.OwnerReference, template corev1.PodTemplateSpec, proxy string) {
	for i := range n {
		p := corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: runtimeMeta("Pod", namespace, fmt.Sprintf("%s-%d", prefix, i), owner),
			Spec:       *template.Spec.DeepCopy(),
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.NewTime(runtimeStart.Add(-time.Duration(i+1) * time.Hour))),
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		p.Labels = map[string]string{}
		for k, v := range template.Labels {
			p.Labels[k] = v
		}
		p.Spec.NodeName = "node-a"
		if proxy != "" {
			meshtest.InjectPod(&p, "default", proxy)
		}
		b.set.Pods = append(b.set.Pods, objects.Pods(p)...)
	}
}

// deployment adds a Deployment, its ReplicaSet and n pods, and returns the
// Deployment for the case to change.
func (b *runtimeBuilder) deployment(namespace, name string, n int, proxy string, owners ...metav1.OwnerReference) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: runtimeMeta("Deployment", namespace, name, owners...),
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(n)), Template: runtimeTemplate(name)},
	}
	b.set.Deployments = append(b.set.Deployments, d)
	b.replicaSetPods(namespace, name, meshtest.ControllerRef("apps/v1", "Deployment", name, string(d.UID)), d.Spec.Template, n, proxy)
	return d
}

func (b *runtimeBuilder) replicaSetPods(namespace, owner string, ref metav1.OwnerReference, template corev1.PodTemplateSpec, n int, proxy string) {
	const hash = "5d8c7b9f6"
	rs := &objects.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: runtimeMeta("ReplicaSet", namespace, owner+"-"+hash, ref),
	}
	b.set.ReplicaSets = append(b.set.ReplicaSets, rs)
	hashLabel := "pod-template-hash"
	if ref.Kind == "Rollout" {
		hashLabel = "rollouts-pod-template-hash"
	}
	template = *template.DeepCopy()
	template.Labels[hashLabel] = hash
	b.pods(namespace, rs.Name, n, meshtest.ControllerRef("apps/v1", "ReplicaSet", rs.Name, string(rs.UID)), template, proxy)
}

func (b *runtimeBuilder) statefulSet(namespace, name string, n int, proxy string, strategy appsv1.StatefulSetUpdateStrategyType, owners ...metav1.OwnerReference) {
	s := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: runtimeMeta("StatefulSet", namespace, name, owners...),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(n)), Template: runtimeTemplate(name),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: strategy}},
	}
	b.set.StatefulSets = append(b.set.StatefulSets, s)
	b.pods(namespace, name, n, meshtest.ControllerRef("apps/v1", "StatefulSet", name, string(s.UID)), s.Spec.Template, proxy)
}

// runtimeCluster is the fixture's cluster: the default revision injects
// 1.24.1, and in each namespace something between the injector and the
// runtime changed what the pods run, or who runs them.
func runtimeCluster() *objects.Set {
	b := &runtimeBuilder{set: &objects.Set{}}
	meshtest.IstiodRevision("default", runtimeProxy).AddTo(b.set)
	for _, ns := range []string{"canary", "digest", "hub", "mirror", "ondelete", "operators", "rollouts"} {
		b.set.Namespaces = append(b.set.Namespaces, meshtest.Namespace(ns, map[string]string{"istio-injection": "enabled"}))
	}

	// Kyverno pins the image the injector wrote by digest: web runs the
	// injected tag, cart an older one under its digest.
	b.deployment("digest", "web", 2, runtimeProxy+"@"+runtimeDigest)
	b.deployment("digest", "cart", 2, runtimeOld+"@"+runtimeDigest)

	// A policy moved every docker.io/istio image to a mirror.
	b.deployment("mirror", "search", 2, "mirror.corp/istio/proxyv2:1.24.1")

	// Another hub under the same image name and tag.
	b.deployment("hub", "edge", 1, "gcr.io/istio-release/proxyv2:1.24.1")

	// Flagger: the target podinfo is scaled to zero between analyses; its
	// primary, which the Canary controls, runs the last promoted template.
	canary := objects.Canary{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flagger.app/v1beta1", Kind: "Canary"},
		ObjectMeta: runtimeMeta("Canary", "canary", "podinfo"),
		Spec:       objects.CanarySpec{TargetRef: objects.CanaryTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"}},
	}
	b.set.Canaries = append(b.set.Canaries, canary)
	b.deployment("canary", "podinfo", 0, "")
	primary := b.deployment("canary", "podinfo-primary", 3, runtimeOld,
		meshtest.ControllerRef("flagger.app/v1beta1", "Canary", "podinfo", string(canary.UID)))
	primary.Spec.Template.Labels["app"] = "podinfo-primary"
	primary.Spec.Template.Annotations = map[string]string{"flagger-id": "8a3f0c4e-6b1d-4e2a-9c7f-5d3b1a9e7c20"}

	// Argo Rollouts: Rollout api takes its template from Deployment api,
	// scaled to zero.
	b.deployment("rollouts", "api", 0, "")
	rollout := &objects.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout"},
		ObjectMeta: runtimeMeta("Rollout", "rollouts", "api"),
		Spec:       objects.RolloutSpec{WorkloadRef: &objects.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}},
	}
	b.set.Rollouts = append(b.set.Rollouts, rollout)
	b.replicaSetPods("rollouts", "api", meshtest.ControllerRef("argoproj.io/v1alpha1", "Rollout", "api", string(rollout.UID)), runtimeTemplate("api"), 3, runtimeOld)

	// Operators: the Dragonfly operator owns its StatefulSet without the
	// controller flag; another operator controls its Deployment.
	b.statefulSet("operators", "cache", 2, runtimeOld, appsv1.OnDeleteStatefulSetStrategyType,
		metav1.OwnerReference{APIVersion: "dragonflydb.io/v1alpha1", Kind: "Dragonfly", Name: "cache", UID: uidOf("Dragonfly", "operators", "cache")})
	b.deployment("operators", "engine-api", 1, runtimeOld,
		meshtest.ControllerRef("example.com/v1", "Engine", "engine", string(uidOf("Engine", "operators", "engine"))))

	// Updated OnDelete: a template change restarts nothing.
	b.statefulSet("ondelete", "db", 2, runtimeOld, appsv1.OnDeleteStatefulSetStrategyType)
	logs := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: runtimeMeta("DaemonSet", "ondelete", "logs"),
		Spec: appsv1.DaemonSetSpec{Template: runtimeTemplate("logs"),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
	}
	b.set.DaemonSets = append(b.set.DaemonSets, logs)
	b.pods("ondelete", "logs", 2, meshtest.ControllerRef("apps/v1", "DaemonSet", "logs", string(logs.UID)), logs.Spec.Template, runtimeOld)
	return b.set
}

// TestRuntimeSnapshotIsCurrent keeps testdata/runtime/cluster the cluster
// runtimeCluster builds; -update rewrites it.
func TestRuntimeSnapshotIsCurrent(t *testing.T) {
	dir := filepath.Join(runtimeFixture, "cluster")
	if *updateSnapshot {
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, snapshot.Write(runtimeCluster(), dir))
	}
	fresh := t.TempDir()
	require.NoError(t, snapshot.Write(runtimeCluster(), fresh))
	entries, err := os.ReadDir(fresh)
	require.NoError(t, err)
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(fresh, e.Name()))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err, "run go test ./internal/plan -run TestRuntimeSnapshotIsCurrent -update")
		assert.Equal(t, string(want), string(got), e.Name())
	}
}

// outcome is what the plan does with one workload or owner: its manifest
// status and edit, or why it is skipped.
type outcome struct {
	status, edit, path string
	skip               drift.SkipReason
}

func outcomes(p drift.Plan) map[string]outcome {
	out := map[string]outcome{}
	for _, w := range p.Workloads {
		out[w.Namespace+"/"+w.Kind+"/"+w.Name] = outcome{status: w.Manifest.Status, edit: w.Manifest.Edit, path: w.Manifest.Path}
	}
	for _, s := range p.Skipped {
		out[s.Namespace+"/"+s.Kind+"/"+s.Name] = outcome{skip: s.Reason}
	}
	return out
}

func inPlace(path string) outcome {
	return outcome{status: drift.ManifestFound, edit: drift.EditInPlace, path: path}
}

// TestWhatReallyRuns is the decision table of the runtime fixture: each
// namespace is one case of what runs between the injector and the pods,
// each configuration of images: a column. Every row's plan and edits are
// golden files under testdata/runtime/golden.
func TestWhatReallyRuns(t *testing.T) {
	set, err := snapshot.Read(filepath.Join(runtimeFixture, "cluster"))
	require.NoError(t, err)
	// What every configuration plans alike.
	common := map[string]outcome{
		// A digest appended to the injected tag is the injected image; an
		// older tag under a digest still drifts.
		"digest/Deployment/cart": inPlace("apps/digest/web.yaml"),
		// Flagger's primary is restarted through the Canary's target;
		// nothing is said of podinfo-primary itself.
		"canary/Deployment/podinfo": inPlace("apps/canary/podinfo.yaml"),
		// The Rollout's pods are restarted through the Deployment its
		// workloadRef names.
		"rollouts/Deployment/api":   inPlace("apps/rollouts/api.yaml"),
		"operators/Dragonfly/cache": {skip: drift.SkipNotRestartable},
		"operators/Engine/engine":   {skip: drift.SkipNotRestartable},
		"ondelete/StatefulSet/db":   {skip: drift.SkipOnDelete},
		"ondelete/DaemonSet/logs":   {skip: drift.SkipOnDelete},
	}
	with := func(extra map[string]outcome) map[string]outcome {
		out := map[string]outcome{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name   string
		images image.Identity
		want   map[string]outcome
	}{
		{
			// The defaults: registries compared, no mirror declared.
			name: "defaults",
			want: with(map[string]outcome{
				"mirror/Deployment/search": inPlace("apps/mirror/search.yaml"),
				"hub/Deployment/edge":      inPlace("apps/hub/gateway.yaml"),
			}),
		},
		{
			name:   "mirrors",
			images: image.Identity{Mirrors: map[string]string{"mirror.corp/istio": "docker.io/istio"}},
			want: with(map[string]outcome{
				"hub/Deployment/edge": inPlace("apps/hub/gateway.yaml"),
			}),
		},
		{
			name:   "registry-ignored",
			images: image.Identity{IgnoreRegistry: true},
			want:   with(nil),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := plan.Build(set, plan.Options{
				Drift:    drift.Options{Cluster: "prod-eu-1", Images: tt.images},
				RepoRoot: filepath.Join(runtimeFixture, "repo"),
			})
			require.NoError(t, err)
			assert.Equal(t, tt.want, outcomes(res.Plan))

			data, err := json.MarshalIndent(res.Plan, "", "  ")
			require.NoError(t, err)
			runtimeGolden(t, tt.name+".json", append(data, '\n'))
			runtimeGolden(t, tt.name+".diff", []byte(edit.UnifiedDiff(res.Edits.All())))

			var edited []string
			for _, e := range res.Edits.All() {
				edited = append(edited, e.Path)
			}
			assert.NotContains(t, edited, "apps/canary/canary.yaml", "the Canary is never edited")
			assert.NotContains(t, edited, "apps/rollouts/rollout.yaml", "the Rollout is never edited")
		})
	}
}

func runtimeGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(runtimeFixture, "golden", name)
	if *updateSnapshot {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/plan -run TestWhatReallyRuns -update")
	assert.Equal(t, string(want), string(got), path)
}

// TestDigestedPodsAfterTheirRestartDoNotDrift follows the restart kedge
// plans for a workload whose pods Kyverno pins by digest: once Git carries
// the restart and the new pods run the injected tag under a digest again,
// nothing drifts and nothing is edited, where comparing the digested image
// with the injected one would keep the workload drifting (and already
// bumped) for ever.
func TestDigestedPodsAfterTheirRestartDoNotDrift(t *testing.T) {
	set, err := snapshot.Read(filepath.Join(runtimeFixture, "cluster"))
	require.NoError(t, err)
	repo := copyTree(t, filepath.Join(runtimeFixture, "repo"))
	opts := plan.Options{Drift: drift.Options{Cluster: "prod-eu-1", IncludeNamespaces: []string{"digest"}}, RepoRoot: repo}
	before, err := plan.Build(set, opts)
	require.NoError(t, err)
	require.Len(t, before.Plan.Workloads, 1)
	cart := before.Plan.Workloads[0]
	require.Equal(t, "cart", cart.Name)
	edits := before.Edits.All()
	require.Len(t, edits, 1)
	require.NoError(t, os.WriteFile(filepath.Join(repo, edits[0].Path), edits[0].After, 0o644))

	// The GitOps controller applies the template; the Deployment rolls its
	// pods, and Kyverno pins the new ones by digest too.
	target := restart.TargetValue(cart.Desired)
	after := *set
	after.Deployments = slices.Clone(set.Deployments)
	after.Pods = nil
	for i, d := range after.Deployments {
		if d.Namespace == "digest" && d.Name == "cart" {
			restarted := *d
			restarted.Spec.Template = *d.Spec.Template.DeepCopy()
			restarted.Spec.Template.Annotations = map[string]string{
				restart.DefaultRestartAnnotation: restart.RestartValue(cart, target),
				restart.DefaultTargetAnnotation:  target,
			}
			after.Deployments[i] = &restarted
		}
	}
	for _, p := range set.Pods {
		if p.Namespace == "digest" && p.Proxy != nil && p.Proxy.Image == runtimeOld+"@"+runtimeDigest {
			restarted := *p
			restarted.Proxy = &objects.PodProxy{Image: runtimeProxy + "@" + runtimeDigest}
			p = &restarted
		}
		after.Pods = append(after.Pods, p)
	}

	res, err := plan.Build(&after, opts)
	require.NoError(t, err)
	assert.Empty(t, res.Plan.Workloads, "neither proxy-image nor already-bumped")
	assert.Empty(t, res.Edits.All())
}

// copyTree copies a fixture directory into a temporary one.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	}))
	return dst
}
