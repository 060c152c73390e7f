package architecture

import (
	"fmt"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// NameClash is a package name two packages share, or an import of the module given another name.
type NameClash struct {
	What string
}

func (c NameClash) String() string { return c.What }

// CheckPackageNames reports package names shared by two directories of the module (specs/ and
// cmd/ excluded: their packages are never imported) and every import of a module package under
// another name than its own (an alias), in any file: with unique names, no file needs one.
func CheckPackageNames(moduleRoot, modulePath string) ([]NameClash, error) {
	names := map[string][]string{} // package name -> directories
	pkgOf := map[string]string{}   // directory -> package name
	var aliases []NameClash
	fset := token.NewFileSet()
	err := walkGoFiles(moduleRoot, func(p, rel string) error {
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		dir := dirOf(rel)
		if !strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "specs/") && !strings.HasPrefix(rel, "cmd/") {
			if _, seen := pkgOf[dir]; !seen {
				pkgOf[dir] = f.Name.Name
				names[f.Name.Name] = append(names[f.Name.Name], dir)
			}
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: bad import %s", rel, spec.Path.Value)
			}
			if spec.Name == nil || spec.Name.Name == "_" || spec.Name.Name == "." {
				continue
			}
			if imp == modulePath || strings.HasPrefix(imp, modulePath+"/") {
				aliases = append(aliases, NameClash{What: fmt.Sprintf("%s imports %q as %s", rel, imp, spec.Name.Name)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []NameClash
	for name, dirs := range names {
		if len(dirs) > 1 {
			sort.Strings(dirs)
			out = append(out, NameClash{What: fmt.Sprintf("package name %s is used by %s", name, strings.Join(dirs, ", "))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].What < out[j].What })
	return append(out, aliases...), nil
}

func dirOf(rel string) string {
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return "."
}
