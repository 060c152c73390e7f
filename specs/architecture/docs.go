package architecture

import (
	"fmt"
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
