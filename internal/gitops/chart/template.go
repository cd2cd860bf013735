package chart

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
)

// A chart of the repository that has no value reaching a workload's pod
// template annotations is still the repository's: the template that
// renders the workload is a file of it. When one release alone renders the
// chart, kedge writes the restart annotations into that template, as lines
// of literal YAML under the pod template's metadata, and proves the edit
// by rendering the chart with the release's values before and after: the
// workload's pod template gains exactly those annotations, and nothing
// else of the render changes.

// TemplateSite is a workload's pod template in the chart template of the
// repository that renders it.
type TemplateSite struct {
	chart  Chart
	values map[string]any
	// file is the template, repo-relative; rel the same, chart-relative.
	file, rel string
	workload  string
	src       index.Source
}

type templateKind struct{}

func (s *TemplateSite) File() string                 { return s.file }
func (s *TemplateSite) Kind() restart.Kind           { return templateKind{} }
func (s *TemplateSite) Source() index.Source         { return s.src }
func (s *TemplateSite) Reads() restart.Reads         { return restart.ReadsCharts }
func (s *TemplateSite) Rendered() restart.WorkloadID { return Value{Workload: s.workload}.Rendered() }

// CheckKey groups the restarts of one template of one release.
func (s *TemplateSite) CheckKey() string {
	return fmt.Sprintf("chart template %s %s/%s", s.file, s.chart.Namespace, s.chart.Release)
}

// Check renders the release's chart with the template as it was (twice)
// and as edited.
func (s *TemplateSite) Check(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent) error {
	set := map[string]map[string]string{}
	for id, in := range intents {
		set[id.Kind+"/"+id.Name] = in.Set
	}
	_, before, _, errs, err := renderJob(ix, s.chart, map[string][]byte{s.rel: e.Before}, s.values, s.values)
	if err == nil {
		err = joinDistinct(errs)
	}
	if err == nil {
		var after []Render
		_, after, _, errs, err = renderJob(ix, s.chart, map[string][]byte{s.rel: e.After}, s.values)
		if err == nil {
			err = joinDistinct(errs)
		}
		if err == nil {
			err = OnlyAnnotated(before[0], after[0], set, Volatile(before[0], before[1]))
		}
	}
	if err != nil {
		return fmt.Errorf("rendering the chart of the release with %s as edited: %v", e.Path, err)
	}
	return nil
}

func (templateKind) Name() string { return "a chart template" }

func (templateKind) Intents(restarts []restart.Restart) []restart.Intent {
	return restart.OneIntentEach(restarts)
}

func (templateKind) Write(ix *index.Index, file string, restarts []restart.Restart) ([]restart.FileEdit, error) {
	return restart.WriteEach(ix, file, restarts, func(data []byte, r restart.Restart) ([]byte, bool, error) {
		_, name, _ := strings.Cut(r.Site.(*TemplateSite).workload, "/")
		return setTemplateAnnotations(data, r.ID.Kind, name, r.Set)
	})
}

// TemplateOf returns the site writing w's restart in the template of the
// chart c (a directory of the repository) that renders it, with the
// release's values; before is the chart's render. An error says why the
// template cannot carry it.
func TemplateOf(ix *index.Index, c Chart, values map[string]any, workload string) (*TemplateSite, Render, error) {
	if c.Dir == "" {
		return nil, nil, errors.New("the chart is not in the repository")
	}
	_, renders, templates, errs, err := renderJob(ix, c, nil, values)
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return nil, nil, err
	}
	rel, ok := templates[0][workload]
	if !ok {
		return nil, renders[0], fmt.Errorf("%s is rendered by a subchart or by no template of the chart", workload)
	}
	file := path.Join(c.Dir, rel)
	data, err := ix.ReadFile(file)
	if err != nil {
		return nil, renders[0], err
	}
	kind, name, _ := strings.Cut(workload, "/")
	// Writing nothing yet, the edit must find its place in the template.
	if _, _, err := setTemplateAnnotations(data, kind, name, map[string]string{probeKey: probeValue}); err != nil {
		return nil, renders[0], fmt.Errorf("%s: %v", file, err)
	}
	return &TemplateSite{
		chart: c, values: document.CopyValues(values), file: file, rel: rel, workload: workload,
		src: index.Source{Path: file, Kind: kind, Name: name, Namespace: c.Namespace},
	}, renders[0], nil
}

// documentSeparator is a line that starts another YAML document.
var documentSeparator = regexp.MustCompile(`^---\s*(#.*)?$`)

// templateLine is one line of a template: its text without the line
// break, its indentation, and whether it is YAML (not blank, a comment or
// a template directive alone).
type templateLine struct {
	text   string
	indent int
	yaml   bool
}

func readTemplateLines(src []byte) ([]templateLine, string) {
	eol := "\n"
	if bytes.Contains(src, []byte("\r\n")) {
		eol = "\r\n"
	}
	raw := strings.Split(strings.TrimSuffix(string(src), eol), eol)
	out := make([]templateLine, len(raw))
	for i, l := range raw {
		trimmed := strings.TrimLeft(l, " ")
		out[i] = templateLine{text: l, indent: len(l) - len(trimmed),
			yaml: trimmed != "" && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "{{")}
	}
	return out, eol
}

// keyLine reports whether a line is the mapping key alone, "key:" with
// nothing after it but a comment.
func keyLine(l templateLine, key string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(l.text), key+":")
	rest = strings.TrimSpace(rest)
	return ok && (rest == "" || strings.HasPrefix(rest, "#"))
}

// block returns the lines below line i that are indented further than it,
// up to the next YAML line that is not: [i+1, end).
func block(lines []templateLine, i int) int {
	end := i + 1
	for end < len(lines) && (!lines[end].yaml || lines[end].indent > lines[i].indent) {
		if documentSeparator.MatchString(lines[end].text) {
			break
		}
		end++
	}
	return end
}

// child finds the key among the lines of the block [from, to) at the
// block's own indentation (its first YAML line's); -1 when none, with that
// indentation (or -1 when the block has no YAML line).
func child(lines []templateLine, from, to int, key string) (int, int) {
	indent := -1
	for j := from; j < to; j++ {
		if !lines[j].yaml {
			continue
		}
		if indent < 0 {
			indent = lines[j].indent
		}
		if lines[j].indent == indent && keyLine(lines[j], key) {
			return j, indent
		}
	}
	return -1, indent
}

// setTemplateAnnotations writes set as literal lines of the pod template
// annotations (spec.template.metadata.annotations) of the one document of
// a chart template whose kind is kind, replacing the value of a key
// written there already; changed is false when every value is written
// already. Every other line stays as it is.
func setTemplateAnnotations(src []byte, kind, name string, set map[string]string) ([]byte, bool, error) {
	lines, eol := readTemplateLines(src)
	kindLine := regexp.MustCompile(`^kind:\s*["']?` + regexp.QuoteMeta(kind) + `["']?\s*(#.*)?$`)
	var docs [][2]int
	start := 0
	for i, l := range lines {
		if documentSeparator.MatchString(l.text) {
			docs = append(docs, [2]int{start, i})
			start = i + 1
		}
	}
	docs = append(docs, [2]int{start, len(lines)})
	var ofKind []*[2]int
	for i := range docs {
		for j := docs[i][0]; j < docs[i][1]; j++ {
			if kindLine.MatchString(lines[j].text) {
				ofKind = append(ofKind, &docs[i])
				break
			}
		}
	}
	if len(ofKind) > 1 {
		// Several of the kind: the one whose metadata names the workload
		// literally.
		var named []*[2]int
		for _, d := range ofKind {
			if writesName(lines, *d, name) {
				named = append(named, d)
			}
		}
		ofKind = named
	}
	switch len(ofKind) {
	case 0:
		return nil, false, fmt.Errorf("no document of the template names kind %s (and name %s) on lines of their own", kind, name)
	case 1:
	default:
		return nil, false, fmt.Errorf("several documents of the template render a %s named %s", kind, name)
	}
	doc := ofKind[0]
	spec := -1
	for j := doc[0]; j < doc[1]; j++ {
		if lines[j].yaml && lines[j].indent == 0 && keyLine(lines[j], "spec") {
			spec = j
		}
	}
	if spec < 0 {
		return nil, false, errors.New("the template writes no spec: block")
	}
	tmpl, indent := child(lines, spec+1, block(lines, spec), "template")
	if tmpl < 0 {
		return nil, false, errors.New("the template writes no spec.template: block")
	}
	_ = indent
	end := block(lines, tmpl)
	meta, metaIndent := child(lines, tmpl+1, end, "metadata")
	if metaIndent < 0 {
		metaIndent = lines[tmpl].indent + 2
	}
	keys := slices.Sorted(maps.Keys(set))
	entry := func(ind int, k string) string {
		return strings.Repeat(" ", ind) + k + ": " + strconv.Quote(set[k])
	}
	var insertAt int
	var added []string
	switch {
	case meta < 0:
		insertAt = tmpl + 1
		added = append(added, strings.Repeat(" ", metaIndent)+"metadata:", strings.Repeat(" ", metaIndent+2)+"annotations:")
		for _, k := range keys {
			added = append(added, entry(metaIndent+4, k))
		}
	default:
		metaEnd := block(lines, meta)
		ann, annIndent := child(lines, meta+1, metaEnd, "annotations")
		if annIndent < 0 {
			annIndent = lines[meta].indent + 2
		}
		if ann < 0 {
			for j := meta + 1; j < metaEnd; j++ {
				if lines[j].yaml && lines[j].indent == annIndent && strings.HasPrefix(strings.TrimSpace(lines[j].text), "annotations:") {
					return nil, false, errors.New("the pod template's annotations are not a block of their own lines")
				}
			}
			insertAt = meta + 1
			added = append(added, strings.Repeat(" ", annIndent)+"annotations:")
			for _, k := range keys {
				added = append(added, entry(annIndent+2, k))
			}
			break
		}
		annEnd := block(lines, ann)
		_, entryIndent := child(lines, ann+1, annEnd, "")
		if entryIndent < 0 {
			entryIndent = lines[ann].indent + 2
		}
		insertAt = ann + 1
		changed := false
		for _, k := range keys {
			written := -1
			for j := ann + 1; j < annEnd; j++ {
				if lines[j].yaml && lines[j].indent == entryIndent && strings.HasPrefix(strings.TrimSpace(lines[j].text), k+":") {
					written = j
				}
			}
			if written < 0 {
				added = append(added, entry(entryIndent, k))
				continue
			}
			if lines[written].text != entry(entryIndent, k) {
				lines[written].text = entry(entryIndent, k)
				changed = true
			}
		}
		if len(added) == 0 {
			if !changed {
				return src, false, nil
			}
		}
	}
	out := make([]string, 0, len(lines)+len(added))
	for i, l := range lines {
		if i == insertAt {
			out = append(out, added...)
		}
		out = append(out, l.text)
	}
	if insertAt == len(lines) {
		out = append(out, added...)
	}
	text := strings.Join(out, eol)
	if bytes.HasSuffix(src, []byte(eol)) {
		text += eol
	}
	return []byte(text), true, nil
}

// writesName reports whether the document's top-level metadata writes the
// name literally.
func writesName(lines []templateLine, doc [2]int, name string) bool {
	for j := doc[0]; j < doc[1]; j++ {
		if !lines[j].yaml || lines[j].indent != 0 || !keyLine(lines[j], "metadata") {
			continue
		}
		end := min(block(lines, j), doc[1])
		if n, _ := child(lines, j+1, end, "name"); n >= 0 {
			return false // "name:" alone: a value on the next lines
		}
		for k := j + 1; k < end; k++ {
			t := strings.TrimSpace(lines[k].text)
			if lines[k].yaml && strings.HasPrefix(t, "name:") {
				v := strings.Trim(strings.TrimSpace(strings.TrimPrefix(t, "name:")), `"'`)
				if v == name {
					return true
				}
			}
		}
	}
	return false
}
