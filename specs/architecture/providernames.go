package architecture

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// NameUse is a provider's name in the code of a file outside the places that may name it.
type NameUse struct {
	File     string // slash-separated, relative to the module root
	Line     int
	Provider string
	Token    string
}

func (u NameUse) String() string {
	return fmt.Sprintf("%s:%d names provider %q in %s", u.File, u.Line, u.Provider, u.Token)
}

// Providers are the provider folders of a module: every adapters/<name> that holds its
// module package adapters/<name>/<name>module.
func Providers(moduleRoot string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(moduleRoot, "adapters"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if st, err := os.Stat(filepath.Join(moduleRoot, "adapters", e.Name(), e.Name()+"module")); err == nil && st.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// mayName lists the folders where any provider may be named: the list of provider modules
// (adapters/providers, one line per provider; the composition root in bootstrap/ reads it and
// names none), the migrations (a provider's tables), the specs and docs that describe
// providers, the development commands (demo and bench drive real provider payloads), and the
// generated API client, whose names are the API document's (provider routes and enum values)
// and which no package of the service may import (the boundaries rule "the service never
// imports client/").
var mayName = []string{"adapters/providers/", "migrations/", "specs/", "docs/", "cmd/", "client/"}

// CheckProviderNames reports every identifier, string or character literal of a Go file that
// contains a provider's name (case-insensitively) outside that provider's own folder
// (adapters/<provider>/) and the folders of mayName. Comments are prose and test files are
// examples, so both may use a provider as an example (a test of the domain names "GITHUB" as
// sample data); the code that builds the service may not. In an import path the host
// "github.com/" of a module path is not a name.
func CheckProviderNames(moduleRoot string, providers []string) ([]NameUse, error) {
	var out []NameUse
	err := filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
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
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(moduleRoot, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, prefix := range mayName {
			if strings.HasPrefix(rel, prefix) {
				return nil
			}
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		uses, err := namesIn(rel, src, providers)
		out = append(out, uses...)
		return err
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

func namesIn(rel string, src []byte, providers []string) ([]NameUse, error) {
	fset := token.NewFileSet()
	file := fset.AddFile(rel, -1, len(src))
	var s scanner.Scanner
	var errs scanner.ErrorList
	s.Init(file, src, func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)
	var out []NameUse
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.IDENT && tok != token.STRING && tok != token.CHAR {
			continue
		}
		text := strings.ToLower(lit)
		if tok == token.STRING {
			text = strings.ReplaceAll(text, `"github.com/`, `"`)
			text = strings.ReplaceAll(text, "`github.com/", "`")
		}
		for _, name := range providers {
			if strings.HasPrefix(rel, "adapters/"+name+"/") {
				continue
			}
			if strings.Contains(text, name) {
				out = append(out, NameUse{File: rel, Line: fset.Position(pos).Line, Provider: name, Token: lit})
			}
		}
	}
	if len(errs) > 0 {
		return out, errs.Err()
	}
	return out, nil
}
