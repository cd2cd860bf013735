package untrusted

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name, text string
		max        int
		want       string
	}{
		{"plain", "template: x.yaml:1:3: fail", 0, "template: x.yaml:1:3: fail"},
		{"lines are one", "a\nb\r\nc", 0, `a\nb\u000d\nc`},
		{"a tab is a space", "a\tb", 0, "a b"},
		{"a backslash is escaped, so no escape can be forged", `\n`, 0, `\\n`},
		{"invalid UTF-8", "a\xffb", 0, `a\xffb`},
		{"terminal control", "\x1b[31mred", 0, `\u001b[31mred`},
		{"invisible and bidirectional", "a\u200bb\u202ec", 0, `a\u200bb\u202ec`},
		{"cut", "abcdef", 3, "abc…"},
		{"an escape is not cut in two", "ab\ncd", 3, "ab…"},
		{"fits exactly", "abc", 3, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Excerpt(tt.text, tt.max))
		})
	}
}

// A failure quoting a whole private key keeps at most MaxExcerpt
// characters of it, on one line.
func TestExcerptBoundsAQuotedFile(t *testing.T) {
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat(strings.Repeat("A", 64)+"\n", 25) + "-----END RSA PRIVATE KEY-----\n"
	got := Error(errors.New("execution error at (c/templates/leak.yaml:1:3): " + key))
	assert.Equal(t, MaxExcerpt+1, utf8.RuneCountInString(got), "240 characters and the mark of the cut")
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.NotContains(t, got, "\n")
	assert.NotContains(t, got, "END RSA PRIVATE KEY")
	assert.Empty(t, Error(nil))
}
