package index_test

import (
	"bytes"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/index"
)

// syncBuffer is a buffer the debug log may write to from several
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureOutput runs fn with the standard error and the default logger (at
// debug level) redirected, and returns what each received.
func captureOutput(t *testing.T, fn func()) (stderr, debug string) {
	t.Helper()
	file, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer file.Close()
	var logged syncBuffer
	realStderr, defaultLogger, logOutput, logFlags := os.Stderr, slog.Default(), log.Writer(), log.Flags()
	os.Stderr = file
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer func() {
		os.Stderr = realStderr
		slog.SetDefault(defaultLogger)
		log.SetOutput(logOutput)
		log.SetFlags(logFlags)
	}()
	fn()
	data, err := os.ReadFile(file.Name())
	require.NoError(t, err)
	return string(data), logged.String()
}

// TestDeprecatedFieldsAreProblemsNotStderr: kustomize prints a warning for
// each deprecated field of a kustomization on every build. The index
// reports each as a problem of the kustomization file and logs it at debug
// level; nothing reaches the standard error, and the root builds as usual.
func TestDeprecatedFieldsAreProblemsNotStderr(t *testing.T) {
	repo := t.TempDir()
	files := map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n" +
			"spec:\n  template:\n    spec:\n      containers: [{name: web, image: web:1}]\n",
		"prod/kustomization.yaml": "namespace: prod\nbases: [../base]\ncommonLabels: {team: web}\n" +
			"patchesStrategicMerge: [replicas.yaml]\n",
		"prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
	}
	for name, content := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}

	var ix *index.Index
	stderr, debug := captureOutput(t, func() {
		var err error
		ix, err = index.Read(repo, index.Options{})
		require.NoError(t, err)
	})

	assert.Empty(t, stderr, "kustomize's warnings reached the standard error")
	var deprecated []string
	for _, p := range ix.Problems {
		if p.Kind == index.ProblemDeprecated {
			assert.Equal(t, "prod/kustomization.yaml", p.Path)
			deprecated = append(deprecated, p.Err)
		}
	}
	require.Len(t, deprecated, 3, "%v", ix.Problems)
	for i, field := range []string{"'bases'", "'commonLabels'", "'patchesStrategicMerge'"} {
		assert.Contains(t, deprecated[i], field+" is deprecated")
		assert.Contains(t, debug, field+" is deprecated")
	}
	assert.Contains(t, debug, "kustomize warning", "kustomize's own lines go to the debug log")
	assert.Equal(t, []indexed{
		{"Deployment", "", "web", "base", index.Source{Path: "base/deploy.yaml", APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		{"Deployment", "prod", "web", "prod", index.Source{Path: "base/deploy.yaml", APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
	}, objectsOf(ix))
}
