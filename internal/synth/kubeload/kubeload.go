// Package kubeload creates a synthetic fleet's objects in a real API server,
// so the live source and kubectl can be measured against the same cluster
// the snapshot benchmarks read. Owners are created before what they own,
// and owner references are rewritten to the UIDs the server assigned.
package kubeload

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// Apply creates every object of set. The webhook configurations come last:
// their webhooks point at an istiod that does not run, and must not see the
// pods being created.
func Apply(ctx context.Context, cfg *rest.Config, set *objects.Set, opts Options) error {
	cfg = rest.CopyConfig(cfg)
	// Client-side throttling would measure the client, not the server.
	cfg.QPS, cfg.Burst = 5000, 10000
	typed, err := kubernetes.NewForConfig(cfg)
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
		func(ctx context.Context) error {
			return each(ctx, l, set.Namespaces, func(ctx context.Context, o *metav1.ObjectMeta, i int) error {
				obj := set.Namespaces[i].DeepCopy()
				_, err := l.typed.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					// The server's own namespaces; give them the labels.
					cur, gerr := l.typed.CoreV1().Namespaces().Get(ctx, obj.Name, metav1.GetOptions{})
					if gerr != nil {
						return gerr
					}
					cur.Labels = obj.Labels
					_, err = l.typed.CoreV1().Namespaces().Update(ctx, cur, metav1.UpdateOptions{})
				}
				return err
			}, func(i int) *metav1.ObjectMeta { return &set.Namespaces[i].ObjectMeta })
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.Deployments, func(i int) *metav1.ObjectMeta { return &set.Deployments[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.Deployments[i].DeepCopy()
					l.prepare(&o.ObjectMeta)
					created, err := l.typed.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
					return uidOf(created, err)
				})
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.StatefulSets, func(i int) *metav1.ObjectMeta { return &set.StatefulSets[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.StatefulSets[i].DeepCopy()
					l.prepare(&o.ObjectMeta)
					created, err := l.typed.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
					return uidOf(created, err)
				})
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.DaemonSets, func(i int) *metav1.ObjectMeta { return &set.DaemonSets[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.DaemonSets[i].DeepCopy()
					l.prepare(&o.ObjectMeta)
					created, err := l.typed.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
					return uidOf(created, err)
				})
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.Rollouts, func(i int) *metav1.ObjectMeta { return &set.Rollouts[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.Rollouts[i]
					o.ObjectMeta = *o.ObjectMeta.DeepCopy()
					l.prepare(&o.ObjectMeta)
					return l.createCustom(ctx, rollouts, o.Namespace, &o)
				})
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.ReplicaSets, func(i int) *metav1.ObjectMeta { return &set.ReplicaSets[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.ReplicaSets[i].DeepCopy()
					l.prepare(&o.ObjectMeta)
					created, err := l.typed.AppsV1().ReplicaSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
					return uidOf(created, err)
				})
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.Pods, func(i int) *metav1.ObjectMeta { return &set.Pods[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.Pods[i].DeepCopy()
					l.prepare(&o.ObjectMeta)
					// The Priority admission plugin fills these in itself.
					o.Spec.Priority, o.Spec.PreemptionPolicy = nil, nil
					created, err := l.typed.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
					return uidOf(created, err)
				})
		},
		func(ctx context.Context) error {
			for i := range set.GitRepositories {
				o := set.GitRepositories[i]
				o.ObjectMeta = *o.ObjectMeta.DeepCopy()
				l.prepare(&o.ObjectMeta)
				if _, err := l.createCustom(ctx, gitRepositories, o.Namespace, &o); err != nil {
					return err
				}
			}
			return nil
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.Kustomizations, func(i int) *metav1.ObjectMeta { return &set.Kustomizations[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.Kustomizations[i]
					o.ObjectMeta = *o.ObjectMeta.DeepCopy()
					l.prepare(&o.ObjectMeta)
					return l.createCustom(ctx, kustomizations, o.Namespace, &o)
				})
		},
		func(ctx context.Context) error {
			return createAll(ctx, l, set.Applications, func(i int) *metav1.ObjectMeta { return &set.Applications[i].ObjectMeta },
				func(ctx context.Context, i int) (types.UID, error) {
					o := set.Applications[i]
					o.ObjectMeta = *o.ObjectMeta.DeepCopy()
					l.prepare(&o.ObjectMeta)
					return l.createCustom(ctx, applications, o.Namespace, &o)
				})
		},
		func(ctx context.Context) error {
			for i := range set.ConfigMaps {
				o := set.ConfigMaps[i].DeepCopy()
				l.prepare(&o.ObjectMeta)
				if _, err := l.typed.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("ConfigMap %s/%s: %w", o.Namespace, o.Name, err)
				}
			}
			for i := range set.MutatingWebhookConfigurations {
				o := set.MutatingWebhookConfigurations[i].DeepCopy()
				l.prepare(&o.ObjectMeta)
				if _, err := l.typed.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("MutatingWebhookConfiguration %s: %w", o.Name, err)
				}
			}
			return nil
		},
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

func uidOf(obj metav1.Object, err error) (types.UID, error) {
	if err != nil {
		return "", err
	}
	return obj.GetUID(), nil
}

func (l *loader) createCustom(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj any) (types.UID, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", err
	}
	created, err := l.dynamic.Resource(gvr).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: content}, metav1.CreateOptions{})
	return uidOf(created, err)
}

// createAll creates the items concurrently and records the UID each one
// got in place of its synthetic one.
func createAll[T any](ctx context.Context, l *loader, items []T, meta func(int) *metav1.ObjectMeta, create func(context.Context, int) (types.UID, error)) error {
	return each(ctx, l, items, func(ctx context.Context, m *metav1.ObjectMeta, i int) error {
		synthetic := m.UID
		uid, err := create(ctx, i)
		if err != nil {
			return err
		}
		if synthetic != "" {
			l.mu.Lock()
			l.uids[synthetic] = uid
			l.mu.Unlock()
		}
		return nil
	}, meta)
}

// each runs fn for every item on l.workers goroutines and returns the
// first error, naming the object.
func each[T any](ctx context.Context, l *loader, items []T, fn func(context.Context, *metav1.ObjectMeta, int) error, meta func(int) *metav1.ObjectMeta) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(l.workers, max(len(items), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				m := meta(i)
				if err := fn(ctx, m, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s/%s: %w", m.Namespace, m.Name, err)
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range items {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
