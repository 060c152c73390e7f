package main

import (
	"bytes"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

var _ = Describe("The hephaestus command", func() {
	var stdout, stderr *bytes.Buffer
	BeforeEach(func() { stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{} })

	envOf := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	DescribeTable("refuses invalid configuration with one line per variable and exit code 2",
		func(command string) {
			code := run([]string{command}, envOf(map[string]string{
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS": "zero",
				"HEPHAESTUS_LOG_LEVEL":                                "loud",
			}), stdout, stderr)
			Expect(code).To(Equal(2))
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			Expect(lines).To(ConsistOf(
				`HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS: "zero" is not a whole number ≥ 1`,
				`HEPHAESTUS_LOG_LEVEL: "loud" is not a log level (debug, info, warn, error)`,
			))
		},
		Entry("serve", "serve"),
		Entry("migrate", "migrate"),
	)

	It("answers an unknown command or missing command with the usage and exit code 2", func() {
		Expect(run([]string{"frobnicate"}, envOf(nil), stdout, stderr)).To(Equal(2))
		Expect(stderr.String()).To(ContainSubstring("unknown command"))
		Expect(run(nil, envOf(nil), stdout, stderr)).To(Equal(2))
		Expect(stderr.String()).To(ContainSubstring("usage: hephaestus"))
	})

	It("migrates DATABASE_URL and exits 0", func(ctx SpecContext) {
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		code := run([]string{"migrate"}, envOf(map[string]string{"DATABASE_URL": db.URL, "HEPHAESTUS_LOG_LEVEL": "warn"}), stdout, stderr)
		Expect(code).To(Equal(0), stderr.String())
		Expect(stdout.String()).To(Equal("applied 0 migrations\n"))
	})

	It("prints its version", func() {
		Expect(run([]string{"version"}, envOf(nil), stdout, stderr)).To(Equal(0))
		Expect(stdout.String()).To(HavePrefix("hephaestus "))
	})
})
