package manifest

import (
	"fmt"
	"sort"
	"strings"
)

// diffContext is the number of unchanged lines around each change, as
// git diff writes them.
const diffContext = 3

// maxDiffDistance bounds the Myers search (its memory grows with the square
// of the distance); beyond it the changed middle is written as one
// replacement, which is as valid, only longer.
const maxDiffDistance = 2000

// UnifiedDiff renders edits as one patch that `git apply` accepts at the
// repository root: a/ and b/ prefixes, new files from /dev/null, three lines
// of context, and the "\ No newline at end of file" marker.
func UnifiedDiff(edits []FileEdit) string {
	sorted := append([]FileEdit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var b strings.Builder
	for _, e := range sorted {
		writeFileDiff(&b, e)
	}
	return b.String()
}

func writeFileDiff(b *strings.Builder, e FileEdit) {
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
	ops := diffLines(oldLines, newLines)
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

// diffLines computes a shortest edit script between two line slices
// (Myers' O(ND) algorithm), after trimming the common head and tail.
func diffLines(a, b []string) []diffOp {
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	var ops []diffOp
	for i := 0; i < prefix; i++ {
		ops = append(ops, diffOp{opEqual, i, i})
	}
	mid := myers(a[prefix:len(a)-suffix], b[prefix:len(b)-suffix])
	for _, op := range mid {
		op.a += prefix
		op.b += prefix
		ops = append(ops, op)
	}
	for i := 0; i < suffix; i++ {
		ops = append(ops, diffOp{opEqual, len(a) - suffix + i, len(b) - suffix + i})
	}
	return ops
}

func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m)
	}
	max := n + m
	if max > 2*maxDiffDistance {
		max = 2 * maxDiffDistance
	}
	offset := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		trace = append(trace, append([]int(nil), v[offset-d-1:offset+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[offset+k-1] < v[offset+k+1]) {
				x = v[offset+k+1]
			} else {
				x = v[offset+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[offset+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m)
			}
		}
	}
	return replaceAll(n, m)
}

// backtrack walks the saved frontiers from the end back to the start. Frame
// d holds the frontier before round d, for diagonals -d-1..d+1.
func backtrack(trace [][]int, n, m int) []diffOp {
	var rev []diffOp
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		frame := trace[d]
		at := func(k int) int { return frame[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, diffOp{opEqual, x, y})
		}
		if x == prevX {
			y--
			rev = append(rev, diffOp{opInsert, x, y})
		} else {
			x--
			rev = append(rev, diffOp{opDelete, x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{opEqual, x, y})
	}
	ops := make([]diffOp, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

func replaceAll(n, m int) []diffOp {
	ops := make([]diffOp, 0, n+m)
	for i := 0; i < n; i++ {
		ops = append(ops, diffOp{opDelete, i, 0})
	}
	for j := 0; j < m; j++ {
		ops = append(ops, diffOp{opInsert, n, j})
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
