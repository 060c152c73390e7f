package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// DocFinding is one line of a Markdown file that breaks a documentation rule.
type DocFinding struct {
	File string // slash-separated, relative to the root the check was given
	Line int
	Text string // what was found
	Rule string
}

func (f DocFinding) String() string {
	return fmt.Sprintf("%s:%d: %s (%s)", f.File, f.Line, f.Text, f.Rule)
}

// HistoryPages are the Markdown files that may carry history (dates, issue numbers): the
// changelog and the performance history. Every other Markdown file of the repository is reference.
var HistoryPages = []string{"CHANGELOG.md", "docs/performance-history.md"}

// MarkdownFiles lists README.md, ARCHITECTURE.md, CHANGELOG.md and every docs/**/*.md below root
// (slash-separated, relative to root, sorted). Files that do not exist are left out.
func MarkdownFiles(root string) ([]string, error) {
	var files []string
	for _, f := range []string{"README.md", "ARCHITECTURE.md", "CHANGELOG.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	docs := filepath.Join(root, "docs")
	if _, err := os.Stat(docs); err != nil {
		return files, nil
	}
	err := filepath.WalkDir(docs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(files)
	return files, err
}

// ReferencePages are MarkdownFiles without the HistoryPages.
func ReferencePages(root string) ([]string, error) {
	all, err := MarkdownFiles(root)
	if err != nil {
		return nil, err
	}
	var ref []string
	for _, f := range all {
		if !isHistoryPage(f) {
			ref = append(ref, f)
		}
	}
	return ref, nil
}

func isHistoryPage(f string) bool {
	for _, h := range HistoryPages {
		if f == h {
			return true
		}
	}
	return false
}

var historyPatterns = []struct {
	re   *regexp.Regexp
	rule string
}{
	{regexp.MustCompile(`(?i)\bissues?\s+\d+`), "an issue number"},
	{regexp.MustCompile(`(?:^|[^\w&/])#\d+\b`), "an issue reference"},
	{regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`), "a date"},
	{regexp.MustCompile(`(?i)\bthis session\b`), "session narrative"},
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// HistoryIn reports every line of the given reference pages that carries history: an issue
// number (`issue 12`, `issues 31`, `#12`), a date (`2026-12-03`) or session narrative ("this
// session"). Fenced code blocks and inline code spans are example text and are not read.
func HistoryIn(root string, files []string) ([]DocFinding, error) {
	var found []DocFinding
	for _, f := range files {
		lines, err := readLines(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for i, line := range proseLines(lines) {
			if line == "" {
				continue
			}
			for _, p := range historyPatterns {
				for _, m := range p.re.FindAllString(line, -1) {
					found = append(found, DocFinding{File: f, Line: i + 1, Text: strings.TrimSpace(m), Rule: p.rule})
				}
			}
		}
	}
	return found, nil
}

// proseLines returns the lines with fenced code blocks blanked and inline code spans removed,
// keeping the line numbers.
func proseLines(lines []string) []string {
	out := make([]string, len(lines))
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		out[i] = inlineCode.ReplaceAllString(l, "``")
	}
	return out
}

func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// BrokenLinksIn reports every link of the given Markdown files that leads nowhere in the
// repository: a relative link whose file or folder does not exist below root, an anchor that
// names no heading of its page, or a link that leaves the repository (`../shared/…`, or any
// path that climbs above root). Absolute URLs (`https:`, `mailto:`) are not followed.
func BrokenLinksIn(root string, files []string) ([]DocFinding, error) {
	var found []DocFinding
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		lines, err := readLines(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := HeadingAnchors(lines)
		anchors[rel] = a
		return a, nil
	}
	for _, f := range files {
		lines, err := readLines(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		fenced := false
		for i, line := range lines {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue
			}
			line = inlineCode.ReplaceAllString(line, "``")
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				finding := func(rule string) {
					found = append(found, DocFinding{File: f, Line: i + 1, Text: target, Rule: rule})
				}
				path, anchor, _ := strings.Cut(target, "#")
				rel := f
				if path != "" {
					rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), path)))
					if strings.Contains(target, "../shared") || rel == ".." || strings.HasPrefix(rel, "../") {
						finding("leads outside the repository")
						continue
					}
					info, err := os.Stat(filepath.Join(root, rel))
					if err != nil {
						finding("no such file in the repository")
						continue
					}
					if info.IsDir() || !strings.HasSuffix(rel, ".md") {
						if anchor != "" {
							finding("an anchor on a file that is not Markdown")
						}
						continue
					}
				}
				if anchor == "" {
					continue
				}
				a, err := anchorsOf(rel)
				if err != nil {
					return nil, err
				}
				if !a[anchor] {
					finding("no heading " + strconv.Quote(anchor) + " in " + rel)
				}
			}
		}
	}
	return found, nil
}

// HeadingAnchors are the anchors GitHub gives the headings of a Markdown file: lower case,
// punctuation dropped, spaces as hyphens, a repeated anchor suffixed -1, -2, ….
func HeadingAnchors(lines []string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		slug := Slug(text)
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug = fmt.Sprintf("%s-%d", slug, n+1)
		} else {
			seen[slug] = 0
		}
		out[slug] = true
	}
	return out
}

// Slug is GitHub's anchor of one heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

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

// ServerEnvNames is EnvNamesIn of every ConfigDirs folder: the variables the server reads,
// sorted and without repeats.
func ServerEnvNames(root string) ([]string, error) {
	dirs, err := ConfigDirs(root)
	if err != nil {
		return nil, err
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
