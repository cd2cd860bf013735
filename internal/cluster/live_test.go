package cluster

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/cluster/trim"
)

func TestNewLiveRejectsBadOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    LiveOptions
		wantErr string
	}{
		{name: "no config", opts: LiveOptions{}, wantErr: "no API server configuration"},
		{name: "negative resync", opts: LiveOptions{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Resync: -time.Second}, wantErr: "negative resync"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLive(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestLiveLifecycleErrors(t *testing.T) {
	// Nothing listens on port 1 of the loopback address: every request
	// fails at once.
	live, err := NewLive(LiveOptions{Config: &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}})
	require.NoError(t, err)

	err = live.WaitForSync(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not started")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = live.Start(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "discovery")

	assert.Empty(t, live.Set().Pods, "a source that never started holds nothing")
}

func TestOptOutChangeReportsOnlyTheOptOutAnnotation(t *testing.T) {
	const key = "kedge.io/ignore"
	ns := func(annotations map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: annotations}}
	}
	deployment := func(meta, template map[string]string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart", Annotations: meta}}
		d.Spec.Template.Annotations = template
		return d
	}
	// A Rollout as its informer holds it: decoded by the transform.
	rollout := func(template map[string]any) any {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"namespace": "shop", "name": "checkout"},
			"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": template}}},
		}}
		cached, err := trim.New().Transform(u)
		require.NoError(t, err)
		return cached
	}
	cases := []struct {
		name       string
		key        string
		old, new   any
		wantReason string
	}{
		{name: "namespace opts out", old: ns(nil), new: ns(map[string]string{key: "true"}), wantReason: "Namespace shop annotation kedge.io/ignore changed"},
		{name: "namespace opts back in", old: ns(map[string]string{key: "true"}), new: ns(map[string]string{key: "false"}), wantReason: "Namespace shop annotation kedge.io/ignore changed"},
		{name: "namespace annotation removed", old: ns(map[string]string{key: "true"}), new: ns(nil), wantReason: "Namespace shop annotation kedge.io/ignore changed"},
		{name: "an empty value is a value", old: ns(nil), new: ns(map[string]string{key: ""}), wantReason: "Namespace shop annotation kedge.io/ignore changed"},
		{name: "another namespace annotation", old: ns(nil), new: ns(map[string]string{"team": "storefront"})},
		{name: "resync of an opted-out namespace", old: ns(map[string]string{key: "true"}), new: ns(map[string]string{key: "true"})},
		{name: "workload opts out", old: deployment(nil, nil), new: deployment(map[string]string{key: "true"}, nil), wantReason: "Deployment shop/cart annotation kedge.io/ignore changed"},
		{name: "pod template opts out", old: deployment(nil, nil), new: deployment(nil, map[string]string{key: "true"}), wantReason: "Deployment shop/cart annotation kedge.io/ignore changed"},
		{name: "a restart annotation on the template", old: deployment(nil, nil), new: deployment(nil, map[string]string{"kedge.io/restartedAt": "now"})},
		{name: "deployment.kubernetes.io/revision bumped", old: deployment(map[string]string{"deployment.kubernetes.io/revision": "1"}, nil), new: deployment(map[string]string{"deployment.kubernetes.io/revision": "2"}, nil)},
		{name: "rollout template opts out", old: rollout(nil), new: rollout(map[string]any{key: "true"}), wantReason: "Rollout shop/checkout annotation kedge.io/ignore changed"},
		{name: "a configured key", key: "example.com/hands-off", old: deployment(nil, nil), new: deployment(map[string]string{"example.com/hands-off": "true"}, nil), wantReason: "Deployment shop/cart annotation example.com/hands-off changed"},
		{name: "the default key is not watched when another is configured", key: "example.com/hands-off", old: deployment(nil, nil), new: deployment(map[string]string{key: "true"}, nil)},
		{name: "an object that cannot opt out", old: &corev1.ConfigMap{}, new: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "true"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, ok := optOutChange(cmp.Or(tc.key, key), tc.old, tc.new)
			assert.Equal(t, tc.wantReason != "", ok)
			assert.Equal(t, tc.wantReason, reason)
		})
	}
}

// TestSameVersionTellsResyncsFromChanges: an informer's resync delivers
// the object it holds as an update of itself; any other update brings a
// new resourceVersion (or another object under the same name).
func TestSameVersionTellsResyncsFromChanges(t *testing.T) {
	pod := func(uid, rv string) *trim.CachedPod {
		return trim.New().Pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: types.UID(uid), ResourceVersion: rv}})
	}
	custom := func(rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName("shop")
		u.SetUID("app-1")
		u.SetResourceVersion(rv)
		return u
	}
	tests := []struct {
		name     string
		old, new any
		same     bool
	}{
		{"a resync of a pod", pod("p1", "10"), pod("p1", "10"), true},
		{"a pod that changed", pod("p1", "10"), pod("p1", "11"), false},
		{"a pod replaced under its name", pod("p1", "10"), pod("p2", "10"), false},
		{"no resourceVersion to tell", pod("p1", ""), pod("p1", ""), false},
		{"a resync of a custom resource", custom("7"), custom("7"), true},
		{"a custom resource that changed", custom("7"), custom("8"), false},
		{"a namespace that changed", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: "n", ResourceVersion: "1"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: "n", ResourceVersion: "2"}}, false},
		{"not an object", "shop", "shop", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.same, sameVersion(tt.old, tt.new))
		})
	}
}
