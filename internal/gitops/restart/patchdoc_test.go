package restart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestPatchDocumentKeepsNamesStrings: a name or namespace that YAML would
// read as a number, a boolean or null is quoted, so kustomize matches the
// patch against the workload the base defines.
func TestPatchDocumentKeepsNamesStrings(t *testing.T) {
	for _, name := range []string{"cart", "9", "1e3", "true", "null", "0x1f"} {
		t.Run(name, func(t *testing.T) {
			doc, err := PatchDocument(Restart{Set: map[string]string{"kedge.io/restartedAt": "rev-1-25-1"}, APIVersion: "apps/v1"},
				PatchTarget{Kind: "Deployment", Name: name, Namespace: name})
			require.NoError(t, err)
			var read struct {
				Metadata struct {
					Name      any `json:"name"`
					Namespace any `json:"namespace"`
				} `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal(doc, &read), string(doc))
			assert.Equal(t, name, read.Metadata.Name, string(doc))
			assert.Equal(t, name, read.Metadata.Namespace, string(doc))
		})
	}
}
