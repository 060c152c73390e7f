package tenancy_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	_ "github.com/jackc/pgx/v5/stdlib"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// verificationToken is the Slack app's verification token as Slack sends it in every envelope.
const verificationToken = "slack-app-verification-token-XXYYZZ"

var _ = Describe("Stored payloads", func() {
	When("a signed Slack event carries the app's verification token", func() {
		It("stores the event without the token, and a member's delivery detail shows none", func(ctx SpecContext) {
			_, _ = workspace("acme")
			memberToken := member("acme", "ana", "MEMBER")
			conn := createConnection("acme", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com",
				"config": map[string]any{"teamId": teamA, "appId": "A1"}})
			Expect(conn.Status).To(Equal(http.StatusCreated), conn.Raw)
			Expect(subscribe("acme", adminToken, conn.ID("id"), map[string]any{"type": "channel", "id": "C0GENERAL"}).Status).To(Equal(http.StatusOK))

			body := fmt.Sprintf(`{"token":%q,"team_id":%q,"api_app_id":"A1","type":"event_callback","event_id":"Ev1",
				"event_time":1700000000,"event":{"type":"message","channel":"C0GENERAL","user":"U1","text":"the token is %s",
				"ts":"1700000000.000100"}}`, verificationToken, teamA, "not here")
			r := deliverSlackBody([]byte(body))
			Expect(r.Status).To(Equal(http.StatusAccepted), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("stored", 1.0))

			var id int64
			var stored string
			Expect(pool.QueryRow(ctx, `SELECT id, payload::text FROM provider_event WHERE provider = 'SLACK'`).Scan(&id, &stored)).To(Succeed())
			Expect(stored).NotTo(ContainSubstring(verificationToken))
			Expect(stored).To(MatchJSON(fmt.Sprintf(`{"team_id":%q,"api_app_id":"A1","type":"event_callback","event_id":"Ev1",
				"event_time":1700000000,"event":{"type":"message","channel":"C0GENERAL","user":"U1","text":"the token is not here",
				"ts":"1700000000.000100"}}`, teamA)), "every other member as Slack sent it")

			detail := call(http.MethodGet, fmt.Sprintf("/api/workspaces/acme/integration/deliveries/%d", id), memberToken, nil)
			Expect(detail.Status).To(Equal(http.StatusOK), detail.Raw)
			Expect(detail.Raw).NotTo(ContainSubstring(verificationToken))
			Expect(detail.JSON["payload"]).NotTo(HaveKey("token"))
			Expect(detail.JSON["payload"]).To(HaveKeyWithValue("team_id", teamA))
			headers, err := json.Marshal(detail.JSON["headers"])
			Expect(err).NotTo(HaveOccurred())
			Expect(string(headers)).NotTo(ContainSubstring("Signature"), "nor the request's signature")
		})
	})
})

var _ = Describe("Scrubbing Slack payloads stored before (migration 00145)", func() {
	It("removes the verification token from every stored Slack row, and nothing else", func(ctx SpecContext) {
		p := support.MigrateFrom(ctx, 144, `
			INSERT INTO workspace (slug, name) VALUES ('acme', 'acme');
			INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, state, ended_at)
			VALUES (1, 'SLACK', 'message', 'Ev1', 'slack:channel:C1', 's', '{"token":"XXYYZZ","team_id":"T1","event":{"type":"message","token":"kept"}}', 'DONE', now()),
			       (1, 'SLACK', 'message', 'Ev2', 'slack:channel:C1', 's', '{"team_id":"T1","event":{"type":"message"}}', 'QUEUED', NULL),
			       (1, 'SLACK', 'message', 'Ev3', 'slack:channel:C2', 's', '{"token":"XXYYZZ","team_id":"T1"}', 'DEAD', now()),
			       (1, 'GITHUB', 'issues', 'g1', 'github:repo:1', 's', '{"token":"not-a-slack-token","action":"opened"}', 'DONE', now())`).Pool

		Expect(support.Column(ctx, p, `SELECT delivery_key || ' ' || state || ' ' || payload::text FROM provider_event ORDER BY id`)).To(Equal([]string{
			`Ev1 DONE {"event": {"type": "message", "token": "kept"}, "team_id": "T1"}`,
			`Ev2 QUEUED {"event": {"type": "message"}, "team_id": "T1"}`,
			`Ev3 DEAD {"team_id": "T1"}`,
			`g1 DONE {"token": "not-a-slack-token", "action": "opened"}`,
		}))
	})
})
