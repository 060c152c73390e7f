package changes_test

import (
	"context"
	"fmt"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var slackEnvelopes atomic.Int64

// The Slack channel registry through the real handlers: each registry change publishes one
// slack.channel change, a redelivery or an event that changes nothing publishes nothing.
var _ = Describe("Slack channels in the change feed", func() {
	const (
		team    = "T0SPEC002"
		channel = "C0SPEC002"
	)
	h := withHandlers(activeConnection("SLACK", "SLACK", "https://slack.com", `{"teamId":"`+team+`"}`, team), slackPublishing)

	deliver := func(ctx context.Context, eventType, event string) support.Delivery {
		GinkgoHelper()
		d := support.LeasedEvent(ctx, writerPool, h.ws, slack.Provider, eventType, "slack:channel:"+channel, fmt.Sprintf(
			`{"type":"event_callback","team_id":%q,"event_id":"EvCh%d","authorizations":[{"team_id":%q,"user_id":"UBOT","is_bot":true}],"event":%s}`,
			team, slackEnvelopes.Add(1), team, event))
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		return d
	}
	view := func(name, consent string) string {
		return fmt.Sprintf(`slack.channel.upserted slack:channel:%s {"id": %q, "name": %q, "teamId": %q, "consent": %q}`,
			channel, channel, name, team, consent)
	}
	created := `{"type":"channel_created","channel":{"id":"` + channel + `","name":"general","created":1700000000,"creator":"U1"}}`
	joined := `{"type":"member_joined_channel","channel":"` + channel + `","channel_type":"C","user":"UBOT","team":"` + team + `"}`

	It("publishes the registration, the consent, a rename and the revocation with its erasure once each", func(ctx SpecContext) {
		d := deliver(ctx, "channel_created", created)
		Expect(h.published(ctx)).To(Equal([]string{view("general", "PENDING")}))

		By("the registration handled again, and another delivery of it: nothing new")
		d.NextLease(ctx)
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		deliver(ctx, "channel_created", created)
		Expect(h.published(ctx)).To(HaveLen(1))

		deliver(ctx, "member_joined_channel", joined)
		deliver(ctx, "member_joined_channel", joined) // already granted: nothing
		deliver(ctx, "message", `{"type":"message","channel":"`+channel+`","user":"U1","text":"hi","ts":"1700000000.000100"}`)
		deliver(ctx, "channel_rename", `{"type":"channel_rename","channel":{"id":"`+channel+`","name":"town-square","created":1700000000}}`)
		deliver(ctx, "channel_deleted", `{"type":"channel_deleted","channel":"`+channel+`"}`)
		got := h.published(ctx)
		Expect(got).To(HaveLen(6), "%v", got)
		Expect(got[1]).To(Equal(view("general", "GRANTED")))
		Expect(got[2]).To(Equal("slack.message.posted slack:message:"+channel+`:1700000000.000100 {"removed": true}`),
			"the revocation erased the message, and the feed keeps no copy of it: its change keeps its cursor, type and subject")
		Expect(got[3]).To(Equal(view("town-square", "GRANTED")))
		Expect(got[4]).To(Equal(view("town-square", "REVOKED")))
		Expect(got[5]).To(Equal(`slack.channel.messages_erased slack:channel:` + channel + ` {"id": "` + channel + `", "messages": 1}`))
	})

	It("publishes slack.channel.deleted for each channel the uninstall erases, removes its messages' changes, and publishes nothing for a second uninstall", func(ctx SpecContext) {
		deliver(ctx, "channel_created", created)
		deliver(ctx, "member_joined_channel", joined)
		deliver(ctx, "message", `{"type":"message","channel":"`+channel+`","user":"U1","text":"hi","ts":"1700000000.000100"}`)
		Expect(h.published(ctx)[2]).To(ContainSubstring(`"text": "hi"`))
		uninstall := `{"type":"app_uninstalled"}`
		deliver(ctx, "app_uninstalled", uninstall)
		deliver(ctx, "app_uninstalled", uninstall)
		got := h.published(ctx)
		Expect(got).To(Equal([]string{
			view("general", "PENDING"),
			view("general", "GRANTED"),
			"slack.message.posted slack:message:" + channel + `:1700000000.000100 {"removed": true}`,
			`slack.channel.deleted slack:channel:` + channel + ` {"id": "` + channel + `", "teamId": "` + team + `"}`,
		}))
	})
})
