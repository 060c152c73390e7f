package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// personSounding is a view member whose name says it may hold a person: their id, login, name
// or e-mail address. Such a member carries a `person` struct tag (id, login, email, name, or -
// when it holds none of them, such as authoredAt).
var personSounding = regexp.MustCompile(`(?i)(author|user|login|email|owner|assignee|reviewer|actor|committer|creator|sender|mention|member|createdby|updatedby|mergedby|closedby)`)

// ViewField is one JSON member of a view type of a provider's read API.
type ViewField struct {
	File   string // slash-separated, relative to the module root
	Line   int
	Type   string
	Member string // the JSON name
	Person string // the person tag's value; "" when untagged
}

func (f ViewField) String() string {
	return fmt.Sprintf("%s:%d %s.%s (json %q) sounds like a person but has no person tag", f.File, f.Line, f.Type, f.Member, f.Member)
}

// ViewFields parses the read API package of provider (adapters/<p>/<p>read, tests excluded)
// and lists every JSON-tagged field of its struct types.
func ViewFields(moduleRoot, provider string) ([]ViewField, error) {
	dir := filepath.Join(moduleRoot, "adapters", provider, provider+"read")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []ViewField
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		ast.Inspect(file, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if field.Tag == nil {
					continue
				}
				raw, err := strconv.Unquote(field.Tag.Value)
				if err != nil {
					continue
				}
				tag := reflect.StructTag(raw)
				name, _, _ := strings.Cut(tag.Get("json"), ",")
				if name == "" || name == "-" {
					continue
				}
				out = append(out, ViewField{File: filepath.ToSlash(rel), Line: fset.Position(field.Pos()).Line,
					Type: spec.Name.Name, Member: name, Person: tag.Get("person")})
			}
			return true
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// UndeclaredPersonFields are the fields whose member sounds like a person's and that carry no
// person tag: a view would publish them while person erasure does not know them.
func UndeclaredPersonFields(fields []ViewField) []ViewField {
	var out []ViewField
	for _, f := range fields {
		if f.Person == "" && personSounding.MatchString(f.Member) {
			out = append(out, f)
		}
	}
	return out
}

// RunsConformance says whether the spec package of provider (specs/<provider>) runs the
// provider conformance suite for it: a test file calls providersuite.Run with a Fixture whose
// Package is provider.
func RunsConformance(moduleRoot, provider string) (bool, error) {
	dir := filepath.Join(moduleRoot, "specs", provider)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		found := false
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found || len(call.Args) != 1 {
				return !found
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Run" || fmt.Sprint(sel.X) != "providersuite" {
				return true
			}
			lit, ok := call.Args[0].(*ast.CompositeLit)
			if !ok {
				return true
			}
			for _, elt := range lit.Elts {
				kv, ok := elt.(*ast.KeyValueExpr)
				if !ok || fmt.Sprint(kv.Key) != "Package" {
					continue
				}
				if v, ok := kv.Value.(*ast.BasicLit); ok && v.Value == strconv.Quote(provider) {
					found = true
				}
			}
			return !found
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}
