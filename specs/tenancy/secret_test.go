package tenancy_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Setting a connection's token", func() {
	var (
		wsB    int64
		adminB string
		pat    int64
		n      int
	)
	deliver := func() response {
		GinkgoHelper()
		n++
		return deliverIssue(installationA, repoOfA, "secret-"+itoa(int64(n)))
	}
	putSecret := func(token, secret string) response {
		GinkgoHelper()
		return call(http.MethodPut, connectionPath("globex", pat, "secret"), token, map[string]any{"secret": secret})
	}

	// B's PAT connection comes from before tokens were required: no token, its subscription
	// UNVERIFIED token-missing (as migration 00010 leaves it).
	BeforeEach(func(ctx SpecContext) {
		workspace("acme")
		appA := appConnection("acme", installationA)
		Expect(subscribe("acme", adminToken, appA, repository(repoOfA)).Status).To(Equal(http.StatusOK))
		wsB, adminB = workspace("globex")
		fakeGitHub.grant("ghp_old", repoOfA)
		r := patConnection("globex", adminB, "ghp_old")
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		pat = r.ID("id")
		Expect(subscribe("globex", adminB, pat, repository(repoOfA)).Status).To(Equal(http.StatusOK))
		_, err := pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = NULL WHERE id = $1;`, pat)
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `UPDATE connection_subscription SET access = 'UNVERIFIED', access_reason = 'token-missing',
			access_checked_at = NULL WHERE connection_id = $1`, pat)
		Expect(err).NotTo(HaveOccurred())
		Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
		Expect(storedFor(ctx, wsB)).To(BeZero())
	})

	It("checks the subscriptions with the new token and starts receiving what it can read", func(ctx SpecContext) {
		fakeGitHub.grant("ghp_new", repoOfA)
		version := count(ctx, `SELECT config_version FROM connection WHERE id = $1`, pat)
		r := putSecret(adminB, "ghp_new")
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.Raw).NotTo(ContainSubstring("ghp_new"))
		Expect(r.JSON).To(HaveKeyWithValue("access", "VERIFIED"))
		Expect(count(ctx, `SELECT config_version FROM connection WHERE id = $1`, pat)).To(Equal(version + 1))
		Expect(fakeGitHub.recorded()).To(ContainElement(apiCall{Path: "/repositories/500", Token: "ghp_new"}))

		s := call(http.MethodGet, subscriptionsPath("globex", pat), adminB, nil)
		Expect(s.JSON["resources"]).To(ConsistOf(HaveKeyWithValue("access", "VERIFIED")))
		Expect(deliver().JSON).To(HaveKeyWithValue("stored", 2.0))
		Expect(storedFor(ctx, wsB)).To(Equal(1))
	})

	It("stores a token that cannot read a subscription, which then shows REVOKED and receives nothing", func(ctx SpecContext) {
		r := putSecret(adminB, "ghp_stranger")
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		s := call(http.MethodGet, subscriptionsPath("globex", pat), adminB, nil)
		Expect(s.JSON["resources"]).To(ConsistOf(And(HaveKeyWithValue("access", "REVOKED"),
			HaveKeyWithValue("accessReason", "repository-not-found"))))
		Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
		Expect(storedFor(ctx, wsB)).To(BeZero())
	})

	It("stores nothing when the provider gives no answer (503)", func(ctx SpecContext) {
		fakeGitHub.force(repoOfA, -1, nil)
		version := count(ctx, `SELECT config_version FROM connection WHERE id = $1`, pat)
		r := putSecret(adminB, "ghp_new")
		Expect(r.Status).To(Equal(http.StatusServiceUnavailable), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"error": "retry"}))
		Expect(count(ctx, `SELECT count(*) FROM connection WHERE id = $1 AND secret_ciphertext IS NULL`, pat)).To(Equal(1))
		Expect(count(ctx, `SELECT config_version FROM connection WHERE id = $1`, pat)).To(Equal(version))
	})

	It("lets only the workspace's ADMINs and the instance administrator set it, and only for kinds with a secret", func(ctx SpecContext) {
		memberB := member("globex", "globex-member", "MEMBER")
		_, adminC := workspace("initech")
		Expect(putSecret("", "ghp_x").Status).To(Equal(http.StatusUnauthorized))
		Expect(putSecret(memberB, "ghp_x").Status).To(Equal(http.StatusForbidden))
		Expect(putSecret(adminC, "ghp_x").Status).To(Equal(http.StatusForbidden))
		Expect(call(http.MethodPut, connectionPath("initech", pat, "secret"), adminC, map[string]any{"secret": "ghp_x"}).Status).
			To(Equal(http.StatusNotFound))
		Expect(putSecret(adminB, "").JSON).To(Equal(map[string]any{"error": "secret-required"}))
		Expect(count(ctx, `SELECT count(*) FROM connection WHERE id = $1 AND secret_ciphertext IS NULL`, pat)).To(Equal(1))
		Expect(putSecret(adminToken, "ghp_x").Status).To(Equal(http.StatusOK))

		app := appConnection("globex", 2002)
		r := call(http.MethodPut, connectionPath("globex", app, "secret"), adminToken, map[string]any{"secret": "x"})
		Expect(r.Status).To(Equal(http.StatusBadRequest))
		Expect(r.JSON).To(Equal(map[string]any{"error": "secret-not-supported"}))
	})

	It("marks a subscription the new token's check did not see UNVERIFIED token-changed", func(ctx SpecContext) {
		// As if a subscription change committed while the checks with the new token ran: the
		// store receives verdicts for 500 only, and 501 is also subscribed.
		_, err := pool.Exec(ctx, `INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id)
			VALUES ($1, $2, 'GITHUB', 'repository', '501')`, pat, wsB)
		Expect(err).NotTo(HaveOccurred())
		store, err := managementstore.NewConnections(pool, managementstore.Config{Kinds: []connection.Kind{github.KindApp, github.KindPAT}})
		Expect(err).NotTo(HaveOccurred())
		now := time.Now()
		sealed, err := box.Seal(pat, []byte("ghp_new"))
		Expect(err).NotTo(HaveOccurred())
		_, err = store.ReplaceSecret(ctx, wsB, pat, sealed, []ports.SubscribedResource{
			{Type: "repository", ID: "500", Access: connection.Verified, AccessCheckedAt: &now},
		}, "token-changed")
		Expect(err).NotTo(HaveOccurred())
		Expect(column(ctx, `SELECT resource_id || ':' || access || ':' || coalesce(access_reason, '') || ':' || (access_checked_at IS NOT NULL)
			FROM connection_subscription WHERE connection_id = $1 ORDER BY resource_id`, pat)).
			To(Equal([]string{"500:VERIFIED::true", "501:UNVERIFIED:token-changed:false"}))
	})
})
