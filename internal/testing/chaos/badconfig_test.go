package chaos

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/dashboard"
)

// loadOutcome is how loading a configuration or a template override
// failed, as the bounded child reports it.
type loadOutcome struct {
	Err string
	// ConfigKey is the key a *config.Error names; IsConfigError says the
	// error was one.
	ConfigKey     string
	IsConfigError bool
}

// loadConfigCase loads file for `kedge run` (the child side of a
// configuration case).
func loadConfigCase(file string) loadOutcome {
	cfg, err := config.Load(file, nil, nil)
	if err == nil {
		err = cfg.Validate(config.ModeRun)
	}
	if err == nil {
		return loadOutcome{}
	}
	out := loadOutcome{Err: err.Error()}
	var cerr *config.Error
	if errors.As(err, &cerr) {
		out.IsConfigError, out.ConfigKey = true, cerr.Key
	}
	return out
}

// loadTemplatesCase loads dir as a template override (the child side of a
// template case).
func loadTemplatesCase(dir string) loadOutcome {
	if _, err := dashboard.NewRenderer(dir); err != nil {
		return loadOutcome{Err: err.Error()}
	}
	return loadOutcome{}
}

// TestBadConfig loads each file of testdata/bad/config for `kedge run`, in
// a bounded child process (runBounded): it must fail with a *config.Error
// naming the key (or the file) its first line wants, so the CLI exits 2
// pointing at the exact thing to fix.
func TestBadConfig(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus, "config", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			want := wantLine(t, file)
			var got loadOutcome
			runBounded(t, "config", file, &got)
			require.True(t, got.IsConfigError, "want a *config.Error, got %q", got.Err)
			assert.True(t, got.ConfigKey == want || strings.HasSuffix(got.ConfigKey, "/"+want),
				"the error names %q, want %q (%v)", got.ConfigKey, want, got.Err)
			assert.NotContains(t, got.Err, "ghs_leaked", "the error repeats a credential")
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
// template override, in a bounded child process (runBounded): kedge
// refuses to start with an error naming the file and the fault (every line
// of WANT), rather than failing in the middle of a cycle or rendering
// something half-made.
func TestBadTemplates(t *testing.T) {
	for _, name := range caseDirs(t, "templates") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(corpus, "templates", name)
			wantData, err := os.ReadFile(filepath.Join(dir, "WANT"))
			require.NoError(t, err)
			var got loadOutcome
			runBounded(t, "templates", dir, &got)
			require.NotEmpty(t, got.Err, "the override must be refused")
			for _, want := range strings.Split(strings.TrimSpace(string(wantData)), "\n") {
				assert.Contains(t, got.Err, want)
			}
		})
	}
}
