package slack_test

import (
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const (
	team    = "T0TEAM01"
	channel = "C0CHAN001"
	dm      = "D0DIRECT01"
)

func channelMessage(ts, user, text string) string {
	return callback(team, `{"type":"message","channel":"`+channel+`","channel_type":"channel","user":"`+user+
		`","text":"`+text+`","ts":"`+ts+`","event_ts":"`+ts+`"}`)
}

func channelEdit(ts, oldText, newText, editedTS string) string {
	return callback(team, `{"type":"message","subtype":"message_changed","channel":"`+channel+
		`","channel_type":"channel","ts":"`+editedTS+`","event_ts":"`+editedTS+`",
		"message":{"type":"message","user":"U1","text":"`+newText+`","ts":"`+ts+`","edited":{"user":"U1","ts":"`+editedTS+`"}},
		"previous_message":{"type":"message","user":"U1","text":"`+oldText+`","ts":"`+ts+`"}}`)
}

var _ = Describe("Slack participant consent firewall", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
		slackConnection(ctx, ws, team, "ACTIVE")
	})

	When("an edit's text write fails after its base insert committed", func() {
		It("resumes on retry: skips the insert and finishes the text and timestamp writes", func(ctx SpecContext) {
			registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
			edit := harness.Leased(ctx, ws, "message", "slack:channel:"+channel,
				channelEdit("1700000000.000100", "helo", "hello", "1700000050.000200"))
			faulty.failNextEditText(errInjected)

			Expect(edit.Attempt(ctx)).To(MatchError(errInjected))
			Expect(edit.Steps(ctx)).To(Equal([]string{"slack.message.insert"}))
			Expect(harness.Column(ctx, `SELECT text || '|' || coalesce(edited_ts, '') FROM slack_message WHERE workspace_id = $1`, ws)).
				To(Equal([]string{"helo|"}), "the base message committed without the edit")

			edit.ReleaseForRetry(ctx)
			Expect(edit.Attempt(ctx)).To(Succeed())
			Expect(edit.Steps(ctx)).To(Equal([]string{
				"slack.message.edit.text", "slack.message.edit.timestamp", "slack.message.insert",
			}))
			Expect(harness.Column(ctx, `SELECT text || '|' || edited_ts FROM slack_message WHERE workspace_id = $1`, ws)).
				To(Equal([]string{"hello|1700000050.000200"}))
			insert, text, stamp := faulty.calls()
			Expect([]int{insert, text, stamp}).To(Equal([]int{1, 2, 1}), "the retry did not run the committed insert again")
		})
	})

	It("never puts a message or direct-message channel identifier into a step name", func(ctx SpecContext) {
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		events := []support.Leased{
			harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000100", "U1", "hi")),
			harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelEdit("1700000000.000100", "hi", "hi!", "1700000001.000001")),
			harness.Leased(ctx, ws, "message", "slack:channel:"+channel, callback(team, `{"type":"message","subtype":"message_deleted",
				"channel":"`+channel+`","channel_type":"channel","ts":"1700000002.000002","deleted_ts":"1700000000.000100",
				"previous_message":{"type":"message","user":"U1","text":"hi!","ts":"1700000000.000100"}}`)),
			harness.Leased(ctx, ws, "message", "slack:team:"+team, callback(team, `{"type":"message","channel":"`+dm+
				`","channel_type":"im","user":"U1","text":"help me","ts":"1700000003.000003","client_msg_id":"8f1c"}`)),
			harness.Leased(ctx, ws, "message", "slack:team:"+team, callback(team, `{"type":"message","subtype":"message_changed",
				"channel":"`+dm+`","channel_type":"im","event_ts":"1700000004.000004",
				"message":{"type":"message","user":"U1","text":"help me please","ts":"1700000003.000003","client_msg_id":"8f1c",
				"edited":{"user":"U1","ts":"1700000004.000004"}}}`)),
			harness.Leased(ctx, ws, "message", "slack:team:"+team, callback(team, `{"type":"message","subtype":"message_deleted",
				"channel":"`+dm+`","channel_type":"im","deleted_ts":"1700000003.000003",
				"previous_message":{"type":"message","user":"U1","text":"help me please","ts":"1700000003.000003","client_msg_id":"8f1c"}}`)),
			harness.Leased(ctx, ws, "assistant_session_stopped", "slack:team:"+team, callback(team,
				`{"type":"assistant_session_stopped","assistant_thread":{"user_id":"U1","channel_id":"`+dm+`","thread_ts":"1700000003.000003"}}`)),
		}
		for _, e := range events {
			Expect(e.Attempt(ctx)).To(Succeed())
		}

		names := harness.Column(ctx, `SELECT step_name FROM provider_event_step ORDER BY event_id, step_name`)
		Expect(names).To(ConsistOf(
			"slack.message.insert",
			"slack.message.edit.text", "slack.message.edit.timestamp", "slack.message.insert",
			"slack.message.delete",
			"slack.mentor.turn.submit", "slack.mentor.turn.edit", "slack.mentor.turn.delete",
			"slack.mentor.session.stop",
		))
		tsLike := regexp.MustCompile(`[0-9]{9,}\.[0-9]{6}`)
		dmLike := regexp.MustCompile(`(^|[/.])(D|G)[A-Z0-9]{6,}`)
		for _, n := range names {
			Expect(n).NotTo(MatchRegexp(tsLike.String()))
			Expect(n).NotTo(MatchRegexp(dmLike.String()))
			Expect(n).NotTo(ContainSubstring(channel))
			Expect(n).NotTo(ContainSubstring("8f1c"))
		}
		// The writes happened: the identifiers live in the tables, keyed by them.
		Expect(harness.Column(ctx, `SELECT state || ' ' || request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"DELETED 8f1c"}))
		Expect(harness.Column(ctx, `SELECT ts || ' ' || deleted FROM slack_message WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"1700000000.000100 true"}))
	})

	It("does not store a message of a channel without consent, and stores it once the app joins", func(ctx SpecContext) {
		created := harness.Leased(ctx, ws, "channel_created", "slack:channel:"+channel, callback(team,
			`{"type":"channel_created","channel":{"id":"`+channel+`","name":"general","created":1700000000,"creator":"U1"}}`))
		Expect(created.Attempt(ctx)).To(Succeed())
		before := harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000100", "U1", "private"))
		Expect(before.Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT ts FROM slack_message WHERE workspace_id = $1`, ws)).To(BeEmpty())

		joined := harness.Leased(ctx, ws, "member_joined_channel", "slack:channel:"+channel, callback(team,
			`{"type":"member_joined_channel","channel":"`+channel+`","channel_type":"C","user":"UBOT","team":"`+team+`"}`))
		Expect(joined.Attempt(ctx)).To(Succeed())
		after := harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000001.000100", "U1", "shared"))
		Expect(after.Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1`, ws)).To(Equal([]string{"shared"}))
		Expect(harness.Column(ctx, `SELECT action || ' ' || consent_state FROM slack_channel_audit WHERE workspace_id = $1 ORDER BY id`, ws)).
			To(Equal([]string{"register PENDING", "grant GRANTED"}))
	})

	It("pauses mirroring while the channel is archived and resumes it after, with an audit of each change", func(ctx SpecContext) {
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		lifecycle := func(event, channelJSON string) support.Leased {
			return harness.Leased(ctx, ws, event, "slack:channel:"+channel, callback(team, `{"type":"`+event+`","channel":`+channelJSON+`}`))
		}
		Expect(lifecycle("channel_archive", `"`+channel+`"`).Attempt(ctx)).To(Succeed())
		Expect(harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000100", "U1", "while archived")).Attempt(ctx)).To(Succeed())
		Expect(lifecycle("channel_unarchive", `"`+channel+`"`).Attempt(ctx)).To(Succeed())
		Expect(lifecycle("channel_rename", `{"id":"`+channel+`","name":"town-square","created":1700000000}`).Attempt(ctx)).To(Succeed())
		Expect(harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000001.000100", "U1", "after")).Attempt(ctx)).To(Succeed())

		Expect(harness.Column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1`, ws)).To(Equal([]string{"after"}))
		Expect(harness.Column(ctx, `SELECT name || ' ' || consent_state FROM slack_channel WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"town-square GRANTED"}))
		Expect(harness.Column(ctx, `SELECT action || ' ' || consent_state FROM slack_channel_audit WHERE workspace_id = $1 ORDER BY id`, ws)).
			To(Equal([]string{"pause PAUSED", "resume GRANTED", "rename GRANTED"}))
	})

	It("revokes consent and erases the channel's messages when the channel is deleted", func(ctx SpecContext) {
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		Expect(harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000100", "U1", "hi")).Attempt(ctx)).To(Succeed())
		deleted := harness.Leased(ctx, ws, "channel_deleted", "slack:channel:"+channel, callback(team,
			`{"type":"channel_deleted","channel":"`+channel+`"}`))
		Expect(deleted.Attempt(ctx)).To(Succeed())
		Expect(deleted.Steps(ctx)).To(Equal([]string{"slack.channel.revoke"}))
		Expect(harness.Column(ctx, `SELECT ts FROM slack_message WHERE workspace_id = $1`, ws)).To(BeEmpty())
		Expect(harness.Column(ctx, `SELECT consent_state FROM slack_channel WHERE workspace_id = $1`, ws)).To(Equal([]string{"REVOKED"}))
	})

	It("sends a person who joins a mirrored channel the ephemeral notice, without a write step", func(ctx SpecContext) {
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		joined := harness.Leased(ctx, ws, "member_joined_channel", "slack:channel:"+channel, callback(team,
			`{"type":"member_joined_channel","channel":"`+channel+`","channel_type":"C","user":"U7","team":"`+team+`"}`))
		Expect(joined.Attempt(ctx)).To(Succeed())
		ephemerals, _ := notifier.sent()
		Expect(ephemerals).To(Equal([]string{team + " " + channel + " U7"}))
		Expect(joined.Steps(ctx)).To(BeEmpty())
	})
})
