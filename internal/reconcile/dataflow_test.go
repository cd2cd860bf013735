package reconcile

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reconcilerMemory are the Reconciler's fields that carry what one cycle
// keeps for the next; nothing else of a cycle is written outside the
// function that made it.
var reconcilerMemory = map[string]bool{"last": true, "prepared": true, "renders": true, "dashboard": true, "lastPlan": true, "defaults": true}

// TestStagesWriteOnlyWhatTheyMake type-checks the package's own files and
// package decide's, and holds every assignment to a field, an element or a
// pointee to the rule that data flows one way: a function writes only into
// values it made itself (a variable it declared, reached without going
// through a pointer, map or slice it did not allocate), never into what an
// earlier stage returned or a caller passed, and the Reconciler only into
// its memory between cycles. A decision is made by package decide alone:
// the compiler refuses any write into one elsewhere (its fields are
// unexported), and this check refuses what the compiler allows, a decision
// built here or put in the place of another, so nothing changes what
// decide returned.
func TestStagesWriteOnlyWhatTheyMake(t *testing.T) {
	for _, p := range []struct {
		dir, path string
		decides   bool
	}{
		{".", reconcilePath, false},
		{"decide", decidePath, true},
	} {
		t.Run(p.path, func(t *testing.T) {
			fset, files, info, err := typeCheck(p.dir, p.path, nil)
			require.NoError(t, err)
			require.Empty(t, writesIntoOthers(fset, files, info, p.decides))
		})
	}
}

// TestWritesIntoDecisionsAreCaught holds the rule above to what it says:
// each way of changing a decision after decide returned it, written in a
// file of this package, is refused, by the compiler where a decision's
// fields are concerned and by the check above for the rest.
func TestWritesIntoDecisionsAreCaught(t *testing.T) {
	tests := []struct {
		name, body, want string
		// compiler is set when the type-checker refuses the file: the
		// decision's fields are not reachable from outside package decide.
		compiler bool
	}{
		{"a field of the decision apply is handed", "d.action = ActNone", "d.action undefined", true},
		{"a field through a pointer", "p := &ds[0]\n\tp.action = ActOpen", "p.action undefined", true},
		{"a decision built with fields outside decide", "ds[0] = decide.Decision{action: ActClose}", "cannot refer to unexported field action", true},
		{"another decision in its place", "d = ds[1]", "replaces the decision d outside package decide", false},
		{"a decision built outside decide", "ds[0] = decide.Decision{}", "builds a decision outside package decide", false},
		{"an element of what decide returned", "ds[0] = d", "writes ds[0]: through a parameter", false},
		{"the PR a decision names", "d.PR().Title = \"\"", "writes d.PR().Title: an expression kedge does not write into", false},
		{"a duplicate a decision lists", "d.Duplicates()[0].Title = \"\"", "writes d.Duplicates()[0].Title: an expression kedge does not write into", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package reconcile\n\nimport \"" + decidePath + "\"\n\nfunc overrule(d decide.Decision, ds []decide.Decision) {\n\t" + tt.body + "\n\t_, _ = d, ds\n}\n"
			fset, files, info, err := typeCheck(".", reconcilePath, map[string]string{"overrule.go": src})
			if tt.compiler {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "overrule.go:")
				assert.Contains(t, err.Error(), tt.want)
				return
			}
			require.NoError(t, err)
			problems := writesIntoOthers(fset, files, info, false)
			require.NotEmpty(t, problems)
			var inFile []string
			for _, p := range problems {
				if strings.HasPrefix(p, "overrule.go:") {
					inFile = append(inFile, p)
				}
			}
			require.Len(t, inFile, len(problems), "only the added file is at fault")
			assert.Contains(t, strings.Join(inFile, "\n"), tt.want)
		})
	}
}

// writesIntoOthers lists, one line each, every write in files that breaks
// the rules TestStagesWriteOnlyWhatTheyMake states; decides is set for
// package decide, which makes decisions.
func writesIntoOthers(fset *token.FileSet, files []*ast.File, info *types.Info, decides bool) []string {
	var problems []string
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			allocated := allocatedLocals(fn, info)
			check := func(lhs ast.Expr, declares bool) {
				if !decides && !declares && isDecision(deref(info.TypeOf(lhs))) {
					problems = append(problems, fset.Position(lhs.Pos()).String()+": "+fn.Name.Name+" replaces the decision "+types.ExprString(lhs)+" outside package decide")
				}
				if _, plain := lhs.(*ast.Ident); plain {
					return
				}
				if why := foreignWrite(lhs, fn, info, allocated); why != "" {
					problems = append(problems, fset.Position(lhs.Pos()).String()+": "+fn.Name.Name+" writes "+types.ExprString(lhs)+": "+why)
				}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, lhs := range n.Lhs {
						check(lhs, n.Tok == token.DEFINE)
					}
				case *ast.IncDecStmt:
					check(n.X, false)
				case *ast.CompositeLit:
					if !decides && isDecision(info.TypeOf(n)) {
						problems = append(problems, fset.Position(n.Pos()).String()+": "+fn.Name.Name+" builds a decision outside package decide")
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "delete" && len(n.Args) > 0 {
						check(&ast.IndexExpr{X: n.Args[0], Index: n.Args[1]}, false)
					}
				}
				return true
			})
		}
	}
	return problems
}

// foreignWrite says why writing lhs in fn writes into a value fn did not
// make, or "" when it does not.
func foreignWrite(lhs ast.Expr, fn *ast.FuncDecl, info *types.Info, allocated map[*types.Var]bool) string {
	indirect := false
	e := lhs
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.SelectorExpr:
			if _, isPtr := info.TypeOf(x.X).Underlying().(*types.Pointer); isPtr {
				indirect = true
			}
			if id, ok := x.X.(*ast.Ident); ok && isReconcilerReceiver(id, fn, info) {
				if reconcilerMemory[x.Sel.Name] {
					return ""
				}
				return "a field of the Reconciler that is not its memory between cycles"
			}
			e = x.X
			continue
		case *ast.IndexExpr:
			switch info.TypeOf(x.X).Underlying().(type) {
			case *types.Map, *types.Slice, *types.Pointer:
				indirect = true
			}
			e = x.X
			continue
		case *ast.StarExpr:
			indirect = true
			e = x.X
			continue
		case *ast.Ident:
			v, ok := info.Uses[x].(*types.Var)
			if !ok {
				return "not a variable"
			}
			if !declaredIn(v, fn) {
				return "a variable declared outside the function"
			}
			if isParam(v, fn, info) && indirect {
				return "through a parameter: a value the caller owns"
			}
			if indirect && !allocated[v] {
				return "through " + x.Name + ", which the function did not allocate"
			}
			return ""
		default:
			return "an expression kedge does not write into: " + types.ExprString(e)
		}
	}
}

// allocatedLocals are fn's local variables that only ever hold what fn
// allocated: every assignment to them is a composite literal, its
// address, make or new.
func allocatedLocals(fn *ast.FuncDecl, info *types.Info) map[*types.Var]bool {
	verdict := map[*types.Var]bool{}
	note := func(id *ast.Ident, rhs ast.Expr) {
		obj := info.Defs[id]
		if obj == nil {
			obj = info.Uses[id]
		}
		v, ok := obj.(*types.Var)
		if !ok {
			return
		}
		allocation := rhs != nil && isAllocation(rhs)
		if prev, seen := verdict[v]; seen {
			verdict[v] = prev && allocation
			return
		}
		verdict[v] = allocation
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				id, ok := lhs.(*ast.Ident)
				if !ok {
					continue
				}
				var rhs ast.Expr
				if len(n.Rhs) == len(n.Lhs) {
					rhs = n.Rhs[i]
				}
				note(id, rhs)
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if len(n.Values) == 0 {
					// A zero value: nil maps, slices and pointers are
					// allocated by a later assignment, judged on its own.
					if v, ok := info.Defs[id].(*types.Var); ok {
						if _, seen := verdict[v]; !seen {
							verdict[v] = true
						}
					}
					continue
				}
				if len(n.Values) == len(n.Names) {
					note(id, n.Values[i])
				}
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					note(id, nil)
				}
			}
		}
		return true
	})
	return verdict
}

func isAllocation(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.CompositeLit:
		return true
	case *ast.UnaryExpr:
		_, lit := x.X.(*ast.CompositeLit)
		return x.Op == token.AND && lit
	case *ast.CallExpr:
		id, ok := x.Fun.(*ast.Ident)
		return ok && (id.Name == "make" || id.Name == "new")
	}
	return false
}

func declaredIn(v *types.Var, fn *ast.FuncDecl) bool {
	return v.Pos() >= fn.Pos() && v.Pos() <= fn.End()
}

func isParam(v *types.Var, fn *ast.FuncDecl, info *types.Info) bool {
	lists := []*ast.FieldList{fn.Type.Params, fn.Recv}
	for _, l := range lists {
		if l == nil {
			continue
		}
		for _, field := range l.List {
			for _, id := range field.Names {
				if info.Defs[id] == v {
					return true
				}
			}
		}
	}
	return false
}

func isReconcilerReceiver(id *ast.Ident, fn *ast.FuncDecl, info *types.Info) bool {
	if fn.Recv == nil || len(fn.Recv.List) == 0 || len(fn.Recv.List[0].Names) == 0 {
		return false
	}
	recv := fn.Recv.List[0].Names[0]
	if info.Uses[id] != info.Defs[recv] {
		return false
	}
	ptr, ok := info.TypeOf(id).(*types.Pointer)
	if !ok {
		return false
	}
	named, ok := ptr.Elem().(*types.Named)
	return ok && named.Obj().Name() == "Reconciler"
}

func isDecision(t types.Type) bool {
	named, ok := t.(*types.Named)
	return ok && named.Obj().Name() == "Decision" && named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == decidePath
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

const (
	reconcilePath = "github.com/kedge-io/kedge/internal/reconcile"
	decidePath    = reconcilePath + "/decide"
)

// typeCheck parses the files of the package in dir (tests left out) and
// the extra ones given by name and source, and type-checks them as path
// against the export data the go command built for their imports.
func typeCheck(dir, path string, extra map[string]string) (*token.FileSet, []*ast.File, *types.Info, error) {
	exports, err := exportData()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("go list -export: %w", err)
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, nil, err
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, f)
	}
	for name, src := range extra {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	_, err = (&types.Config{Importer: imp}).Check(path, fset, files, info)
	return fset, files, info, err
}

// exportData maps each import of the package to the export data the go
// command built for it; asked once, as every type-check reads the same.
var exportData = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
	}
	return exports, nil
})
