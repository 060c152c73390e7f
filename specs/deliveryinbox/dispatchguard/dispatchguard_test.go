package dispatchguard_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/deliveryinbox/dispatchguard"
)

var _ = Describe("The handler goroutine rule", func() {
	// lines lists the source lines of the go statements the check reports in a handler file
	// whose Handle method has body.
	lines := func(imports, body string) []int {
		prefix := "package handlers\n\nimport (\n\t\"context\"\n" + imports + ")\n\n" +
			"type H struct{ ctx context.Context }\n\n" +
			"func (h *H) sync(context.Context) {}\n\n" +
			"func (h *H) Handle(ctx context.Context) error {\n"
		src := prefix + body + "\n\treturn nil\n}\n"
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "handler.go", src, parser.SkipObjectResolution)
		Expect(err).NotTo(HaveOccurred(), src)
		var got []int
		for _, f := range dispatchguard.CheckFile(fset, file) {
			got = append(got, f.Pos.Line-strings.Count(prefix, "\n")) // line within body
		}
		return got
	}
	const dispatchImport = "\t\"github.com/hephaestus-dev/hephaestus/application/dispatch\"\n"

	DescribeTable("reports goroutines that take the dispatch context along",
		func(imports, body string) {
			Expect(lines(imports, body)).To(Equal([]int{1}))
		},
		Entry("passed as an argument", "", "\tgo h.sync(ctx)"),
		Entry("captured by a function literal", "", "\tgo func() { h.sync(ctx) }()"),
		Entry("handed to a literal's own parameter", "", "\tgo func(ctx context.Context) { h.sync(ctx) }(ctx)"),
		Entry("wrapped in another context", "", "\tgo h.sync(context.WithoutCancel(ctx))"),
		Entry("detached once but reassigned", dispatchImport,
			"\tgo h.sync(ctx)\n\tctx = dispatch.Detach(ctx)"),
	)

	DescribeTable("accepts goroutines that start from a detached context",
		func(imports, body string) {
			Expect(lines(imports, body)).To(BeEmpty())
		},
		Entry("detached in the call", dispatchImport, "\tgo h.sync(dispatch.Detach(ctx))"),
		Entry("detached into the literal's parameter", dispatchImport,
			"\tgo func(ctx context.Context) { h.sync(ctx) }(dispatch.Detach(ctx))"),
		Entry("detached before, same name", dispatchImport, "\tctx = dispatch.Detach(ctx)\n\tgo h.sync(ctx)"),
		Entry("detached before, new name", dispatchImport, "\tdctx := dispatch.Detach(ctx)\n\tgo h.sync(dctx)"),
		Entry("detached under an import alias", "\tp \"github.com/hephaestus-dev/hephaestus/application/dispatch\"\n",
			"\tgo h.sync(p.Detach(ctx))"),
		Entry("a field named ctx", "", "\tgo h.sync(h.ctx)"),
		Entry("no context at all", "", "\tgo func() {}()"),
	)

	It("walks every handler package below adapters/<provider>/<provider>handlers, tests excluded", func() {
		root := GinkgoT().TempDir()
		write := func(rel, src string) {
			path := filepath.Join(root, rel)
			Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
			Expect(os.WriteFile(path, []byte(src), 0o644)).To(Succeed())
		}
		leak := "package p\n\nfunc f(ctx any) { go g(ctx) }\n\nfunc g(any) {}\n"
		write("adapters/github/githubhandlers/push/push.go", leak)
		write("adapters/github/githubhandlers/push/push_test.go", leak)
		write("adapters/github/webhook.go", leak)
		findings, err := dispatchguard.Check(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(findings).To(HaveLen(1))
		Expect(findings[0].Pos.Filename).To(HaveSuffix(filepath.Join("handlers", "push", "push.go")))

		_, err = dispatchguard.Check(filepath.Join(root, "adapters"))
		Expect(err).To(HaveOccurred())
	})

	// The fixture is a handler package of an imaginary provider: each go statement the check
	// must report carries a comment `// want "<what>" …`, every other one must pass.
	It("reports exactly the goroutines of its fixture that take the dispatch context or the raw envelope", func() {
		const fixture = "testdata/adapters/acme/acmehandlers/async.go"
		src, err := os.ReadFile(fixture)
		Expect(err).NotTo(HaveOccurred())
		want := map[string]bool{}
		wantRe := regexp.MustCompile(`"([^"]+)"`)
		for i, line := range strings.Split(string(src), "\n") {
			_, comment, ok := strings.Cut(line, "// want ")
			if !ok {
				continue
			}
			for _, m := range wantRe.FindAllStringSubmatch(comment, -1) {
				want[fmt.Sprintf("%d %s", i+1, m[1])] = true
			}
		}
		Expect(want).To(HaveLen(16), "the fixture's expectations were read")

		findings, err := dispatchguard.Check("testdata")
		Expect(err).NotTo(HaveOccurred())
		got := map[string]bool{}
		for _, f := range findings {
			Expect(f.Pos.Filename).To(HaveSuffix(filepath.FromSlash(fixture)))
			got[fmt.Sprintf("%d %s", f.Pos.Line, f.What)] = true
		}
		Expect(findings).To(HaveLen(len(got)), "one finding per kind and statement")
		Expect(got).To(Equal(want))
	})

	It("finds no goroutine with the dispatch context or the raw envelope in this repository's handlers", func() {
		Expect(dispatchguard.Check("../../..")).To(BeEmpty())
	})
})
