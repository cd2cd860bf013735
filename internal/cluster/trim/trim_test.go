package trim

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata")

// TestTrim runs every testdata/<case>/input.{yaml,json} through the
// informer transform and compares the object kedge would see with
// want.yaml.
func TestTrim(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			trim := New()
			obj := decodeTrimInput(t, dir)
			trimmed, err := trim.Transform(obj)
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
			again, err := trim.Transform(trimmed)
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
	if !scheme.Scheme.Recognizes(u.GroupVersionKind()) {
		// Custom resources reach kedge through the dynamic client.
		return u
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	require.NoError(t, err)
	return obj
}

// renderTrimmed shows an object as a Set would hold it.
func renderTrimmed(t *testing.T, obj any) []byte {
	t.Helper()
	var out []byte
	var err error
	switch o := obj.(type) {
	case *CachedPod:
		pod := o.CoreV1()
		pod.UID, pod.ResourceVersion = o.uid, o.resourceVersion
		out, err = yaml.Marshal(pod)
	case *CachedReplicaSet:
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
	trim := New()
	a := trim.internMap(map[string]string{"app": "cart", "version": "v1"}, nil)
	b := trim.internMap(map[string]string{"version": "v1", "app": "cart"}, nil)
	assert.Equal(t, reflect.ValueOf(a).Pointer(), reflect.ValueOf(b).Pointer(), "equal maps are one map")
	for _, other := range []map[string]string{
		{"app": "cart"},
		{"app": "cart", "version": "v2"},
		{"app\x00cart": "", "version": "v1"},
		{"app": "cart\x00version", "": "v1"},
	} {
		got := trim.internMap(other, nil)
		assert.Equal(t, other, got)
		assert.NotEqual(t, reflect.ValueOf(a).Pointer(), reflect.ValueOf(got).Pointer(), "%v", other)
	}

	// Entries the filter drops neither reach the map nor tell two maps apart.
	keepApp := func(k string) bool { return k == "app" }
	c := trim.internMap(map[string]string{"app": "cart", "pod-template-hash": "7d9c8b6f5d"}, keepApp)
	d := trim.internMap(map[string]string{"app": "cart", "pod-template-hash": "5f6d7c8b9a"}, keepApp)
	assert.Equal(t, map[string]string{"app": "cart"}, c)
	assert.Equal(t, reflect.ValueOf(c).Pointer(), reflect.ValueOf(d).Pointer())
	assert.Nil(t, trim.internMap(map[string]string{"pod-template-hash": "7d9c8b6f5d"}, keepApp))
}

// TestOwnerListsAreSharedOnlyWhenEqual: the replicas of a ReplicaSet share
// one owner list; any field that differs gives a list of its own, and no
// list points into the pod it was read from.
func TestOwnerListsAreSharedOnlyWhenEqual(t *testing.T) {
	yes, no := true, false
	owner := func(name, uid string, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID(uid), Controller: controller, BlockOwnerDeletion: &yes}}
	}
	tr := New()
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

// TestTrimmedIdentityIsItsOwnAllocation: a cached pod's and ReplicaSet's
// name, UID and resourceVersion are what was decoded, copied together into
// one allocation, so that none keeps the decoder's strings around it alive.
func TestTrimmedIdentityIsItsOwnAllocation(t *testing.T) {
	trim := New()
	pod, ok := decodeTrimInput(t, filepath.Join("testdata", "pod-native-sidecar")).(*corev1.Pod)
	require.True(t, ok)
	rs, ok := decodeTrimInput(t, filepath.Join("testdata", "replicaset")).(*appsv1.ReplicaSet)
	require.True(t, ok)
	cachedPod := trim.Pod(pod)
	cachedRS := trim.ReplicaSet(rs)

	for _, tc := range []struct {
		name    string
		in, got [3]string
	}{
		{"pod", [3]string{pod.Name, string(pod.UID), pod.ResourceVersion}, [3]string{cachedPod.Name, string(cachedPod.uid), cachedPod.resourceVersion}},
		{"replicaset", [3]string{rs.Name, string(rs.UID), rs.ResourceVersion}, [3]string{cachedRS.Name, string(cachedRS.UID), cachedRS.ResourceVersion}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.in, tc.got)
			at := unsafe.StringData(tc.got[0])
			assert.NotSame(t, unsafe.StringData(tc.in[0]), at, "the name is the decoder's string")
			assert.Same(t, (*byte)(unsafe.Add(unsafe.Pointer(at), len(tc.got[0]))), unsafe.StringData(tc.got[1]), "the UID is not next to the name")
			assert.Same(t, (*byte)(unsafe.Add(unsafe.Pointer(at), len(tc.got[0])+len(tc.got[1]))), unsafe.StringData(tc.got[2]), "the resourceVersion is not next to the UID")
		})
	}
}
