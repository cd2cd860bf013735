package snapshot

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

// TestWireDecodeEqualsFullDecode holds the trimmed decoders to the full API
// types they replace: every Pod and ReplicaSet of every snapshot in the
// repository's testdata and of a generated fleet, decoded both ways and
// trimmed, must come out equal.
func TestWireDecodeEqualsFullDecode(t *testing.T) {
	fleet, err := synth.New(synth.Spec{Seed: 1, Namespaces: 40, Workloads: 160, Pods: 800, Drift: 0.5})
	require.NoError(t, err)
	jsonDir, yamlDir, writtenDir := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, fleet.WriteSnapshotJSON(jsonDir))
	require.NoError(t, fleet.WriteSnapshotYAML(yamlDir))
	require.NoError(t, Write(fleet.Set, writtenDir))

	roots := []string{jsonDir, yamlDir, writtenDir, "../../../testdata/demo/cluster", "testdata", "../trim/testdata"}
	bad, err := filepath.Glob("../../../testdata/bad/snapshot/*/files")
	require.NoError(t, err)
	roots = append(roots, bad...)

	pods, replicaSets := 0, 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !isSnapshotFile(p) {
				return err
			}
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			// Files that are broken on purpose are the error tests' business.
			_ = eachDocument(data, strings.HasSuffix(p, ".json"), func(raw []byte) error {
				eachItem(raw, func(kind string, item []byte) {
					switch kind {
					case "Pod":
						pods++
						comparePod(t, p, item)
					case "ReplicaSet":
						replicaSets++
						compareReplicaSet(t, p, item)
					}
				})
				return nil
			})
			return nil
		})
		require.NoError(t, err)
	}
	assert.Greater(t, pods, 1600, "pods compared")
	assert.Greater(t, replicaSets, 160, "ReplicaSets compared")
}

// eachItem calls fn with every object of a document, Lists flattened.
func eachItem(raw []byte, fn func(kind string, item []byte)) {
	var head typeHeader
	if json.Unmarshal(raw, &head) != nil {
		return
	}
	if strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		for _, item := range head.Items {
			eachItem(item, fn)
		}
		return
	}
	fn(head.Kind, raw)
}

func comparePod(t *testing.T, file string, raw []byte) {
	var full corev1.Pod
	if json.Unmarshal(raw, &full) != nil {
		// Broken on purpose: the error tests hold what the read says.
		return
	}
	got, err := decodePod(raw, trim.New())
	require.NoError(t, err, file)
	assert.Equal(t, trim.New().Pod(&full).DeepCopyObject().(*trim.CachedPod).Pod, *got, "%s: pod %s/%s", file, full.Namespace, full.Name)
}

func compareReplicaSet(t *testing.T, file string, raw []byte) {
	var full appsv1.ReplicaSet
	if json.Unmarshal(raw, &full) != nil {
		return
	}
	got, err := decodeReplicaSet(raw, trim.New())
	require.NoError(t, err, file)
	want := trim.New().ReplicaSet(&full)
	want.TypeMeta = full.TypeMeta
	assert.Equal(t, want, *got, "%s: ReplicaSet %s/%s", file, full.Namespace, full.Name)
}
