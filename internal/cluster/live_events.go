package cluster

import (
	"cmp"
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// addMeshHandlers wires the informers whose changes can change which
// revision injects a pod, or with which image.
func (l *Live) addMeshHandlers() error {
	webhooks := meshHandler[*admissionregistrationv1.MutatingWebhookConfiguration]{
		live: l, kind: "MutatingWebhookConfiguration", relevant: trim.IsInjectorWebhookConfiguration,
	}
	if _, err := l.webhooks.AddEventHandler(webhooks.funcs()); err != nil {
		return err
	}
	configMaps := meshHandler[*corev1.ConfigMap]{
		live: l, kind: "ConfigMap", relevant: trim.IsInjectorConfigMap,
	}
	for _, inf := range l.configMapInformers {
		if _, err := inf.AddEventHandler(configMaps.funcs()); err != nil {
			return err
		}
	}
	// A namespace's labels select the injecting revision, and its opt-out
	// annotation keeps kedge away; nothing else about it matters, and new
	// or deleted namespaces hold no pods yet.
	_, err := l.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			oldNS, ok1 := oldObj.(*corev1.Namespace)
			newNS, ok2 := newObj.(*corev1.Namespace)
			if !ok1 || !ok2 {
				return
			}
			if !maps.Equal(oldNS.Labels, newNS.Labels) {
				l.notify(fmt.Sprintf("Namespace %s labels changed", newNS.Name))
				return
			}
			if reason, ok := optOutChange(l.optOutAnnotation(), oldObj, newObj); ok {
				l.notify(reason)
			}
		},
	})
	if err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{l.deployments, l.statefulSets, l.daemonSets} {
		if err := l.addOptOutHandler(inf); err != nil {
			return err
		}
	}
	return nil
}

// addOptOutHandler reports a workload whose opt-out annotation, on the
// workload or its pod template, was set, changed or removed; any other
// change to a workload is the cluster's business, not a reason to plan.
func (l *Live) addOptOutHandler(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			if reason, ok := optOutChange(l.optOutAnnotation(), oldObj, newObj); ok {
				l.notify(reason)
			}
		},
	})
	return err
}

// addCustomMeshHandler reports the changes of a custom kind that decide
// what a cycle plans: a ProxyConfig may change the proxy image type of the
// pods it selects; an AuthorizationPolicy or a waypoint Gateway may let a
// namespace's ambient move go ahead, or hold it back (internal/ambient),
// and the next cycle should not wait for cycle.resync to tell.
func (l *Live) addCustomMeshHandler(kind string, inf cache.SharedIndexInformer) error {
	var funcs cache.ResourceEventHandler
	switch kind {
	case kindProxyConfig:
		funcs = meshHandler[*objects.ProxyConfig]{live: l, kind: kind, relevant: func(*objects.ProxyConfig) bool { return true }}.funcs()
	case kindAuthorizationPolicy:
		funcs = meshHandler[*objects.AuthorizationPolicy]{live: l, kind: kind, relevant: func(*objects.AuthorizationPolicy) bool { return true }}.funcs()
	case kindGateway:
		// Ingress and egress Gateways change with routing, which decides
		// nothing kedge plans; waypoints do.
		funcs = meshHandler[*objects.Gateway]{live: l, kind: kind, relevant: func(g *objects.Gateway) bool {
			return g.Spec.GatewayClassName == ambient.WaypointClass
		}}.funcs()
	default:
		return nil
	}
	_, err := inf.AddEventHandler(funcs)
	return err
}

func (l *Live) optOutAnnotation() string {
	return cmp.Or(l.opts.OptOutAnnotation, drift.DefaultOptOutAnnotation)
}

// optOutChange describes how the opt-out annotation key changed between
// two versions of a namespace or workload, if it did.
func optOutChange(key string, oldObj, newObj any) (string, bool) {
	kind, name, before, ok1 := optOutValues(key, oldObj)
	_, _, after, ok2 := optOutValues(key, newObj)
	if !ok1 || !ok2 || before == after {
		return "", false
	}
	return fmt.Sprintf("%s %s annotation %s changed", kind, name, key), true
}

// optOutValues reads the opt-out annotation of an object kedge may be
// asked to leave alone: on its metadata and, for a workload, on its pod
// template. ok is false for any other object.
func optOutValues(key string, obj any) (kind, name string, values [2]annotationValue, ok bool) {
	lookup := func(annotations map[string]string) annotationValue {
		v, set := annotations[key]
		return annotationValue{set: set, value: v}
	}
	var meta, template map[string]string
	switch o := obj.(type) {
	case *corev1.Namespace:
		return "Namespace", o.Name, [2]annotationValue{lookup(o.Annotations)}, true
	case *appsv1.Deployment:
		kind, name, meta, template = "Deployment", qualifiedName(o), o.Annotations, o.Spec.Template.Annotations
	case *appsv1.StatefulSet:
		kind, name, meta, template = "StatefulSet", qualifiedName(o), o.Annotations, o.Spec.Template.Annotations
	case *appsv1.DaemonSet:
		kind, name, meta, template = "DaemonSet", qualifiedName(o), o.Annotations, o.Spec.Template.Annotations
	case *objects.Rollout:
		kind, name, meta, template = "Rollout", qualifiedName(o), o.Annotations, o.Spec.Template.Annotations
	default:
		return "", "", values, false
	}
	return kind, name, [2]annotationValue{lookup(meta), lookup(template)}, true
}

// annotationValue tells an annotation set to "" from one not set.
type annotationValue struct {
	set   bool
	value string
}

func (l *Live) notify(reason string) {
	l.mu.Lock()
	listeners := append([]func(string){}, l.listeners...)
	l.mu.Unlock()
	for _, fn := range listeners {
		fn(reason)
	}
}

// meshHandler reports additions, deletions and real changes of the
// relevant objects of one kind. Objects listed when the cache first fills
// and updates that change nothing kedge reads (resyncs, status, a rotated CA
// bundle, which the transform removed) are not reported.
type meshHandler[T interface {
	runtime.Object
	metav1.Object
}] struct {
	live     *Live
	kind     string
	relevant func(T) bool
}

func (h meshHandler[T]) funcs() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if o, ok := obj.(T); ok && !isInInitialList && h.relevant(o) {
				h.live.notify(fmt.Sprintf("%s %s added", h.kind, qualifiedName(o)))
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldT, ok1 := oldObj.(T)
			newT, ok2 := newObj.(T)
			if !ok1 || !ok2 || !(h.relevant(oldT) || h.relevant(newT)) {
				return
			}
			if !sameContent(oldT, newT) {
				h.live.notify(fmt.Sprintf("%s %s changed", h.kind, qualifiedName(newT)))
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if o, ok := obj.(T); ok && h.relevant(o) {
				h.live.notify(fmt.Sprintf("%s %s deleted", h.kind, qualifiedName(o)))
			}
		},
	}
}

// sameContent compares two versions of an object ignoring the bookkeeping
// the API server changes on every write.
func sameContent[T interface {
	runtime.Object
	metav1.Object
}](a, b T) bool {
	a2, _ := a.DeepCopyObject().(T)
	b2, _ := b.DeepCopyObject().(T)
	for _, o := range []T{a2, b2} {
		o.SetResourceVersion("")
		o.SetGeneration(0)
		o.SetManagedFields(nil)
	}
	return equality.Semantic.DeepEqual(a2, b2)
}

func qualifiedName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
