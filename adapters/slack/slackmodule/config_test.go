package slackmodule_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodule"
)

// load reads the Slack configuration from vars; embedded says DATABASE_URL is unset.
func load(vars map[string]string, embedded bool) (slackmodule.Config, error) {
	return slackmodule.LoadConfig(providerkit.Env{Getenv: func(n string) string { return vars[n] }, Embedded: embedded,
		PublicURL: "https://hx.example"})
}

var _ = Describe("The Slack configuration", func() {
	It("uses every default of the contract when no variable is set", func() {
		c, err := load(nil, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.SigningSecret).To(BeEmpty())
		Expect(c.APIURL).To(Equal("https://slack.com/api/"))
		Expect(c.BotToken).To(BeEmpty(), "no token: no Slack Web API calls without a connection's own")
		Expect([]string{c.ClientID, c.ClientSecret}).To(Equal([]string{"", ""}), "no install flow")
		Expect(c.PublicURL).To(Equal("https://hx.example"), "the process's public URL names the install flow's redirect_uri")
	})

	DescribeTable("reads each variable into its field",
		func(name, value string, field types.GomegaMatcher) {
			c, err := load(map[string]string{name: value}, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(c).To(field)
		},
		Entry(nil, "HEPHAESTUS_SLACK_SIGNING_SECRET", "slack-secret ", HaveField("SigningSecret", []byte("slack-secret "))), // byte for byte
		Entry(nil, "HEPHAESTUS_SLACK_API_URL", "https://slack.example/api/", HaveField("APIURL", "https://slack.example/api/")),
		Entry(nil, "HEPHAESTUS_SLACK_BOT_TOKEN", "xoxb-1", HaveField("BotToken", "xoxb-1")),
	)

	It("reads the install flow's client, both halves", func() {
		c, err := load(map[string]string{"HEPHAESTUS_SLACK_CLIENT_ID": "123.456", "HEPHAESTUS_SLACK_CLIENT_SECRET": "s3cret"}, false)
		Expect(err).NotTo(HaveOccurred())
		Expect([]string{c.ClientID, c.ClientSecret}).To(Equal([]string{"123.456", "s3cret"}))
	})

	It("accepts the Makefile's public development signing secret with the embedded database only", func() {
		_, err := load(map[string]string{"HEPHAESTUS_SLACK_SIGNING_SECRET": "dev-slack-signing-secret"}, true)
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("refuses, naming the variable and the problem and never a secret's value",
		func(vars map[string]string, message string) {
			_, err := load(vars, false)
			Expect(err).To(MatchError(message))
		},
		Entry("the development secret with a real database", map[string]string{"HEPHAESTUS_SLACK_SIGNING_SECRET": "dev-slack-signing-secret"},
			"HEPHAESTUS_SLACK_SIGNING_SECRET: is the public development secret of the Makefile; set the Slack app's own signing secret when DATABASE_URL is set"),
		Entry("an API root with credentials", map[string]string{"HEPHAESTUS_SLACK_API_URL": "https://user:pw@slack.example/api/"},
			"HEPHAESTUS_SLACK_API_URL: is not an absolute http(s) URL without credentials"),
		Entry("a client id alone", map[string]string{"HEPHAESTUS_SLACK_CLIENT_ID": "123.456"},
			"HEPHAESTUS_SLACK_CLIENT_ID: is set without HEPHAESTUS_SLACK_CLIENT_SECRET"),
		Entry("a client secret alone", map[string]string{"HEPHAESTUS_SLACK_CLIENT_SECRET": "s3cret"},
			"HEPHAESTUS_SLACK_CLIENT_SECRET: is set without HEPHAESTUS_SLACK_CLIENT_ID"),
	)
})
