package chaos

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The bad-input corpus: one directory per case, each with a case.yaml that
// says what the case is and what kedge must do with it.
const corpus = "../../testdata/bad"

// generated is a file a case needs that cannot live in Git: huge or binary
// content, and symlinks that leave the checkout.
type generated struct {
	Path string `json:"path"`
	// Binary is a size: bytes that are not text (a PNG header, NULs).
	Binary int `json:"binary"`
	// HugeYAML is a size: a valid manifest of about that many bytes.
	HugeYAML int `json:"hugeYAML"`
	// Symlink is the absolute target of a link.
	Symlink string `json:"symlink"`
	// SymlinkOutside names a file of the checkout whose copy, made outside
	// the checkout, Path becomes a link to.
	SymlinkOutside string `json:"symlinkOutside"`
}

// caseDirs lists the case directories under corpus/kind.
func caseDirs(t *testing.T, kind string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(corpus, kind))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	require.NotEmpty(t, out, "no %s cases", kind)
	return out
}

func readCase(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, into), path)
}

// generate makes the files a case cannot keep in Git, inside root.
func generate(t *testing.T, root string, files []generated) {
	t.Helper()
	for _, g := range files {
		full := filepath.Join(root, filepath.FromSlash(g.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		var original []byte
		if g.SymlinkOutside != "" {
			var err error
			original, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(g.SymlinkOutside)))
			require.NoError(t, err)
		}
		require.NoError(t, os.RemoveAll(full))
		switch {
		case g.Binary > 0:
			require.NoError(t, os.WriteFile(full, binaryContent(g.Binary), 0o644))
		case g.HugeYAML > 0:
			require.NoError(t, os.WriteFile(full, hugeYAML(g.HugeYAML), 0o644))
		case g.Symlink != "":
			require.NoError(t, os.Symlink(g.Symlink, full))
		case g.SymlinkOutside != "":
			outside := filepath.Join(t.TempDir(), filepath.Base(full))
			require.NoError(t, os.WriteFile(outside, original, 0o644))
			require.NoError(t, os.Symlink(outside, full))
		default:
			t.Fatalf("generate %s: nothing to make", g.Path)
		}
	}
}

// binaryContent is n bytes that are no text: a PNG signature, then bytes
// of every value, NULs included.
func binaryContent(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for i := 16; i < n; i++ {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// hugeYAML is a ConfigMap of about n bytes of generated data.
func hugeYAML(n int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: generated-data\n  namespace: analytics\ndata:\n")
	line := strings.Repeat("0123456789abcdef", 6)
	for i := 0; b.Len() < n; i++ {
		b.WriteString("  key-")
		b.WriteString(strings.Repeat("k", 1+i%7))
		b.WriteString(strconv.Itoa(i))
		b.WriteString(": ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// within runs fn, failing the test when it takes longer than limit: hostile
// input must be refused, not chewed on.
func within[T any](t *testing.T, limit time.Duration, fn func() T) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-ctx.Done():
		t.Fatalf("still running after %s", limit)
		panic("unreachable")
	}
}

// skipKnown skips a case whose defect is known and not fixed yet, unless
// KEDGE_BAD_KNOWN is set (to check a fix).
func skipKnown(t *testing.T, issue string) {
	t.Helper()
	if issue != "" && os.Getenv("KEDGE_BAD_KNOWN") == "" {
		t.Skip("known issue: " + issue)
	}
}
