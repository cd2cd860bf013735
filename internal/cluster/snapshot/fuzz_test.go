package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadSnapshot feeds arbitrary file contents to the snapshot decoder: it
// must never panic, and a failure must name the file it came from.
func FuzzReadSnapshot(f *testing.F) {
	seeds, _ := filepath.Glob("../../../testdata/demo/cluster/*")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil && len(data) < 64<<10 {
			f.Add(data, strings.HasSuffix(s, ".json"))
		}
	}
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n"), false)
	f.Add([]byte(`{"kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod"}]}`), true)
	f.Add([]byte("a: &a [*a]\n"), false)
	f.Add([]byte("---\n---\n# c\n...\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		_, err := decodeSnapshot(data, isJSON, "fuzz.yaml")
		if err != nil && !strings.Contains(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
