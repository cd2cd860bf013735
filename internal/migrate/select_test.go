package migrate

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	image123 = "docker.io/istio/proxyv2:1.23.2"
	image124 = "docker.io/istio/proxyv2:1.24.0"
	image126 = "docker.io/istio/proxyv2:1.26.0"
)

// canaryMesh: the default revision and 1-23-2 on 1.23.2, a canary 1-24-0
// with the tag prod pointing at it.
func canaryMesh() []meshtest.Install {
	return []meshtest.Install{
		meshtest.IstiodRevision("default", image123),
		meshtest.IstiodRevision("1-23-2", image123),
		meshtest.IstiodRevision("1-24-0", image124),
		meshtest.RevisionTag("prod", "1-24-0"),
	}
}

func world(installs []meshtest.Install, namespaces ...corev1.Namespace) (*objects.Set, *mesh.Model) {
	set := &objects.Set{Namespaces: namespaces}
	meshtest.Merge(installs...).AddTo(set)
	return set, mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps)
}

func namespace(name string, labels map[string]string, annotations ...map[string]string) corev1.Namespace {
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if len(annotations) > 0 {
		ns.Annotations = annotations[0]
	}
	return ns
}

func TestValidateChecksTheTargetAgainstTheMesh(t *testing.T) {
	_, model := world(canaryMesh())
	tests := []struct {
		name     string
		policies []Policy
		key      string
	}{
		{"revision", []Policy{{Key: "migrations[0]", From: "1-23-2", To: "1-24-0"}}, ""},
		{"tag", []Policy{{Key: "migrations[0]", From: "1-23-2", To: "prod"}}, ""},
		{"from a revision that is gone", []Policy{{Key: "migrations[0]", From: "1-21-0", To: "prod"}}, ""},
		{"unknown target", []Policy{{Key: "migrations[0]", From: "1-23-2", To: "prod"}, {Key: "migrations[1]", From: "default", To: "canary"}}, "migrations[1].to"},
		{"same as from", []Policy{{Key: "migrations[0]", From: "prod", To: "prod"}}, "migrations[0].to"},
		{"no from", []Policy{{Key: "migrations[0]", To: "prod"}}, "migrations[0].from"},
		{"key derived from the position", []Policy{{From: "1-23-2", To: "nope"}}, "migrations[0].to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(model, tt.policies)
			if tt.key == "" {
				require.NoError(t, err)
				return
			}
			var pe *PolicyError
			require.True(t, errors.As(err, &pe), "%v", err)
			assert.Equal(t, tt.key, pe.Key)
		})
	}
	err := Validate(model, []Policy{{Key: "migrations[0]", From: "1-23-2", To: "canary"}})
	assert.EqualError(t, err, `migrations[0].to: "canary" is neither a revision nor a revision tag of the mesh (revisions: 1-23-2, 1-24-0, default; tags: prod)`)
}

func TestSelectDecidesWhichNamespacesMoveAndWhy(t *testing.T) {
	web := namespace("web", map[string]string{"istio.io/rev": "1-23-2", "team": "web"})
	legacy := namespace("legacy", map[string]string{"istio-injection": "enabled", "team": "web"})
	both := namespace("both", map[string]string{"istio-injection": "enabled", "istio.io/rev": "1-23-2"})
	disabled := namespace("disabled", map[string]string{"istio-injection": "disabled", "istio.io/rev": "1-23-2"})
	pinned := namespace("pinned", map[string]string{"istio.io/rev": "1-23-2", "kedge.io/no-migration": "true"})
	unpinned := namespace("unpinned", map[string]string{"istio.io/rev": "1-23-2", "kedge.io/no-migration": "false"})
	ignored := namespace("ignored", map[string]string{"istio.io/rev": "1-23-2"}, map[string]string{"kedge.io/ignore": "true"})
	system := namespace("kube-system", map[string]string{"istio.io/rev": "1-23-2"})
	onTarget := namespace("done", map[string]string{"istio.io/rev": "prod"})
	scope := Scope{ExcludeNamespaces: []string{"kube-*"}}

	tests := []struct {
		name       string
		installs   []meshtest.Install
		namespaces []corev1.Namespace
		policies   []Policy
		want       []drift.Migration
	}{
		{
			name:       "a revision label moves to a tag",
			installs:   canaryMesh(),
			namespaces: []corev1.Namespace{web, onTarget, ignored, system},
			policies:   []Policy{{From: "1-23-2", To: "prod"}},
			want:       []drift.Migration{moving("web", "1-23-2", "prod", "1-24-0")},
		},
		{
			// It wins over istio.io/rev, so it is taken off in the same move.
			name:       "istio-injection=enabled is removed",
			installs:   canaryMesh(),
			namespaces: []corev1.Namespace{legacy, both},
			policies:   []Policy{{From: "default", To: "prod"}, {From: "1-23-2", To: "prod"}},
			want: []drift.Migration{
				// Both policies select it; the first one wins.
				removing(moving("both", "default", "prod", "1-24-0"), "istio-injection"),
				removing(moving("legacy", "default", "prod", "1-24-0"), "istio-injection"),
			},
		},
		{
			name:       "istio-injection=disabled is a choice kedge leaves alone",
			installs:   canaryMesh(),
			namespaces: []corev1.Namespace{disabled},
			policies:   []Policy{{From: "1-23-2", To: "prod"}},
			want: []drift.Migration{
				block(moving("disabled", "1-23-2", "prod", "1-24-0"), drift.BlockIstioInjection,
					"istio-injection=disabled wins over istio.io/rev: with istio.io/rev=prod no injector webhook would select the namespace; remove istio-injection from the namespace in Git to move it"),
			},
		},
		{
			name:       "selector and opt-out label",
			installs:   canaryMesh(),
			namespaces: []corev1.Namespace{web, legacy, pinned, unpinned},
			policies:   []Policy{{From: "1-23-2", To: "1-24-0", NamespaceSelector: map[string]string{"team": "web"}}, {From: "1-23-2", To: "prod", OptOutLabel: "kedge.io/no-migration"}},
			want: []drift.Migration{
				block(moving("pinned", "1-23-2", "prod", "1-24-0"), drift.BlockOptedOut, "label kedge.io/no-migration=true"),
				moving("unpinned", "1-23-2", "prod", "1-24-0"),
				moving("web", "1-23-2", "1-24-0", "1-24-0"),
			},
		},
		{
			name:       "selector by namespace name",
			installs:   canaryMesh(),
			namespaces: []corev1.Namespace{web, unpinned},
			policies:   []Policy{{From: "1-23-2", To: "prod", NamespaceSelector: map[string]string{"kubernetes.io/metadata.name": "unpinned"}}},
			want:       []drift.Migration{moving("unpinned", "1-23-2", "prod", "1-24-0")},
		},
		{
			name:       "target without injector ConfigMap",
			installs:   append(canaryMesh(), meshtest.IstiodRevision("1-26-0", image126, meshtest.WithoutConfigMap())),
			namespaces: []corev1.Namespace{web},
			policies:   []Policy{{From: "1-23-2", To: "1-26-0"}},
			want:       []drift.Migration{block(moving("web", "1-23-2", "1-26-0", "1-26-0"), drift.BlockTargetNotReady, "revision 1-26-0 has no injector ConfigMap")},
		},
		{
			name:       "target without injector webhook",
			installs:   append(canaryMesh(), meshtest.Install{ConfigMaps: meshtest.IstiodRevision("1-26-0", image126).ConfigMaps}),
			namespaces: []corev1.Namespace{web},
			policies:   []Policy{{From: "1-23-2", To: "1-26-0"}},
			want:       []drift.Migration{block(moving("web", "1-23-2", "1-26-0", "1-26-0"), drift.BlockTargetNotReady, "revision 1-26-0 has no injector webhook configuration")},
		},
		{
			name: "deactivated target webhooks",
			installs: []meshtest.Install{
				meshtest.Deactivate(meshtest.IstiodRevision("default", image123)),
				meshtest.IstiodRevision("1-23-2", image123),
			},
			namespaces: []corev1.Namespace{web},
			policies:   []Policy{{From: "1-23-2", To: "default"}},
			want: []drift.Migration{block(moving("web", "1-23-2", "default", "default"), drift.BlockNotInjected,
				"with istio.io/rev=default no injector webhook would select the namespace")},
		},
		{
			name: "a tag and a revision of the same name",
			installs: append(canaryMesh(),
				meshtest.IstiodRevision("prod", image126)),
			namespaces: []corev1.Namespace{web},
			policies:   []Policy{{From: "1-23-2", To: "prod"}},
			want: []drift.Migration{block(moving("web", "1-23-2", "prod", "1-24-0"), drift.BlockNotInjected,
				"with istio.io/rev=prod the webhooks of several revisions would select the namespace (1-24-0, prod)")},
		},
		{
			name:       "tag default takes over the label value default",
			installs:   []meshtest.Install{meshtest.Deactivate(meshtest.IstiodRevision("default", image123)), meshtest.IstiodRevision("1-24-0", image124), meshtest.RevisionTag("default", "1-24-0"), meshtest.IstiodRevision("1-23-2", image123)},
			namespaces: []corev1.Namespace{web},
			policies:   []Policy{{From: "1-23-2", To: "default"}},
			want:       []drift.Migration{moving("web", "1-23-2", "default", "1-24-0")},
		},
		{
			name:       "no policies",
			installs:   canaryMesh(),
			namespaces: []corev1.Namespace{web},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, model := world(tt.installs, tt.namespaces...)
			require.NoError(t, Validate(model, tt.policies))
			assert.Equal(t, tt.want, Select(set, model, tt.policies, scope))
		})
	}
}

func moving(ns, from, to, rev string) drift.Migration {
	return drift.Migration{Namespace: ns, From: from, To: to, Revision: rev, Workloads: []drift.MigrationWorkload{}}
}

func block(m drift.Migration, why drift.MigrationBlock, detail string) drift.Migration {
	m.Blocked, m.Detail = why, detail
	return m
}

func removing(m drift.Migration, labels ...string) drift.Migration {
	m.RemoveLabels = labels
	return m
}

// TestDriftIsComputedAgainstTheTarget: the plan of a relabelled cluster
// restarts workloads onto the revision the namespace moves to, while the
// cluster as read is left as it is.
func TestDriftIsComputedAgainstTheTarget(t *testing.T) {
	set, model := world(canaryMesh(),
		namespace("web", map[string]string{"istio.io/rev": "1-23-2"}),
		namespace("legacy", map[string]string{"istio-injection": "enabled"}),
	)
	addInjectedDeployment(set, "web", "api", "1-23-2", image123)
	addInjectedDeployment(set, "legacy", "old", "default", image123)
	policies := []Policy{{From: "1-23-2", To: "prod"}, {From: "default", To: "prod"}}

	before := drift.Compute(set, model, drift.Options{})
	assert.Empty(t, before.Workloads, "in sync with what the labels say now")

	migrations := Select(set, model, policies, Scope{})
	relabelled := Relabel(set, migrations)
	after := drift.Compute(relabelled, model, drift.Options{})
	require.Len(t, after.Workloads, 2, "both namespaces move")
	for _, w := range after.Workloads {
		assert.Equal(t, []drift.Reason{drift.ReasonRevision}, w.Reasons, w.Name)
		assert.Equal(t, drift.Desired{Revision: "1-24-0", Image: image124}, w.Desired, w.Name)
	}

	assert.Equal(t, "1-23-2", set.Namespaces[0].Labels["istio.io/rev"], "the cluster read is unchanged")
	assert.Equal(t, "enabled", set.Namespaces[1].Labels["istio-injection"], "the cluster read is unchanged")
	assert.Equal(t, "prod", relabelled.Namespaces[0].Labels["istio.io/rev"])
	assert.NotContains(t, relabelled.Namespaces[1].Labels, "istio-injection", "taken off with the move")
	assert.Equal(t, "prod", relabelled.Namespaces[1].Labels["istio.io/rev"])
	assert.Same(t, set, Relabel(set, nil), "nothing moves, nothing is copied")
}

// addInjectedDeployment adds a Deployment with one ReplicaSet and one pod
// injected by rev.
func addInjectedDeployment(set *objects.Set, ns, name, rev, image string) {
	ctrl := true
	dep := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("dep-" + ns + "-" + name)},
	}
	rs := objects.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns, UID: types.UID("rs-" + ns + "-" + name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: dep.UID, Controller: &ctrl}}},
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-1-a", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &ctrl}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/" + name}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	meshtest.InjectPod(&pod, rev, image)
	set.Deployments = append(set.Deployments, &dep)
	set.ReplicaSets = append(set.ReplicaSets, &rs)
	set.Pods = append(set.Pods, objects.Pods(pod)...)
}
