package outlinemodule_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
)

func load(vars map[string]string) (outlinemodule.Config, error) {
	return outlinemodule.LoadConfig(providerkit.Env{Getenv: func(n string) string { return vars[n] }})
}

var _ = Describe("The Outline configuration", func() {
	It("has no default instance: unset, no Outline backfill", func() {
		c, err := load(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.APIURL).To(BeEmpty())
	})

	It("reads the API root of the one instance", func() {
		c, err := load(map[string]string{"HEPHAESTUS_OUTLINE_API_URL": "https://outline.example/api"})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.APIURL).To(Equal("https://outline.example/api"))
	})

	DescribeTable("refuses an API root every path could not be appended to, naming the variable",
		func(value, message string) {
			_, err := load(map[string]string{"HEPHAESTUS_OUTLINE_API_URL": value})
			Expect(err).To(MatchError("HEPHAESTUS_OUTLINE_API_URL: " + message))
		},
		Entry("no scheme", "app.getoutline.com/api", "is not an absolute http(s) URL without credentials"),
		Entry("a query", "https://outline.example/api?x=1", "is not an absolute http(s) URL without credentials, query or fragment"),
	)
})
