// Package architecture enforces the layering of GUIDE.md: which folder may import what.
//
// The checker reads import declarations with go/parser instead of running `go list`: no child
// process and no build cache, so a cached test result can never hide a new violation (the
// spec's inputs are the source files themselves), and files behind build tags (wireinject) are
// checked too.
package architecture

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Violation is one forbidden import.
type Violation struct {
	File   string // slash-separated, relative to the module root
	Import string
	Rule   string
}

func (v Violation) String() string { return fmt.Sprintf("%s imports %q: %s", v.File, v.Import, v.Rule) }

// Third-party packages the core must never see (GUIDE.md anti-patterns).
var infrastructure = []struct{ prefix, name string }{
	{"github.com/jackc/pgx", "pgx"},
	{"github.com/gin-gonic/gin", "gin"},
	{"go.uber.org/zap", "zap"},
}

// coreInternal are the internal/ packages domain/, ports/ and application/ may import: code
// of the standard library's weight (a JSON scanner), held below to import nothing else, so the
// core stays free of infrastructure through them too. Any other internal/ package (test
// harnesses, development tools) is as heavy as an adapter.
var coreInternal = []string{"internal/jsonscan"}

// testLibraries may appear in test files of domain/.
var testLibraries = []string{"github.com/onsi/ginkgo/v2", "github.com/onsi/gomega", "go.uber.org/goleak", "github.com/google/go-cmp"}

// Check walks the module at moduleRoot (whose path is modulePath) and returns every violation,
// sorted by file and import. Directories named testdata or vendor, and hidden ones, are skipped
// the way the go command skips them.
func Check(moduleRoot, modulePath string) ([]Violation, error) {
	providers, err := Providers(moduleRoot)
	if err != nil {
		return nil, err
	}
	var out []Violation
	err = walkImports(moduleRoot, func(rel, imp string) {
		if rule := violatedRule(rel, imp, modulePath, providers); rule != "" {
			out = append(out, Violation{File: rel, Import: imp, Rule: rule})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Import < out[j].Import
	})
	return out, nil
}

// walkImports calls visit with every import of every Go file under moduleRoot (rel is the file's
// slash path relative to the root). Directories named testdata or vendor, and hidden ones, are
// skipped the way the go command skips them.
func walkImports(moduleRoot string, visit func(rel, imp string)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != moduleRoot && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(moduleRoot, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: bad import %s", rel, spec.Path.Value)
			}
			visit(rel, imp)
		}
		return nil
	})
}

// violatedRule returns the rule file (slash path relative to the root) breaks by importing
// imp, or "" when the import is allowed. providers are the module's provider folders.
func violatedRule(file, imp, modulePath string, providers []string) string {
	dir := path.Dir(file)
	layer, _, _ := strings.Cut(dir, "/")
	test := strings.HasSuffix(file, "_test.go")
	// own is the import's path inside the module ("domain/inbox"), or "" for other modules.
	own := ""
	if imp == modulePath {
		own = "."
	} else if rest, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
		own = rest
	}
	within := func(folders ...string) bool {
		for _, f := range folders {
			if own == f || strings.HasPrefix(own, f+"/") {
				return true
			}
		}
		return false
	}

	// Test files are specs of their package; only domain's are held to (nearly) its rule.
	if test {
		if layer == "domain" && !IsStdlib(imp) && !within("domain") && !hasPrefix(imp, testLibraries...) {
			return "domain tests import only the standard library, domain/ and test libraries"
		}
		return ""
	}

	switch layer {
	case "domain", "ports", "application", "adapters", "bootstrap", "internal", "migrations":
		// The generated API client may name providers (providernames.go): the service stays
		// free of it.
		if within("client") {
			return "the service never imports client/ (the generated API client)"
		}
	case "client":
		if !IsStdlib(imp) && !within("client") && !hasPrefix(imp, "github.com/oapi-codegen/runtime") {
			return "client/ imports only the standard library, client/ and github.com/oapi-codegen/runtime"
		}
	}
	switch layer {
	case "domain", "ports", "application":
		for _, inf := range infrastructure {
			if hasPrefix(imp, inf.prefix) {
				return inf.name + " never appears in " + layer + "/"
			}
		}
	}
	switch layer {
	case "domain":
		if !IsStdlib(imp) && !within("domain") && !within(coreInternal...) {
			return "domain/ imports only the standard library, domain/ and " + strings.Join(coreInternal, ", ")
		}
	case "ports":
		if hasPrefix(dir, "ports/credential") && !IsStdlib(imp) {
			return "ports/credential imports only the standard library (a provider client, the kit and the connection store share it)"
		}
		if !IsStdlib(imp) && !within("domain", "ports") && !within(coreInternal...) {
			return "ports/ imports only the standard library, domain/, ports/ and " + strings.Join(coreInternal, ", ")
		}
		// The provider contract builds on the core's ports (a provider is handed a ports.Tx);
		// the core's ports never name what a provider implements.
		if !hasPrefix(dir, "ports/contract") && within("ports/contract") {
			return "the core's ports never import the provider contract (ports/contract builds on them)"
		}
	case "application":
		if !IsStdlib(imp) && !within("domain", "ports", "application") && !within(coreInternal...) && !hasPrefix(imp, "golang.org/x/sync") {
			return "application/ imports only the standard library, domain/, ports/, application/, " +
				strings.Join(coreInternal, ", ") + " and golang.org/x/sync"
		}
	case "internal":
		if hasPrefix(dir, coreInternal...) && !IsStdlib(imp) {
			return dir + " imports only the standard library (domain/ imports it)"
		}
	case "migrations":
		if !IsStdlib(imp) {
			return "migrations/ imports only the standard library"
		}
	case "adapters":
		if within("bootstrap") {
			return "adapters/ never import bootstrap/"
		}
		if p, ok := handlerProvider(dir); ok && (within("adapters/postgres", "adapters/"+p+"/"+p+"mirror") || hasPrefix(imp, "github.com/jackc/pgx")) {
			return "provider handlers write through ports only, never adapters/postgres, their mirror package or pgx"
		}
		if within("adapters/postgres") {
			return engineReach(dir, providers)
		}
	}
	return ""
}

// engineReach is the rule a package in dir breaks by importing a package of the engine's
// stores (adapters/postgres), or "" when it may. The kit, the HTTP adapters and every package
// of a provider folder but its mirror store are given ports (providerkit.Deps, the console's
// session port, credential.Credential), so a provider module cannot reach the engine's stores
// through them; a mirror store writes through adapters/sqlkit.
func engineReach(dir string, providers []string) string {
	switch {
	case hasPrefix(dir, "adapters/providerkit"):
		return "providerkit hands a provider ports, never a package of adapters/postgres"
	case hasPrefix(dir, "adapters/http"):
		return "HTTP adapters reach the stores through ports, never adapters/postgres"
	}
	for _, p := range providers {
		if providerPackage(dir, "mirror") && hasPrefix(dir, "adapters/"+p+"/"+p+"mirror") {
			return "provider mirror stores write through adapters/sqlkit, never adapters/postgres"
		}
		if hasPrefix(dir, "adapters/"+p) {
			return "a provider's packages (API clients, sync, read API, module, mirror) reach the stores through ports, never adapters/postgres"
		}
	}
	return ""
}

// handlerProvider reports whether dir is a provider's handler package,
// adapters/<provider>/<provider>handlers or below it, and which provider's.
func handlerProvider(dir string) (string, bool) {
	parts := strings.Split(dir, "/")
	if len(parts) >= 3 && parts[0] == "adapters" && parts[2] == parts[1]+"handlers" {
		return parts[1], true
	}
	return "", false
}

// providerPackage reports whether dir is adapters/<provider>/<provider><kind> or below it.
func providerPackage(dir, kind string) bool {
	parts := strings.Split(dir, "/")
	return len(parts) >= 3 && parts[0] == "adapters" && parts[2] == parts[1]+kind
}

// IsStdlib reports whether imp is a standard library path: its first element has no dot
// (the go command's own rule; "C" for cgo counts too).
func IsStdlib(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// hasPrefix reports whether imp is one of prefixes or a package below one.
func hasPrefix(imp string, prefixes ...string) bool {
	for _, p := range prefixes {
		if imp == p || strings.HasPrefix(imp, p+"/") {
			return true
		}
	}
	return false
}

// FindModule walks up from dir to the nearest go.mod and returns its directory and module path.
func FindModule(dir string) (root, modulePath string, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			s := bufio.NewScanner(f)
			for s.Scan() {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module"); ok {
					mp := strings.Trim(strings.TrimSpace(rest), `"`)
					if mp != "" {
						return dir, mp, nil
					}
				}
			}
			if err := s.Err(); err != nil {
				return "", "", err
			}
			return "", "", fmt.Errorf("%s has no module line", filepath.Join(dir, "go.mod"))
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", errors.New("no go.mod found above " + dir)
		}
		dir = parent
	}
}
