package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoveStaleKeepsEveryScaleOfTheCurrentGenerator: a quick run at
// another -scale must not delete the full fleet, which takes minutes to
// generate; a fleet of an older generator goes.
func TestRemoveStaleKeepsEveryScaleOfTheCurrentGenerator(t *testing.T) {
	cache := t.TempDir()
	for _, dir := range []string{"fleet-3aaa8cd1-1", "fleet-3aaa8cd1-0.1", "fleet-0bbb1234-1", "other"} {
		require.NoError(t, os.Mkdir(filepath.Join(cache, dir), 0o755))
	}
	require.NoError(t, removeStale(cache, "fleet-3aaa8cd1-"))
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, []string{"fleet-3aaa8cd1-1", "fleet-3aaa8cd1-0.1", "other"}, left)
}
