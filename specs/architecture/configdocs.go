// The configuration reference: the variables the server and its provider modules read, each
// module Config field's variable and default, and the settings tables of README.md and
// docs/configuration.md.

package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// EnvNamesIn evaluates the string constants declared in the non-test Go files of dir (string
// literals joined with +, and other constants of the same files) and returns the values that
// name a variable the service reads: DATABASE_URL and every HEPHAESTUS_… name (a prefix ending
// in "_" is no variable), sorted.
func EnvNamesIn(dir string) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	exprs := map[string]ast.Expr{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						exprs[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	var eval func(ast.Expr, int) (string, bool)
	eval = func(x ast.Expr, depth int) (string, bool) {
		if depth > 16 {
			return "", false
		}
		switch x := x.(type) {
		case *ast.BasicLit:
			if x.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		case *ast.ParenExpr:
			return eval(x.X, depth+1)
		case *ast.Ident:
			e, ok := exprs[x.Name]
			if !ok {
				return "", false
			}
			return eval(e, depth+1)
		case *ast.BinaryExpr:
			if x.Op != token.ADD {
				return "", false
			}
			l, ok := eval(x.X, depth+1)
			if !ok {
				return "", false
			}
			r, ok := eval(x.Y, depth+1)
			return l + r, ok
		}
		return "", false
	}
	set := map[string]bool{}
	for _, x := range exprs {
		v, ok := eval(x, 0)
		if !ok {
			continue
		}
		if v == "DATABASE_URL" || (envName.MatchString(v) && !strings.HasSuffix(v, "_")) {
			set[v] = true
		}
	}
	return sortedKeys(set), nil
}

var envName = regexp.MustCompile(`^HEPHAESTUS_[A-Z0-9_]+$`)

// ConfigDirs are the folders whose string constants name every variable the server reads:
// bootstrap/ (the process settings) and each provider's module package,
// adapters/<p>/<p>module (its Config), for every provider Providers finds below root.
func ConfigDirs(root string) ([]string, error) {
	providers, err := Providers(root)
	if err != nil {
		return nil, err
	}
	dirs := []string{filepath.Join(root, "bootstrap")}
	for _, p := range providers {
		dirs = append(dirs, filepath.Join(root, "adapters", p, p+"module"))
	}
	return dirs, nil
}

// ListedProviders are the providers the server runs: those Providers finds whose module
// package the module list (adapters/providers) imports. A provider folder it does not list
// (Beacon, the example provider, which only its specs run) is checked like every other, but
// the server reads none of its variables.
func ListedProviders(root string) ([]string, error) {
	providers, err := Providers(root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "adapters", "providers")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	imported := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range file.Imports {
			if path, err := strconv.Unquote(imp.Path.Value); err == nil {
				imported[path] = true
			}
		}
	}
	var out []string
	for _, p := range providers {
		for path := range imported {
			if strings.HasSuffix(path, "/adapters/"+p+"/"+p+"module") {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}

// ServerEnvNames is EnvNamesIn of bootstrap/ and of the module package of every provider the
// module list names (ListedProviders): the variables the server reads, sorted and without
// repeats.
func ServerEnvNames(root string) ([]string, error) {
	listed, err := ListedProviders(root)
	if err != nil {
		return nil, err
	}
	dirs := []string{filepath.Join(root, "bootstrap")}
	for _, p := range listed {
		dirs = append(dirs, filepath.Join(root, "adapters", p, p+"module"))
	}
	set := map[string]bool{}
	for _, d := range dirs {
		names, err := EnvNamesIn(d)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			set[n] = true
		}
	}
	return sortedKeys(set), nil
}

// ConfigFieldFindings checks the Config struct of the non-test Go files of dir (a provider
// module's): every field's doc comment names the variable it is read from and says its
// default ("Default"), and every variable the package's constants name (EnvNamesIn) is named
// by some field's doc comment. Each finding is "Config.<Field>: …" or "<VARIABLE>: …".
func ConfigFieldFindings(dir string) ([]string, error) {
	names, err := EnvNamesIn(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var found []string
	documented := map[string]bool{}
	seen := false
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != "Config" {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			seen = true
			for _, f := range st.Fields.List {
				doc := f.Doc.Text() + f.Comment.Text()
				vars := EnvNamesMentioned(doc)
				for _, v := range vars {
					documented[v] = true
				}
				for _, id := range f.Names {
					if len(vars) == 0 {
						found = append(found, "Config."+id.Name+": its doc comment names no variable")
					}
					if !strings.Contains(doc, "Default") {
						found = append(found, "Config."+id.Name+": its doc comment states no default")
					}
				}
			}
			return false
		})
	}
	if !seen {
		return []string{"no Config struct"}, nil
	}
	for _, n := range names {
		if !documented[n] {
			found = append(found, n+": read, but named by no Config field's doc comment")
		}
	}
	sort.Strings(found)
	return found, nil
}

var envMention = regexp.MustCompile(`\bHEPHAESTUS_[A-Z0-9_]*[A-Z0-9]\b|\bDATABASE_URL\b`)

// EnvNamesMentioned lists the variable names (DATABASE_URL, HEPHAESTUS_…) a text names, sorted
// and without repeats.
func EnvNamesMentioned(text string) []string {
	set := map[string]bool{}
	for _, m := range envMention.FindAllString(text, -1) {
		set[m] = true
	}
	return sortedKeys(set)
}

// sortedKeys lists the names of set, sorted.
func sortedKeys(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var firstCodeSpan = regexp.MustCompile("`([^`]*)`")

// SettingRows reads the Markdown table rows of text whose first cell names variables: each
// variable named there maps to the row's second cell (its default), trimmed.
func SettingRows(text string) map[string]string {
	rows := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, v := range EnvNamesMentioned(cells[1]) {
			rows[v] = strings.TrimSpace(cells[2])
		}
	}
	return rows
}

// DefaultDisagreements compares the default cells of two settings tables (README.md's short
// one and docs/configuration.md's): for every variable of short whose default cell holds
// inline code, the first code span must be the first of the full table's cell for that
// variable. Each finding names the variable and both spans.
func DefaultDisagreements(short, full map[string]string) []string {
	var found []string
	for _, v := range sortedKeys(setOf(short)) {
		m := firstCodeSpan.FindStringSubmatch(short[v])
		if m == nil {
			continue
		}
		f := firstCodeSpan.FindStringSubmatch(full[v])
		if f == nil || f[1] != m[1] {
			found = append(found, fmt.Sprintf("%s: %q, the full table says %q", v, m[1], full[v]))
		}
	}
	return found
}

func setOf(m map[string]string) map[string]bool {
	set := map[string]bool{}
	for k := range m {
		set[k] = true
	}
	return set
}
