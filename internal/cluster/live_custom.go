package cluster

import (
	"cmp"
	"slices"

	"k8s.io/client-go/tools/cache"
)

// namedObject is a pointer to one of the objects package's custom resource
// types.
type namedObject[T any] interface {
	*T
	GetNamespace() string
	GetName() string
}

// copyCustom copies the cached custom resources of one kind, as the
// informer's transform decoded them (decodeCustom). A nil informer (the CRD
// is not served) yields nothing. The copies are shallow, like copyTyped's.
func copyCustom[T any, P namedObject[T]](inf cache.SharedIndexInformer) func() []T {
	return func() []T {
		if inf == nil {
			return nil
		}
		var out []T
		for _, obj := range inf.GetStore().List() {
			if typed, ok := obj.(P); ok {
				out = append(out, *typed)
			}
		}
		slices.SortFunc(out, func(a, b T) int {
			pa, pb := P(&a), P(&b)
			return cmp.Or(cmp.Compare(pa.GetNamespace(), pb.GetNamespace()), cmp.Compare(pa.GetName(), pb.GetName()))
		})
		return out
	}
}
