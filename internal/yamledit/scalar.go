package yamledit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// quoting is how a new key or value is written.
type quoting int

const (
	plainIfSafe quoting = iota
	doubleQuoted
	singleQuoted
)

// plainShape keeps plain scalars to characters that mean the same in block and flow context.
var plainShape = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./-]*$`)

// yaml11Words resolve to booleans or null in YAML 1.1, which Kubernetes' YAML reader still follows.
var yaml11Words = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "true": true, "false": true, "on": true, "off": true, "null": true}

// numberLike matches, within plainShape, what a YAML 1.1 or 1.2 reader may resolve to a number or a date:
// decimal, octal, binary and hexadecimal integers (with 1.1's underscores), floats with one dot or an
// exponent, and dates. A revision such as 1-25-0 or a version such as 1.24.0 is none of these.
var numberLike = regexp.MustCompile(`^(` +
	`[0-9][0-9_]*` +
	`|0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+` +
	`|[0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?` +
	`|[0-9][0-9_]*[eE][-+]?[0-9]+` +
	`|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}` +
	`)$`)

// plainSafe tells whether s can be written without quotes and still read back as the same string by YAML 1.1
// and 1.2 readers alike: Kubernetes' own reader (sigs.k8s.io/yaml) and the YAML 1.2 parser agree it is a
// string, and it has no form the YAML 1.1 type rules would resolve to something else.
func plainSafe(s string) bool {
	if !plainShape.MatchString(s) || yaml11Words[strings.ToLower(s)] || numberLike.MatchString(s) {
		return false
	}
	if c := s[0]; c == '.' && (len(s) == 1 || !isLetter(s[1]) && s[1] != '/') {
		return false
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil || len(n.Content) != 1 {
		return false
	}
	v := n.Content[0]
	if v.Kind != yaml.ScalarNode || v.Style != 0 || v.ShortTag() != "!!str" || v.Value != s {
		return false
	}
	return kubernetesReadsString(s)
}

// kubernetesReadsString tells whether the YAML reader of Kubernetes' API machinery, which follows YAML 1.1,
// reads the plain scalar s as the string s.
func kubernetesReadsString(s string) bool {
	raw, err := sigsyaml.YAMLToJSON([]byte(s))
	if err != nil {
		return false
	}
	var got any
	if err := json.Unmarshal(raw, &got); err != nil {
		return false
	}
	str, ok := got.(string)
	return ok && str == s
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// writeScalar renders s in the requested quoting, falling back to double quotes when the requested form
// cannot carry s.
func writeScalar(s string, q quoting) string {
	switch q {
	case plainIfSafe:
		if plainSafe(s) {
			return s
		}
	case singleQuoted:
		if singleQuotable(s) {
			return "'" + strings.ReplaceAll(s, "'", "''") + "'"
		}
	}
	return doubleQuote(s)
}

func singleQuotable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// doubleQuote writes a YAML double-quoted scalar; everything outside printable text is escaped so the line
// stays one line and reads back byte for byte.
func doubleQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == ' ' || (unicode.IsPrint(r) && r != '\uFEFF'):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02X`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quotingOf maps a parsed scalar's style to the quoting that keeps it.
func quotingOf(n *yaml.Node) quoting {
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return doubleQuoted
	case n.Style&yaml.SingleQuotedStyle != 0:
		return singleQuoted
	}
	return plainIfSafe
}

// keyQuoting follows the siblings: when every key of the mapping is quoted the same way (JSON files, tidy
// hand-written YAML), new keys are too.
func keyQuoting(m *yaml.Node) quoting {
	if m == nil || len(m.Content) == 0 {
		return plainIfSafe
	}
	first := quotingOf(m.Content[0])
	for i := 0; i < len(m.Content); i += 2 {
		if quotingOf(m.Content[i]) != first {
			return plainIfSafe
		}
	}
	return first
}

// scanContext tells a plain scalar where it ends.
type scanContext int

const (
	blockKey scanContext = iota
	blockValue
	flowItem
)

// tokenEnd finds where the scalar starting at byte b of the line ends; ok is false when it continues on a
// later line.
func tokenEnd(line string, b int, style yaml.Style, ctx scanContext) (int, bool) {
	if b >= len(line) {
		return b, false
	}
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		for i := b + 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return i + 1, true
			}
		}
		return 0, false
	case style&yaml.SingleQuotedStyle != 0:
		for i := b + 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, true
			}
		}
		return 0, false
	}
	end := len(line)
scan:
	for i := b; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '#' && i > b && (line[i-1] == ' ' || line[i-1] == '\t'):
			end = i
			break scan
		case c == ':' && ctx != blockValue && (i+1 == len(line) || strings.IndexByte(" \t,[]{}", line[i+1]) >= 0):
			end = i
			break scan
		case ctx == flowItem && strings.IndexByte(",[]{}", c) >= 0:
			end = i
			break scan
		}
	}
	return b + len(strings.TrimRight(line[b:end], " \t")), true
}

// decodesTo tells whether token, parsed on its own, is a scalar with the given value: the proof that a token
// found by scanning a line is exactly the node the parser reported.
func decodesTo(token, value string) bool {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(token), &n); err != nil || len(n.Content) != 1 {
		return false
	}
	return n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Value == value
}

// isString tells whether a parsed scalar is a string to every Kubernetes reader, not just to this parser.
func isString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return false
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return true
	}
	return !yaml11Words[strings.ToLower(n.Value)]
}
