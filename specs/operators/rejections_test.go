package operators_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/rejectionstore"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("The rejection log's API", func() {
	It("shows a workspace's members its connections' refusals, and the instance administrator every refusal", func(ctx SpecContext) {
		acme, globex := newWorkspace(ctx, "acme"), newWorkspace(ctx, "globex")
		acmeMember := newAccount(ctx, "bob", false, acme, "MEMBER")
		globexMember := newAccount(ctx, "gil", false, globex, "MEMBER")
		operator := newAccount(ctx, "ops", true, acme, "")
		var acmeConn, globexConn int64
		Expect(pool.QueryRow(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'GITLAB', 'GITLAB', 'https://gitlab.example') RETURNING id`, acme.ID).Scan(&acmeConn)).To(Succeed())
		Expect(pool.QueryRow(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'GITLAB', 'GITLAB', 'https://gitlab.example') RETURNING id`, globex.ID).Scan(&globexConn)).To(Succeed())

		store, err := rejectionstore.New(pool)
		Expect(err).NotTo(HaveOccurred())
		minute := time.Now().UTC().Truncate(time.Minute)
		Expect(store.AddRejections(ctx, []ports.RejectionCount{
			{Minute: minute.Add(-time.Minute), Provider: "GITLAB", ConnectionID: acmeConn, Reason: "unverified", Count: 7},
			{Minute: minute, Provider: "GITLAB", ConnectionID: acmeConn, Reason: "connection-inactive", Count: 2},
			{Minute: minute, Provider: "GITLAB", ConnectionID: globexConn, Reason: "unverified", Count: 5},
			{Minute: minute, Provider: "GITHUB", Reason: "bad-signature", Count: 900},
		}, time.Time{})).To(Succeed())

		r := call("GET", "/api/workspaces/acme/integration/rejections", acmeMember.Token, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 2)))
		items := r.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(And(HaveKeyWithValue("reason", "connection-inactive"), HaveKeyWithValue("count", BeNumerically("==", 2)),
			HaveKeyWithValue("connectionId", BeNumerically("==", acmeConn)), HaveKeyWithValue("provider", "GITLAB"),
			HaveKeyWithValue("minute", minute.Format(time.RFC3339))))
		Expect(items[1]).To(HaveKeyWithValue("count", BeNumerically("==", 7)), "newest minute first")

		Expect(call("GET", "/api/workspaces/acme/integration/rejections", globexMember.Token, nil).Status).To(Equal(http.StatusForbidden))
		Expect(call("GET", "/api/workspaces/acme/integration/rejections", "", nil).Status).To(Equal(http.StatusUnauthorized))
		Expect(call("GET", "/api/admin/integration/rejections", acmeMember.Token, nil).Status).To(Equal(http.StatusForbidden))

		for _, token := range []string{adminToken, operator.Token} {
			all := call("GET", "/api/admin/integration/rejections?size=3", token, nil)
			Expect(all.Status).To(Equal(http.StatusOK), all.Raw)
			Expect(all.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 4)))
			Expect(all.JSON["items"]).To(HaveLen(3))
			Expect(all.JSON["items"].([]any)[0]).To(And(HaveKeyWithValue("provider", "GITHUB"), HaveKeyWithValue("connectionId", BeNil())),
				"a refusal no connection matched")
		}
	})
})
