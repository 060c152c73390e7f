package architecture_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

var _ = Describe("Layer boundaries", func() {
	It("holds for every package of the module", func() {
		root, modulePath, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		Expect(modulePath).To(Equal("github.com/hephaestus-dev/hephaestus"))
		Expect(filepath.Join(root, "specs", "architecture")).To(BeADirectory())

		violations, err := architecture.Check(root, modulePath)
		Expect(err).NotTo(HaveOccurred())
		lines := make([]string, len(violations))
		for i, v := range violations {
			lines[i] = v.String()
		}
		Expect(violations).To(BeEmpty(), "layer violations:\n%s", strings.Join(lines, "\n"))
	})

	When("a tree breaks every rule", func() {
		var violations []architecture.Violation
		BeforeEach(func() {
			var err error
			violations, err = architecture.Check(filepath.Join("testdata", "violating"), "github.com/hephaestus-dev/hephaestus")
			Expect(err).NotTo(HaveOccurred())
		})

		found := func(file, imp string) []string {
			var rules []string
			for _, v := range violations {
				if v.File == file && v.Import == imp {
					rules = append(rules, v.Rule)
				}
			}
			return rules
		}

		DescribeTable("reports the violation",
			func(file, imp, rule string) {
				Expect(found(file, imp)).To(ConsistOf(ContainSubstring(rule)))
			},
			Entry("pgx in domain/", "domain/x.go", "github.com/jackc/pgx/v5", "pgx never appears in domain/"),
			Entry("gin in application/", "application/y.go", "github.com/gin-gonic/gin", "gin never appears in application/"),
			Entry("zap in ports/", "ports/z.go", "go.uber.org/zap", "zap never appears in ports/"),
			Entry("the provider contract in the core's ports", "ports/z.go",
				"github.com/hephaestus-dev/hephaestus/ports/contract", "the core's ports never import the provider contract"),
			Entry("an adapter in the provider contract", "ports/contract/c.go",
				"github.com/hephaestus-dev/hephaestus/adapters/providerkit", "ports/ imports only the standard library"),
			Entry("bootstrap in adapters/", "adapters/w.go", "github.com/hephaestus-dev/hephaestus/bootstrap", "adapters/ never import bootstrap/"),
			Entry("adapters/postgres in a provider's handlers", "adapters/github/githubhandlers/h.go",
				"github.com/hephaestus-dev/hephaestus/adapters/postgres", "handlers write through ports only"),
			Entry("the provider's mirror package in its handlers", "adapters/github/githubhandlers/h.go",
				"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror", "handlers write through ports only"),
			Entry("the module in migrations/", "migrations/m.go", "github.com/hephaestus-dev/hephaestus/domain/inbox",
				"migrations/ imports only the standard library"),
			Entry("zap in a domain test", "domain/y_test.go", "go.uber.org/zap", "domain tests import only"),
			Entry("an internal package other than the scanner in domain/", "domain/x.go",
				"github.com/hephaestus-dev/hephaestus/internal/heavy", "domain/ imports only the standard library, domain/ and internal/jsonscan"),
			Entry("the module in internal/jsonscan, which domain/ imports", "internal/jsonscan/s.go",
				"github.com/hephaestus-dev/hephaestus/domain/inbox", "internal/jsonscan imports only the standard library"),
			Entry("the generated API client in adapters/", "adapters/c.go",
				"github.com/hephaestus-dev/hephaestus/client/hxapi", "the service never imports client/"),
			Entry("gin in the generated API client", "client/hxapi/x.go", "github.com/gin-gonic/gin",
				"client/ imports only the standard library, client/ and github.com/oapi-codegen/runtime"),
			Entry("the domain in the sealed credential's leaf package", "ports/credential/c.go",
				"github.com/hephaestus-dev/hephaestus/domain/connection", "ports/credential imports only the standard library"),
			Entry("the connection store in a provider API client", "adapters/github/githubapi/client.go",
				"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore", "a provider's packages (API clients"),
			Entry("the engine's change feed in a provider's root package", "adapters/github/provider.go",
				"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed", "a provider's packages (API clients"),
			Entry("a PostgreSQL store in providerkit", "adapters/providerkit/kit.go",
				"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs", "providerkit hands a provider ports"),
			Entry("the engine's SQL helpers in a provider's mirror store", "adapters/github/githubmirror/store.go",
				"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil", "provider mirror stores write through adapters/sqlkit"),
			Entry("the console session store in an HTTP adapter", "adapters/http/console/console.go",
				"github.com/hephaestus-dev/hephaestus/adapters/postgres/consolesession", "HTTP adapters reach the stores through ports"),
		)

		It("reports nothing else: the standard library, inner layers, internal/jsonscan in domain/, x/sync, test libraries, application specs, the client's runtime, adapters/sqlkit in a mirror store and the engine's own use of adapters/postgres pass", func() {
			Expect(violations).To(HaveLen(20), "%v", violations)
		})
	})

	Describe("provider modules, the kit, HTTP adapters and the engine's stores", func() {
		reach := func(root string, skip func(from, to string) bool) []string {
			reached, err := architecture.StoreReach(root, "github.com/hephaestus-dev/hephaestus", skip)
			Expect(err).NotTo(HaveOccurred())
			lines := make([]string, len(reached))
			for i, r := range reached {
				lines[i] = r.String()
			}
			return lines
		}
		var root string
		BeforeEach(func() {
			var err error
			root, _, err = architecture.FindModule(".")
			Expect(err).NotTo(HaveOccurred())
		})

		It("a provider module, providerkit or an HTTP adapter reaches no package of adapters/postgres, through any chain of imports", func() {
			Expect(reach(root, nil)).To(BeEmpty())
		})

		It("would catch a module that reaches a store through its API client, its mirror or the kit, and an HTTP adapter that reaches one through another", func() {
			violating := filepath.Join("testdata", "violating")
			Expect(reach(violating, nil)).To(ConsistOf(
				"adapters/github/githubmodule reaches adapters/postgres/managementstore: adapters/github/githubmodule → adapters/github/githubapi → adapters/postgres/managementstore",
				"adapters/github/githubmodule reaches adapters/postgres/pgutil: adapters/github/githubmodule → adapters/github/githubmirror → adapters/postgres/pgutil",
				"adapters/github/githubmodule reaches adapters/postgres/syncjobs: adapters/github/githubmodule → adapters/providerkit → adapters/postgres/syncjobs",
				"adapters/providerkit reaches adapters/postgres/syncjobs: adapters/providerkit → adapters/postgres/syncjobs",
				"adapters/http/console reaches adapters/postgres/consolesession: adapters/http/console → adapters/postgres/consolesession",
				"adapters/http/signin reaches adapters/postgres/consolesession: adapters/http/signin → adapters/http/console → adapters/postgres/consolesession",
			))
		})
	})

	Describe("standard library detection", func() {
		DescribeTable("is an import path whose first element has no dot",
			func(imp string, std bool) { Expect(architecture.IsStdlib(imp)).To(Equal(std)) },
			Entry(nil, "net/http", true),
			Entry(nil, "embed", true),
			Entry(nil, "golang.org/x/sync/errgroup", false),
			Entry(nil, "github.com/jackc/pgx/v5", false),
		)
	})
})
