package editcheck

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// volatile is what differs between two renders of the same unchanged
// source: a chart's randAlphaNum, uuidv4 and now. Comparing a render before
// an edit with one after holds only what the source renders the same every
// time; an object whose name differs between the two renders (a test pod
// of a random name) is left out of both.
type volatile struct {
	dropped map[int]bool
	paths   map[int][][]any
}

// volatileOf compares two renders of one source, object by object.
func volatileOf(first, second []*unstructured.Unstructured) (volatile, error) {
	v := volatile{dropped: map[int]bool{}, paths: map[int][][]any{}}
	if len(first) != len(second) {
		return v, fmt.Errorf("rendered %d objects, then %d", len(first), len(second))
	}
	for i := range first {
		if name(first[i]) != name(second[i]) {
			v.dropped[i] = true
			continue
		}
		var paths [][]any
		differing(first[i].Object, second[i].Object, nil, &paths)
		if len(paths) > 0 {
			v.paths[i] = paths
		}
	}
	return v, nil
}

// differing lists the paths where a and b differ, down to the deepest
// mapping key or list item that does; a list whose length differs is one
// path.
func differing(a, b any, at []any, out *[][]any) {
	if reflect.DeepEqual(a, b) {
		return
	}
	switch va := a.(type) {
	case map[string]any:
		if vb, ok := b.(map[string]any); ok {
			for k, x := range va {
				differing(x, vb[k], append(at, k), out)
			}
			for k, y := range vb {
				if _, ok := va[k]; !ok {
					differing(nil, y, append(at, k), out)
				}
			}
			return
		}
	case []any:
		if vb, ok := b.([]any); ok && len(vb) == len(va) {
			for i := range va {
				differing(va[i], vb[i], append(at, i), out)
			}
			return
		}
	}
	*out = append(*out, append([]any(nil), at...))
}

// mark replaces what is at path in obj, where it exists, by one mark.
func mark(obj any, path []any) {
	for i, step := range path {
		last := i == len(path)-1
		switch node := obj.(type) {
		case map[string]any:
			k, ok := step.(string)
			if _, found := node[k]; !ok || !found {
				return
			}
			if last {
				node[k] = volatileMark
				return
			}
			obj = node[k]
		case []any:
			n, ok := step.(int)
			if !ok || n >= len(node) {
				return
			}
			if last {
				node[n] = volatileMark
				return
			}
			obj = node[n]
		default:
			return
		}
	}
}

const volatileMark = "(differs from render to render)"

// settle returns the objects without the volatile ones, and with each
// volatile value replaced by one mark.
func (v volatile) settle(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if len(v.dropped) == 0 && len(v.paths) == 0 {
		return objs
	}
	var out []*unstructured.Unstructured
	for i, o := range objs {
		if v.dropped[i] {
			continue
		}
		if paths := v.paths[i]; len(paths) > 0 {
			o = &unstructured.Unstructured{Object: runtime.DeepCopyJSON(o.Object)}
			for _, p := range paths {
				if len(p) > 0 {
					mark(o.Object, p)
				}
			}
		}
		out = append(out, o)
	}
	return out
}

// renderSettled renders the source before the edit twice and after it
// once, and returns both without what differs from render to render.
func renderSettled(renderBefore, renderAfter func() ([]*unstructured.Unstructured, error)) (before, after []*unstructured.Unstructured, errB, errA error) {
	before, errB = renderBefore()
	if errB != nil {
		return nil, nil, errB, nil
	}
	again, err := renderBefore()
	if err != nil {
		return nil, nil, err, nil
	}
	v, err := volatileOf(before, again)
	if err != nil {
		return nil, nil, err, nil
	}
	after, errA = renderAfter()
	if errA != nil || len(after) != len(before) {
		return before, after, nil, errA
	}
	return v.settle(before), v.settle(after), nil, nil
}
