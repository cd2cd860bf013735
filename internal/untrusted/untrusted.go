// Package untrusted turns text that a repository's writers control (an
// error a template fails with, a build's message quoting a file) into data
// that is safe to show: one line, every control or invisible character
// escaped, and bounded, before it reaches a plan detail, a log line, a
// pull request or the dashboard. The bound keeps a render that fails with
// a whole file's content from carrying it anywhere; what files a render
// may read at all is the confined file system's job (internal/repofs).
package untrusted

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxExcerpt is how many characters of untrusted text an excerpt keeps.
const MaxExcerpt = 240

// Excerpt returns text as one printable line of at most max characters
// (MaxExcerpt when max is 0), ending in "…" when cut.
func Excerpt(text string, max int) string {
	if max <= 0 {
		max = MaxExcerpt
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, text[i-1])
		case r == '\n':
			piece = `\n`
		case r == '\t':
			piece = " "
		case r == '\\':
			piece = `\\`
		case !unicode.IsPrint(r) && r != ' ':
			piece = fmt.Sprintf(`\u%04x`, r)
		default:
			piece = string(r)
		}
		if n+utf8.RuneCountInString(piece) > max {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(piece)
		n += utf8.RuneCountInString(piece)
	}
	return b.String()
}

// Error returns err's message as an excerpt; "" for nil.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Excerpt(err.Error(), 0)
}
