package migrate

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/drift"
)

// try computes a candidate's edit and verifies it.
func (c *Checkout) try(cand candidate, m *drift.Migration, key string) (*LabelEdit, error) {
	before, err := c.ix.ReadFile(cand.path)
	if err != nil {
		return nil, err
	}
	after, changed, err := cand.set(before, m.To)
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, fmt.Errorf("the file already says %s=%s", key, m.To)
	}
	if cand.rendered {
		if err := c.verify(cand.path, after, m.Namespace, key, m.From, m.To); err != nil {
			return nil, err
		}
	}
	to := m.To
	return &LabelEdit{
		Namespace: m.Namespace, Path: cand.path, Before: before, After: after,
		apply: func(src []byte) ([]byte, bool, error) { return cand.set(src, to) },
	}, nil
}

// verify renders every root that reads the edited file, before and after,
// and accepts the edit only when the sole difference is the namespace's
// label going from one value to the other. A commonLabels entry that also
// labels workloads (and rewrites their immutable selectors), or a patch
// that sets the label again later, fails here instead of reaching Git.
func (c *Checkout) verify(file string, after []byte, namespace, key, from, to string) error {
	return c.verifyChanges(file, after, namespace, []labelChange{{key: key, from: from, to: to}})
}

// verifyChanges is verify for several label changes of the namespace.
func (c *Checkout) verifyChanges(file string, after []byte, namespace string, changes []labelChange) error {
	roots := c.ix.Readers(file)
	if len(roots) == 0 {
		return fmt.Errorf("no kustomize root reads %s", file)
	}
	for _, root := range roots {
		before, err := c.objects(root, nil)
		if err != nil {
			return fmt.Errorf("rendering %s: %w", root, err)
		}
		edited, err := c.objects(root, map[string][]byte{file: after})
		if err != nil {
			return fmt.Errorf("rendering %s with the edit: %w", root, err)
		}
		if err := compare(before, edited, namespace, changes); err != nil {
			return fmt.Errorf("in %s, %w", root, err)
		}
	}
	return nil
}

type objectID struct{ apiVersion, kind, namespace, name string }

func (id objectID) String() string {
	if id.namespace == "" {
		return id.kind + " " + id.name
	}
	return id.kind + " " + id.namespace + "/" + id.name
}

func (c *Checkout) objects(root string, replace map[string][]byte) (map[objectID]map[string]any, error) {
	rendered, err := c.ix.RenderRoot(root, replace)
	if err != nil {
		return nil, err
	}
	out := make(map[objectID]map[string]any, len(rendered))
	for _, o := range rendered {
		out[objectID{o.APIVersion, o.ID.Kind, o.ID.Namespace, o.ID.Name}] = o.Body
	}
	return out, nil
}

func compare(before, after map[objectID]map[string]any, namespace string, changes []labelChange) error {
	want := maps.Clone(before)
	seen := false
	for id, b := range before {
		a, ok := after[id]
		if !ok || id.kind != "Namespace" || id.name != namespace || id.namespace != "" {
			continue
		}
		seen = true
		for _, ch := range changes {
			if err := checkLabel(namespace, b, a, ch); err != nil {
				return err
			}
			b = withChange(b, ch)
		}
		want[id] = b
	}
	if changed := unintended(want, after); len(changed) > 0 {
		if len(changed) > 3 {
			changed = append(changed[:3], fmt.Sprintf("%d more", len(changed)-3))
		}
		return fmt.Errorf("the edit also changes %s", strings.Join(changed, ", "))
	}
	if !seen {
		return fmt.Errorf("the build does not render Namespace %s", namespace)
	}
	return nil
}

// unintended names, sorted, the objects a render after an edit has
// otherwise than wanted: gone, changed, or new.
func unintended(want, after map[objectID]map[string]any) []string {
	var changed []string
	for id, w := range want {
		a, ok := after[id]
		switch {
		case !ok:
			changed = append(changed, id.String()+" (gone)")
		case !equalJSON(a, w):
			changed = append(changed, id.String())
		}
	}
	for id := range after {
		if _, ok := want[id]; !ok {
			changed = append(changed, id.String()+" (new)")
		}
	}
	sort.Strings(changed)
	return changed
}

// checkLabel holds the rendered Namespace to one label change: before, the
// label has the value the change starts from; after, the one it ends with.
func checkLabel(namespace string, before, after map[string]any, ch labelChange) error {
	if got := labelOf(before, ch.key); got != ch.from {
		return fmt.Errorf("Namespace %s is rendered with %s=%s, not %s", namespace, ch.key, got, ch.from)
	}
	if ch.remove {
		if _, still, _ := unstructured.NestedString(after, "metadata", "labels", ch.key); still {
			return fmt.Errorf("Namespace %s is still rendered with %s: something else in the build sets it", namespace, ch.key)
		}
		return nil
	}
	if got := labelOf(after, ch.key); got != ch.to {
		return fmt.Errorf("Namespace %s is still rendered with %s=%s: something later in the build sets it", namespace, ch.key, got)
	}
	return nil
}

// withChange returns a copy of body with the change made.
func withChange(body map[string]any, ch labelChange) map[string]any {
	if !ch.remove {
		return withLabel(body, ch.key, ch.to)
	}
	out := runtime.DeepCopyJSON(body)
	unstructured.RemoveNestedField(out, "metadata", "labels", ch.key)
	return out
}

func labelOf(body map[string]any, key string) string {
	v, _, _ := unstructured.NestedString(body, "metadata", "labels", key)
	return v
}

// withLabel returns a copy of body with one label set.
func withLabel(body map[string]any, key, value string) map[string]any {
	out := runtime.DeepCopyJSON(body)
	_ = unstructured.SetNestedField(out, value, "metadata", "labels", key)
	return out
}

func equalJSON(a, b map[string]any) bool {
	ja, errA := sigsyaml.Marshal(a)
	jb, errB := sigsyaml.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
