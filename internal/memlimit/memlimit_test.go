package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cgroupFiles(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

func TestCgroupLimit(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    int64
		noLimit bool
	}{
		{name: "v2 limit", files: map[string]string{"memory.max": "2147483648\n"}, want: 2 << 30},
		{name: "v2 without limit", files: map[string]string{"memory.max": "max\n"}, noLimit: true},
		{name: "v1 limit", files: map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, want: 512 << 20},
		{name: "v1 without limit", files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, noLimit: true},
		{name: "v2 wins over v1", files: map[string]string{"memory.max": "1073741824", "memory/memory.limit_in_bytes": "536870912"}, want: 1 << 30},
		{name: "no cgroup files", noLimit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupLimit(cgroupFiles(t, tt.files))
			if tt.noLimit {
				assert.ErrorIs(t, err, errNoLimit)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCgroupLimitRejectsGarbage(t *testing.T) {
	_, err := cgroupLimit(cgroupFiles(t, map[string]string{"memory.max": "lots"}))
	assert.Error(t, err)
	assert.NotErrorIs(t, err, errNoLimit)
}

func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	tests := []struct {
		name      string
		env       bool
		files     map[string]string
		wantLimit int64
		wantFrom  string
	}{
		{name: "cgroup limit", files: map[string]string{"memory.max": "2147483648"}, wantLimit: (2 << 30) / 100 * 85, wantFrom: FromCgroup},
		{name: "no cgroup limit", files: map[string]string{"memory.max": "max"}, wantLimit: DefaultBudget / 100 * 85, wantFrom: FromDefault},
		{name: "GOMEMLIMIT is left to the runtime", env: true, files: map[string]string{"memory.max": "2147483648"}, wantLimit: 12345 << 20, wantFrom: FromEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "12345MiB")
			if tt.env {
				// The runtime reads the variable at start; stand in for it.
				debug.SetMemoryLimit(12345 << 20)
			} else {
				require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
			}
			limit, from := apply(cgroupFiles(t, tt.files))
			assert.Equal(t, tt.wantFrom, from)
			assert.Equal(t, tt.wantLimit, limit)
			assert.Equal(t, tt.wantLimit, debug.SetMemoryLimit(-1))
		})
	}
}

func TestPacked(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Run("paces until done, then sets the pace back", func(t *testing.T) {
		t.Setenv("GOGC", "")
		require.NoError(t, os.Unsetenv("GOGC"))
		debug.SetGCPercent(80)
		done := Packed()
		assert.Equal(t, packedGCPercent, debug.SetGCPercent(packedGCPercent))
		done()
		assert.Equal(t, 80, debug.SetGCPercent(80))
		// A second call does not set the pace again.
		debug.SetGCPercent(60)
		done()
		assert.Equal(t, 60, debug.SetGCPercent(60))
	})
	t.Run("overlapping calls set the pace back after the last", func(t *testing.T) {
		t.Setenv("GOGC", "")
		require.NoError(t, os.Unsetenv("GOGC"))
		debug.SetGCPercent(100)
		first := Packed()
		second := Packed()
		first()
		assert.Equal(t, packedGCPercent, debug.SetGCPercent(packedGCPercent), "paced while the second is not done")
		second()
		assert.Equal(t, 100, debug.SetGCPercent(100))
	})
	t.Run("GOGC is left to the runtime", func(t *testing.T) {
		t.Setenv("GOGC", "200")
		debug.SetGCPercent(200)
		done := Packed()
		assert.Equal(t, 200, debug.SetGCPercent(200))
		done()
		assert.Equal(t, 200, debug.SetGCPercent(200))
	})
}
