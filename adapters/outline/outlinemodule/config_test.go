package outlinemodule_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
)

var _ = DescribeTable("HEPHAESTUS_OUTLINE_API_URL, the API root of the one Outline instance",
	func(value, root, problem string) {
		c, err := outlinemodule.LoadConfig(providerkit.Env{Getenv: func(n string) string {
			return map[string]string{"HEPHAESTUS_OUTLINE_API_URL": value}[n]
		}})
		if problem != "" {
			Expect(err).To(MatchError("HEPHAESTUS_OUTLINE_API_URL: " + problem))
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(c.APIURL).To(Equal(root))
	},
	Entry("has no default instance: unset, no Outline backfill", "", "", ""),
	Entry("is read as given", "https://outline.example/api", "https://outline.example/api", ""),
	Entry("is refused without a scheme", "app.getoutline.com/api", "", "is not an absolute http(s) URL without credentials"),
	Entry("is refused with a query: every path is appended to it", "https://outline.example/api?x=1", "",
		"is not an absolute http(s) URL without credentials, query or fragment"),
)
