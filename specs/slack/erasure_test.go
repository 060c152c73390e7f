package slack_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The person, by the Slack member id the Events API names them with.
const slackPerson = "U024BE7LH"

var _ = Describe("Person erasure of the Slack mirror", func() {
	It("deletes everything the person wrote, channel messages and mentor DMs, and leaves the others' messages", func(ctx SpecContext) {
		ws := harness.NewWorkspace(ctx, "acme")
		slackConnection(ctx, ws, team, "ACTIVE")
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		for _, e := range []support.Leased{
			harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000100", slackPerson, "my own words")),
			harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000200", "U9OTHER", "someone else")),
			harness.Leased(ctx, ws, "message", "slack:team:"+team, callback(team, `{"type":"message","channel":"`+dm+
				`","channel_type":"im","user":"`+slackPerson+`","text":"help me","ts":"1700000003.000003","client_msg_id":"8f1c"}`)),
		} {
			_, err := harness.Pool.Exec(ctx, `UPDATE provider_event SET headers = '{"Hephaestus-Source-Server-Url":"https://slack.com"}' WHERE id = $1`, e.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Attempt(ctx)).To(Succeed())
		}
		everywhere := []string{"slack_", "provider_event"}
		Expect(support.SearchTraces(ctx, harness.Pool, everywhere, slackPerson)).To(ContainElements(
			support.Trace{Table: "slack_message", Column: "user_id", Value: slackPerson},
			support.Trace{Table: "slack_mentor_turn", Column: "user_id", Value: slackPerson}), "the search finds the person before")

		id, err := erasure.NewIdentity(slackPerson, "", "")
		Expect(err).NotTo(HaveOccurred())
		scope, err := erasure.NewScope(slack.Provider, "https://slack.com", []erasure.Identity{id})
		Expect(err).NotTo(HaveOccurred())
		receipts := support.EraseNow(ctx, support.ErasureStore(harness.Pool), scope)
		Expect(receipts).To(HaveLen(4))
		Expect(receipts[0].Store.String()).To(Equal("slack-mirror"))
		Expect(receipts[0].Deleted).To(Equal(int64(2)))
		Expect(receipts[1].Store.String()).To(Equal("change-feed"))
		Expect(receipts[2].Deleted).To(Equal(int64(2)), "the two deliveries of the person")

		Expect(support.SearchTraces(ctx, harness.Pool, everywhere, slackPerson, "my own words", "help me")).To(BeEmpty())
		Expect(harness.Column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1`, ws)).To(Equal([]string{"someone else"}))

		member := harness.NewAccount(ctx, "reader", "acme", "MEMBER")
		r := harness.Get("/api/workspaces/acme/slack/channels/"+channel+"/messages", member)
		Expect(r.Status).To(Equal(200))
		raw, err := json.Marshal(r.JSON)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("someone else"))
		Expect(strings.ToLower(string(raw))).NotTo(ContainSubstring(strings.ToLower(slackPerson)))
	})

	It("keeps nothing of the person in the tombstone of a message deleted before it was mirrored, and erases what a page stored", func(ctx SpecContext) {
		ws := harness.NewWorkspace(ctx, "acme")
		slackConnection(ctx, ws, team, "ACTIVE")
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		// The person's message 1 is deleted before anything mirrored it; message 2 was mirrored
		// (as a backfill page stores it) and is deleted later.
		stored := harness.Leased(ctx, ws, "message", "slack:channel:"+channel, channelMessage("1700000000.000200", slackPerson, "kept words"))
		Expect(stored.Attempt(ctx)).To(Succeed())
		for _, ts := range []string{"1700000000.000100", "1700000000.000200"} {
			e := harness.Leased(ctx, ws, "message", "slack:channel:"+channel, callback(team, `{"type":"message","subtype":"message_deleted",
				"channel":"`+channel+`","channel_type":"channel","ts":"1700000009.000000","deleted_ts":"`+ts+`",
				"previous_message":{"type":"message","user":"`+slackPerson+`","text":"gone words","ts":"`+ts+`"}}`))
			Expect(e.Attempt(ctx)).To(Succeed())
		}
		Expect(harness.Column(ctx, `SELECT ts || ' ' || deleted || ' ' || coalesce(user_id, '-') || ' ' || text FROM slack_message
			WHERE workspace_id = $1 ORDER BY ts`, ws)).To(Equal([]string{"1700000000.000100 true - ", "1700000000.000200 true - "}))
		Expect(support.SearchTraces(ctx, harness.Pool, []string{"slack_"}, slackPerson, "gone words", "kept words")).To(BeEmpty())

		// A message of the person that a page stores is erased with the person; the tombstones,
		// which name nobody, stay and keep the deleted messages from coming back.
		Expect(harness.Leased(ctx, ws, "message", "slack:channel:"+channel,
			channelMessage("1700000000.000300", slackPerson, "later words")).Attempt(ctx)).To(Succeed())
		id, err := erasure.NewIdentity(slackPerson, "", "")
		Expect(err).NotTo(HaveOccurred())
		scope, err := erasure.NewScope(slack.Provider, "https://slack.com", []erasure.Identity{id})
		Expect(err).NotTo(HaveOccurred())
		receipts := support.EraseNow(ctx, support.ErasureStore(harness.Pool), scope)
		Expect(receipts[0].Store.String()).To(Equal("slack-mirror"))
		Expect(receipts[0].Deleted).To(Equal(int64(1)))
		Expect(support.SearchTraces(ctx, harness.Pool, []string{"slack_"}, slackPerson, "later words")).To(BeEmpty())
		Expect(harness.Column(ctx, `SELECT ts FROM slack_message WHERE workspace_id = $1 ORDER BY ts`, ws)).
			To(Equal([]string{"1700000000.000100", "1700000000.000200"}))
	})

	It("refuses a Slack source this instance does not have", func(ctx SpecContext) {
		id, err := erasure.NewIdentity(slackPerson, "", "")
		Expect(err).NotTo(HaveOccurred())
		scope, err := erasure.NewScope(slack.Provider, "https://slack.example.com", []erasure.Identity{id})
		Expect(err).NotTo(HaveOccurred())
		_, err = support.ErasureStore(harness.Pool).Start(ctx, scope, 0)
		Expect(err).To(MatchError(erasure.ErrUnknownSource))
	})
})
