package editcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestVolatileValuesAreMaskedOnly(t *testing.T) {
	render := func(random, image, restart string) []*unstructured.Unstructured {
		annotations := map[string]any{"rollme": random}
		if restart != "" {
			annotations["kedge.io/restart"] = restart
		}
		return []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "shop"},
				"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": annotations},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "shop", "image": image,
						"env": []any{map[string]any{"name": "INSTANCE", "value": random}}}}}}}}},
			{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "shop-test-" + random}}},
		}
	}
	v, err := volatileOf(render("abc", "shop:1", ""), render("xyz", "shop:1", ""))
	require.NoError(t, err)

	before := v.settle(render("abc", "shop:1", ""))
	require.Len(t, before, 1, "the object of a random name is left out")
	assert.Equal(t, before, v.settle(render("xyz", "shop:1", "")), "what differs from render to render is masked")

	restarted := v.settle(render("def", "shop:1", "1"))
	ann, _, _ := unstructured.NestedStringMap(restarted[0].Object, "spec", "template", "metadata", "annotations")
	assert.Equal(t, map[string]string{"rollme": volatileMark, "kedge.io/restart": "1"}, ann)

	changed := v.settle(render("def", "shop:2", ""))
	assert.NotEqual(t, before, changed, "a change beside a volatile value in the same list item is still seen")
}

func TestVolatileRendersOfAnotherShape(t *testing.T) {
	_, err := volatileOf(make([]*unstructured.Unstructured, 2), make([]*unstructured.Unstructured, 3))
	assert.EqualError(t, err, "rendered 2 objects, then 3")
}
