package accounts_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// probe answers 200 to an ADMIN of acme and 401 to a token that does not authenticate.
const probe = "/api/workspaces/acme/connections"

func tokensPath(accountID int64) string {
	return fmt.Sprintf("/api/admin/accounts/%d/tokens", accountID)
}

func memberPath(slug string, accountID int64) string {
	return fmt.Sprintf("/api/workspaces/%s/members/%d", slug, accountID)
}

// issue gives the account another token through server s.
func issue(s server, accountID int64, body any) response {
	GinkgoHelper()
	return s.Call(http.MethodPost, tokensPath(accountID), adminToken, body)
}

// onBothServers expects status for a GET of probe with token on each server, from several
// requests at once.
func onBothServers(token string, status int) {
	GinkgoHelper()
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			defer GinkgoRecover()
			got[i] = s.status(probe, token)
		})
	}
	wg.Wait()
	for i, st := range got {
		Expect(st).To(Equal(status), "request %d", i)
	}
}

var _ = Describe("Account tokens", func() {
	var ana account

	BeforeEach(func() {
		createWorkspace("acme")
		ana = createAccount("ana", false, "acme", "ADMIN")
	})

	It("issues further tokens, shown once, while the earlier ones stay valid", func(ctx SpecContext) {
		r := issue(a, ana.ID, map[string]any{})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		Expect(r.Header.Get("Cache-Control")).To(Equal("no-store"))
		second, _ := r.JSON["token"].(string)
		Expect(second).To(MatchRegexp(`^hx_[A-Za-z0-9_-]{43}$`))
		Expect(r.JSON).To(HaveKeyWithValue("expiresAt", BeNil()))

		onBothServers(ana.Token, http.StatusOK)
		onBothServers(second, http.StatusOK)

		sum := sha256.Sum256([]byte(second))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM account_token WHERE token_hash = $1`, sum[:])).To(Equal(1),
			"only the hash is stored")
	})

	It("lists id, createdAt, lastUsedAt and expiresAt of each token, never a token or its hash", func() {
		expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		r := issue(a, ana.ID, map[string]any{"expiresAt": expires.Format(time.RFC3339)})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		second := r.JSON["token"].(string)
		Expect(a.status(probe, ana.Token)).To(Equal(http.StatusOK))

		l := b.Call(http.MethodGet, tokensPath(ana.ID), adminToken, nil)
		Expect(l.Status).To(Equal(http.StatusOK), l.Raw)
		Expect(l.Raw).NotTo(ContainSubstring(ana.Token))
		Expect(l.Raw).NotTo(ContainSubstring(second))
		items := l.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		first, other := items[0].(map[string]any), items[1].(map[string]any)
		Expect(first).To(HaveLen(4))
		Expect(first).To(HaveKey("id"))
		Expect(first).To(HaveKey("createdAt"))
		Expect(first["lastUsedAt"]).To(BeAssignableToTypeOf(""), "the first token was used")
		Expect(first).To(HaveKeyWithValue("expiresAt", BeNil()))
		Expect(other).To(HaveKeyWithValue("lastUsedAt", BeNil()))
		Expect(other).To(HaveKeyWithValue("expiresAt", expires.Format(time.RFC3339)))
		Expect(other).To(HaveKeyWithValue("id", BeNumerically("==", r.ID("id"))))
	})

	It("pages the list as every list: ?page=&size=, in id order, with the total", func() {
		var issued []int64
		for range 4 {
			r := issue(a, ana.ID, map[string]any{})
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			issued = append(issued, r.ID("id"))
		}
		var seen []int64
		for page := range 3 {
			l := b.Call(http.MethodGet, fmt.Sprintf("%s?page=%d&size=2", tokensPath(ana.ID), page), adminToken, nil)
			Expect(l.Status).To(Equal(http.StatusOK), l.Raw)
			Expect(l.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 5)))
			Expect(l.JSON).To(HaveKeyWithValue("page", BeNumerically("==", page)))
			Expect(l.JSON).To(HaveKeyWithValue("size", BeNumerically("==", 2)))
			for _, it := range l.JSON["items"].([]any) {
				seen = append(seen, int64(it.(map[string]any)["id"].(float64)))
			}
		}
		Expect(seen).To(HaveLen(5))
		Expect(seen[1:]).To(Equal(issued))
		Expect(b.Call(http.MethodGet, tokensPath(ana.ID)+"?size=201", adminToken, nil).Status).To(Equal(http.StatusBadRequest))
	})

	It("refuses an expiry that is not in the future or not RFC 3339", func() {
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		r := issue(a, ana.ID, map[string]any{"expiresAt": past})
		Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("error", "invalid-expires-at"))
		Expect(issue(a, ana.ID, map[string]any{"expiresAt": "tomorrow"}).JSON).To(HaveKeyWithValue("error", "invalid-expires-at"))
		Expect(issue(a, ana.ID, map[string]any{"ttl": 5}).Status).To(Equal(http.StatusBadRequest))
	})

	It("answers 401 on every server as soon as a token expires", func(ctx SpecContext) {
		r := issue(a, ana.ID, map[string]any{"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		expiring := r.JSON["token"].(string)
		onBothServers(expiring, http.StatusOK)

		_, err := pool.Exec(ctx, `UPDATE account_token SET expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`, r.ID("id"))
		Expect(err).NotTo(HaveOccurred())
		onBothServers(expiring, http.StatusUnauthorized)
		onBothServers(ana.Token, http.StatusOK)
	})

	Describe("revoking", func() {
		It("makes the token fail at once on the other server too, and leaves the account's other tokens alone", func() {
			r := issue(a, ana.ID, nil)
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			second := r.JSON["token"].(string)
			onBothServers(second, http.StatusOK) // both servers have just accepted it

			Expect(a.Call(http.MethodDelete, fmt.Sprintf("%s/%d", tokensPath(ana.ID), r.ID("id")), adminToken, nil).Status).
				To(Equal(http.StatusNoContent))
			// No waiting: the very next request on server B already fails.
			Expect(b.status(probe, second)).To(Equal(http.StatusUnauthorized))
			onBothServers(second, http.StatusUnauthorized)
			onBothServers(ana.Token, http.StatusOK)

			l := b.Call(http.MethodGet, tokensPath(ana.ID), adminToken, nil)
			Expect(l.JSON["items"]).To(HaveLen(1))
		})

		It("revokes only a token of the account named in the path", func() {
			bob := createAccount("bob", false, "acme", "ADMIN")
			l := a.Call(http.MethodGet, tokensPath(bob.ID), adminToken, nil)
			bobToken := l.JSON["items"].([]any)[0].(map[string]any)["id"].(float64)
			r := a.Call(http.MethodDelete, fmt.Sprintf("%s/%d", tokensPath(ana.ID), int64(bobToken)), adminToken, nil)
			Expect(r.Status).To(Equal(http.StatusNotFound), r.Raw)
			Expect(b.status(probe, bob.Token)).To(Equal(http.StatusOK))
		})
	})

	Describe("rotating one's own token", func() {
		It("replaces the caller's token: the new one works, the old one fails on every server, other tokens stay", func() {
			other := issue(a, ana.ID, nil).JSON["token"].(string)

			r := a.Call(http.MethodPost, "/api/me/tokens/rotate", ana.Token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.Header.Get("Cache-Control")).To(Equal("no-store"))
			rotated := r.JSON["token"].(string)
			Expect(rotated).NotTo(Equal(ana.Token))

			Expect(b.status(probe, ana.Token)).To(Equal(http.StatusUnauthorized))
			onBothServers(ana.Token, http.StatusUnauthorized)
			onBothServers(rotated, http.StatusOK)
			onBothServers(other, http.StatusOK)
			Expect(b.Call(http.MethodPost, "/api/me/tokens/rotate", ana.Token, nil).Status).To(Equal(http.StatusUnauthorized))
		})

		It("keeps the replaced token's expiry", func(ctx SpecContext) {
			expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
			expiring := issue(a, ana.ID, map[string]any{"expiresAt": expires}).JSON["token"].(string)
			r := b.Call(http.MethodPost, "/api/me/tokens/rotate", expiring, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("expiresAt", expires))
		})

		It("lets exactly one of two concurrent rotations of the same token win", func() {
			results := make([]response, 2)
			var wg sync.WaitGroup
			for i, s := range []server{a, b} {
				wg.Go(func() {
					defer GinkgoRecover()
					results[i] = s.Call(http.MethodPost, "/api/me/tokens/rotate", ana.Token, nil)
				})
			}
			wg.Wait()
			statuses := []int{results[0].Status, results[1].Status}
			Expect(statuses).To(ConsistOf(http.StatusOK, http.StatusUnauthorized))
			l := a.Call(http.MethodGet, tokensPath(ana.ID), adminToken, nil)
			Expect(l.JSON["items"]).To(HaveLen(1), "one token replaced the old one, not two")
		})

		It("refuses the configured administrator token, which is no account's", func() {
			r := a.Call(http.MethodPost, "/api/me/tokens/rotate", adminToken, nil)
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("error", "admin-token-not-rotatable"))
			Expect(a.Call(http.MethodPost, "/api/me/tokens/rotate", "", nil).Status).To(Equal(http.StatusUnauthorized))
		})
	})

	Describe("the last-used time", func() {
		It("is written on first use and then at most once a minute, however many servers and requests use the token", func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `
				CREATE TABLE spec_token_write (token_id bigint);
				CREATE FUNCTION spec_count_token_write() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN INSERT INTO spec_token_write VALUES (NEW.id); RETURN NULL; END $$;
				CREATE TRIGGER spec_count_token_write AFTER UPDATE ON account_token
				FOR EACH ROW EXECUTE FUNCTION spec_count_token_write();`)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_, err := pool.Exec(ctx, `DROP TABLE spec_token_write; DROP TRIGGER spec_count_token_write ON account_token;
					DROP FUNCTION spec_count_token_write();`)
				Expect(err).NotTo(HaveOccurred())
			})

			for range 4 {
				onBothServers(ana.Token, http.StatusOK)
			}
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM spec_token_write`)).To(Equal(1))
			first := support.Scalar[time.Time](ctx, pool, `SELECT last_used_at FROM account_token WHERE account_id = $1`, ana.ID)

			// A minute later (moved in the database), the next use writes again, once.
			_, err = pool.Exec(ctx, `UPDATE account_token SET last_used_at = last_used_at - interval '61 seconds' WHERE account_id = $1`, ana.ID)
			Expect(err).NotTo(HaveOccurred())
			for range 4 {
				onBothServers(ana.Token, http.StatusOK)
			}
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM spec_token_write`)).To(Equal(1+1+1), "the spec's own move, then one write")
			Expect(support.Scalar[time.Time](ctx, pool, `SELECT last_used_at FROM account_token WHERE account_id = $1`, ana.ID)).
				To(BeTemporally(">=", first))
		})
	})

	Describe("disabling an account", func() {
		It("stops every token of it on every server, refuses new ones, and keeps its id and login", func(ctx SpecContext) {
			second := issue(a, ana.ID, nil).JSON["token"].(string)
			onBothServers(second, http.StatusOK)

			Expect(a.Call(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", ana.ID), adminToken, nil).Status).
				To(Equal(http.StatusNoContent))
			Expect(b.status(probe, ana.Token)).To(Equal(http.StatusUnauthorized))
			onBothServers(ana.Token, http.StatusUnauthorized)
			onBothServers(second, http.StatusUnauthorized)

			r := issue(b, ana.ID, nil)
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("error", "account-disabled"))
			Expect(support.Scalar[string](ctx, pool, `SELECT login FROM account WHERE id = $1 AND disabled_at IS NOT NULL`, ana.ID)).To(Equal("ana"))
			Expect(a.Call(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", ana.ID), adminToken, nil).Status).
				To(Equal(http.StatusNoContent), "disabling twice changes nothing")
		})

		It("answers 404 for an unknown account", func() {
			Expect(a.Call(http.MethodDelete, "/api/admin/accounts/999999", adminToken, nil).Status).To(Equal(http.StatusNotFound))
			Expect(a.Call(http.MethodGet, tokensPath(999999), adminToken, nil).Status).To(Equal(http.StatusNotFound))
			Expect(issue(a, 999999, nil).Status).To(Equal(http.StatusNotFound))
			Expect(a.Call(http.MethodDelete, tokensPath(ana.ID)+"/999999", adminToken, nil).Status).To(Equal(http.StatusNotFound))
		})
	})

	Describe("who may manage accounts and tokens", func() {
		It("is the instance administrator (token or account) only: 401 without a token, 403 for workspace ADMINs and MEMBERs", func() {
			member := createAccount("mia", false, "acme", "MEMBER")
			ops := createAccount("ops", true, "", "")
			victim := createAccount("vic", false, "acme", "MEMBER")
			victimTokens := a.Call(http.MethodGet, tokensPath(victim.ID), adminToken, nil).JSON["items"].([]any)
			victimToken := int64(victimTokens[0].(map[string]any)["id"].(float64))

			routes := []struct{ method, path string }{
				{http.MethodPost, tokensPath(victim.ID)},
				{http.MethodGet, tokensPath(victim.ID)},
				{http.MethodDelete, fmt.Sprintf("%s/%d", tokensPath(victim.ID), victimToken)},
				{http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", victim.ID)},
			}
			for _, rt := range routes {
				Expect(a.Call(rt.method, rt.path, "", nil).Status).To(Equal(http.StatusUnauthorized), rt.path)
				Expect(a.Call(rt.method, rt.path, "hx_not-a-token", nil).Status).To(Equal(http.StatusUnauthorized), rt.path)
				Expect(a.Call(rt.method, rt.path, ana.Token, nil).Status).To(Equal(http.StatusForbidden), "workspace ADMIN: %s %s", rt.method, rt.path)
				Expect(a.Call(rt.method, rt.path, member.Token, nil).Status).To(Equal(http.StatusForbidden), "MEMBER: %s %s", rt.method, rt.path)
			}
			Expect(b.status(probe, victim.Token)).To(Equal(http.StatusForbidden), "the victim still authenticates (a MEMBER may not manage)")
			Expect(a.Call(http.MethodGet, tokensPath(victim.ID), adminToken, nil).JSON["items"]).To(HaveLen(1), "nothing was issued or revoked")

			// An account with instanceAdmin may.
			Expect(a.Call(http.MethodPost, tokensPath(victim.ID), ops.Token, nil).Status).To(Equal(http.StatusCreated))
			Expect(a.Call(http.MethodGet, tokensPath(victim.ID), ops.Token, nil).Status).To(Equal(http.StatusOK))
			Expect(a.Call(http.MethodDelete, fmt.Sprintf("%s/%d", tokensPath(victim.ID), victimToken), ops.Token, nil).Status).To(Equal(http.StatusNoContent))
			Expect(a.Call(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", victim.ID), ops.Token, nil).Status).To(Equal(http.StatusNoContent))
			Expect(a.Call(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", ops.ID), ops.Token, nil).JSON).
				To(HaveKeyWithValue("error", "cannot-disable-self"))
		})
	})
})
