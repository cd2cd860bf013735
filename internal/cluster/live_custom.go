package cluster

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// namedObject is a pointer to one of the objects package's custom resource
// types.
type namedObject[T any] interface {
	*T
	GetNamespace() string
	GetName() string
}

// copyCustom converts the cached custom resources of one kind. A nil
// informer (the CRD is not served) yields nothing.
func copyCustom[T any, P namedObject[T]](inf cache.SharedIndexInformer) func() []T {
	return func() []T { return copyCustomNow[T, P](inf) }
}

func copyCustomNow[T any, P namedObject[T]](inf cache.SharedIndexInformer) []T {
	if inf == nil {
		return nil
	}
	var out []T
	for _, obj := range inf.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var typed T
		// The copy keeps the result from sharing maps with the cache.
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.DeepCopy().Object, &typed); err != nil {
			// The transform already decoded this object once; failing
			// now means the cache holds something it should not.
			klog.ErrorS(err, "skipping custom resource", "kind", u.GetKind(), "namespace", u.GetNamespace(), "name", u.GetName())
			continue
		}
		out = append(out, typed)
	}
	slices.SortFunc(out, func(a, b T) int {
		pa, pb := P(&a), P(&b)
		return cmp.Or(cmp.Compare(pa.GetNamespace(), pb.GetNamespace()), cmp.Compare(pa.GetName(), pb.GetName()))
	})
	return out
}
