package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// readResource is a kind kedge reads (docs/design.md, "Contracts"), as group and resource.
type readResource struct{ group, resource string }

// kedgeReads lists what kedge reads, independently of deploy/, so the test
// catches a rule that is missing as well as one too many.
var kedgeReads = []readResource{
	{"", "namespaces"}, {"", "pods"}, {"", "configmaps"}, {"", "nodes"}, {"", "services"},
	{"apps", "replicasets"}, {"apps", "deployments"}, {"apps", "statefulsets"}, {"apps", "daemonsets"},
	{"batch", "jobs"}, {"batch", "cronjobs"},
	{"admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
	{"argoproj.io", "rollouts"}, {"argoproj.io", "applications"},
	{"kustomize.toolkit.fluxcd.io", "kustomizations"},
	{"source.toolkit.fluxcd.io", "gitrepositories"}, {"source.toolkit.fluxcd.io", "helmrepositories"},
	{"source.toolkit.fluxcd.io", "ocirepositories"}, {"argoproj.io", "appprojects"},
	{"networking.istio.io", "proxyconfigs"},
	{"security.istio.io", "authorizationpolicies"}, {"gateway.networking.k8s.io", "gateways"},
	{"flagger.app", "canaries"},
	{"security.istio.io", "peerauthentications"}, {"security.istio.io", "requestauthentications"},
	{"networking.istio.io", "envoyfilters"}, {"networking.istio.io", "virtualservices"},
	{"extensions.istio.io", "wasmplugins"}, {"gateway.networking.k8s.io", "httproutes"},
}

type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		r += " " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

// allowed asks the API server's authorizer whether the ServiceAccount may.
func allowed(t *testing.T, admin kubernetes.Interface, a access) bool {
	t.Helper()
	review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   serviceAccountUser(kedgeNamespace, kedgeServiceAccount),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + kedgeNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
				Namespace: a.namespace, Name: a.name,
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.Allowed
}

func TestDeployRBACAllowsReadingOnly(t *testing.T) {
	admin := controlPlane(t)
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)

	var want, forbid []access
	for _, r := range kedgeReads {
		for _, verb := range []string{"get", "list", "watch"} {
			want = append(want, access{verb: verb, group: r.group, resource: r.resource})
			want = append(want, access{verb: verb, group: r.group, resource: r.resource, namespace: "shop"})
		}
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			forbid = append(forbid,
				access{verb: verb, group: r.group, resource: r.resource},
				access{verb: verb, group: r.group, resource: r.resource, namespace: "shop"},
				access{verb: verb, group: r.group, resource: r.resource, namespace: kedgeNamespace})
		}
	}
	// The Lease, in kedge's namespace only.
	want = append(want,
		access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: kedgeNamespace},
		access{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: kedgeNamespace, name: "kedge"},
		access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: kedgeNamespace, name: "kedge"})
	forbid = append(forbid,
		access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system"},
		access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-controller-manager"},
		access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: kedgeNamespace, name: "another-lease"},
		access{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: kedgeNamespace, name: "kedge"},
		access{verb: "list", group: "coordination.k8s.io", resource: "leases"})
	// No Secret, in any namespace, its own included; nothing that acts on
	// pods or mints credentials.
	for _, verb := range []string{"get", "list", "watch"} {
		forbid = append(forbid,
			access{verb: verb, resource: "secrets"},
			access{verb: verb, resource: "secrets", namespace: kedgeNamespace},
			access{verb: verb, resource: "secrets", namespace: kedgeNamespace, name: "kedge-github-app"})
	}
	forbid = append(forbid,
		access{verb: "create", resource: "pods", subresource: "exec", namespace: "shop"},
		access{verb: "create", resource: "pods", subresource: "eviction", namespace: "shop"},
		access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: kedgeNamespace},
		access{verb: "impersonate", resource: "users"},
		access{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		access{verb: "get", group: "apps", resource: "deployments", subresource: "scale", namespace: "shop"},
		access{verb: "update", group: "apps", resource: "deployments", subresource: "scale", namespace: "shop"},
		access{verb: "update", resource: "pods", subresource: "status", namespace: "shop"})

	for _, a := range want {
		assert.True(t, allowed(t, adminClient, a), "kedge needs: %s", a)
	}
	for _, a := range forbid {
		assert.False(t, allowed(t, adminClient, a), "kedge must not: %s", a)
	}

	// The same, by trying: writes as the ServiceAccount are refused.
	sa, err := kubernetes.NewForConfig(identity{asServiceAccount: true}.restConfigFor(admin))
	require.NoError(t, err)
	ctx := t.Context()
	writes := []struct {
		name string
		do   func() error
	}{
		{"relabel a namespace", func() error {
			_, err := sa.CoreV1().Namespaces().Patch(ctx, "shop", types.MergePatchType, []byte(`{"metadata":{"labels":{"istio-injection":"disabled"}}}`), metav1.PatchOptions{})
			return err
		}},
		{"restart a deployment", func() error {
			_, err := sa.AppsV1().Deployments("shop").Patch(ctx, "cart", types.MergePatchType, []byte(`{"spec":{"template":{"metadata":{"annotations":{"kedge.io/restartedAt":"now"}}}}}`), metav1.PatchOptions{})
			return err
		}},
		{"delete a pod", func() error {
			pods, err := sa.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{Limit: 1})
			require.NoError(t, err, "reading pods is allowed")
			require.NotEmpty(t, pods.Items)
			return sa.CoreV1().Pods("shop").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{})
		}},
		{"create a ConfigMap in its own namespace", func() error {
			_, err := sa.CoreV1().ConfigMaps(kedgeNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{"change an injector webhook", func() error {
			_, err := sa.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, "istio-sidecar-injector", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		}},
		{"read a Secret", func() error {
			_, err := sa.CoreV1().Secrets(kedgeNamespace).List(ctx, metav1.ListOptions{})
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			err := w.do()
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "forbidden, not %v", err)
		})
	}
}

// Without the deploy/ RBAC kedge starts no informer: /readyz names every
// permission it lacks, and no cycle runs on a partial view of the cluster.
func TestNotReadyWhileTheClusterCannotBeRead(t *testing.T) {
	admin := controlPlane(t)
	nobody := rest.CopyConfig(admin)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kedge:someone-else", Groups: []string{"system:authenticated"}}
	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{kube: nobody, syncReport: 500 * time.Millisecond})
	eventually(t, 10*time.Second, func() bool {
		_, failing := r.ready.Ready()
		return strings.Contains(strings.Join(failing, "\n"), "permissions: the cluster credentials lack permissions kedge needs")
	}, "/readyz names the missing permissions")
	_, failing := r.ready.Ready()
	for _, res := range kedgeReads {
		if res.group == "argoproj.io" || strings.HasSuffix(res.group, "fluxcd.io") || res.resource == "configmaps" {
			continue
		}
		assert.Contains(t, strings.Join(failing, "\n"), "list "+res.resource, "the missing permissions")
	}
	assert.Zero(t, r.recorder.count())
	assert.Contains(t, r.logs.String(), "missing permission: kedge waits until it is granted")
	assert.NotContains(t, r.logs.String(), "Failed to watch", "no informer retries a forbidden list")
	require.NoError(t, r.stop(t, 5*time.Second))
}
