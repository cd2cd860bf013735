package edit

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/testing/gitopstest"
)

func numbered(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

func TestUnifiedDiffFormat(t *testing.T) {
	tests := []struct {
		name string
		edit restart.FileEdit
		want string
	}{
		{
			name: "insertion with three lines of context",
			edit: FileEdit{Path: "a.yaml", Before: []byte(numbered(10, "l%d\n")),
				After: []byte(strings.Replace(numbered(10, "l%d\n"), "l5\n", "l5\nnew\n", 1))},
			want: "diff --git a/a.yaml b/a.yaml\n--- a/a.yaml\n+++ b/a.yaml\n" +
				"@@ -3,6 +3,7 @@\n l3\n l4\n l5\n+new\n l6\n l7\n l8\n",
		},
		{
			name: "insertion at the top",
			edit: FileEdit{Path: "a.yaml", Before: []byte("x\ny\n"), After: []byte("top\nx\ny\n")},
			want: "diff --git a/a.yaml b/a.yaml\n--- a/a.yaml\n+++ b/a.yaml\n" +
				"@@ -1,2 +1,3 @@\n+top\n x\n y\n",
		},
		{
			name: "last line without newline",
			edit: FileEdit{Path: "a.yaml", Before: []byte("a\nb"), After: []byte("a\nb\nc")},
			want: "diff --git a/a.yaml b/a.yaml\n--- a/a.yaml\n+++ b/a.yaml\n" +
				"@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n",
		},
		{
			name: "new file",
			edit: FileEdit{Path: "dir/new.yaml", Created: true, After: []byte("a: 1\nb: 2\n")},
			want: "diff --git a/dir/new.yaml b/dir/new.yaml\nnew file mode 100644\n--- /dev/null\n+++ b/dir/new.yaml\n" +
				"@@ -0,0 +1,2 @@\n+a: 1\n+b: 2\n",
		},
		{
			name: "two distant changes make two hunks",
			edit: FileEdit{Path: "a.yaml", Before: []byte(numbered(20, "l%d\n")),
				After: []byte(strings.NewReplacer("l2\n", "L2\n", "l18\n", "L18\n").Replace(numbered(20, "l%d\n")))},
			want: "diff --git a/a.yaml b/a.yaml\n--- a/a.yaml\n+++ b/a.yaml\n" +
				"@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n" +
				"@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n",
		},
		{
			name: "unchanged file writes nothing",
			edit: FileEdit{Path: "a.yaml", Before: []byte("a\n"), After: []byte("a\n")},
			want: "",
		},
		{
			name: "path that git quotes",
			edit: FileEdit{Path: "dir/t\"x.yaml", Created: true, After: []byte("a\n")},
			want: "diff --git \"a/dir/t\\\"x.yaml\" \"b/dir/t\\\"x.yaml\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/dir/t\\\"x.yaml\"\n" +
				"@@ -0,0 +1,1 @@\n+a\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, UnifiedDiff([]FileEdit{tt.edit}))
		})
	}
}

// TestUnifiedDiffAppliesWithGit feeds git apply with diffs of handwritten
// and random edits, CRLF and missing final newlines included, and checks
// every file ends up byte for byte as intended.
func TestUnifiedDiffAppliesWithGit(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var edits []FileEdit
	add := func(before, after string, created bool) {
		e := FileEdit{Path: fmt.Sprintf("case%02d/file.yaml", len(edits)), After: []byte(after), Created: created}
		if !created {
			e.Before = []byte(before)
		}
		edits = append(edits, e)
	}
	add("a\r\nb\r\nc\r\n", "a\r\nb\r\nnew\r\nc\r\n", false)
	add("a\nb", "a\nb\n", false)
	add("a\nb\n", "a\nb", false)
	add("", "", false)
	add("", "x\n", false)
	add("x\n", "", false)
	add("", "created\nno newline", true)
	add(numbered(200, "line %d\n"), strings.Replace(numbered(200, "line %d\n"), "line 100\n", "", 1), false)
	for i := 0; i < 40; i++ {
		lines := strings.SplitAfter(numbered(5+rng.Intn(60), "k%d: v\n"), "\n")
		lines = lines[:len(lines)-1]
		before := strings.Join(lines, "")
		out := append([]string(nil), lines...)
		for n := rng.Intn(6); n >= 0; n-- {
			switch pos := rng.Intn(len(out) + 1); rng.Intn(3) {
			case 0:
				out = append(out[:pos], append([]string{fmt.Sprintf("ins%d: x\n", n)}, out[pos:]...)...)
			case 1:
				if pos < len(out) {
					out = append(out[:pos], out[pos+1:]...)
				}
			default:
				if pos < len(out) {
					out[pos] = fmt.Sprintf("changed%d: y\n", n)
				}
			}
		}
		after := strings.Join(out, "")
		if rng.Intn(4) == 0 {
			after = strings.TrimSuffix(after, "\n")
		}
		add(before, after, false)
	}

	dir := t.TempDir()
	for _, e := range edits {
		if e.Created {
			continue
		}
		p := filepath.Join(dir, e.Path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, e.Before, 0o644))
	}
	gitopstest.GitApply(t, dir, UnifiedDiff(edits))
	for _, e := range edits {
		got, err := os.ReadFile(filepath.Join(dir, e.Path))
		require.NoError(t, err)
		assert.Equal(t, string(e.After), string(got), e.Path)
	}
}

func TestDiffLinesIsMinimal(t *testing.T) {
	tests := []struct {
		a, b    string
		changes int
	}{
		{"abcabba", "cbabac", 5},
		{"abc", "abc", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"abcdef", "abXdef", 2},
	}
	for _, tt := range tests {
		t.Run(tt.a+"→"+tt.b, func(t *testing.T) {
			a, b := strings.Split(tt.a, ""), strings.Split(tt.b, "")
			ops := diffLines(charLines(tt.a), charLines(tt.b))
			changes := 0
			var rebuilt []string
			for _, op := range ops {
				switch op.kind {
				case opEqual:
					rebuilt = append(rebuilt, a[op.a])
				case opInsert:
					changes++
					rebuilt = append(rebuilt, b[op.b])
				case opDelete:
					changes++
				}
			}
			assert.Equal(t, tt.changes, changes)
			assert.Equal(t, tt.b, strings.Join(rebuilt, ""))
		})
	}
}

// charLines puts each character of s on a line of its own.
func charLines(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		b.WriteByte('\n')
	}
	return b.String()
}
