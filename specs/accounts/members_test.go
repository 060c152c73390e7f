package accounts_test

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Removing a member", func() {
	var ana, mia account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", false, "acme", "ADMIN")
		mia = createAccount("mia", false, "acme", "MEMBER")
	})

	It("removes the member, whose token then gets 403 on the workspace", func() {
		Expect(a.Call(http.MethodDelete, memberPath("acme", mia.ID), ana.Token, nil).Status).To(Equal(http.StatusNoContent))
		Expect(b.Call(http.MethodDelete, memberPath("acme", mia.ID), ana.Token, nil).Status).To(Equal(http.StatusNotFound), "no longer a member")
		Expect(b.Call(http.MethodPut, memberPath("acme", ana.ID), mia.Token, map[string]any{"role": "ADMIN"}).Status).
			To(Equal(http.StatusForbidden))
	})

	It("never removes the workspace's last ADMIN, not even for the instance administrator", func(ctx SpecContext) {
		for _, token := range []string{ana.Token, adminToken} {
			r := a.Call(http.MethodDelete, memberPath("acme", ana.ID), token, nil)
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("error", "last-admin"))
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_member WHERE account_id = $1`, ana.ID)).To(Equal(1))

		bob := createAccount("bob", false, "acme", "ADMIN")
		Expect(a.Call(http.MethodDelete, memberPath("acme", ana.ID), bob.Token, nil).Status).To(Equal(http.StatusNoContent))
		Expect(a.Call(http.MethodDelete, memberPath("acme", bob.ID), bob.Token, nil).JSON).To(HaveKeyWithValue("error", "last-admin"))
	})

	It("keeps one ADMIN when the last two remove each other on two servers at once", func(ctx SpecContext) {
		adminsOfAcme := func() []string {
			GinkgoHelper()
			return support.Column(ctx, pool, `SELECT m.account_id::text FROM workspace_member m JOIN workspace w ON w.id = m.workspace_id
				WHERE w.slug = 'acme' AND m.role = 'ADMIN' ORDER BY m.account_id`)
		}
		for round := range 10 {
			createAccount(fmt.Sprintf("admin%d", round), false, "acme", "ADMIN")
			admins := adminsOfAcme()
			Expect(admins).To(HaveLen(2))

			results := atOnceOnBoth(func(i int, s server) int {
				return s.Call(http.MethodDelete, "/api/workspaces/acme/members/"+admins[i], adminToken, nil).Status
			})
			Expect(results).To(ConsistOf(http.StatusNoContent, http.StatusConflict), "round %d", round)
			Expect(adminsOfAcme()).To(HaveLen(1), "round %d", round)
		}
	})

	Describe("who may remove members", func() {
		It("answers 401 without a token, 403 to a MEMBER and to another workspace's ADMIN, 404 for a member of another workspace or an unknown workspace", func(ctx SpecContext) {
			gina := createAccount("gina", false, "globex", "ADMIN")
			path := memberPath("acme", mia.ID)

			Expect(a.Call(http.MethodDelete, path, "", nil).Status).To(Equal(http.StatusUnauthorized))
			Expect(a.Call(http.MethodDelete, path, mia.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(a.Call(http.MethodDelete, memberPath("acme", ana.ID), mia.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(a.Call(http.MethodDelete, path, gina.Token, nil).Status).To(Equal(http.StatusForbidden))
			// globex's ADMIN names acme's member under globex: not a member there.
			Expect(a.Call(http.MethodDelete, memberPath("globex", mia.ID), gina.Token, nil).Status).To(Equal(http.StatusNotFound))
			Expect(a.Call(http.MethodDelete, memberPath("nowhere", mia.ID), adminToken, nil).Status).To(Equal(http.StatusNotFound))
			Expect(a.Call(http.MethodDelete, "/api/workspaces/acme/members/x", ana.Token, nil).Status).To(Equal(http.StatusNotFound))

			Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_member`)).To(Equal(3), "nothing was removed")
		})
	})
})

var _ = Describe("Demoting a member", func() {
	var ana account

	BeforeEach(func() {
		createWorkspace("acme")
		ana = createAccount("ana", false, "acme", "ADMIN")
	})

	adminsOfAcme := func(ctx SpecContext) []string {
		GinkgoHelper()
		return support.Column(ctx, pool, `SELECT m.account_id::text FROM workspace_member m JOIN workspace w ON w.id = m.workspace_id
			WHERE w.slug = 'acme' AND m.role = 'ADMIN' ORDER BY m.account_id`)
	}

	It("refuses to make the workspace's last ADMIN a MEMBER with 409 last-admin, also for the instance administrator", func(ctx SpecContext) {
		for _, token := range []string{ana.Token, adminToken} {
			r := a.Call(http.MethodPut, memberPath("acme", ana.ID), token, map[string]any{"role": "MEMBER"})
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "last-admin"}))
		}
		Expect(adminsOfAcme(ctx)).To(Equal([]string{fmt.Sprint(ana.ID)}))

		r := a.Call(http.MethodPut, memberPath("acme", ana.ID), ana.Token, map[string]any{"role": "ADMIN"})
		Expect(r.Status).To(Equal(http.StatusOK), "keeping the last ADMIN an ADMIN is no demotion")
	})

	It("demotes an ADMIN while another ADMIN stays", func(ctx SpecContext) {
		bob := createAccount("bob", false, "acme", "ADMIN")
		r := a.Call(http.MethodPut, memberPath("acme", ana.ID), bob.Token, map[string]any{"role": "MEMBER"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("role", "MEMBER"))
		Expect(adminsOfAcme(ctx)).To(Equal([]string{fmt.Sprint(bob.ID)}))
		Expect(a.Call(http.MethodPut, memberPath("acme", bob.ID), adminToken, map[string]any{"role": "MEMBER"}).JSON).
			To(HaveKeyWithValue("error", "last-admin"))
	})

	It("keeps one ADMIN when the last two are demoted on two servers at once", func(ctx SpecContext) {
		for round := range 10 {
			createAccount(fmt.Sprintf("admin%d", round), false, "acme", "ADMIN")
			admins := adminsOfAcme(ctx)
			Expect(admins).To(HaveLen(2))

			results := atOnceOnBoth(func(i int, s server) int {
				return s.Call(http.MethodPut, "/api/workspaces/acme/members/"+admins[i], adminToken, map[string]any{"role": "MEMBER"}).Status
			})
			Expect(results).To(ConsistOf(http.StatusOK, http.StatusConflict), "round %d", round)
			Expect(adminsOfAcme(ctx)).To(HaveLen(1), "round %d", round)
		}
	})

	It("keeps one ADMIN when one of the last two is demoted while the other is removed", func(ctx SpecContext) {
		for round := range 10 {
			createAccount(fmt.Sprintf("admin%d", round), false, "acme", "ADMIN")
			admins := adminsOfAcme(ctx)
			Expect(admins).To(HaveLen(2))

			results := atOnceOnBoth(func(i int, s server) int {
				if i == 0 {
					return s.Call(http.MethodPut, "/api/workspaces/acme/members/"+admins[0], adminToken, map[string]any{"role": "MEMBER"}).Status
				}
				return s.Call(http.MethodDelete, "/api/workspaces/acme/members/"+admins[1], adminToken, nil).Status
			})
			Expect(results).To(Or(Equal([]int{http.StatusOK, http.StatusConflict}), Equal([]int{http.StatusConflict, http.StatusNoContent})), "round %d", round)
			Expect(adminsOfAcme(ctx)).To(HaveLen(1), "round %d", round)
		}
	})
})

// sameAnswer expects two answers to be indistinguishable: status, body and every header but
// the date.
func sameAnswer(got, want response) {
	GinkgoHelper()
	Expect(got.Status).To(Equal(want.Status))
	Expect(got.Raw).To(Equal(want.Raw))
	strip := func(h http.Header) http.Header {
		c := h.Clone()
		c.Del("Date")
		return c
	}
	Expect(strip(got.Header)).To(Equal(strip(want.Header)))
}

var _ = Describe("Setting a member's role", func() {
	var ana, mia, olga account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", false, "acme", "ADMIN")
		mia = createAccount("mia", false, "acme", "MEMBER")
		olga = createAccount("olga", false, "globex", "ADMIN")
	})

	It("lets the instance administrator add any account with a role", func(ctx SpecContext) {
		r := a.Call(http.MethodPut, memberPath("acme", olga.ID), adminToken, map[string]any{"role": "MEMBER"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"accountId": float64(olga.ID), "role": "MEMBER"}))
		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("MEMBER"))
		Expect(a.Call(http.MethodPut, memberPath("acme", 999999), adminToken, map[string]any{"role": "MEMBER"}).Status).
			To(Equal(http.StatusNotFound), "no such account")
	})

	It("lets a workspace ADMIN change the role of an existing member", func(ctx SpecContext) {
		r := a.Call(http.MethodPut, memberPath("acme", mia.ID), ana.Token, map[string]any{"role": "ADMIN"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"accountId": float64(mia.ID), "role": "ADMIN"}))
		Expect(roleIn(ctx, "acme", mia.ID)).To(Equal("ADMIN"))
		Expect(b.Call(http.MethodPut, memberPath("acme", mia.ID), ana.Token, map[string]any{"role": "MEMBER"}).Status).To(Equal(http.StatusOK))
		Expect(roleIn(ctx, "acme", mia.ID)).To(Equal("MEMBER"))
	})

	It("answers a workspace ADMIN the same 404 for an account that is no member, whether it exists or not, adding no one", func(ctx SpecContext) {
		members := support.Count(ctx, pool, `SELECT count(*) FROM workspace_member`)
		for _, role := range []string{"MEMBER", "ADMIN"} {
			existing := a.Call(http.MethodPut, memberPath("acme", olga.ID), ana.Token, map[string]any{"role": role})
			unknown := a.Call(http.MethodPut, memberPath("acme", olga.ID+1000), ana.Token, map[string]any{"role": role})
			Expect(existing.Status).To(Equal(http.StatusNotFound), existing.Raw)
			Expect(existing.JSON).To(Equal(map[string]any{"error": "not-found"}))
			sameAnswer(unknown, existing)
		}
		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("none"))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_member`)).To(Equal(members))
	})

	It("answers 401 without a token, 403 to a MEMBER and to another workspace's ADMIN, 404 for an unknown workspace", func(ctx SpecContext) {
		body := map[string]any{"role": "ADMIN"}
		Expect(a.Call(http.MethodPut, memberPath("acme", mia.ID), "", body).Status).To(Equal(http.StatusUnauthorized))
		Expect(a.Call(http.MethodPut, memberPath("acme", mia.ID), mia.Token, body).Status).To(Equal(http.StatusForbidden))
		Expect(a.Call(http.MethodPut, memberPath("acme", olga.ID), olga.Token, body).Status).To(Equal(http.StatusForbidden))
		Expect(a.Call(http.MethodPut, memberPath("nowhere", mia.ID), adminToken, body).Status).To(Equal(http.StatusNotFound))
		Expect(roleIn(ctx, "acme", mia.ID)).To(Equal("MEMBER"))
		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("none"))
	})
})
