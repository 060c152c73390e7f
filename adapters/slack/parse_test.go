package slack_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// callback wraps an event as Slack's event_callback envelope of team T1.
func callback(eventID, event string) string {
	return `{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"` + eventID +
		`","event_time":1700000000,"event":` + event + `}`
}

var _ = Describe("Parsing a Slack delivery", func() {
	var hook *slack.Webhook

	BeforeEach(func() {
		var err error
		hook, err = slack.NewWebhook(slack.Config{SigningSecret: []byte(signingSecret), Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
	})

	parse := func(body string, extra ...string) (contract.Envelope, error) {
		return hook.Parse(signed(signingSecret, clockNow, body, extra...), nil)
	}

	It("answers url_verification with its challenge and stores nothing", func() {
		env, err := parse(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Immediate).NotTo(BeNil())
		Expect(env.Immediate.Status).To(Equal(200))
		Expect(env.Immediate.ContentType).To(Equal("application/json"))
		Expect(env.Immediate.Body).To(MatchJSON(`{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`))
	})

	It("stores an event without the app's verification token, every other member as sent", func() {
		event := `{"type":"message","channel":"C1","user":"U1","text":"token","ts":"1355517523.000005"}`
		env, err := parse(`{"token":"XXYYZZ","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"Ev1",` +
			`"event_time":1700000000,"t\u006fken":"XXYYZZ","event":` + event + `}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Payload).To(MatchJSON(`{"team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"Ev1",` +
			`"event_time":1700000000,"event":` + event + `}`))
		Expect(string(env.Payload)).NotTo(ContainSubstring("XXYYZZ"))
	})

	It("stores an event that carries no token as it was received", func() {
		env, err := parse(`{"team_id":"T1","type":"event_callback","event_id":"Ev1","event":{"type":"message","channel":"C1","ts":"1.2"}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Payload).To(BeNil())
	})

	It("refuses url_verification without a challenge", func() {
		_, err := parse(`{"type":"url_verification"}`)
		Expect(err).To(beRejected(ports.ErrMalformed, "invalid-payload"))
	})

	It("routes a channel message by its team and channel", func() {
		env, err := parse(callback("Ev08MFMKH6", `{"type":"message","channel":"C2147483705","user":"U1","text":"hi","ts":"1355517523.000005","channel_type":"channel"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.EventType).To(Equal("message"))
		Expect(env.Action).To(BeEmpty())
		Expect(env.DeliveryKey).To(Equal("Ev08MFMKH6"))
		Expect(env.Subject.String()).To(Equal("slack:channel:C2147483705"))
		Expect(env.Route).To(Equal(ports.RouteSpec{
			SourceKind: "SLACK", SourceKey: "T1",
			Resources: []ports.Resource{{Type: "channel", ID: "C2147483705"}},
		}))
	})

	It("keeps a message edit in the message's event type and scope, with the subtype as action", func() {
		env, err := parse(callback("Ev2", `{"type":"message","subtype":"message_changed","channel":"C2147483705","message":{"ts":"1355517523.000005"}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(env.EventType).To(Equal("message"))
		Expect(env.Action).To(Equal("message_changed"))
		Expect(env.Subject.String()).To(Equal("slack:channel:C2147483705"))
		for _, token := range []string{"message", "Ev2", "1355517523"} {
			Expect(env.Subject.String()).NotTo(ContainSubstring(token))
		}
	})

	DescribeTable("finds the channel of channel events",
		func(event string) {
			env, err := parse(callback("Ev3", event))
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Subject.String()).To(Equal("slack:channel:C024BE91L"))
			Expect(env.Route.Resources).To(Equal([]ports.Resource{{Type: "channel", ID: "C024BE91L"}}))
			Expect(env.Route.ConnectionWide).To(BeFalse())
		},
		Entry("channel_created, whose channel is an object", `{"type":"channel_created","channel":{"id":"C024BE91L","name":"fun","created":1360782804}}`),
		Entry("channel_rename", `{"type":"channel_rename","channel":{"id":"C024BE91L","name":"new"}}`),
		Entry("channel_archive", `{"type":"channel_archive","channel":"C024BE91L","user":"U1"}`),
		Entry("member_joined_channel", `{"type":"member_joined_channel","user":"U1","channel":"C024BE91L","channel_type":"C"}`),
		Entry("reaction_added, through its item", `{"type":"reaction_added","user":"U1","reaction":"thumbsup","item":{"type":"message","channel":"C024BE91L","ts":"1360782400.498405"}}`),
		Entry("file_shared, through channel_id", `{"type":"file_shared","channel_id":"C024BE91L","file_id":"F1"}`),
	)

	DescribeTable("sends team-wide events to the team's connections",
		func(event string) {
			env, err := parse(callback("Ev4", event))
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Subject.String()).To(Equal("slack:team:T1"))
			Expect(env.Route).To(Equal(ports.RouteSpec{SourceKind: "SLACK", SourceKey: "T1", ConnectionWide: true}))
		},
		Entry("app_uninstalled", `{"type":"app_uninstalled"}`),
		Entry("tokens_revoked", `{"type":"tokens_revoked","tokens":{"oauth":["U1"],"bot":["U2"]}}`),
		Entry("team_join", `{"type":"team_join","user":{"id":"U3"}}`),
		Entry("user_change", `{"type":"user_change","user":{"id":"U3"}}`),
		Entry("app_home_opened, in the app's DM", `{"type":"app_home_opened","user":"U1","channel":"D0LAN2Q65","tab":"home"}`),
	)

	DescribeTable("scopes direct messages by the team, never by the DM channel",
		func(event string) {
			env, err := parse(callback("Ev5", event))
			Expect(err).NotTo(HaveOccurred())
			Expect(env.Subject.String()).To(Equal("slack:team:T1"))
			Expect(env.Route.ConnectionWide).To(BeTrue())
			Expect(env.Route.Resources).To(BeEmpty())
		},
		Entry("a D channel", `{"type":"message","channel":"D024BE91L","user":"U1","text":"hi","ts":"1.000001"}`),
		Entry("channel_type im", `{"type":"message","channel":"C0NOTADM","channel_type":"im","user":"U1"}`),
		Entry("a group DM", `{"type":"message","channel":"G024BE91L","channel_type":"mpim","user":"U1"}`),
	)

	It("gives a Slack retry the same key and keeps its retry headers, never the signature", func() {
		body := callback("Ev6", `{"type":"message","channel":"C1"}`)
		first, err := parse(body)
		Expect(err).NotTo(HaveOccurred())
		retry, err := parse(body, "X-Slack-Retry-Num", "1", "X-Slack-Retry-Reason", "http_timeout", "User-Agent", "Slackbot 1.0")
		Expect(err).NotTo(HaveOccurred())
		Expect(retry.DeliveryKey).To(Equal(first.DeliveryKey))
		Expect(retry.Headers).To(Equal(map[string]string{
			"X-Slack-Request-Timestamp": "1700000000", "X-Slack-Retry-Num": "1",
			"X-Slack-Retry-Reason": "http_timeout", "User-Agent": "Slackbot 1.0",
		}))
	})

	It("drops a delivery of another outer type", func() {
		env, err := parse(`{"token":"x","type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820,"api_app_id":"A1"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.DropReason).To(Equal("unsupported-type"))
	})

	DescribeTable("refuses an event callback it cannot key or route",
		func(body, reason string) {
			_, err := parse(body)
			Expect(err).To(beRejected(ports.ErrMalformed, reason))
		},
		Entry("no event_id", `{"type":"event_callback","team_id":"T1","event":{"type":"message","channel":"C1"}}`, "missing-delivery-id"),
		Entry("no team_id", `{"type":"event_callback","event_id":"Ev1","event":{"type":"message","channel":"C1"}}`, "missing-team"),
		Entry("a team_id with a separator", `{"type":"event_callback","team_id":"T:1","event_id":"Ev1","event":{"type":"message"}}`, "invalid-payload"),
		Entry("no event", `{"type":"event_callback","team_id":"T1","event_id":"Ev1"}`, "invalid-payload"),
		Entry("an event without type", `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"channel":"C1"}}`, "missing-event-type"),
		Entry("a channel that is a number", `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"message","channel":12}}`, "invalid-payload"),
		Entry("a channel with white space", `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"message","channel":"C 1"}}`, "invalid-payload"),
		Entry("not an object", `["event_callback"]`, "invalid-payload"),
	)
})
