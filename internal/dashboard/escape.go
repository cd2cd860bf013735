package dashboard

import (
	"net/url"
	"path"
	"strings"
	"unicode"
)

// zwsp is a zero-width space as an HTML entity. Put after '@' it keeps
// GitHub from turning the text into a mention (and notifying a team); put
// inside "://" or "www." it keeps the text from becoming an autolink; put
// after '#' it keeps "#123" from cross-referencing an issue.
const zwsp = "&#8203;"

// cleanText makes s valid UTF-8 with every control character (newlines,
// tabs, NUL, Unicode line separators) turned into a space, trimmed. Zero-width
// spaces are dropped: they are the escapes' own mark, and a text made of
// nothing else would render as an empty cell instead of "–".
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\u200b':
			return -1
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return ' '
		}
		return r
	}, s)
	return strings.Trim(s, " ")
}

// EscapeMarkdown turns a cluster-controlled string into Markdown that
// renders as exactly that text on one line: no emphasis, code, links,
// autolinks, HTML, table cell breaks, mentions or issue references. Control
// characters become spaces.
func EscapeMarkdown(s string) string {
	s = cleanText(s)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '`', '*', '_', '[', ']', '|', '~', '$', '!', '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '@':
			b.WriteString("@" + zwsp)
		case '#':
			b.WriteString(`\#`)
			if i+1 < len(s) && isAlnum(s[i+1]) {
				b.WriteString(zwsp)
			}
		case ':':
			b.WriteByte(':')
			if strings.HasPrefix(s[i+1:], "//") {
				b.WriteString(zwsp)
			}
		case 'w', 'W':
			if len(s) >= i+4 && strings.EqualFold(s[i:i+4], "www.") {
				b.WriteString(s[i:i+3] + zwsp + ".")
				i += 3
				continue
			}
			b.WriteByte(c)
		case '-', '+', '=':
			// Only at the start can these open a list item or underline a
			// heading.
			if i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		case '.', ')':
			// "1. " or "1)" ending the text at its start opens an ordered
			// list; "1.24.0" does not.
			if i > 0 && isDigits(s[:i]) && (i+1 == len(s) || s[i+1] == ' ') {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// EscapeCell is EscapeMarkdown for a table cell; an empty value shows as a
// dash so a blank cell never reads as missing data.
func EscapeCell(s string) string {
	if e := EscapeMarkdown(s); e != "" {
		return e
	}
	return "–"
}

// EscapePlain is for text GitHub shows unrendered but still scans for
// mentions and references: PR titles and commit messages. It is one line,
// and '@' and '#' are followed by a literal zero-width space.
func EscapePlain(s string) string {
	s = strings.Join(strings.Fields(cleanText(s)), " ")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '@' || (s[i] == '#' && i+1 < len(s) && isAlnum(s[i+1])) {
			b.WriteString("\u200b")
		}
	}
	return b.String()
}

// codeSpan shows s as inline code when every character is safe there:
// inline code keeps image references copyable (no zero-width spaces) and
// GitHub does not look for mentions inside it. Anything else falls back to
// escaped text.
func codeSpan(s string) string {
	if s == "" {
		return ""
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		// Inline code strips one space from each end.
		return EscapeMarkdown(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("._:/@=+,~- ", rune(c)) {
			return EscapeMarkdown(s)
		}
	}
	return "`" + s + "`"
}

// pieLabel makes s a mermaid pie label: mermaid has no escape for '"' and
// '#' starts an entity, so only a plain set of characters stays.
func pieLabel(s string) string {
	s = cleanText(s)
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == 40 {
			b.WriteString("…")
			break
		}
		if r < 128 && (isAlnum(byte(r)) || strings.ContainsRune(" ._:/+-", r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		n++
	}
	return b.String()
}

// safeURL returns u fit for a Markdown link destination, or "" when it is
// not an absolute http(s) URL. Characters that would end the destination,
// split a table cell or open HTML are percent-encoded.
func safeURL(u string) string {
	parsed, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" {
		return ""
	}
	s := parsed.String()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"'<>()[]`|\\{}^", c) >= 0 {
			b.WriteString(url.PathEscape(string(c)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// fileURL links a repository file on a branch, or returns "" when there
// is no repository address or the path is not a clean relative path: a
// link must point at exactly the file named, or not exist.
func fileURL(repoWebURL, branch, file string) string {
	base := safeURL(strings.TrimRight(repoWebURL, "/"))
	if base == "" || branch == "" || file == "" || path.Clean(file) != file ||
		strings.HasPrefix(file, "/") || file == ".." || strings.HasPrefix(file, "../") {
		return ""
	}
	return base + "/blob/" + escapeSegments(branch) + "/" + escapeSegments(file)
}

func escapeSegments(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// link is a Markdown link with escaped text, or just the text when the
// destination is not usable.
func link(text, dest string) string {
	u := safeURL(dest)
	if u == "" {
		return EscapeMarkdown(text)
	}
	return "[" + EscapeMarkdown(text) + "](" + u + ")"
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
