// Package dispatchguard is the architecture check that provider handlers do not start
// goroutines with the dispatch context. The dispatch identity lives in the handler's context
// (ports.WithDispatch); a goroutine that took that context along would write under the
// delivery's fence from another goroutine, outlive the handler call and could claim its steps
// after the consumer recorded the outcome. Work that leaves the dispatch goroutine starts from
// ports.Detach(ctx) and owns its idempotency.
//
// The check is syntactic (go/ast, no type information), so it follows a naming convention: the
// dispatch context is the variable named ctx. It reports a go statement in a handler package
// (adapters/<provider>/<provider>handlers/...) whose call passes ctx, or whose function literal captures
// ctx, unless that ctx is an argument of ports.Detach or was last assigned from ports.Detach
// in the enclosing function. It does not see a context renamed before the go statement, a
// closure stored in a variable and started later, or errgroup-style Go(func) calls.
package dispatchguard

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PortsPath is the import path of the package that owns Detach.
const PortsPath = "github.com/hephaestus-dev/hephaestus/ports"

// dispatchCtx is the conventional name of the dispatch context.
const dispatchCtx = "ctx"

// Finding is one go statement that takes the dispatch context along.
type Finding struct {
	Pos token.Position
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: goroutine started with the dispatch context; pass ports.Detach(ctx)", f.Pos)
}

// Check inspects the non-test Go files of every handler package under root (the module root):
// adapters/<provider>/<provider>handlers and the packages below it.
func Check(root string) ([]Finding, error) {
	// A wrong root would find no handler package and pass: make it an error.
	if _, err := os.Stat(filepath.Join(root, "adapters")); err != nil {
		return nil, fmt.Errorf("dispatch guard: %s is not the module root: %w", root, err)
	}
	candidates, err := filepath.Glob(filepath.Join(root, "adapters", "*", "*handlers"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, dir := range candidates {
		if filepath.Base(dir) == filepath.Base(filepath.Dir(dir))+"handlers" {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("dispatch guard: no handler package under %s", filepath.Join(root, "adapters"))
	}
	fset := token.NewFileSet()
	var findings []Finding
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			findings = append(findings, CheckFile(fset, file)...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return findings, nil
}

// CheckFile inspects one parsed file.
func CheckFile(fset *token.FileSet, file *ast.File) []Finding {
	ports := portsName(file)
	var (
		findings []Finding
		stack    []ast.Node
	)
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if g, ok := n.(*ast.GoStmt); ok && takesCtx(g.Call, ports) && !detachedBefore(enclosingBody(stack), g.Pos(), ports) {
			findings = append(findings, Finding{Pos: fset.Position(g.Pos())})
		}
		stack = append(stack, n)
		return true
	})
	return findings
}

// portsName is the name the file uses for the ports package ("" when it does not import it:
// then nothing can be detached).
func portsName(file *ast.File) string {
	for _, imp := range file.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == PortsPath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "ports"
		}
	}
	return ""
}

// takesCtx reports whether the goroutine's call passes ctx or its literal captures it.
func takesCtx(call *ast.CallExpr, ports string) bool {
	for _, arg := range call.Args {
		if usesCtx(arg, ports) {
			return true
		}
	}
	if lit, ok := call.Fun.(*ast.FuncLit); ok {
		return !declaresCtx(lit) && usesCtx(lit.Body, ports)
	}
	return usesCtx(call.Fun, ports) // a method value on something built from ctx
}

// usesCtx finds the identifier ctx outside ports.Detach(…) calls.
func usesCtx(n ast.Node, ports string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if isDetach(n, ports) {
				return false
			}
		case *ast.SelectorExpr:
			found = usesCtx(n.X, ports) // x.ctx names a field, not the variable
			return false
		case *ast.Ident:
			if n.Name == dispatchCtx {
				found = true
			}
		}
		return !found
	})
	return found
}

// declaresCtx reports whether a function literal has its own ctx (a parameter, or ctx := …
// in its body), which its body then refers to instead of the dispatch context.
func declaresCtx(lit *ast.FuncLit) bool {
	for _, field := range lit.Type.Params.List {
		for _, name := range field.Names {
			if name.Name == dispatchCtx {
				return true
			}
		}
	}
	for _, stmt := range lit.Body.List {
		if as, ok := stmt.(*ast.AssignStmt); ok && as.Tok == token.DEFINE && assignsCtx(as) >= 0 {
			return true
		}
	}
	return false
}

// detachedBefore reports whether the last assignment to ctx before pos in body is
// ctx = ports.Detach(…) (or :=).
func detachedBefore(body *ast.BlockStmt, pos token.Pos, ports string) bool {
	if body == nil {
		return false
	}
	var last *ast.AssignStmt
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil || n.Pos() >= pos {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok {
			return false // another function's ctx
		}
		if as, ok := n.(*ast.AssignStmt); ok && as.End() <= pos && assignsCtx(as) >= 0 {
			last = as
		}
		return true
	})
	if last == nil {
		return false
	}
	i := assignsCtx(last)
	if len(last.Rhs) != len(last.Lhs) {
		return false
	}
	call, ok := last.Rhs[i].(*ast.CallExpr)
	return ok && isDetach(call, ports)
}

// assignsCtx is the index of ctx among the assignment's left-hand sides, or -1.
func assignsCtx(as *ast.AssignStmt) int {
	for i, lhs := range as.Lhs {
		if id, ok := lhs.(*ast.Ident); ok && id.Name == dispatchCtx {
			return i
		}
	}
	return -1
}

func isDetach(call *ast.CallExpr, ports string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || ports == "" || sel.Sel.Name != "Detach" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == ports
}

// enclosingBody is the body of the innermost function on the stack.
func enclosingBody(stack []ast.Node) *ast.BlockStmt {
	for i := len(stack) - 1; i >= 0; i-- {
		switch f := stack[i].(type) {
		case *ast.FuncLit:
			return f.Body
		case *ast.FuncDecl:
			return f.Body
		}
	}
	return nil
}
