package slack_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("The Slack provider module", func() {
	module := slack.Module{}

	It("declares one team kind without a URL or secret of its own", func() {
		Expect(module.Provider().String()).To(Equal("SLACK"))
		Expect(module.Kinds()).To(Equal([]connection.Kind{slack.Kind}))
		Expect(slack.Kind.String()).To(Equal("SLACK"))
		Expect(slack.Kind.HasWebhookURL()).To(BeFalse())
		Expect(slack.Kind.RequiresSecret()).To(BeFalse())
		Expect(module.ResourceTypes()).To(ConsistOf("channel"))
	})

	It("takes the source key from the team id", func() {
		key, err := module.ValidateConfig(slack.Kind, map[string]any{"teamId": "T1", "appId": "A1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(key).To(Equal("T1"))
	})

	DescribeTable("refuses a config it cannot route by",
		func(config map[string]any) {
			_, err := module.ValidateConfig(slack.Kind, config)
			Expect(err).To(beRejected(ports.ErrMalformed, "invalid-config"))
		},
		Entry("no team", map[string]any{"appId": "A1"}),
		Entry("a numeric team", map[string]any{"teamId": float64(1)}),
		Entry("a team with a separator", map[string]any{"teamId": "T:1"}),
		Entry("an app id that is not a Slack id", map[string]any{"teamId": "T1", "appId": "A 1"}),
	)

	It("refuses a kind of another provider", func() {
		other := connection.MustKind(connection.KindSpec{Name: "GITHUB_APP", Provider: provider.MustNew("GITHUB")})
		_, err := module.ValidateConfig(other, map[string]any{"teamId": "T1"})
		Expect(err).To(beRejected(ports.ErrMalformed, "unknown-kind"))
	})
})
