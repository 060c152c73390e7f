package architecture_test

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

// expr renders an expression as written ("contract.ReasonBadSignature", `"bad-signature"`).
func expr(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	Expect(printer.Fprint(&b, fset, e)).To(Succeed())
	return b.String()
}

// reasonUse is one refusal or drop reason a provider package gives, where it gives it.
type reasonUse struct{ where, reason string }

// providerReasons reads a provider package's non-test files: the reason argument of every
// ports.Reject call and every DropReason assignment, and the expressions its
// RejectionReasons method returns.
func providerReasons(dir string) (used []reasonUse, declared map[string]bool) {
	fset := token.NewFileSet()
	declared = map[string]bool{}
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "provider.go" {
			continue // provider.go refuses connection configs (management API), not deliveries
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		Expect(err).NotTo(HaveOccurred())
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Name.Name == "RejectionReasons" && n.Recv != nil {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if lit, ok := m.(*ast.CompositeLit); ok {
							for _, el := range lit.Elts {
								declared[expr(fset, el)] = true
							}
						}
						return true
					})
					return false
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && expr(fset, sel) == "ports.Reject" && len(n.Args) >= 2 {
					used = append(used, reasonUse{fset.Position(n.Pos()).String(), expr(fset, n.Args[1])})
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "DropReason" && i < len(n.Rhs) {
						used = append(used, reasonUse{fset.Position(n.Pos()).String(), expr(fset, n.Rhs[i])})
					}
				}
			}
			return true
		})
	}
	return used, declared
}

var _ = Describe("Provider refusal reasons", func() {
	It("are named constants that each provider declares in RejectionReasons, so /metrics exports every one from start", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		for _, p := range []string{"github", "gitlab", "slack", "outline"} {
			used, declared := providerReasons(filepath.Join(root, "adapters", p))
			Expect(declared).NotTo(BeEmpty(), "%s declares its reasons", p)
			Expect(used).NotTo(BeEmpty(), "%s refuses deliveries", p)
			for _, u := range used {
				Expect(u.reason).NotTo(HavePrefix(`"`), "%s: a reason literal the declaration cannot list", u.where)
				Expect(declared).To(HaveKey(u.reason), "%s: reason %s is not in RejectionReasons", u.where, u.reason)
			}
		}
	})

	It("would catch a reason the declaration misses", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "x.go"), []byte(`package x
func (Module) RejectionReasons() []string { return []string{contract.ReasonBadSignature} }
func verify() error { return ports.Reject(ports.ErrUnauthenticated, reasonForgotten, "") }
func parse(env *Envelope) { env.DropReason = "literal" }
`), 0o600)).To(Succeed())
		used, declared := providerReasons(dir)
		Expect(declared).To(Equal(map[string]bool{"contract.ReasonBadSignature": true}))
		Expect(used).To(HaveLen(2))
		Expect(declared).NotTo(HaveKey(used[0].reason))
		Expect(used[1].reason).To(Equal(`"literal"`))
	})
})
