package cluster

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata")

// TestTrim runs every testdata/trim/<case>/input.{yaml,json} through the
// informer transform and compares the object kedge would see with
// want.yaml.
func TestTrim(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "trim", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			trim := newTrimmer()
			obj := decodeTrimInput(t, dir)
			trimmed, err := trim.transform(obj)
			require.NoError(t, err)
			got := renderTrimmed(t, trimmed)

			wantPath := filepath.Join(dir, "want.yaml")
			if *updateGolden {
				require.NoError(t, os.WriteFile(wantPath, got, 0o644))
			}
			want, err := os.ReadFile(wantPath)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(got))
			assert.NotContains(t, string(got), "managedFields")
			assert.NotContains(t, string(got), "last-applied-configuration")

			// client-go may pass an object through the transform twice.
			again, err := trim.transform(trimmed)
			require.NoError(t, err)
			assert.Equal(t, string(got), string(renderTrimmed(t, again)), "transform is not idempotent")
		})
	}
}

func decodeTrimInput(t *testing.T, dir string) any {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "input.*"))
	require.NoError(t, err)
	require.Len(t, matches, 1, "one input file per case")
	data, err := os.ReadFile(matches[0])
	require.NoError(t, err)
	raw, err := yaml.YAMLToJSON(data)
	require.NoError(t, err)

	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(raw))
	if slicesContainGroup(u.GroupVersionKind().Group) {
		// Custom resources reach kedge through the dynamic client.
		return u
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	require.NoError(t, err)
	return obj
}

func slicesContainGroup(group string) bool {
	for _, cr := range customResources {
		if cr.group == group {
			return true
		}
	}
	return false
}

// renderTrimmed shows an object as a Set would hold it.
func renderTrimmed(t *testing.T, obj any) []byte {
	t.Helper()
	var out []byte
	var err error
	switch o := obj.(type) {
	case *trimmedPod:
		pod := o.CoreV1()
		pod.UID, pod.ResourceVersion = o.uid, o.resourceVersion
		out, err = yaml.Marshal(pod)
	case *cachedReplicaSet:
		out, err = yaml.Marshal(o.ReplicaSet)
	case *unstructured.Unstructured:
		out, err = yaml.Marshal(o.Object)
	case runtime.Object:
		copied := o.DeepCopyObject()
		// The custom resources kedge reads are its own types, which the
		// client-go scheme does not know; they keep their apiVersion and kind.
		if gvks, _, kindErr := scheme.Scheme.ObjectKinds(copied); kindErr == nil {
			copied.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		out, err = yaml.Marshal(copied)
	default:
		t.Fatalf("unexpected transform result %T", obj)
	}
	require.NoError(t, err)
	return []byte(strings.TrimSpace(string(out)) + "\n")
}

func TestInternedMapsAreSharedOnlyWhenEqual(t *testing.T) {
	in := newMapInterner(8)
	a := in.get(map[string]string{"app": "cart", "version": "v1"})
	b := in.get(map[string]string{"version": "v1", "app": "cart"})
	assert.Equal(t, reflect.ValueOf(a).Pointer(), reflect.ValueOf(b).Pointer(), "equal maps are one map")
	for _, other := range []map[string]string{
		{"app": "cart"},
		{"app": "cart", "version": "v2"},
		{"app\x00cart": "", "version": "v1"},
		{"app": "cart\x00version", "": "v1"},
	} {
		got := in.get(other)
		assert.Equal(t, other, got)
		assert.NotEqual(t, reflect.ValueOf(a).Pointer(), reflect.ValueOf(got).Pointer(), "%v", other)
	}
}

// TestOwnerListsAreSharedOnlyWhenEqual: the replicas of a ReplicaSet share
// one owner list; any field that differs gives a list of its own, and no
// list points into the pod it was read from.
func TestOwnerListsAreSharedOnlyWhenEqual(t *testing.T) {
	yes, no := true, false
	owner := func(name, uid string, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID(uid), Controller: controller, BlockOwnerDeletion: &yes}}
	}
	tr := newTrimmer()
	first := tr.internOwners(owner("web-7d9c", "u1", &yes))
	second := tr.internOwners(owner("web-7d9c", "u1", &yes))
	assert.Same(t, &first[0], &second[0], "the same owners are one list")
	assert.NotSame(t, &yes, first[0].Controller, "flags do not point into the pod read")
	for _, other := range [][]metav1.OwnerReference{
		owner("web-7d9c", "u2", &yes),
		owner("web-7d9d", "u1", &yes),
		owner("web-7d9c", "u1", &no),
		owner("web-7d9c", "u1", nil),
		append(owner("web-7d9c", "u1", &yes), owner("web-7d9c", "u1", &yes)...),
	} {
		got := tr.internOwners(other)
		assert.Equal(t, other, got)
		assert.NotSame(t, &first[0], &got[0], "%v", other)
	}
}
