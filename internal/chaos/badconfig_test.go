package chaos

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/dashboard"
)

// TestBadConfig loads each file of testdata/bad/config for `kedge run`: it
// must fail with a *config.Error naming the key (or the file) its first
// line wants, so the CLI exits 2 pointing at the exact thing to fix.
func TestBadConfig(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus, "config", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			want := wantLine(t, file)
			err := within(t, 30*time.Second, func() error {
				cfg, err := config.Load(file, nil, nil)
				if err != nil {
					return err
				}
				return cfg.Validate(config.ModeRun)
			})
			var cerr *config.Error
			require.True(t, errors.As(err, &cerr), "want a *config.Error, got %v", err)
			assert.True(t, cerr.Key == want || strings.HasSuffix(cerr.Key, "/"+want),
				"the error names %q, want %q (%v)", cerr.Key, want, err)
			assert.NotContains(t, err.Error(), "ghs_leaked", "the error repeats a credential")
		})
	}
}

// wantLine reads the "# want: KEY" line a case starts with (after a byte
// order mark, if any).
func wantLine(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	require.NoError(t, err)
	line = strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
	want, ok := strings.CutPrefix(line, "# want: ")
	require.True(t, ok, "%s must start with '# want: KEY'", file)
	return want
}

// TestBadTemplates loads each directory of testdata/bad/templates as a
// template override: kedge refuses to start with an error naming the file
// and the fault (every line of WANT), rather than failing in the middle of
// a cycle or rendering something half-made.
func TestBadTemplates(t *testing.T) {
	for _, name := range caseDirs(t, "templates") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(corpus, "templates", name)
			wantData, err := os.ReadFile(filepath.Join(dir, "WANT"))
			require.NoError(t, err)
			err = within(t, 30*time.Second, func() error {
				_, err := dashboard.NewRenderer(dir)
				return err
			})
			require.Error(t, err)
			for _, want := range strings.Split(strings.TrimSpace(string(wantData)), "\n") {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}
