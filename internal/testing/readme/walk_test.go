// Package readme holds the README to the code it describes.
package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const root = "../../.."

// The README's architecture walk follows one drifted pod from the cluster
// to its pull request. Every function it names must exist in the product
// code, be reached from `kedge`'s main, and, after the first step, be
// reached from a step named before it: a rename, a removal or a path the
// code no longer takes fails here.
func TestArchitectureWalkNamesThePath(t *testing.T) {
	steps := walkSteps(t)
	require.NotEmpty(t, steps, "the README has an architecture walk")
	assert.LessOrEqual(t, len(steps), 15, "the walk takes at most 15 functions")

	prog := parseProduct(t)
	fromMain := prog.reachable([]string{"main.main"})
	for i, s := range steps {
		for _, name := range s.names {
			assert.NotEmpty(t, prog.resolve(name), "step %d names %s, which the product code does not declare", i+1, name)
		}
		decls := prog.resolve(s.names[0])
		if len(decls) == 0 {
			continue
		}
		assert.True(t, anyIn(decls, fromMain), "step %d: %s is not reached from kedge's main", i+1, s.names[0])
		if i == 0 {
			continue
		}
		var earlier []string
		for _, e := range steps[:i] {
			earlier = append(earlier, prog.resolve(e.names[0])...)
		}
		assert.True(t, anyIn(decls, prog.reachable(earlier)), "step %d: %s is not reached from any step before it", i+1, s.names[0])
	}
}

type step struct {
	// names are the Go names the step writes in backquotes, the function
	// it is about first.
	names []string
}

var (
	numbered = regexp.MustCompile(`^(\d+)\. `)
	goName   = regexp.MustCompile("`([A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*)+)`")
)

// walkSteps reads the numbered items of the README's architecture section;
// an item runs on over its indented lines.
func walkSteps(t *testing.T) []step {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	var section []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Architecture")
			continue
		}
		if in {
			section = append(section, line)
		}
	}
	var items []string
	for _, line := range section {
		switch {
		case numbered.MatchString(line):
			m := numbered.FindStringSubmatch(line)
			n, _ := strconv.Atoi(m[1])
			require.Equal(t, len(items)+1, n, "the walk's items are numbered in order: %q", line)
			items = append(items, line)
		case len(items) > 0 && strings.HasPrefix(line, "   "):
			items[len(items)-1] += " " + strings.TrimSpace(line)
		case len(items) > 0 && strings.TrimSpace(line) != "":
			// The walk ended; what follows is off the path.
			return stepsOf(t, items)
		}
	}
	return stepsOf(t, items)
}

func stepsOf(t *testing.T, items []string) []step {
	t.Helper()
	var out []step
	for _, item := range items {
		var s step
		for _, m := range goName.FindAllStringSubmatch(item, -1) {
			if !strings.Contains(m[1], "/") && !strings.HasSuffix(m[1], ".yaml") && !strings.HasSuffix(m[1], ".go") {
				s.names = append(s.names, m[1])
			}
		}
		require.NotEmpty(t, s.names, "walk item names no Go function: %q", item)
		out = append(out, s)
	}
	return out
}

// program is the product code's declarations and a call graph by name: a
// call through an interface or a method value reaches every method of that
// name, which makes reachability generous but keeps it honest about names.
type program struct {
	// decls maps "pkg.Func" and "pkg.Type.Method" to themselves; types
	// are "pkg.Type".
	decls map[string]bool
	// byMethod maps a method's name to its "pkg.Type.Method" keys.
	byMethod map[string][]string
	// calls maps a declaration to the declarations its body names.
	calls map[string][]string
}

func parseProduct(t *testing.T) *program {
	t.Helper()
	p := &program{decls: map[string]bool{}, byMethod: map[string][]string{}, calls: map[string][]string{}}
	type file struct {
		pkg     string
		f       *ast.File
		imports map[string]string
	}
	var files []file
	fset := token.NewFileSet()
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testing" && filepath.Base(filepath.Dir(path)) == "internal" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			imports := map[string]string{}
			for _, im := range f.Imports {
				ipath, _ := strconv.Unquote(im.Path.Value)
				name := ipath[strings.LastIndex(ipath, "/")+1:]
				if im.Name != nil {
					imports[im.Name.Name] = name
				} else {
					imports[name] = name
				}
			}
			files = append(files, file{pkg: f.Name.Name, f: f, imports: imports})
			return nil
		})
		require.NoError(t, err)
	}
	for _, fl := range files {
		for _, d := range fl.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				key := declKey(fl.pkg, d)
				p.decls[key] = true
				if d.Recv != nil {
					p.byMethod[d.Name.Name] = append(p.byMethod[d.Name.Name], key)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						p.decls[fl.pkg+"."+ts.Name.Name] = true
					}
				}
			}
		}
	}
	// A function handed over as a struct field's value (Deps{Source:
	// live.Set}) is called through that field (r.deps.Source(ctx)):
	// fields maps a field's name to what its values name.
	fields := map[string][]string{}
	for _, fl := range files {
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok {
					fields[k.Name] = append(fields[k.Name], p.refsIn(n.Value, fl.pkg, fl.imports)...)
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && i < len(n.Rhs) {
						fields[sel.Sel.Name] = append(fields[sel.Sel.Name], p.refsIn(n.Rhs[i], fl.pkg, fl.imports)...)
					}
				}
			}
			return true
		})
	}
	for _, fl := range files {
		for _, d := range fl.f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			key := declKey(fl.pkg, fd)
			p.calls[key] = p.refsIn(fd.Body, fl.pkg, fl.imports)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && !isPackage(sel, fl.imports) {
					p.calls[key] = append(p.calls[key], fields[sel.Sel.Name]...)
				}
				return true
			})
		}
	}
	return p
}

// refsIn is every declaration a piece of code names: a function of its
// own package or of an imported one, and any method of the name it
// selects.
func (p *program) refsIn(n ast.Node, pkg string, imports map[string]string) []string {
	var out []string
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if isPackage(n, imports) {
				out = append(out, imports[n.X.(*ast.Ident).Name]+"."+n.Sel.Name)
				return false
			}
			out = append(out, p.byMethod[n.Sel.Name]...)
		case *ast.Ident:
			out = append(out, pkg+"."+n.Name)
		}
		return true
	})
	return out
}

func isPackage(sel *ast.SelectorExpr, imports map[string]string) bool {
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	_, ok = imports[x.Name]
	return ok
}

func declKey(pkg string, d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return pkg + "." + d.Name.Name
	}
	typ := d.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		}
		break
	}
	return pkg + "." + typ.(*ast.Ident).Name + "." + d.Name.Name
}

// resolve is the declarations a README name means: pkg.Func,
// pkg.Type.Method, or Type.Method of any package.
func (p *program) resolve(name string) []string {
	if p.decls[name] {
		return []string{name}
	}
	var out []string
	if strings.Count(name, ".") == 1 {
		for key := range p.decls {
			if strings.HasSuffix(key, "."+name) && strings.Count(key, ".") == 2 {
				out = append(out, key)
			}
		}
	}
	return out
}

func (p *program) reachable(from []string) map[string]bool {
	seen := map[string]bool{}
	queue := append([]string(nil), from...)
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		if seen[k] {
			continue
		}
		seen[k] = true
		for _, c := range p.calls[k] {
			if p.decls[c] && !seen[c] {
				queue = append(queue, c)
			}
		}
	}
	return seen
}

func anyIn(keys []string, set map[string]bool) bool {
	for _, k := range keys {
		if set[k] {
			return true
		}
	}
	return false
}
