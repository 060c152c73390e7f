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
		ws = newWorkspace(ctx, "acme")
		conn = slackConnection(ctx, ws, team, "ACTIVE")
		otherConn = slackConnection(ctx, ws, "T0OTHER01", "ACTIVE")
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		registeredChannel(ctx, ws, "T0OTHER01", "C0OTHER01", "elsewhere", "GRANTED")
		_, err := pool.Exec(ctx, `
			INSERT INTO slack_message (workspace_id, team_id, channel_id, ts, text, source_event_id)
			VALUES ($1, $2, $3, '1700000000.000100', 'ours', 0), ($1, 'T0OTHER01', 'C0OTHER01', '1700000000.000200', 'theirs', 0)`,
			ws, team, channel)
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `
			INSERT INTO slack_mentor_turn (workspace_id, team_id, request_id, channel_id, ts, text, state, source_event_id)
			VALUES ($1, $2, 'r1', $3, '1700000000.000300', 'question', 'SUBMITTED', 0)`, ws, team, dm)
		Expect(err).NotTo(HaveOccurred())
	})

	uninstalled := func() string { return callback(team, `{"type":"app_uninstalled"}`) }

	When("the uninstall transaction fails after the erasure", func() {
		It("neither erases the team's data nor uninstalls the connection, and the retry does both at once", func(ctx SpecContext) {
			d := leased(ctx, ws, "app_uninstalled", "slack:team:"+team, uninstalled())
			faulty.failNextSetState(errInjected)

			Expect(d.attempt(ctx)).To(MatchError(errInjected))
			Expect(d.steps(ctx)).To(BeEmpty())
			Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
			Expect(column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1 ORDER BY text`, ws)).To(Equal([]string{"ours", "theirs"}))
			Expect(column(ctx, `SELECT request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).To(Equal([]string{"r1"}))

			d.releaseForRetry(ctx)
			Expect(d.attempt(ctx)).To(Succeed())
			Expect(d.steps(ctx)).To(Equal([]string{"slack.connection.uninstall"}))
			Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
			Expect(column(ctx, `SELECT text FROM slack_message WHERE workspace_id = $1`, ws)).To(Equal([]string{"theirs"}))
			Expect(column(ctx, `SELECT request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).To(BeEmpty())
			Expect(column(ctx, `SELECT id FROM slack_channel WHERE workspace_id = $1`, ws)).To(Equal([]string{"C0OTHER01"}))
			Expect(connectionState(ctx, otherConn)).To(Equal("ACTIVE"), "another team's connection is not touched")
		})
	})

	It("treats revoked bot tokens as an uninstall and revoked user tokens as nothing", func(ctx SpecContext) {
		users := leased(ctx, ws, "tokens_revoked", "slack:team:"+team, callback(team,
			`{"type":"tokens_revoked","tokens":{"oauth":["U1"],"bot":[]}}`))
		Expect(users.attempt(ctx)).To(Succeed())
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))

		bots := leased(ctx, ws, "tokens_revoked", "slack:team:"+team, callback(team,
			`{"type":"tokens_revoked","tokens":{"oauth":[],"bot":["UBOT"]}}`))
		Expect(bots.attempt(ctx)).To(Succeed())
		Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
	})
})

var _ = Describe("Slack mentor direct messages", func() {
	var ws, conn int64

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, "acme")
		conn = slackConnection(ctx, ws, team, "ACTIVE")
	})

	submission := func(clientMsgID, ts string) string {
		return callback(team, `{"type":"message","channel":"`+dm+`","channel_type":"im","user":"U1",
			"text":"how do I rebase?","ts":"`+ts+`","client_msg_id":"`+clientMsgID+`"}`)
	}

	It("keys a turn by its request id, so a second delivery of the submission adds no turn", func(ctx SpecContext) {
		Expect(leased(ctx, ws, "message", "slack:team:"+team, submission("req-1", "1700000000.000100")).attempt(ctx)).To(Succeed())
		Expect(leased(ctx, ws, "message", "slack:team:"+team, submission("req-1", "1700000000.000100")).attempt(ctx)).To(Succeed())
		Expect(column(ctx, `SELECT request_id || ' ' || state FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"req-1 SUBMITTED"}))
	})

	It("refuses a submission when the team's connection is no longer active", func(ctx SpecContext) {
		_, err := pool.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, conn)
		Expect(err).NotTo(HaveOccurred())
		d := leased(ctx, ws, "message", "slack:team:"+team, submission("req-2", "1700000000.000200"))
		Expect(d.attempt(ctx)).To(Succeed())
		Expect(d.steps(ctx)).To(BeEmpty())
		Expect(column(ctx, `SELECT request_id FROM slack_mentor_turn WHERE workspace_id = $1`, ws)).To(BeEmpty())
	})

	It("publishes App Home from the database without a write step", func(ctx SpecContext) {
		registeredChannel(ctx, ws, team, channel, "general", "GRANTED")
		Expect(leased(ctx, ws, "message", "slack:team:"+team, submission("req-3", "1700000000.000300")).attempt(ctx)).To(Succeed())
		home := leased(ctx, ws, "app_home_opened", "slack:team:"+team, callback(team,
			`{"type":"app_home_opened","user":"U1","channel":"`+dm+`","tab":"home"}`))
		Expect(home.attempt(ctx)).To(Succeed())
		Expect(home.steps(ctx)).To(BeEmpty())
		_, homes := notifier.sent()
		Expect(homes).To(HaveLen(1))
		Expect(string(homes[0])).To(And(ContainSubstring("Mirrored channels: 1"), ContainSubstring("open mentor turns: 1")))
	})
})
