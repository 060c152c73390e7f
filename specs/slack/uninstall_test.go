package slack_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Slack app uninstall", func() {
	var (
		ws, conn, otherConn int64
	)

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
		conn = slackConnection(ctx, ws, team, "ACTIVE")
		otherConn = slackConnection(ctx, ws, "T0OTHER01", "ACTIVE")
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		registeredChannel(ctx, ws, "T0OTHER01", "C0OTHER01", "elsewhere", "GRANTED")
		_, err := harness.Pool.Exec(ctx, `
			INSERT INTO slack_message (workspace_id, team_id, channel_id, ts, text, source_event_id)
			VALUES ($1, $2, $3, '1700000000.000100', 'ours', 0), ($1, 'T0OTHER01', 'C0OTHER01', '1700000000.000200', 'theirs', 0)`,
			ws, team, channel)
		Expect(err).NotTo(HaveOccurred())
		_, err = harness.Pool.Exec(ctx, `
			INSERT INTO slack_mentor_turn (workspace_id, team_id, request_id, channel_id, ts, text, state, source_event_id)
			VALUES ($1, $2, 'r1', $3, '1700000000.000300', 'question', 'SUBMITTED', 0)`, ws, team, dm)
		Expect(err).NotTo(HaveOccurred())
	})

	uninstalled := func() string { return callback(team, `{"type":"app_uninstalled"}`) }

	When("the uninstall transaction fails after the erasure", func() {
		It("neither erases the team's data nor uninstalls the connection, and the retry does both at once", func(ctx SpecContext) {
			d := harness.Leased(ctx, ws, "app_uninstalled", "slack:team:"+team, uninstalled())
			faulty.failNextSetState(errInjected)

			Expect(d.Attempt(ctx)).To(MatchError(errInjected))
			Expect(d.Steps(ctx)).To(BeEmpty())
			Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
			Expect(harness.Column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1 ORDER BY text`, ws)).To(Equal([]string{"ours", "theirs"}))
			Expect(harness.Column(ctx, `SELECT request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).To(Equal([]string{"r1"}))

			d.ReleaseForRetry(ctx)
			Expect(d.Attempt(ctx)).To(Succeed())
			Expect(d.Steps(ctx)).To(Equal([]string{"slack.connection.uninstall"}))
			Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
			Expect(harness.Column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1`, ws)).To(Equal([]string{"theirs"}))
			Expect(harness.Column(ctx, `SELECT request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).To(BeEmpty())
			Expect(harness.Column(ctx, `SELECT id FROM slack_channel WHERE workspace_id = $1`, ws)).To(Equal([]string{"C0OTHER01"}))
			Expect(connectionState(ctx, otherConn)).To(Equal("ACTIVE"), "another team's connection is not touched")
		})
	})

	It("treats revoked bot tokens as an uninstall and revoked user tokens as nothing", func(ctx SpecContext) {
		users := harness.Leased(ctx, ws, "tokens_revoked", "slack:team:"+team, callback(team,
			`{"type":"tokens_revoked","tokens":{"oauth":["U1"],"bot":[]}}`))
		Expect(users.Attempt(ctx)).To(Succeed())
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))

		bots := harness.Leased(ctx, ws, "tokens_revoked", "slack:team:"+team, callback(team,
			`{"type":"tokens_revoked","tokens":{"oauth":[],"bot":["UBOT"]}}`))
		Expect(bots.Attempt(ctx)).To(Succeed())
		Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
	})
})

var _ = Describe("Slack mentor direct messages", func() {
	var ws, conn int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
		conn = slackConnection(ctx, ws, team, "ACTIVE")
	})

	submission := func(clientMsgID, ts string) string {
		return callback(team, `{"type":"message","channel":"`+dm+`","channel_type":"im","user":"U1",
			"text":"how do I rebase?","ts":"`+ts+`","client_msg_id":"`+clientMsgID+`"}`)
	}

	It("keys a turn by its request id, so a second delivery of the submission adds no turn", func(ctx SpecContext) {
		Expect(harness.Leased(ctx, ws, "message", "slack:team:"+team, submission("req-1", "1700000000.000100")).Attempt(ctx)).To(Succeed())
		Expect(harness.Leased(ctx, ws, "message", "slack:team:"+team, submission("req-1", "1700000000.000100")).Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT request_id || ' ' || state FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"req-1 SUBMITTED"}))
	})

	It("refuses a submission when the team's connection is no longer active", func(ctx SpecContext) {
		_, err := harness.Pool.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, conn)
		Expect(err).NotTo(HaveOccurred())
		d := harness.Leased(ctx, ws, "message", "slack:team:"+team, submission("req-2", "1700000000.000200"))
		Expect(d.Attempt(ctx)).To(Succeed())
		Expect(d.Steps(ctx)).To(BeEmpty())
		Expect(harness.Column(ctx, `SELECT request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).To(BeEmpty())
	})

	It("publishes App Home from the database without a write step", func(ctx SpecContext) {
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		Expect(harness.Leased(ctx, ws, "message", "slack:team:"+team, submission("req-3", "1700000000.000300")).Attempt(ctx)).To(Succeed())
		home := harness.Leased(ctx, ws, "app_home_opened", "slack:team:"+team, callback(team,
			`{"type":"app_home_opened","user":"U1","channel":"`+dm+`","tab":"home"}`))
		Expect(home.Attempt(ctx)).To(Succeed())
		Expect(home.Steps(ctx)).To(BeEmpty())
		_, homes := notifier.sent()
		Expect(homes).To(HaveLen(1))
		Expect(string(homes[0])).To(And(ContainSubstring("Mirrored channels: 1"), ContainSubstring("open mentor turns: 1")))
	})
})
