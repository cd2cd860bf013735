package chaos

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
)

// hostile is text a cluster or a repository can carry that tries to break
// out of the Markdown kedge writes: HTML, a table cell break, a javascript:
// link, an image, a mention and an issue reference.
const hostile = `<img src=x onerror=alert(1)>|[pwn](javascript:alert(1))![i](http://x/i.png)@everyone #1`

// TestHostileTextIsEscaped runs a cycle where a drifted workload's manifest
// has a hostile file name (testdata/bad/repo/injection-file-name), its
// pods' proxy image and injected revision carry hostile text, and a bare
// pod is named with it; then reads every PR body, comment and the dashboard
// as GitHub renders Markdown: no raw HTML but kedge's hidden markers, no
// image, no javascript: link, no table row with a stray cell, no mention;
// and the hostile text is still shown, as text.
func TestHostileTextIsEscaped(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "gitops")
	treecopy.Copy(t, DemoRepo, repo)
	bad := filepath.Join(corpus, "repo", "injection-file-name")
	var c repoCase
	readCase(t, filepath.Join(bad, "case.yaml"), &c)
	for _, p := range c.Remove {
		require.NoError(t, os.Remove(filepath.Join(repo, filepath.FromSlash(p))))
	}
	treecopy.Copy(t, filepath.Join(bad, "files"), repo)

	w := NewWorld(t, Options{ClusterDir: DemoCluster, RepoDir: repo})
	w.ChangeCluster(func(set *objects.Set) {
		pods := make([]*objects.Pod, len(set.Pods))
		for i := range set.Pods {
			p := *set.Pods[i]
			p.Annotations = maps.Clone(p.Annotations)
			switch {
			case p.Namespace == "search":
				if p.Proxy != nil && p.Proxy.Native {
					p.Proxy = &objects.PodProxy{Image: "docker.io/istio/proxyv2:1.24.0" + hostile, Native: true}
				}
				p.Annotations["sidecar.istio.io/status"] = strings.Replace(p.Annotations["sidecar.istio.io/status"],
					`"revision":"default"`, fmt.Sprintf(`"revision":%q`, "default"+hostile), 1)
			case p.Namespace == "shop" && p.Name == "debug-shell":
				p.Name += hostile
			}
			pods[i] = &p
		}
		set.Pods = pods
	})
	r := w.Cycle()
	require.NoError(t, r.Err)

	searchPR := 0
	var docs []string
	for _, pr := range w.GH.PRs() {
		docs = append(docs, pr.GetBody())
		for _, cm := range w.GH.Comments(pr.GetNumber()) {
			docs = append(docs, cm.GetBody())
		}
		assert.NotContains(t, pr.GetTitle(), "\n")
		if pr.GetHead().GetRef() == Branch("search") {
			searchPR = pr.GetNumber()
		}
	}
	require.NotZero(t, searchPR, "the hostile file name is edited like any other")
	dashboards := w.Dashboards()
	require.Len(t, dashboards, 1)
	docs = append(docs, dashboards[0].GetBody())

	shown := 0
	for _, doc := range docs {
		assert.Empty(t, markdownProblems(doc))
		assert.NotContains(t, doc, "@everyone", "a mention that would notify")
		if strings.Contains(renderHTML(doc), "&lt;img src=x onerror=alert(1)&gt;") {
			shown++
		}
	}
	pr, _ := w.GH.PR(searchPR)
	assert.Contains(t, renderHTML(pr.GetBody()), "&lt;img src=x onerror=alert(1)&gt;", "the search PR shows the hostile text as text")
	assert.Contains(t, renderHTML(dashboards[0].GetBody()), "&lt;img src=x onerror=alert(1)&gt;", "the dashboard shows it as text")
	t.Logf("%d documents checked, %d show the hostile text escaped", len(docs), shown)
}

var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

func renderHTML(doc string) string {
	var b bytes.Buffer
	if err := gfm.Convert([]byte(doc), &b); err != nil {
		return ""
	}
	return b.String()
}

var kedgeMarker = regexp.MustCompile(`^<!-- kedge:[a-z-]+ [^\n]*-->\s*$`)

// markdownProblems parses doc as GitHub does and lists what a hostile
// string could have broken.
func markdownProblems(doc string) []string {
	src := []byte(doc)
	root := gfm.Parser().Parse(text.NewReader(src))
	var problems []string
	segments := func(lines *text.Segments) string {
		var b bytes.Buffer
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(src))
		}
		return b.String()
	}
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			if html := segments(n.Lines()); !kedgeMarker.MatchString(html) {
				problems = append(problems, "raw HTML block: "+html)
			}
		case *ast.RawHTML:
			if html := segments(n.Segments); !kedgeMarker.MatchString(html) {
				problems = append(problems, "inline raw HTML: "+html)
			}
		case *ast.Image:
			problems = append(problems, "image: "+string(n.Destination))
		case *ast.Link:
			if dest := strings.ToLower(strings.TrimSpace(string(n.Destination))); strings.HasPrefix(dest, "javascript:") {
				problems = append(problems, "javascript link: "+dest)
			}
		case *ast.AutoLink:
			if strings.Contains(strings.ToLower(string(n.URL(src))), "javascript") {
				problems = append(problems, "autolink: "+string(n.URL(src)))
			}
		}
		return ast.WalkContinue, nil
	})
	return append(problems, tableProblems(doc)...)
}

// tableProblems counts the cells of every table line as GFM splits them
// (on each pipe not escaped by a backslash, ignoring one leading and one
// trailing pipe): a row with more cells than its header had a cell break
// smuggled in.
func tableProblems(doc string) []string {
	var problems []string
	header := 0
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			header = 0
			continue
		}
		cells := rawCells(line)
		if header == 0 {
			header = cells
			continue
		}
		if cells != header {
			problems = append(problems, fmt.Sprintf("table row with %d cells under a header of %d: %s", cells, header, line))
		}
	}
	return problems
}

func rawCells(line string) int {
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

// TestMarkdownProblemsSeesInjection keeps the checker above honest: it
// flags the hostile text written raw and accepts it escaped by kedge.
func TestMarkdownProblemsSeesInjection(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		bad  bool
	}{
		{"raw in a paragraph", "Image " + hostile + "\n", true},
		{"raw in a table", "| a | b |\n|---|---|\n| " + hostile + " | x |\n", true},
		{"escaped in a paragraph", "Image " + dashboard.EscapeMarkdown(hostile) + "\n", false},
		{"escaped in a table", "| a | b |\n|---|---|\n| " + dashboard.EscapeCell(hostile) + " | x |\n", false},
		{"kedge marker", "Body\n\n<!-- kedge:state {\"a\":1} -->\n", false},
		{"other comment", "Body\n\n<!-- not kedge's -->\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.bad, len(markdownProblems(tt.doc)) > 0, "%v", markdownProblems(tt.doc))
		})
	}
}
