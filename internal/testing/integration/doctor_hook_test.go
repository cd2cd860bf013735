package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

// typed converts a rendered object.
func typed[T any](t *testing.T, m manifests, key string) *T {
	t.Helper()
	o, ok := m[key]
	require.True(t, ok, "rendered %s", key)
	var out T
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out))
	return &out
}

// The chart's doctor hook is off by default; on, it is a Job running
// `kedge doctor` before install and upgrade, with its own ServiceAccount
// bound to the same rules as kedge's, and its own kedge.yaml; the API
// server admits all of it, the Job's pod under the restricted Pod
// Security of kedge's namespace.
func TestHelmDoctorHook(t *testing.T) {
	off := index(renderChart(t, nil))
	_, rendered := off["Job/kedge-doctor"]
	assert.False(t, rendered, "off by default")

	values := map[string]any{
		"doctor": map[string]any{"enabled": true},
		"config": map[string]any{"cluster": "prod-eu-1", "repo": map[string]any{"owner": "example-org", "name": "gitops"},
			"github": map[string]any{"appID": 12345, "installationID": 678}},
	}
	objs := renderChart(t, values)
	m := index(objs)
	job := typed[batchv1.Job](t, m, "Job/kedge-doctor")
	assert.Equal(t, []string{"doctor", "--config", "/etc/kedge/config/kedge.yaml"}, job.Spec.Template.Spec.Containers[0].Args)
	assert.Equal(t, "kedge-doctor", job.Spec.Template.Spec.ServiceAccountName)
	assert.EqualValues(t, 0, *job.Spec.BackoffLimit)
	assert.Equal(t, corev1.RestartPolicyNever, job.Spec.Template.Spec.RestartPolicy)

	hooks := map[string]string{
		"ServiceAccount/kedge-doctor": "-10", "ClusterRole/kedge-doctor": "-10", "ClusterRoleBinding/kedge-doctor": "-5",
		"Role/kedge-doctor-leader-election": "-10", "RoleBinding/kedge-doctor-leader-election": "-5",
		"ConfigMap/kedge-doctor-config": "-10", "Job/kedge-doctor": "0",
	}
	for key, weight := range hooks {
		o, ok := m[key]
		require.True(t, ok, key)
		a := o.GetAnnotations()
		assert.Equal(t, "pre-install,pre-upgrade", a["helm.sh/hook"], key)
		assert.Equal(t, weight, a["helm.sh/hook-weight"], key)
		assert.Equal(t, "before-hook-creation,hook-succeeded", a["helm.sh/hook-delete-policy"], key)
	}
	assert.Equal(t, typed[rbacv1.ClusterRole](t, m, "ClusterRole/kedge").Rules, typed[rbacv1.ClusterRole](t, m, "ClusterRole/kedge-doctor").Rules,
		"the doctor checks the rules kedge runs with")
	assert.Equal(t, typed[rbacv1.Role](t, m, "Role/kedge-leader-election").Rules, typed[rbacv1.Role](t, m, "Role/kedge-doctor-leader-election").Rules)
	assert.Equal(t, typed[corev1.ConfigMap](t, m, "ConfigMap/kedge-config").Data, typed[corev1.ConfigMap](t, m, "ConfigMap/kedge-doctor-config").Data)
	var secret string
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	assert.Equal(t, "kedge-github-app", secret, "the App's key, as kedge mounts it")

	cfg := controlplane.ControlPlane(t)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	var real []*unstructured.Unstructured
	for _, o := range renderKustomize(t, deployDir) {
		if o.GetKind() == "Namespace" || o.GetKind() == "ServiceAccount" {
			real = append(real, o)
		}
	}
	applyManifests(t, cfg, real)
	c := newClients(t, cfg)
	for key := range hooks {
		o := m[key].DeepCopy()
		o.SetNamespace(namespaceFor(o))
		_, err := c.resource(t, o).Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, key)
	}
	spec := job.Spec.Template.Spec.DeepCopy()
	spec.ServiceAccountName = kedgeServiceAccount // created above; the hook's exists only at install
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "kedge-doctor-", Namespace: kedgeNamespace, Labels: job.Spec.Template.Labels}, Spec: *spec}
	_, err = client.CoreV1().Pods(kedgeNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "the Job's pod passes admission, Pod Security included")
}
