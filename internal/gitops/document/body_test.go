package document

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithValueLeavesTheValuesAlone(t *testing.T) {
	values := map[string]any{"web": map[string]any{"podAnnotations": map[string]any{"a": "b"}}, "image": "x"}
	got, ok := WithValue(values, []string{"web", "podAnnotations"}, "k", "v")
	require.True(t, ok)
	assert.Equal(t, map[string]any{"a": "b", "k": "v"}, got["web"].(map[string]any)["podAnnotations"])
	assert.Equal(t, map[string]any{"a": "b"}, values["web"].(map[string]any)["podAnnotations"])
	_, ok = WithValue(values, []string{"image", "podAnnotations"}, "k", "v")
	assert.False(t, ok, "a string stands where a map would go")
}
