package trim

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kedge-io/kedge/internal/objects"
)

// CachedPod is what the pod cache holds for one pod: the pod as a Set
// holds it, and the two fields of identity objects.Pod lacks that the cache
// tracks it by. A whole ObjectMeta per pod would be a quarter of the cache.
type CachedPod struct {
	objects.Pod
	uid             types.UID
	resourceVersion string
}

var (
	_ runtime.Object            = &CachedPod{}
	_ metav1.ObjectMetaAccessor = &CachedPod{}
)

func (p *CachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta gives client-go's cache the pod's namespace, name, UID
// and resourceVersion. It is built on each call rather than kept: client-go
// only reads it (to key the pod and to tell a resync from an update), and
// it asks on events, not for every cached pod.
func (p *CachedPod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.uid, ResourceVersion: p.resourceVersion}
}

func (p *CachedPod) DeepCopyObject() runtime.Object {
	return &CachedPod{Pod: p.pod(), uid: p.uid, resourceVersion: p.resourceVersion}
}

// pod returns the pod as a Set holds it; it shares nothing with the cache,
// so what a caller does with a Set never reaches it.
func (p *CachedPod) pod() objects.Pod {
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

// SamePod reports an update of a pod that leaves everything kedge reads of
// it as it was: the kubelet rewrites a pod's status for much the trim drops.
func SamePod(a, b any) bool {
	x, ok1 := a.(*CachedPod)
	y, ok2 := b.(*CachedPod)
	return ok1 && ok2 && x.uid == y.uid && reflect.DeepEqual(x.Pod, y.Pod)
}
