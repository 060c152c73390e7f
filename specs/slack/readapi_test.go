package slack_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Slack read API", func() {
	var member string

	BeforeEach(func(ctx SpecContext) {
		acme := harness.NewWorkspace(ctx, "acme")
		other := harness.NewWorkspace(ctx, "other")
		member = harness.NewAccount(ctx, "mia", "acme", "MEMBER")
		registeredChannel(ctx, acme, team, "C0AAA0001", "alpha", "GRANTED")
		registeredChannel(ctx, acme, team, "C0BBB0001", "beta", "PAUSED")
		registeredChannel(ctx, acme, team, "C0CCC0001", "gamma", "PENDING")
		registeredChannel(ctx, other, "T0OTHER01", "C0ZZZ0001", "secret", "GRANTED")
		_, err := harness.Pool.Exec(ctx, `
			INSERT INTO slack_message (workspace_id, team_id, channel_id, ts, user_id, text, deleted, edited_ts, source_event_id, posted_at)
			VALUES ($1, $3, 'C0AAA0001', '1700000000.000100', 'U1', 'first', false, NULL, 0, NULL),
			       ($1, $3, 'C0AAA0001', '1700000009.000100', 'U1', 'second', false, '1700000010.000000', 0, NULL),
			       ($1, $3, 'C0AAA0001', '1700000100.000100', 'U1', '', true, NULL, 0, NULL),
			       ($1, $3, 'C0AAA0001', '1700000020.000100', 'U2', 'third', false, NULL, 0, '2023-11-14T22:13:40Z'),
			       ($2, 'T0OTHER01', 'C0ZZZ0001', '1700000000.000100', 'U9', 'hidden', false, NULL, 0, NULL)`,
			acme, other, team)
		Expect(err).NotTo(HaveOccurred())
	})

	It("pages the workspace's channels with their consent state", func() {
		r := harness.Get("/api/workspaces/acme/slack/channels?size=2", member)
		Expect(r.Status).To(Equal(200))
		Expect(r.JSON).To(HaveKeyWithValue("total", BeEquivalentTo(3)))
		items := r.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(And(HaveKeyWithValue("id", "C0AAA0001"), HaveKeyWithValue("consent", "GRANTED")))
		next := harness.Get("/api/workspaces/acme/slack/channels?page=1&size=2", member)
		Expect(next.JSON["items"]).To(ConsistOf(HaveKeyWithValue("name", "gamma")))
	})

	It("pages a channel's messages newest first, without deleted ones", func() {
		r := harness.Get("/api/workspaces/acme/slack/channels/C0AAA0001/messages?size=2", member)
		Expect(r.Status).To(Equal(200))
		Expect(r.JSON).To(HaveKeyWithValue("total", BeEquivalentTo(3)))
		items := r.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(And(HaveKeyWithValue("text", "third"), HaveKeyWithValue("postedAt", "2023-11-14T22:13:40Z")))
		Expect(items[1]).To(And(HaveKeyWithValue("text", "second"), HaveKeyWithValue("editedTs", "1700000010.000000")))
	})

	It("answers 404 for another workspace's channel", func() {
		r := harness.Get("/api/workspaces/acme/slack/channels/C0ZZZ0001/messages", member)
		Expect(r.Status).To(Equal(404))
		Expect(r.JSON).To(Equal(map[string]any{"error": "not-found"}))
	})
})
