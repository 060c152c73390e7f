package architecture_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

var _ = Describe("Provider names", func() {
	It("appear in the code of no file outside the provider's own folder, the module list, migrations, specs, docs, cmd and the generated client", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		providers, err := architecture.Providers(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(providers).To(ContainElements("github", "gitlab", "slack", "outline"), "every provider folder is found by its module package")

		uses, err := architecture.CheckProviderNames(root, providers)
		Expect(err).NotTo(HaveOccurred())
		lines := make([]string, len(uses))
		for i, u := range uses {
			lines[i] = u.String()
		}
		Expect(uses).To(BeEmpty(), "provider names outside their folders:\n%s", strings.Join(lines, "\n"))
	})

	When("a tree names a provider in the core, in the composition root and in another provider's folder", func() {
		var uses []architecture.NameUse
		BeforeEach(func() {
			root := filepath.Join("testdata", "providernames")
			providers, err := architecture.Providers(root)
			Expect(err).NotTo(HaveOccurred())
			Expect(providers).To(Equal([]string{"other", "toy"}))
			uses, err = architecture.CheckProviderNames(root, providers)
			Expect(err).NotTo(HaveOccurred())
		})

		It("reports the core's identifier and string, the composition root's string and the other provider's string, not the module list", func() {
			var got []string
			for _, u := range uses {
				got = append(got, u.File+" "+u.Provider+" "+u.Token)
			}
			Expect(got).To(ConsistOf(
				"adapters/other/othermodule/module.go toy \"TOY\"",
				"bootstrap/config.go toy \"HEPHAESTUS_TOY_TOKEN\"",
				"application/flows/flows.go toy flowToy",
				"application/flows/flows.go toy \"toy-app\"",
			))
		})
	})
})
