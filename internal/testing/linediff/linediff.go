// Package linediff is the tests' independent account of which lines an
// edit rewrote: a longest-common-subsequence line diff, written apart from
// the editor so that it does not share the editor's bookkeeping.
package linediff

import "strings"

// Removed returns the lines of before that a longest-common-subsequence line diff does not keep in
// after: an account of the edit made without the editor's own bookkeeping.
func Removed(before, after []byte) []string {
	a, b := strings.SplitAfter(string(before), "\n"), strings.SplitAfter(string(after), "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var removed []string
	i, j := 0, 0
	for i < len(a) {
		switch {
		case j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && lcs[i][j+1] >= lcs[i+1][j]:
			j++
		default:
			removed = append(removed, a[i])
			i++
		}
	}
	return removed
}
