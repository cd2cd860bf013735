package dashboard

import (
	"bytes"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// gfm parses and renders like GitHub: CommonMark plus tables,
// strikethrough, task lists and autolinks, raw HTML omitted.
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// linkPolicy says which links a document may contain: files in the
// repository on the given branches, and exact addresses (PRs, dashboard).
type linkPolicy struct {
	repo     string
	branches []string
	paths    map[string]bool
	exact    map[string]bool
}

// markdownProblems parses doc as GitHub would and lists what breaks the
// rules: a table row with another cell count than its header, any raw
// HTML but the state comment, an image, an autolink, or a link outside the
// policy.
func markdownProblems(doc string, policy linkPolicy) []string {
	src := []byte(doc)
	root := gfm.Parser().Parse(text.NewReader(src))
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *extast.Table:
			header := n.FirstChild()
			want := rawCells(lineAt(src, header.Pos()))
			if want != header.ChildCount() {
				add("table header %q: %d cells, goldmark saw %d", lineAt(src, header.Pos()), want, header.ChildCount())
			}
			for row := header.NextSibling(); row != nil; row = row.NextSibling() {
				if got := rawCells(lineAt(src, row.Pos())); got != want {
					add("table row %q: %d cells, header has %d", lineAt(src, row.Pos()), got, want)
				}
			}
		case *ast.HTMLBlock:
			var b bytes.Buffer
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			if !strings.HasPrefix(b.String(), "<!-- kedge:state ") || strings.Count(b.String(), "\n") > 1 {
				add("raw HTML block %q", b.String())
			}
		case *ast.RawHTML:
			var b bytes.Buffer
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
			add("inline raw HTML %q", b.String())
		case *ast.Image:
			add("image %q", n.Destination)
		case *ast.AutoLink:
			add("autolink %q", n.URL(src))
		case *ast.Link:
			if p := policy.check(string(n.Destination)); p != "" {
				add("%s", p)
			}
		}
		return ast.WalkContinue, nil
	})
	return problems
}

func (p linkPolicy) check(dest string) string {
	if p.exact[dest] {
		return ""
	}
	prefix := strings.TrimRight(p.repo, "/") + "/blob/"
	if p.repo == "" || !strings.HasPrefix(dest, prefix) {
		return fmt.Sprintf("link to %q is not allowed", dest)
	}
	rest := dest[len(prefix):]
	for _, branch := range p.branches {
		b := escapeSegments(branch) + "/"
		if !strings.HasPrefix(rest, b) {
			continue
		}
		file, err := url.PathUnescape(rest[len(b):])
		if err != nil {
			return fmt.Sprintf("link %q: %v", dest, err)
		}
		if !p.paths[file] {
			return fmt.Sprintf("link %q points at %q, which is not a workload's file", dest, file)
		}
		return ""
	}
	return fmt.Sprintf("link %q is on no expected branch", dest)
}

func lineAt(src []byte, pos int) string {
	end := bytes.IndexByte(src[pos:], '\n')
	if end < 0 {
		return string(src[pos:])
	}
	return string(src[pos : pos+end])
}

// rawCells counts a table line's cells the way GFM splits them: on every
// pipe not preceded by a backslash, ignoring one leading and one trailing
// pipe.
func rawCells(line string) int {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	cells := 1
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			cells++
		}
	}
	return cells
}

var (
	codeElement  = regexp.MustCompile(`(?s)<code>.*?</code>`)
	anyTag       = regexp.MustCompile(`<[^>]*>`)
	mention      = regexp.MustCompile(`@[\p{L}\p{N}]`)
	issueRef     = regexp.MustCompile(`#[0-9]`)
	mermaidBlock = regexp.MustCompile("(?s)```mermaid\n(.*?)```")
	mermaidLine  = regexp.MustCompile(`^(pie showData|    title [^"\x60#]*|    "[^"\x60#]*" : [0-9]+)$`)
)

// visibleTextProblems renders doc and looks at the text a reader sees
// outside code: it must hold no mention GitHub would notify and no issue
// reference it would link. PR numbers kedge links itself are allowed.
func visibleTextProblems(doc string) []string {
	var out bytes.Buffer
	if err := gfm.Convert([]byte(doc), &out); err != nil {
		return []string{err.Error()}
	}
	rendered := codeElement.ReplaceAllString(out.String(), "")
	rendered = regexp.MustCompile(`<a href="[^"]*/pull/[0-9]+">#[0-9]+</a>`).ReplaceAllString(rendered, "")
	visible := html.UnescapeString(anyTag.ReplaceAllString(rendered, " "))
	var problems []string
	if m := mention.FindString(visible); m != "" {
		problems = append(problems, fmt.Sprintf("mention %q in visible text", m))
	}
	if m := issueRef.FindString(visible); m != "" {
		problems = append(problems, fmt.Sprintf("issue reference %q in visible text", m))
	}
	return problems
}

// mermaidProblems checks every mermaid block is a plain pie chart whose
// labels cannot break out of their quotes.
func mermaidProblems(doc string) []string {
	var problems []string
	for _, m := range mermaidBlock.FindAllStringSubmatch(doc, -1) {
		for _, line := range strings.Split(strings.TrimSuffix(m[1], "\n"), "\n") {
			if !mermaidLine.MatchString(line) {
				problems = append(problems, fmt.Sprintf("mermaid line %q", line))
			}
		}
	}
	return problems
}
