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

// cachedCustom lists the cached custom resources of one kind, as the
// informer's transform decoded them (trim.DecodeCustom), sorted by
// namespace and name. A nil informer (the CRD is not served) yields nothing.
func cachedCustom[T any, P namedObject[T]](inf cache.SharedIndexInformer) func() []P {
	return func() []P {
		if inf == nil {
			return nil
		}
		out := listed(inf, func(p P) P { return p })
		sortByName(out)
		return out
	}
}

// copyCustom is cachedCustom's objects as values. The copies are shallow,
// like copyTyped's.
func copyCustom[T any, P namedObject[T]](inf cache.SharedIndexInformer) func() []T {
	return func() []T {
		cached := cachedCustom[T, P](inf)()
		if len(cached) == 0 {
			return nil
		}
		out := make([]T, len(cached))
		for i, p := range cached {
			out[i] = *p
		}
		return out
	}
}

// sortByName sorts objects by namespace, then name.
func sortByName[P interface {
	GetNamespace() string
	GetName() string
}](items []P) {
	slices.SortFunc(items, func(a, b P) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
}
