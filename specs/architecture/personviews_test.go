package architecture_test

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

var _ = Describe("Person fields of the read API and change-feed views", func() {
	It("are proven for every provider by its conformance suite, which checks the person tags and their declaration", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		providers, err := architecture.Providers(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(providers).NotTo(BeEmpty())
		for _, p := range providers {
			runs, err := architecture.RunsConformance(root, p)
			Expect(err).NotTo(HaveOccurred(), p)
			Expect(runs).To(BeTrue(), "specs/%s calls providersuite.Run with Package %q", p, p)
		}
	})

	It("would catch a spec package that does not run the suite for its own provider", func() {
		fixture := filepath.Join("testdata", "conformance")
		runs, err := architecture.RunsConformance(fixture, "toy")
		Expect(err).NotTo(HaveOccurred())
		Expect(runs).To(BeTrue())
		runs, err = architecture.RunsConformance(fixture, "other")
		Expect(err).NotTo(HaveOccurred())
		Expect(runs).To(BeFalse())
	})

	It("reports a view member that sounds like a person and is not declared", func() {
		fields, err := architecture.ViewFields(filepath.Join("testdata", "personviews"), "toy")
		Expect(err).NotTo(HaveOccurred())
		var members []string
		for _, f := range architecture.UndeclaredPersonFields(fields) {
			members = append(members, f.Member)
		}
		Expect(members).To(Equal([]string{"userId", "reviewer"}))
	})
})
