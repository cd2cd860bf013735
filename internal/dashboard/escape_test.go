package dashboard

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEscapeMarkdown(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain name", "cart-v2.shop", "cart-v2.shop"},
		{"version", "1.24.0", "1.24.0"},
		{"pipe", "a|b", `a\|b`},
		{"html", "<script>", "&lt;script&gt;"},
		{"backticks", "`x`", "\\`x\\`"},
		{"mention", "@org/team", "@&#8203;org/team"},
		{"link syntax", "[x](http://evil)", `\[x\](http:&#8203;//evil)`},
		{"newlines", "a\nb\r\nc\td", "a b  c d"},
		{"trimmed", "  x  ", "x"},
		{"emphasis", "*a* _b_ ~~c~~", `\*a\* \_b\_ \~\~c\~\~`},
		{"issue reference", "fixes #12", `fixes \#&#8203;12`},
		{"lone hash", "# x", `\# x`},
		{"entity", "&#64;org", "&amp;\\#&#8203;64;org"},
		{"www autolink", "see www.evil.com", "see www&#8203;.evil.com"},
		{"backslash", `a\|b`, `a\\\|b`},
		{"list marker", "- x", `\- x`},
		{"ordered list marker", "1. x", `1\. x`},
		{"ordered list alone", "12)", `12\)`},
		{"math", "$x$", `\$x\$`},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, EscapeMarkdown(tt.in))
		})
	}
}

func TestEscapeCellNeverEmpty(t *testing.T) {
	assert.Equal(t, "–", EscapeCell(""))
	assert.Equal(t, "–", EscapeCell(" \n "))
	assert.Equal(t, `a\|b`, EscapeCell("a|b"))
}

func TestEscapePlain(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"kept as is", "a|b <x> `y` [z](w)", "a|b <x> `y` [z](w)"},
		{"one line", "a\n\n b\tc", "a b c"},
		{"mention", "@org/team", "@\u200borg/team"},
		{"issue reference", "#12", "#\u200b12"},
		{"lone hash", "# x", "# x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, EscapePlain(tt.in))
		})
	}
}

func TestCodeSpan(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"image with digest", "docker.io/istio/proxyv2@sha256:abc", "`docker.io/istio/proxyv2@sha256:abc`"},
		{"annotation key", "kedge.io/restartedAt", "`kedge.io/restartedAt`"},
		{"backtick falls back", "`x`", "\\`x\\`"},
		{"pipe falls back", "a|b", `a\|b`},
		{"edge space falls back", " a", "a"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, codeSpan(tt.in))
		})
	}
}

func TestSafeURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"https", "https://github.com/o/r/pull/1", "https://github.com/o/r/pull/1"},
		{"javascript", "javascript:alert(1)", ""},
		{"relative", "/o/r", ""},
		{"parens and pipe", "https://h/a(b)|c", "https://h/a%28b%29%7Cc"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, safeURL(tt.in))
		})
	}
}

func TestFileURL(t *testing.T) {
	tests := []struct {
		name, repo, branch, file, want string
	}{
		{"plain", "https://github.com/o/r", "kedge/shop", "apps/shop/cart.yaml", "https://github.com/o/r/blob/kedge/shop/apps/shop/cart.yaml"},
		{"escaped segments", "https://github.com/o/r/", "k/a|b", "apps/a b/(x).yaml", "https://github.com/o/r/blob/k/a%7Cb/apps/a%20b/%28x%29.yaml"},
		{"unclean path", "https://github.com/o/r", "main", "apps//x.yaml", ""},
		{"leaves the repository", "https://github.com/o/r", "main", "../x.yaml", ""},
		{"absolute", "https://github.com/o/r", "main", "/etc/passwd", ""},
		{"no repository", "", "main", "x.yaml", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, fileURL(tt.repo, tt.branch, tt.file))
		})
	}
}

func TestPieLabel(t *testing.T) {
	assert.Equal(t, "1.24.0", pieLabel("1.24.0"))
	assert.Equal(t, "_quoted_ _ x", pieLabel(`"quoted" # x`))
	assert.Equal(t, strings.Repeat("a", 40)+"…", pieLabel(strings.Repeat("a", 50)))
}

// escapedAt reports whether s[i] is preceded by an odd number of
// backslashes.
func escapedAt(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// expectedText is what a reader must see for s: the cleaned text, with
// the zero-width spaces kedge inserts ignored.
func expectedText(s string) string {
	return strings.ReplaceAll(cleanText(s), "\u200b", "")
}

func renderedText(t *testing.T, doc string) string {
	var out bytes.Buffer
	require.NoError(t, gfm.Convert([]byte(doc), &out))
	return out.String()
}

func FuzzEscape(f *testing.F) {
	for _, seed := range []string{
		"a|b", "<script>", "`x`", "@org/team", "[x](http://evil)", "#12", "www.x.io", "&#64;a",
		"- x", "1. x", "\\", "a\\|b", "*_~$!^", "x\ny", "\x00", "\xff", "  ", "foo@bar.com", "https://x.io",
		"<!-- kedge:state {} -->", "***", "===", "> q", "|---|", "1)", "\u2028", "![i](x)",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, escape := range map[string]func(string) string{"md": EscapeMarkdown, "cell": EscapeCell} {
			out := escape(s)
			require.True(t, utf8.ValidString(out), name)
			require.NotContains(t, out, "\n", name)
			require.NotContains(t, out, "<", name)
			require.NotRegexp(t, `@[A-Za-z0-9]`, out, name)
			for i := 0; i < len(out); i++ {
				if out[i] == '|' || out[i] == '`' {
					require.True(t, escapedAt(out, i), "%s(%q) = %q: unescaped %q at %d", name, s, out, out[i], i)
				}
			}
		}

		// In a paragraph, the escaped text renders as exactly the text:
		// no markup of any kind.
		want := expectedText(s)
		if md := EscapeMarkdown(s); md != "" {
			got := renderedText(t, md)
			inner, ok := strings.CutPrefix(strings.TrimSuffix(got, "\n"), "<p>")
			inner, ok2 := strings.CutSuffix(inner, "</p>")
			require.True(t, ok && ok2, "%q renders as %q, not one paragraph", md, got)
			require.NotContains(t, inner, "<", "%q renders markup: %q", md, got)
			require.Equal(t, want, strings.ReplaceAll(html.UnescapeString(inner), "\u200b", ""), "%q renders as %q", md, got)
		}

		// In a table cell, it stays one cell with the same text.
		table := "| h |\n|---|\n| " + EscapeCell(s) + " |\n"
		got := renderedText(t, table)
		start := strings.Index(got, "<td>")
		end := strings.Index(got, "</td>")
		require.True(t, start >= 0 && end > start, "%q renders as %q", table, got)
		require.Equal(t, 1, strings.Count(got, "<td>"), "%q splits into cells: %q", table, got)
		cell := strings.ReplaceAll(html.UnescapeString(got[start+len("<td>"):end]), "\u200b", "")
		require.NotContains(t, got[start+len("<td>"):end], "<", "%q renders markup: %q", table, got)
		if want == "" {
			want = "–"
		}
		require.Equal(t, want, cell)

		plain := EscapePlain(s)
		require.NotContains(t, plain, "\n")
		require.NotRegexp(t, `@[A-Za-z0-9]`, plain)
		require.NotRegexp(t, `#[A-Za-z0-9]`, plain)

		label := pieLabel(s)
		require.NotContains(t, label, `"`)
		require.NotContains(t, label, "#")
		require.NotContains(t, label, "`")
		require.NotContains(t, label, "\n")

		code := codeSpan(s)
		if inner, ok := strings.CutPrefix(code, "`"); ok && !escapedAt(code, 0) {
			inner = strings.TrimSuffix(inner, "`")
			require.NotContains(t, inner, "`")
			require.NotContains(t, inner, "|")
			require.NotContains(t, inner, "<")
		}
	})
}
