package architecture

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
)

// LongFile is a production Go file of more lines than the limit given to LongFilesIn.
type LongFile struct {
	File  string // slash-separated, relative to the root given to LongFilesIn
	Lines int
}

func (l LongFile) String() string { return fmt.Sprintf("%s: %d lines", l.File, l.Lines) }

// LongFilesIn lists the Go files below root of more than limit lines, longest first: every
// file but tests (_test.go), fixtures (testdata), hidden and vendored folders (.cache holds
// fetched data), and generated code (a "Code generated … DO NOT EDIT." comment before the
// package clause, as go/ast.IsGenerated reads it). A file is split by what its parts do long
// before it reaches the limit; the limit only catches one that grew unnoticed.
func LongFilesIn(root string, limit int) ([]LongFile, error) {
	var out []LongFile
	err := walkGoFiles(root, func(path, rel string) error {
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		if ast.IsGenerated(f) {
			return nil
		}
		lines := bytes.Count(src, []byte("\n"))
		if len(src) > 0 && src[len(src)-1] != '\n' {
			lines++ // a last line without its newline, as wc -l would miss it
		}
		if lines > limit {
			out = append(out, LongFile{File: rel, Lines: lines})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Lines != out[j].Lines {
			return out[i].Lines > out[j].Lines
		}
		return out[i].File < out[j].File
	})
	return out, err
}
