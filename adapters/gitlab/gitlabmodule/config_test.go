package gitlabmodule_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
)

func load(vars map[string]string) (gitlabmodule.Config, error) {
	return gitlabmodule.LoadConfig(providerkit.Env{Getenv: func(n string) string { return vars[n] }})
}

var _ = Describe("The GitLab configuration", func() {
	It("has no default instance: unset, the GitLab handlers read nothing", func() {
		c, err := load(nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.APIURL).To(BeEmpty())
		Expect(c.IgnoredVariables).To(BeEmpty())
	})

	It("reads the API root, and names the retired instance-wide token as ignored without reading it", func() {
		c, err := load(map[string]string{
			"HEPHAESTUS_GITLAB_API_URL":   "https://gitlab.example/api/v4",
			"HEPHAESTUS_GITLAB_API_TOKEN": "glpat-token",
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.APIURL).To(Equal("https://gitlab.example/api/v4"))
		Expect(c.IgnoredVariables).To(Equal([]string{"HEPHAESTUS_GITLAB_API_TOKEN"}))
	})

	It("refuses an API root that is no absolute http(s) URL, naming the variable", func() {
		_, err := load(map[string]string{"HEPHAESTUS_GITLAB_API_URL": "gitlab.example/api/v4"})
		Expect(err).To(MatchError("HEPHAESTUS_GITLAB_API_URL: is not an absolute http(s) URL without credentials"))
	})
})
