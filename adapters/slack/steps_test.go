package slack_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = Describe("Slack step names", func() {
	DescribeTable("refuse an item that names a message or a private conversation",
		func(op, item string) {
			_, err := slack.NewStep(op, item)
			Expect(err).To(MatchError(inbox.ErrInvalidStepName))
		},
		Entry("a message timestamp", "slack.message.insert", "1355517523.000005"),
		Entry("a direct-message channel id", "slack.mentor.submit", "D024BE91L"),
		Entry("a group-DM channel id", "slack.mentor.submit", "G024BE91L"),
		Entry("an mpdm channel name", "slack.mentor.submit", "mpdm-alice--bob-1"),
	)

	It("accepts a public channel id and a team id as items", func() {
		s, err := slack.NewStep("slack.channel.erase", "C024BE91L", "T024BE7LD")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.String()).To(Equal("slack.channel.erase/C024BE91L/T024BE7LD"))
	})
})
