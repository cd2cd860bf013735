package edit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/kedge-io/kedge/internal/gitops/restart"
)

// diffContext is the number of unchanged lines around each change, as
// git diff writes them.
const diffContext = 3

// UnifiedDiff renders edits as one patch that `git apply` accepts at the
// repository root: a/ and b/ prefixes, new files from /dev/null, three lines
// of context, and the "\ No newline at end of file" marker.
//
// go-diff finds the changed lines; the hunks and headers are written here
// because its own patch text is character-based and URL-escaped, which
// git apply does not read.
func UnifiedDiff(edits []restart.FileEdit) string {
	sorted := append([]restart.FileEdit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var b strings.Builder
	for _, e := range sorted {
		writeFileDiff(&b, e)
	}
	return b.String()
}

func writeFileDiff(b *strings.Builder, e restart.FileEdit) {
	a, n := "a/"+e.Path, "b/"+e.Path
	header := fmt.Sprintf("diff --git %s %s\n", quoteDiffPath(a), quoteDiffPath(n))
	oldLines := splitKeepEOL(string(e.Before))
	newLines := splitKeepEOL(string(e.After))
	if e.Created {
		b.WriteString(header)
		b.WriteString("new file mode 100644\n")
		if len(newLines) == 0 {
			return
		}
		fmt.Fprintf(b, "--- /dev/null\n+++ %s\n", quoteDiffPath(n))
		fmt.Fprintf(b, "@@ -0,0 +%s @@\n", hunkRange(0, len(newLines)))
		for _, l := range newLines {
			writeDiffLine(b, '+', l)
		}
		return
	}
	ops := diffLines(string(e.Before), string(e.After))
	hunks := groupHunks(ops)
	if len(hunks) == 0 {
		// A header without hunks would read as a mode change.
		return
	}
	b.WriteString(header)
	fmt.Fprintf(b, "--- %s\n+++ %s\n", quoteDiffPath(a), quoteDiffPath(n))
	for _, h := range hunks {
		oldStart, newStart, oldCount, newCount := -1, -1, 0, 0
		for _, op := range h {
			if op.kind != opInsert {
				if oldStart < 0 {
					oldStart = op.a
				}
				oldCount++
			}
			if op.kind != opDelete {
				if newStart < 0 {
					newStart = op.b
				}
				newCount++
			}
		}
		if oldStart < 0 {
			oldStart = h[0].a
		}
		if newStart < 0 {
			newStart = h[0].b
		}
		fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(oldStart, oldCount), hunkRange(newStart, newCount))
		for _, op := range h {
			switch op.kind {
			case opEqual:
				writeDiffLine(b, ' ', oldLines[op.a])
			case opDelete:
				writeDiffLine(b, '-', oldLines[op.a])
			case opInsert:
				writeDiffLine(b, '+', newLines[op.b])
			}
		}
	}
}

// hunkRange formats a 0-based start and a count; an empty range names the
// line before it, as diff does.
func hunkRange(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func writeDiffLine(b *strings.Builder, prefix byte, line string) {
	b.WriteByte(prefix)
	b.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		b.WriteString("\n\\ No newline at end of file\n")
	}
}

// quoteDiffPath quotes a path the way git does when it holds characters a
// patch header cannot carry plainly.
func quoteDiffPath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitKeepEOL splits text into lines that keep their line break, so that
// a last line without one compares unequal to the same line with one.
func splitKeepEOL(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

type opKind int

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

// diffOp is one line of an edit script; a and b are the line indices in the
// old and new text (the one not consumed is where the op sits).
type diffOp struct {
	kind opKind
	a, b int
}

// diffLines computes a line edit script with go-diff, which runs Myers'
// algorithm over one rune per distinct line. No timeout is set: with one the
// library trades a shortest script for speed (half-match) and, past the
// deadline, rewrites the rest of the file as one replacement.
func diffLines(before, after string) []diffOp {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	runesA, runesB, lines := dmp.DiffLinesToRunes(before, after)
	var ops []diffOp
	a, b := 0, 0
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMainRunes(runesA, runesB, false), lines) {
		for range splitKeepEOL(d.Text) {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				ops = append(ops, diffOp{opEqual, a, b})
				a++
				b++
			case diffmatchpatch.DiffDelete:
				ops = append(ops, diffOp{opDelete, a, b})
				a++
			case diffmatchpatch.DiffInsert:
				ops = append(ops, diffOp{opInsert, a, b})
				b++
			}
		}
	}
	return ops
}

// groupHunks cuts an edit script into hunks: each change with up to
// diffContext equal lines around it, merging changes whose contexts touch.
func groupHunks(ops []diffOp) [][]diffOp {
	var hunks [][]diffOp
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == opEqual {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-diffContext)
		end := i
		for end < len(ops) {
			if ops[end].kind != opEqual {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(run, end+diffContext)
				break
			}
			end = run
		}
		hunks = append(hunks, ops[start:end])
		i = end
	}
	return hunks
}
