package yamledit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kedge-io/kedge/internal/testing/linediff"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// templateStates are the shapes spec.template.metadata.annotations takes in real repositories, as lines
// below `template:` given the indentation of metadata (m), annotations (a) and their entries (e).
var templateStates = map[string]func(m, a, e string) []string{
	"no metadata":         func(m, a, e string) []string { return nil },
	"metadata empty flow": func(m, a, e string) []string { return []string{m + "metadata: {}"} },
	"metadata flow":       func(m, a, e string) []string { return []string{m + "metadata: {labels: {app: web}}"} },
	"no annotations":      func(m, a, e string) []string { return []string{m + "metadata:", a + "labels:", e + "app: web"} },
	"annotations null": func(m, a, e string) []string {
		return []string{m + "metadata:", a + "annotations:", a + "labels:", e + "app: web"}
	},
	"annotations tilde": func(m, a, e string) []string { return []string{m + "metadata:", a + "annotations: ~  # none"} },
	"annotations {}":    func(m, a, e string) []string { return []string{m + "metadata:", a + "annotations: {}"} },
	"annotations flow":  func(m, a, e string) []string { return []string{m + "metadata:", a + "annotations: {a: b}"} },
	"annotations block": func(m, a, e string) []string {
		return []string{m + "metadata:", a + "annotations:", e + "a: b", "", e + "# after"}
	},
	"key set plain":        func(m, a, e string) []string { return []string{m + "metadata:", a + "annotations:", e + "k: old # c"} },
	"key set double-quote": func(m, a, e string) []string { return []string{m + "metadata:", a + "annotations:", e + `"k": "old"`} },
}

// TestLayoutMatrix edits every template state under every combination of indentation, sequence style, key
// order, line break, final newline, header, trailer and byte order mark, and checks each result the way a
// reviewer would: set, one existing line rewritten at most, new lines in the file's line break and
// indentation, nothing left to do on a rerun.
func TestLayoutMatrix(t *testing.T) {
	headers := []string{"", "# owned by shop\n---\n", "---\n"}
	trailers := []string{"", "---\n# next\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n", "...\n"}
	n := 0
	for state, lines := range templateStates {
		for _, unit := range []string{"  ", "    "} {
			for _, indentless := range []bool{false, true} {
				for _, metadataFirst := range []bool{false, true} {
					for _, eol := range []string{"\n", "\r\n"} {
						for _, final := range []bool{true, false} {
							n++
							header, trailer, bom := headers[n%3], trailers[(n/3)%3], n%4 == 0
							if !final && trailer != "" {
								trailer = strings.TrimSuffix(trailer, "\n")
							}
							name := fmt.Sprintf("%s/unit%d/indentless=%v/metadataFirst=%v/crlf=%v/final=%v", state, len(unit), indentless, metadataFirst, eol != "\n", final)
							t.Run(name, func(t *testing.T) {
								src := layout(unit, indentless, metadataFirst, lines, header, trailer, eol, final, bom)
								checkLayoutEdit(t, src, unit, eol, strings.HasPrefix(state, "annotations block") || strings.HasPrefix(state, "no annotations"))
							})
						}
					}
				}
			}
		}
	}
}

func layout(u string, indentless, metadataFirst bool, state func(m, a, e string) []string, header, trailer, eol string, final, bom bool) []byte {
	dash := strings.Repeat(u, 4)
	if indentless {
		dash = strings.Repeat(u, 3)
	}
	meta := state(u+u, u+u+u, u+u+u+u)
	spec := []string{u + u + "spec:", u + u + u + "containers:", dash + "- name: web", dash + "  image: nginx", dash + "  args:", dash + "  - --flag"}
	lines := []string{"apiVersion: apps/v1", "kind: Deployment", "metadata:", u + "name: web", "spec:", u + "replicas: 1", u + "template:"}
	if metadataFirst {
		lines = append(append(lines, meta...), spec...)
	} else {
		lines = append(append(lines, spec...), meta...)
	}
	body := strings.Join(lines, eol)
	if final || trailer != "" {
		body += eol
	}
	text := header + body + trailer
	if eol != "\n" {
		text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", eol)
	}
	if bom {
		text = "\ufeff" + text
	}
	return []byte(text)
}

func checkLayoutEdit(t *testing.T, src []byte, unit, eol string, blockEntries bool) {
	target := anyDeployment("web")
	set := map[string]string{"k": "2024-05-01T10:00:00Z"}
	out, changed, err := SetPodTemplateAnnotations(src, target, set)
	require.NoError(t, err, "%s", src)
	require.True(t, changed)
	got, err := PodTemplateAnnotations(out, target)
	require.NoError(t, err)
	assert.Equal(t, "2024-05-01T10:00:00Z", got["k"])
	assert.LessOrEqual(t, len(linediff.Removed(src, out)), 1, "%s\n----\n%s", src, out)
	assert.Equal(t, strings.HasPrefix(string(src), "\ufeff"), strings.HasPrefix(string(out), "\ufeff"))
	assert.Equal(t, strings.HasSuffix(string(src), "\n"), strings.HasSuffix(string(out), "\n"))
	if eol == "\r\n" {
		assert.Equal(t, strings.Count(string(out), "\n"), strings.Count(string(out), "\r\n"), "a line break is not CRLF:\n%q", out)
	} else {
		assert.NotContains(t, string(out), "\r")
	}
	if blockEntries {
		assert.Contains(t, string(out), eol+strings.Repeat(unit, 4)+`k: "2024-05-01T10:00:00Z"`)
	}
	again, changedAgain, err := SetPodTemplateAnnotations(out, target, set)
	require.NoError(t, err)
	assert.False(t, changedAgain)
	assert.Equal(t, string(out), string(again))
}
