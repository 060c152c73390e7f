package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Undocumented is an exported identifier without a doc comment.
type Undocumented struct {
	File string // slash-separated, relative to the root given to UndocumentedIn
	Line int
	Name string // Type.Method for a method
}

func (u Undocumented) String() string { return fmt.Sprintf("%s:%d %s", u.File, u.Line, u.Name) }

// UndocumentedIn lists the exported identifiers of the Go files below root/dir (tests and
// testdata excluded) that have no doc comment: functions, methods of exported types, types,
// and constants and variables (a declaration group's comment documents its members, as godoc
// shows it). Godoc is the reference of the domain and the ports, so nothing there goes bare.
func UndocumentedIn(root, dir string) ([]Undocumented, error) {
	var out []Undocumented
	base := filepath.Join(root, dir)
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		add := func(pos token.Pos, name string) {
			out = append(out, Undocumented{File: filepath.ToSlash(rel), Line: fset.Position(pos).Line, Name: name})
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() || decl.Doc != nil {
					continue
				}
				name := decl.Name.Name
				if decl.Recv != nil {
					recv := receiverName(decl.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue // not in godoc
					}
					name = recv + "." + name
				}
				add(decl.Pos(), name)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						if spec.Name.IsExported() && decl.Doc == nil && spec.Doc == nil {
							add(spec.Pos(), spec.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							if n.IsExported() && decl.Doc == nil && spec.Doc == nil && spec.Comment == nil {
								add(n.Pos(), n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

// receiverName is the type name of a method receiver (T, *T, T[P], *T[P]).
func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
