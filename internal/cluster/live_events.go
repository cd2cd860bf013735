package cluster

import (
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// addMeshHandlers wires the informers whose changes can change which
// revision injects a pod, or with which image.
func (l *Live) addMeshHandlers() error {
	webhooks := meshHandler[*admissionregistrationv1.MutatingWebhookConfiguration]{
		live: l, kind: "MutatingWebhookConfiguration", relevant: isInjectorWebhookConfiguration,
	}
	if _, err := l.webhooks.AddEventHandler(webhooks.funcs()); err != nil {
		return err
	}
	configMaps := meshHandler[*corev1.ConfigMap]{
		live: l, kind: "ConfigMap", relevant: isInjectorConfigMap,
	}
	for _, inf := range l.configMapInformers {
		if _, err := inf.AddEventHandler(configMaps.funcs()); err != nil {
			return err
		}
	}
	// A namespace's labels select the injecting revision; nothing else
	// about it does, and new or deleted namespaces hold no pods yet.
	_, err := l.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			oldNS, ok1 := oldObj.(*corev1.Namespace)
			newNS, ok2 := newObj.(*corev1.Namespace)
			if ok1 && ok2 && !maps.Equal(oldNS.Labels, newNS.Labels) {
				l.notify(fmt.Sprintf("Namespace %s labels changed", newNS.Name))
			}
		},
	})
	return err
}

// addProxyConfigHandler reports ProxyConfig changes: every one may change
// the proxy image type of the pods it selects.
func (l *Live) addProxyConfigHandler(inf cache.SharedIndexInformer) error {
	proxyConfigs := meshHandler[*unstructured.Unstructured]{
		live: l, kind: kindProxyConfig, relevant: func(*unstructured.Unstructured) bool { return true },
	}
	_, err := inf.AddEventHandler(proxyConfigs.funcs())
	return err
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
