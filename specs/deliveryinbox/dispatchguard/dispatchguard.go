// Package dispatchguard is the architecture check that provider handlers start no goroutine
// with the dispatch context or the raw inbox envelope. The dispatch identity lives in the
// handler's context (dispatch.WithDispatch); a goroutine that took that context along would write
// under the delivery's fence from another goroutine, outlive the handler call and could claim
// its steps after the consumer recorded the outcome. A goroutine handed the envelope itself
// (the ports.Dispatch value, its Payload or Headers) is the seed's "raw inbox envelope sent to
// async work": it would redo the delivery's work outside the inbox, with no step and no fence.
// Work that leaves the dispatch goroutine starts from dispatch.Detach(ctx), takes the values it
// needs already parsed, and owns its idempotency.
//
// The check is syntactic (go/ast, no type information), so it follows conventions. It reports
// a go statement in a handler package (adapters/<provider>/<provider>handlers/...)
//   - whose call passes ctx, or whose function literal captures ctx, unless that ctx is an
//     argument of dispatch.Detach or was last assigned from dispatch.Detach in the enclosing function
//     (the dispatch context is the variable named ctx);
//   - whose call passes, or whose literal captures, an envelope: a parameter of type
//     ports.Dispatch or *ports.Dispatch, its .Payload or .Headers, a parameter named payload,
//     or a local assigned one of those (d2 := d, raw := d.Payload, b := []byte(d.Payload)).
//
// It does not see a context or an envelope renamed through a function call, a closure stored
// in a variable and started later, or errgroup-style Go(func) calls.
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

// PortsPath is the import path of the package that owns the Dispatch envelope.
const PortsPath = "github.com/hephaestus-dev/hephaestus/ports"

// DispatchPath is the import path of the package that owns Detach.
const DispatchPath = "github.com/hephaestus-dev/hephaestus/application/dispatch"

// dispatchCtx is the conventional name of the dispatch context.
const dispatchCtx = "ctx"

// What a finding's goroutine takes along.
const (
	// TakesContext: the dispatch context.
	TakesContext = "dispatch context"
	// TakesEnvelope: the ports.Dispatch value, its payload or its headers.
	TakesEnvelope = "raw inbox envelope"
)

// Finding is one go statement that takes the dispatch context or the envelope along.
type Finding struct {
	Pos  token.Position
	What string // TakesContext or TakesEnvelope
}

func (f Finding) String() string {
	if f.What == TakesEnvelope {
		return fmt.Sprintf("%s: goroutine handed the raw inbox envelope (the dispatch, its payload or headers); "+
			"hand it parsed values and dispatch.Detach(ctx)", f.Pos)
	}
	return fmt.Sprintf("%s: goroutine started with the dispatch context; pass dispatch.Detach(ctx)", f.Pos)
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
	ports := importName(file, PortsPath, "ports")
	detach := importName(file, DispatchPath, "dispatch")
	var (
		findings []Finding
		stack    []ast.Node
	)
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if g, ok := n.(*ast.GoStmt); ok {
			if takesCtx(g.Call, detach) && !detachedBefore(enclosingBody(stack), g.Pos(), detach) {
				findings = append(findings, Finding{Pos: fset.Position(g.Pos()), What: TakesContext})
			}
			if takesEnvelope(g.Call, envelopeNames(stack, g.Pos(), ports)) {
				findings = append(findings, Finding{Pos: fset.Position(g.Pos()), What: TakesEnvelope})
			}
		}
		stack = append(stack, n)
		return true
	})
	return findings
}

// importName is the name the file uses for the package at path ("" when it does not import
// it: then nothing can be detached, or no parameter is an envelope).
func importName(file *ast.File, path, name string) string {
	for _, imp := range file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return name
		}
	}
	return ""
}

// takesCtx reports whether the goroutine's call passes ctx or its literal captures it.
func takesCtx(call *ast.CallExpr, detach string) bool {
	for _, arg := range call.Args {
		if usesCtx(arg, detach) {
			return true
		}
	}
	if lit, ok := call.Fun.(*ast.FuncLit); ok {
		return !declaresCtx(lit) && usesCtx(lit.Body, detach)
	}
	return usesCtx(call.Fun, detach) // a method value on something built from ctx
}

// usesCtx finds the identifier ctx outside dispatch.Detach(…) calls.
func usesCtx(n ast.Node, detach string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if isDetach(n, detach) {
				return false
			}
		case *ast.SelectorExpr:
			// x.ctx names a field, not the variable. Only ever set found: a later sibling
			// without ctx (d.Payload after ctx in one call) must not clear it.
			if usesCtx(n.X, detach) {
				found = true
			}
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
// ctx = dispatch.Detach(…) (or :=).
func detachedBefore(body *ast.BlockStmt, pos token.Pos, detach string) bool {
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
	return ok && isDetach(call, detach)
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

func isDetach(call *ast.CallExpr, detach string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || detach == "" || sel.Sel.Name != "Detach" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == detach
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

// envelope is what names the raw envelope in a function: dispatch values (a ports.Dispatch,
// whose .Payload and .Headers are raw too) and raw payloads or headers.
type envelope struct {
	dispatch map[string]bool
	raw      map[string]bool
}

// envelopeNames collects the envelope names visible at pos from every enclosing function on
// the stack (a closure sees its outer functions' names): their parameters, and their locals
// assigned an envelope before pos. An inner function's parameter of the same name shadows.
func envelopeNames(stack []ast.Node, pos token.Pos, ports string) envelope {
	env := envelope{dispatch: map[string]bool{}, raw: map[string]bool{}}
	for _, n := range stack {
		var (
			typ  *ast.FuncType
			body *ast.BlockStmt
		)
		switch f := n.(type) {
		case *ast.FuncDecl:
			typ, body = f.Type, f.Body
		case *ast.FuncLit:
			typ, body = f.Type, f.Body
		default:
			continue
		}
		for _, field := range typ.Params.List {
			for _, name := range field.Names {
				delete(env.dispatch, name.Name)
				delete(env.raw, name.Name)
				switch {
				case isDispatchType(field.Type, ports):
					env.dispatch[name.Name] = true
				case name.Name == "payload":
					env.raw[name.Name] = true
				}
			}
		}
		if body == nil {
			continue
		}
		ast.Inspect(body, func(n ast.Node) bool {
			if n == nil || n.Pos() >= pos {
				return false
			}
			if _, ok := n.(*ast.FuncLit); ok {
				return false // another function's locals
			}
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != len(as.Rhs) {
				return true
			}
			for i, lhs := range as.Lhs {
				id, ok := lhs.(*ast.Ident)
				if !ok || id.Name == "_" {
					continue
				}
				switch env.alias(as.Rhs[i]) {
				case "dispatch":
					env.dispatch[id.Name] = true
				case "raw":
					env.raw[id.Name] = true
				default:
					delete(env.dispatch, id.Name)
					delete(env.raw, id.Name)
				}
			}
			return true
		})
	}
	return env
}

// isDispatchType reports whether t is ports.Dispatch or *ports.Dispatch.
func isDispatchType(t ast.Expr, ports string) bool {
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	sel, ok := t.(*ast.SelectorExpr)
	if !ok || ports == "" || sel.Sel.Name != "Dispatch" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == ports
}

// alias says whether e is the envelope itself under another name: "dispatch" for a dispatch
// value (d, *d, &d), "raw" for its payload or headers or a raw name (d.Payload, payload,
// []byte(d.Payload), payload[:], json.RawMessage(payload)), "" otherwise. A value computed
// from the envelope by a call (a parser) is not the envelope.
func (env envelope) alias(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.StarExpr:
			e = x.X
			continue
		case *ast.UnaryExpr:
			if x.Op != token.AND {
				return ""
			}
			e = x.X
			continue
		case *ast.SliceExpr:
			e = x.X
			continue
		case *ast.CallExpr:
			if len(x.Args) != 1 || !isConversion(x.Fun) {
				return ""
			}
			e = x.Args[0]
			continue
		case *ast.Ident:
			switch {
			case env.dispatch[x.Name]:
				return "dispatch"
			case env.raw[x.Name]:
				return "raw"
			}
			return ""
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && env.dispatch[id.Name] && (x.Sel.Name == "Payload" || x.Sel.Name == "Headers") {
				return "raw"
			}
			return ""
		default:
			return ""
		}
	}
}

// isConversion reports whether fun converts rather than computes: []byte(…), string(…),
// json.RawMessage(…).
func isConversion(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.ArrayType:
		return true
	case *ast.Ident:
		return f.Name == "string"
	case *ast.SelectorExpr:
		return f.Sel.Name == "RawMessage"
	}
	return false
}

// takesEnvelope reports whether the goroutine's call passes an envelope or its literal
// captures one (its own parameters of the same names shadow them).
func takesEnvelope(call *ast.CallExpr, env envelope) bool {
	if len(env.dispatch) == 0 && len(env.raw) == 0 {
		return false
	}
	for _, arg := range call.Args {
		if env.uses(arg) {
			return true
		}
	}
	if lit, ok := call.Fun.(*ast.FuncLit); ok {
		inner := envelope{dispatch: map[string]bool{}, raw: map[string]bool{}}
		for k := range env.dispatch {
			inner.dispatch[k] = true
		}
		for k := range env.raw {
			inner.raw[k] = true
		}
		for _, field := range lit.Type.Params.List {
			for _, name := range field.Names {
				delete(inner.dispatch, name.Name)
				delete(inner.raw, name.Name)
			}
		}
		return inner.uses(lit.Body)
	}
	return env.uses(call.Fun) // a method value on the envelope
}

// uses finds an envelope in n: a dispatch name not used for one of its other fields
// (d.WorkspaceID, d.Delivery.ID() are values, not the envelope), d.Payload, d.Headers, or a
// raw name.
func (env envelope) uses(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && env.dispatch[id.Name] {
				found = x.Sel.Name == "Payload" || x.Sel.Name == "Headers"
				return false
			}
			found = env.uses(x.X) // h.payload names a field, not the variable
			return false
		case *ast.Ident:
			found = env.dispatch[x.Name] || env.raw[x.Name]
		}
		return !found
	})
	return found
}
