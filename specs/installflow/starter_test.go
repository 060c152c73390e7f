package installflow_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// revokedPage is the sentence of the page a flow whose starting token stopped working ends on.
const revokedPage = "no longer works"

var _ = Describe("An install flow ends with the token that started it", func() {
	var ana account

	BeforeEach(func() {
		createWorkspace("acme")
		ana = createAccount("ana", "acme", "ADMIN")
	})

	// tokenIDs are the ids of the account's live tokens, oldest first.
	tokenIDs := func(ctx SpecContext, acc account) []string {
		GinkgoHelper()
		return support.Column(ctx, pool, `SELECT id::text FROM account_token WHERE account_id = $1 ORDER BY id`, acc.ID)
	}
	revoke := func(acc account, tokenID string) {
		GinkgoHelper()
		Expect(a.do(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d/tokens/%s", acc.ID, tokenID), adminToken).Status).
			To(Equal(http.StatusNoContent))
	}

	for _, flow := range []struct {
		name     string
		callback func(state string) string // the provider's redirect back
		asked    func() int                // how often the provider's code exchange was called
	}{
		{"github-app", func(state string) string { return githubQuery("1001", "code-ana", state) },
			func() int { fakeGH.mu.Lock(); defer fakeGH.mu.Unlock(); return len(fakeGH.exchanges) }},
		{"slack", func(state string) string { return slackQuery("slack-code", state) },
			func() int { fakeSl.mu.Lock(); defer fakeSl.mu.Unlock(); return len(fakeSl.exchanges) }},
	} {
		Describe("the "+flow.name+" flow", func() {
			// refused expects the callback (and its confirmation, if the page asks for one) to end
			// on the page that says why, with nothing created and the provider not asked.
			refused := func(ctx SpecContext, s server, state string) {
				GinkgoHelper()
				expectPage(br.callback(s, flow.callback(state)), http.StatusForbidden, revokedPage)
				Expect(connections(ctx)).To(BeZero())
				Expect(flow.asked()).To(BeZero(), "the provider is never asked")
				Expect(logs.all()).To(ContainSubstring("starter-token-gone"))
				expectCleanLogs(state)
			}

			It("completes while the token works, even after another token of the account is revoked", func(ctx SpecContext) {
				other := a.post(fmt.Sprintf("/api/admin/accounts/%d/tokens", ana.ID), adminToken, `{}`)
				Expect(other.Status).To(Equal(http.StatusCreated), other.Raw)
				state := installURL(a, flow.name, "acme", ana.Token).Query().Get("state")
				revoke(ana, tokenIDs(ctx, ana)[1])
				expectPage(br.callback(b, flow.callback(state)), http.StatusOK, "connection was created")
				Expect(connections(ctx)).To(Equal(1))
			})

			It("refuses at the callback, on a page that says why, once the token is revoked", func(ctx SpecContext) {
				state := installURL(a, flow.name, "acme", ana.Token).Query().Get("state")
				revoke(ana, tokenIDs(ctx, ana)[0])
				refused(ctx, b, state)
			})

			It("refuses the confirmation when the token is revoked after the confirmation page", func(ctx SpecContext) {
				state := installURL(a, flow.name, "acme", ana.Token).Query().Get("state")
				page := br.get(a, flow.callback(state))
				Expect(page.Status).To(Equal(http.StatusOK), page.Raw)
				action, form := confirmation(page)
				revoke(ana, tokenIDs(ctx, ana)[0])
				expectPage(br.post(b, action, form), http.StatusForbidden, revokedPage)
				Expect(connections(ctx)).To(BeZero())
				Expect(flow.asked()).To(BeZero())
			})

			It("refuses once the token was rotated (POST /api/me/tokens/rotate)", func(ctx SpecContext) {
				state := installURL(a, flow.name, "acme", ana.Token).Query().Get("state")
				rotated := a.post("/api/me/tokens/rotate", ana.Token, "")
				Expect(rotated.Status).To(Equal(http.StatusOK), rotated.Raw)
				refused(ctx, a, state)
			})

			It("refuses once the token has expired", func(ctx SpecContext) {
				issued := a.post(fmt.Sprintf("/api/admin/accounts/%d/tokens", ana.ID), adminToken, `{"expiresAt":"2999-01-01T00:00:00Z"}`)
				Expect(issued.Status).To(Equal(http.StatusCreated), issued.Raw)
				var token struct {
					ID    int64  `json:"id"`
					Token string `json:"token"`
				}
				Expect(json.Unmarshal([]byte(issued.Raw), &token)).To(Succeed())
				state := installURL(a, flow.name, "acme", token.Token).Query().Get("state")
				// Time passes past the token's expiry (database time decides, as for every request).
				_, err := pool.Exec(ctx, `UPDATE account_token SET expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`, token.ID)
				Expect(err).NotTo(HaveOccurred())
				refused(ctx, b, state)
			})

			It("refuses once the account was disabled", func(ctx SpecContext) {
				state := installURL(a, flow.name, "acme", ana.Token).Query().Get("state")
				Expect(a.do(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", ana.ID), adminToken).Status).To(Equal(http.StatusNoContent))
				refused(ctx, b, state)
			})

			It("refuses a flow the administrator token started on a server configured with another administrator token", func(ctx SpecContext) {
				state := installURL(a, flow.name, "acme", adminToken).Query().Get("state")
				changed := startWith(ctx, suiteDB, "another-instance-admin-token-0123456789")
				refused(ctx, changed, state)

				// The state was refused before it was used: the configured token finishes it.
				expectPage(br.callback(b, flow.callback(state)), http.StatusOK, "connection was created")
			})
		})
	}

	It("creates nothing when the token is revoked while the provider answers the code exchange", func(ctx SpecContext) {
		state := installURL(a, "slack", "acme", ana.Token).Query().Get("state")
		id := tokenIDs(ctx, ana)[0]
		fakeSl.mu.Lock()
		fakeSl.during = func() { revoke(ana, id) }
		fakeSl.mu.Unlock()
		expectPage(br.callback(a, slackQuery("slack-code", state)), http.StatusForbidden, revokedPage)
		Expect(connections(ctx)).To(BeZero())
		fakeSl.mu.Lock()
		defer fakeSl.mu.Unlock()
		Expect(fakeSl.exchanges).To(HaveLen(1), "the token still worked when the confirmation was posted")
	})
})
