// Package kubeload creates a synthetic fleet's objects in a real API server,
// so the live source and kubectl can be measured against the same cluster
// the snapshot benchmarks read. Owners are created before what they own,
// and owner references are rewritten to the UIDs the server assigned.
package kubeload

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/objects"
)

// Options tune the load.
type Options struct {
	// Workers is how many creates run at once; default 32. The API
	// server, not the client, should be the limit.
	Workers int
}

// Full holds the objects a Set keeps only part of, whole.
type Full struct {
	Pods        []corev1.Pod
	ReplicaSets []appsv1.ReplicaSet
}

// Custom resources, which need their CRDs installed first.
var (
	rollouts        = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	applications    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

// loader creates objects and remembers which UID each synthetic UID got.
type loader struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
	workers int

	mu   sync.Mutex
	uids map[types.UID]types.UID
}

// Apply creates every object of set, its pods and ReplicaSets from full:
// a Set holds only what kedge reads of them, the API server wants all of
// it. The webhook
// configurations come last: their webhooks point at an istiod that does
// not run, and must not see the pods being created.
func Apply(ctx context.Context, cfg *rest.Config, set *objects.Set, full Full, opts Options) error {
	cfg = rest.CopyConfig(cfg)
	// Client-side throttling would measure the client, not the server.
	cfg.QPS, cfg.Burst = 5000, 10000
	// Built-in types go as protobuf, which the API server decodes and
	// stores faster than JSON; the dynamic client's custom resources
	// have no protobuf form and stay JSON.
	typedCfg := rest.CopyConfig(cfg)
	typedCfg.ContentType = "application/vnd.kubernetes.protobuf"
	typedCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typed, err := kubernetes.NewForConfig(typedCfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	l := &loader{typed: typed, dynamic: dyn, workers: opts.Workers, uids: map[types.UID]types.UID{}}
	if l.workers <= 0 {
		l.workers = 32
	}
	steps := []func(context.Context) error{
		createAll(l, l.workers, set.Namespaces, func(ctx context.Context, o *corev1.Namespace) (metav1.Object, error) {
			created, err := l.typed.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				return created, err
			}
			// The server's own namespaces; give them the labels.
			cur, err := l.typed.CoreV1().Namespaces().Get(ctx, o.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			cur.Labels = o.Labels
			return l.typed.CoreV1().Namespaces().Update(ctx, cur, metav1.UpdateOptions{})
		}),
		createAll(l, l.workers, values(set.Deployments), func(ctx context.Context, o *appsv1.Deployment) (metav1.Object, error) {
			return l.typed.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}),
		createAll(l, l.workers, values(set.StatefulSets), func(ctx context.Context, o *appsv1.StatefulSet) (metav1.Object, error) {
			return l.typed.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}),
		createAll(l, l.workers, values(set.DaemonSets), func(ctx context.Context, o *appsv1.DaemonSet) (metav1.Object, error) {
			return l.typed.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}),
		createAll(l, l.workers, values(set.Rollouts), custom[objects.Rollout](l, rollouts)),
		createAll(l, l.workers, full.ReplicaSets, func(ctx context.Context, o *appsv1.ReplicaSet) (metav1.Object, error) {
			return l.typed.AppsV1().ReplicaSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}),
		createAll(l, l.workers, full.Pods, func(ctx context.Context, o *corev1.Pod) (metav1.Object, error) {
			// The Priority admission plugin fills these in itself.
			o.Spec.Priority, o.Spec.PreemptionPolicy = nil, nil
			return l.typed.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}),
		createAll(l, 1, set.GitRepositories, custom[objects.GitRepository](l, gitRepositories)),
		createAll(l, l.workers, set.Kustomizations, custom[objects.Kustomization](l, kustomizations)),
		createAll(l, l.workers, set.Applications, custom[objects.Application](l, applications)),
		createAll(l, 1, set.ConfigMaps, func(ctx context.Context, o *corev1.ConfigMap) (metav1.Object, error) {
			return l.typed.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}),
		createAll(l, 1, set.MutatingWebhookConfigurations,
			func(ctx context.Context, o *admissionregistrationv1.MutatingWebhookConfiguration) (metav1.Object, error) {
				return l.typed.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{})
			}),
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// prepare clears what the server assigns and points owner references at
// the UIDs the owners got.
func (l *loader) prepare(meta *metav1.ObjectMeta) {
	meta.ResourceVersion = ""
	meta.CreationTimestamp = metav1.Time{}
	meta.Generation = 0
	meta.ManagedFields = nil
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range meta.OwnerReferences {
		if real, ok := l.uids[meta.OwnerReferences[i].UID]; ok {
			meta.OwnerReferences[i].UID = real
		}
	}
	meta.UID = ""
}

// object is a pointer to a Kubernetes object type whose metadata is
// embedded, as in every type of objects.Set.
type object[T any] interface {
	*T
	metav1.ObjectMetaAccessor
}

// creator creates one object, given a copy prepare has cleared.
type creator[P any] func(context.Context, P) (metav1.Object, error)

// custom creates custom resources through the dynamic client.
func custom[T any, P object[T]](l *loader, gvr schema.GroupVersionResource) creator[P] {
	return func(ctx context.Context, o P) (metav1.Object, error) {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		namespace := o.GetObjectMeta().GetNamespace()
		return l.dynamic.Resource(gvr).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
	}
}

// values are the objects a Set points at, as createAll takes them.
func values[T any](pointers []*T) []T {
	out := make([]T, len(pointers))
	for i, p := range pointers {
		out[i] = *p
	}
	return out
}

// create makes items[i] from a copy whose metadata prepare cleared (create
// may change the copy's top-level fields, never the set's) and records the
// UID it got in place of its synthetic one.
func create[T any, P object[T]](ctx context.Context, l *loader, items []T, i int, fn creator[P]) error {
	o := items[i]
	meta := P(&o).GetObjectMeta().(*metav1.ObjectMeta)
	synthetic := meta.UID
	*meta = *meta.DeepCopy()
	l.prepare(meta)
	created, err := fn(ctx, P(&o))
	if err != nil {
		return err
	}
	if synthetic != "" {
		l.mu.Lock()
		l.uids[synthetic] = created.GetUID()
		l.mu.Unlock()
	}
	return nil
}

// createAll creates the items on up to workers goroutines (one creates
// them in order) and returns the first error, naming the object.
func createAll[T any, P object[T]](l *loader, workers int, items []T, fn creator[P]) func(context.Context) error {
	return func(parent context.Context) error {
		g, ctx := errgroup.WithContext(parent)
		g.SetLimit(workers)
		for i := range items {
			if ctx.Err() != nil {
				break
			}
			g.Go(func() error {
				if err := create(ctx, l, items, i, fn); err != nil {
					o := P(&items[i]).GetObjectMeta()
					return fmt.Errorf("%s %s/%s: %w", reflect.TypeFor[T]().Name(), o.GetNamespace(), o.GetName(), err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		return parent.Err()
	}
}
