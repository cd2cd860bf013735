package snapshot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

// TestFleetSnapshotsStream: every file of a generated fleet's snapshot, in
// the shapes `kubectl get -o json` and `-o yaml` print, takes the streaming
// path (a file it declined would be read whole, correct but on one core
// and all in memory) and decodes to what the whole-file decoder reads.
func TestFleetSnapshotsStream(t *testing.T) {
	_, jsonDir, yamlDir := fleetSnapshots(t, synth.Spec{Seed: 3, Namespaces: 20, Workloads: 60, Pods: 300, Drift: 0.5})
	for _, dir := range []string{jsonDir, yamlDir} {
		files := 0
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files++
			isJSON := strings.HasSuffix(path, ".json")
			streamed, err := snapshot.ReadStream(path, isJSON)
			require.NoError(t, err, path)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			whole, err := snapshot.Decode(data, isJSON, path)
			require.NoError(t, err)
			assert.Equal(t, whole, streamed, path)
			return nil
		})
		require.NoError(t, err)
		assert.Positive(t, files)
	}
}
