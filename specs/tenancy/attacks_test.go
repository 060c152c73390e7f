package tenancy_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Two workspaces on one server: A ("acme") owns installation 1001, which covers its private
// repository 500, and subscribes to it; B ("globex") is the attacker, with an ADMIN of its own.
// Every cross-tenant attack we know of is tried from B, and A's events must reach no row of B.
var _ = Describe("A workspace receives only what the provider vouches it may see", func() {
	var (
		wsA, wsB   int64
		adminB     string
		appA       int64
		deliveries int
	)
	deliver := func() response {
		GinkgoHelper()
		deliveries++
		return deliverIssue(installationA, repoOfA, "delivery-"+itoa(int64(deliveries)))
	}

	BeforeEach(func() {
		wsA, _ = workspace("acme")
		wsB, adminB = workspace("globex")
		appA = appConnection("acme", installationA)
		Expect(subscribe("acme", adminToken, appA, repository(repoOfA)).Status).To(Equal(http.StatusOK))
	})

	When("B creates a GITHUB_PAT connection without a token", func() {
		It("refuses it with 400 secret-required and stores no connection", func(ctx SpecContext) {
			r := patConnection("globex", adminB, "")
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "secret-required"}))
			Expect(count(ctx, `SELECT count(*) FROM connection WHERE workspace_id = $1`, wsB)).To(BeZero())

			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsA)).To(Equal(1))
			Expect(storedFor(ctx, wsB)).To(BeZero())
		})
	})

	When("B's PAT cannot read A's repository", func() {
		It("refuses the subscription with 403 resource-not-accessible and B receives nothing", func(ctx SpecContext) {
			fakeGitHub.grant("ghp_mallory", 700) // B's token reads another repository only
			pat := patConnection("globex", adminB, "ghp_mallory")
			Expect(pat.Status).To(Equal(http.StatusCreated), pat.Raw)

			r := subscribe("globex", adminB, pat.ID("id"), repository(repoOfA))
			Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "resource-not-accessible"}))
			Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, wsB)).To(BeZero())
			Expect(fakeGitHub.recorded()).To(ConsistOf(apiCall{Path: "/repositories/500", Token: "ghp_mallory"}))

			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsB)).To(BeZero())
		})
	})

	When("B's PAT can read the repository", func() {
		It("subscribes it VERIFIED and B receives the repository's deliveries through A's installation", func(ctx SpecContext) {
			fakeGitHub.grant("ghp_collaborator", repoOfA)
			pat := patConnection("globex", adminB, "ghp_collaborator")
			Expect(pat.Status).To(Equal(http.StatusCreated), pat.Raw)
			Expect(pat.JSON).To(HaveKeyWithValue("access", "VERIFIED"))

			r := subscribe("globex", adminB, pat.ID("id"), repository(repoOfA))
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			items := r.JSON["resources"].([]any)
			Expect(items).To(HaveLen(1))
			Expect(items[0]).To(HaveKeyWithValue("access", "VERIFIED"))
			Expect(items[0]).To(HaveKey("accessCheckedAt"))

			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 2.0))
			Expect(storedFor(ctx, wsA)).To(Equal(1))
			Expect(storedFor(ctx, wsB)).To(Equal(1))
		})

		It("receives only event types any reader of the repository sees: A receives a member grant, B does not; both receive issues", func(ctx SpecContext) {
			fakeGitHub.grant("ghp_collaborator", repoOfA)
			pat := patConnection("globex", adminB, "ghp_collaborator")
			Expect(pat.Status).To(Equal(http.StatusCreated), pat.Raw)
			Expect(subscribe("globex", adminB, pat.ID("id"), repository(repoOfA)).Status).To(Equal(http.StatusOK))

			member := func(key string) response {
				GinkgoHelper()
				return deliverGitHub("member", key, map[string]any{
					"action":       "added",
					"installation": map[string]any{"id": installationA},
					"repository":   map[string]any{"id": repoOfA, "name": "secret", "full_name": "acme/secret", "private": true},
					"member":       map[string]any{"id": 31, "login": "new-admin"},
					"changes":      map[string]any{"permission": map[string]any{"to": "admin"}},
					"sender":       map[string]any{"id": 9, "login": "ana"},
				})
			}
			r := member("member-1")
			Expect(r.Status).To(Equal(http.StatusAccepted), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND event_type = 'member'`, wsA)).To(Equal(1))
			Expect(storedFor(ctx, wsB)).To(BeZero())
			// Again on the routes the receiver remembered.
			Expect(member("member-2").JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsB)).To(BeZero())

			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 2.0))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND event_type = 'issues'`, wsA)).To(Equal(1))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND event_type = 'issues'`, wsB)).To(Equal(1))
			Expect(storedFor(ctx, wsB)).To(Equal(1))
		})

		It("still needs A's installation connection to be ACTIVE", func(ctx SpecContext) {
			fakeGitHub.grant("ghp_collaborator", repoOfA)
			pat := patConnection("globex", adminB, "ghp_collaborator")
			Expect(subscribe("globex", adminB, pat.ID("id"), repository(repoOfA)).Status).To(Equal(http.StatusOK))
			Expect(call(http.MethodPost, connectionPath("acme", appA, "suspend"), adminToken, nil).Status).To(Equal(http.StatusOK))

			Expect(deliver().JSON).To(HaveKeyWithValue("reason", "source-inactive"))
			Expect(storedFor(ctx, wsB)).To(BeZero())
		})
	})

	When("B's App connection of another installation subscribes to A's repository", func() {
		It("never receives A's installation's deliveries", func(ctx SpecContext) {
			appB := appConnection("globex", 2002)
			Expect(subscribe("globex", adminB, appB, repository(repoOfA), map[string]any{"type": "organization", "id": "1"}).Status).
				To(Equal(http.StatusOK))

			r := deliver()
			Expect(r.Status).To(Equal(http.StatusAccepted), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsA)).To(Equal(1))
			Expect(storedFor(ctx, wsB)).To(BeZero())

			// And again on the routes the receiver remembered.
			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsB)).To(BeZero())
		})

		It("receives its own installation's deliveries of that repository", func(ctx SpecContext) {
			appB := appConnection("globex", 2002)
			Expect(subscribe("globex", adminB, appB, repository(repoOfA)).Status).To(Equal(http.StatusOK))
			Expect(deliverIssue(2002, repoOfA, "own").JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsB)).To(Equal(1))
			Expect(storedFor(ctx, wsA)).To(BeZero())
		})
	})

	When("B names A's installation or Slack team in a connection of its own", func() {
		It("refuses a workspace ADMIN with 403 install-flow-required and stores nothing", func(ctx SpecContext) {
			for _, body := range []map[string]any{
				{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com", "config": map[string]any{"installationId": 3003}},
				{"kind": "SLACK", "sourceServerUrl": "https://slack.com", "config": map[string]any{"teamId": teamA, "appId": "A1"}},
			} {
				r := createConnection("globex", adminB, body)
				Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
				Expect(r.JSON).To(Equal(map[string]any{"error": "install-flow-required"}))
			}
			Expect(count(ctx, `SELECT count(*) FROM connection WHERE workspace_id = $1`, wsB)).To(BeZero())
		})

		It("lets the instance administrator create one, once per live installation and team (409)", func(ctx SpecContext) {
			r := createConnection("globex", adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com",
				"config": map[string]any{"installationId": installationA}})
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "installation-already-connected"}))

			slackBody := map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com", "config": map[string]any{"teamId": teamA, "appId": "A1"}}
			Expect(createConnection("acme", adminToken, slackBody).Status).To(Equal(http.StatusCreated))
			r = createConnection("globex", adminToken, slackBody)
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "team-already-connected"}))
			Expect(count(ctx, `SELECT count(*) FROM connection WHERE workspace_id = $1`, wsB)).To(BeZero())
		})

		It("keeps the database from holding two live connections of one Slack team", func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url, source_key)
				VALUES ($1, 'SLACK', 'SLACK', 'https://slack.com', $3), ($2, 'SLACK', 'SLACK', 'https://slack.com', $3)`, wsA, wsB, teamA)
			Expect(err).To(MatchError(ContainSubstring("uq_connection_slack_team")))
		})

		It("gives B none of A's Slack team events", func(ctx SpecContext) {
			slA := createConnection("acme", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com",
				"config": map[string]any{"teamId": teamA, "appId": "A1"}})
			Expect(slA.Status).To(Equal(http.StatusCreated), slA.Raw)
			Expect(subscribe("acme", adminToken, slA.ID("id"), map[string]any{"type": "channel", "id": "C0PRIVATE"}).Status).To(Equal(http.StatusOK))
			slB := createConnection("globex", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com",
				"config": map[string]any{"teamId": "T0B", "appId": "A1"}})
			Expect(slB.Status).To(Equal(http.StatusCreated), slB.Raw)
			Expect(subscribe("globex", adminB, slB.ID("id"), map[string]any{"type": "channel", "id": "C0PRIVATE"}).Status).To(Equal(http.StatusOK))

			Expect(deliverSlack(teamA, "C0PRIVATE", "Ev1").JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(deliverSlack(teamA, "D0DIRECT", "Ev2").JSON).To(HaveKeyWithValue("stored", 1.0)) // team-wide
			Expect(storedFor(ctx, wsA)).To(Equal(2))
			Expect(storedFor(ctx, wsB)).To(BeZero())
		})
	})
})
