package cluster

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kedge-io/kedge/internal/objects"
)

// trimmedPod is what the pod cache holds for one pod: the pod as a Set
// holds it, and the identity the cache keys and tracks it by.
type trimmedPod struct {
	meta metav1.ObjectMeta
	objects.Pod
}

var (
	_ runtime.Object            = &trimmedPod{}
	_ metav1.ObjectMetaAccessor = &trimmedPod{}
)

func (p *trimmedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta gives client-go's cache the pod's namespace, name, UID
// and resourceVersion.
func (p *trimmedPod) GetObjectMeta() metav1.Object { return &p.meta }

func (p *trimmedPod) DeepCopyObject() runtime.Object {
	out := &trimmedPod{Pod: p.pod()}
	p.meta.DeepCopyInto(&out.meta)
	return out
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
