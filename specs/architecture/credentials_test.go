package architecture_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

// instanceTokens are the retired instance-wide provider tokens (CONTRACT.md "Provider access":
// an instance-wide token is never used for a resource a workspace chose).
var instanceTokens = []string{"HEPHAESTUS_GITHUB_API_TOKEN", "HEPHAESTUS_GITLAB_API_TOKEN"}

// credentialPackage is the sealed credential's package; its issuer is the one way to make a
// credential.
const credentialPackage = "github.com/hephaestus-dev/hephaestus/ports/credential"

// mayIssue reports whether the file may name the credential issuer (credential.ClaimIssuer,
// credential.Issuer): the connection store, which claims it, and the credential package's own
// specs, which prove that a second claim panics.
func mayIssue(rel string) bool {
	test := strings.HasSuffix(rel, "_test.go")
	dir := filepath.ToSlash(filepath.Dir(rel))
	return (dir == "adapters/postgres/managementstore" && !test) || (dir == "ports/credential" && test)
}

// moduleConfigFile reports whether rel is a provider module's config.go
// (adapters/<p>/<p>module/config.go), the one place a retired variable is named: the module
// only warns that it is ignored.
func moduleConfigFile(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 4 && parts[0] == "adapters" && parts[2] == parts[1]+"module" && parts[3] == "config.go"
}

// credentialViolations scans the module's Go files under root for the ways a backfill or
// handler read could reach a credential that is not its workspace's connection's: the
// instance-wide token variables read anywhere but a module's config.go (which only warns that
// they are ignored), a module Config of GitHub or GitLab with a token field (the path the token
// took into the clients), and a credential.SpecCredential call (the spec-only credential)
// outside a _test.go file, all three in the service's own code (not specs/); and, in any file
// of the module, specs included, the credential issuer named outside the connection store.
func credentialViolations(root string) []string {
	GinkgoHelper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		issuerNamed := false
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == credentialPackage && !mayIssue(rel) {
				issuerNamed = true
			}
		}
		service := !strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "specs/")
		moduleConfig := strings.HasSuffix(filepath.Dir(rel), "githubmodule") || strings.HasSuffix(filepath.Dir(rel), "gitlabmodule")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING || !service {
					return true
				}
				v, _ := strconv.Unquote(n.Value)
				for _, t := range instanceTokens {
					if v == t && !moduleConfigFile(rel) {
						out = append(out, rel+" reads "+t)
					}
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "SpecCredential" && service {
					out = append(out, rel+" calls SpecCredential outside a spec")
				}
				// The package names rule refuses import aliases, so the package is "credential".
				if x, ok := n.X.(*ast.Ident); ok && issuerNamed && x.Name == "credential" && (n.Sel.Name == "ClaimIssuer" || n.Sel.Name == "Issuer") {
					out = append(out, rel+" names credential."+n.Sel.Name+": only the connection store issues credentials")
				}
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !service || !moduleConfig || n.Name.Name != "Config" || !ok {
					return true
				}
				for _, field := range st.Fields.List {
					for _, name := range field.Names {
						if strings.Contains(name.Name, "Token") {
							out = append(out, rel+" Config."+name.Name+" hands a provider client an instance-wide token")
						}
					}
				}
			}
			return true
		})
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
	return out
}

var _ = Describe("Provider credentials", func() {
	It("reach no backfill or handler read from an instance-wide token: only a connection lookup makes a credential, and only the connection store names the issuer", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		Expect(credentialViolations(root)).To(BeEmpty())
	})

	It("would catch a module that takes the token again, a read of the variable, a spec credential in production code, and any package but the connection store issuing a credential", func() {
		Expect(credentialViolations(filepath.Join("testdata", "credentials"))).To(ConsistOf(
			"adapters/github/githubmodule/module.go Config.APIToken hands a provider client an instance-wide token",
			"adapters/gitlab/gitlabsync/source.go reads HEPHAESTUS_GITLAB_API_TOKEN",
			"bootstrap/config.go reads HEPHAESTUS_GITHUB_API_TOKEN",
			"adapters/gitlab/gitlabsync/source.go calls SpecCredential outside a spec",
			"adapters/github/githubapi/mint.go names credential.ClaimIssuer: only the connection store issues credentials",
			"adapters/github/githubapi/mint.go names credential.Issuer: only the connection store issues credentials",
			"specs/support/creds.go names credential.ClaimIssuer: only the connection store issues credentials",
			"adapters/postgres/managementstore/store_test.go names credential.ClaimIssuer: only the connection store issues credentials",
		))
	})
})
