package cluster

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/objects"
)

// trimmedPod is what the pod cache holds for one pod: the pod as a Set
// holds it, and the two fields of identity objects.Pod lacks that the cache
// tracks it by. A whole ObjectMeta per pod would be a quarter of the cache.
type trimmedPod struct {
	objects.Pod
	uid             types.UID
	resourceVersion string
}

var (
	_ runtime.Object            = &trimmedPod{}
	_ metav1.ObjectMetaAccessor = &trimmedPod{}
)

func (p *trimmedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta gives client-go's cache the pod's namespace, name, UID
// and resourceVersion. It is built on each call rather than kept: client-go
// only reads it (to key the pod and to tell a resync from an update), and
// it asks on events, not for every cached pod.
func (p *trimmedPod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.uid, ResourceVersion: p.resourceVersion}
}

func (p *trimmedPod) DeepCopyObject() runtime.Object {
	return &trimmedPod{Pod: p.pod(), uid: p.uid, resourceVersion: p.resourceVersion}
}

// pod returns the pod as a Set holds it; it shares nothing with the cache,
// so what a caller does with a Set never reaches it.
func (p *trimmedPod) pod() objects.Pod {
	out := p.Pod
	meta := metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations, OwnerReferences: p.OwnerReferences, DeletionTimestamp: p.DeletionTimestamp}
	copied := meta.DeepCopy()
	out.Labels, out.Annotations, out.OwnerReferences, out.DeletionTimestamp = copied.Labels, copied.Annotations, copied.OwnerReferences, copied.DeletionTimestamp
	if p.Proxy != nil {
		proxy := *p.Proxy
		out.Proxy = &proxy
	}
	out.Waiting = slices.Clone(p.Waiting)
	return out
}
