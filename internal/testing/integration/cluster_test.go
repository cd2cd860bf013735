// Package integration runs kedge as a service against a real kube-apiserver
// and etcd (internal/testing/testbin/testbin.sh), a real git server and the GitHub emulation:
// live informers to plan, mesh changes to cycles, the deploy/ RBAC, two
// replicas sharing a Lease, shutdown, and the deploy/ manifests themselves.
package integration

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

const (
	demoCluster = "../../../testdata/demo/cluster"
	demoRepo    = "../../../testdata/demo/gitops"
	deployDir   = "../../../deploy"
	// crdDir holds the Flux and Argo CD CRDs the demo cluster uses.
	crdDir = "../controlplane/testdata/crds"

	// kedge's namespace and ServiceAccount in deploy/.
	kedgeNamespace      = "kedge"
	kedgeServiceAccount = "kedge"
)

// identity is who kedge talks to the API server as.
type identity struct {
	name string
	// asServiceAccount impersonates deploy/'s ServiceAccount, with the
	// deploy/ RBAC applied; otherwise kedge is the test's cluster admin.
	asServiceAccount bool
}

var identities = []identity{
	{name: "cluster admin"},
	{name: "deploy ServiceAccount", asServiceAccount: true},
}

// serviceAccountUser is the user name Kubernetes gives a ServiceAccount.
func serviceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// restConfigFor returns the admin configuration, or one impersonating the
// ServiceAccount with the groups a token of it would carry.
func (id identity) restConfigFor(admin *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(admin)
	// Tests write thousands of objects; client-go's default 5 QPS would
	// make them crawl.
	cfg.QPS, cfg.Burst = 1000, 2000
	if id.asServiceAccount {
		cfg.Impersonate = rest.ImpersonationConfig{
			UserName: serviceAccountUser(kedgeNamespace, kedgeServiceAccount),
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + kedgeNamespace, "system:authenticated"},
		}
	}
	return cfg
}

// controlPlane starts an API server with the demo's CRDs, creates the demo
// cluster's objects and applies deploy/ (RBAC, namespace, ServiceAccount).
func controlPlane(t *testing.T) *rest.Config {
	t.Helper()
	return restartableControlPlane(t).Config
}

// restartableControlPlane is controlPlane for tests that restart the API
// server.
func restartableControlPlane(t *testing.T) *controlplane.Plane {
	t.Helper()
	plane := controlplane.StartControlPlane(t, crdDir)
	cfg := plane.Config
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.WarningHandler = rest.NoWarnings{}
	applyManifests(t, cfg, renderKustomize(t, deployDir))
	applySnapshot(t, cfg, demoCluster)
	return plane
}

// renderKustomize builds a kustomization with the kustomize library, as
// `kubectl kustomize` does.
func renderKustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	out, err := resources.AsYaml()
	require.NoError(t, err)
	objs, err := decodeObjects(out)
	require.NoError(t, err)
	return objs
}

// decodeObjects reads a YAML or JSON stream of objects and Lists.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	var out []*unstructured.Unstructured
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(doc) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
}

type clients struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

func newClients(t *testing.T, cfg *rest.Config) clients {
	t.Helper()
	typed, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	return clients{typed: typed, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

func (c clients) resource(t *testing.T, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err, "%s", gvk)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(mapping.Resource).Namespace(u.GetNamespace())
	}
	return c.dynamic.Resource(mapping.Resource)
}

// applyManifests creates rendered manifests as they are.
func applyManifests(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	c := newClients(t, cfg)
	for _, u := range objs {
		_, err := c.resource(t, u).Create(t.Context(), u, metav1.CreateOptions{})
		require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
	}
}

// holdFinalizer keeps a pod the snapshot shows terminating from going
// away when it is deleted.
const holdFinalizer = "kedge.io/test-hold"

// applySnapshot creates every object of a snapshot directory through the
// API, owners before what they own (owner references name the new UIDs),
// then reports pod status as a kubelet would, and deletes the pods the
// snapshot shows terminating.
func applySnapshot(t *testing.T, cfg *rest.Config, dir string) {
	t.Helper()
	ctx := t.Context()
	c := newClients(t, cfg)
	var objs []*unstructured.Unstructured
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		decoded, err := decodeObjects(data)
		if err != nil {
			return err
		}
		objs = append(objs, decoded...)
		return nil
	}))

	// Pods name the namespace's default ServiceAccount, which no
	// controller creates here.
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			_, err := c.typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Labels: u.GetLabels(), Annotations: u.GetAnnotations()}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
			_, err = c.typed.CoreV1().ServiceAccounts(u.GetName()).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
	}

	// Injector webhooks go last: the API server would call them for the
	// pods created here, and they point at no running istiod.
	var webhooks, others []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "MutatingWebhookConfiguration" {
			webhooks = append(webhooks, u)
		} else {
			others = append(others, u)
		}
	}
	uids := map[types.UID]types.UID{}
	for _, batch := range [][]*unstructured.Unstructured{others, webhooks} {
		createAll(t, c, batch, objs, uids)
	}
}

// createAll creates objs, owners first, recording old → new UIDs.
func createAll(t *testing.T, c clients, objs, all []*unstructured.Unstructured, uids map[types.UID]types.UID) {
	t.Helper()
	ctx := t.Context()
	pending := objs
	for len(pending) > 0 {
		var next []*unstructured.Unstructured
		for _, orig := range pending {
			if orig.GetKind() == "Namespace" {
				continue
			}
			u, ready := rewriteOwners(orig, uids, all)
			if !ready {
				next = append(next, orig)
				continue
			}
			status, hasStatus := u.Object["status"]
			terminating := u.GetDeletionTimestamp() != nil
			for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
				unstructured.RemoveNestedField(u.Object, "metadata", f)
			}
			delete(u.Object, "status")
			if u.GetKind() == "Pod" {
				// Admission sets it from the PriorityClass.
				unstructured.RemoveNestedField(u.Object, "spec", "priority")
			}
			if u.GetKind() == "Job" {
				// The API server derives a Job's selector from its new UID.
				unstructured.RemoveNestedField(u.Object, "spec", "selector")
				for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
					unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", l)
				}
			}
			if terminating {
				u.SetFinalizers(append(u.GetFinalizers(), holdFinalizer))
			}
			res := c.resource(t, u)
			created, err := res.Create(ctx, u, metav1.CreateOptions{})
			require.NoError(t, err, "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
			uids[orig.GetUID()] = created.GetUID()
			if u.GetKind() == "Pod" && hasStatus {
				created.Object["status"] = status
				_, err = res.UpdateStatus(ctx, created, metav1.UpdateOptions{})
				require.NoError(t, err, "status of pod %s/%s", u.GetNamespace(), u.GetName())
			}
			if terminating {
				require.NoError(t, res.Delete(ctx, u.GetName(), metav1.DeleteOptions{}))
			}
		}
		require.Less(t, len(next), len(pending), "owner references form a cycle or name unknown objects")
		pending = next
	}
}

// rewriteOwners copies u with its owners' new UIDs; ready is false while an
// owner from the snapshot has not been created yet.
func rewriteOwners(u *unstructured.Unstructured, uids map[types.UID]types.UID, all []*unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	c := u.DeepCopy()
	refs := c.GetOwnerReferences()
	for i, ref := range refs {
		if newUID, ok := uids[ref.UID]; ok {
			refs[i].UID = newUID
			continue
		}
		for _, o := range all {
			if o.GetUID() == ref.UID {
				return nil, false
			}
		}
	}
	c.SetOwnerReferences(refs)
	return c, true
}

// patchLabels merges labels into an object's (nil values delete).
func patchLabels(ctx context.Context, t *testing.T, c clients, gvr schema.GroupVersionResource, ns, name string, labels map[string]any) {
	t.Helper()
	patch, err := yaml.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	require.NoError(t, err)
	body, err := yaml.YAMLToJSON(patch)
	require.NoError(t, err)
	var res dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	if ns != "" {
		res = c.dynamic.Resource(gvr).Namespace(ns)
	}
	_, err = res.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	require.NoError(t, err)
}

// eventually polls cond every 10 ms for up to d.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, d, 10*time.Millisecond, append([]any{msg}, args...)...)
}
