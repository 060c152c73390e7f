package accounts_test

import (
	"fmt"
	"net/http"
	"sync"

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
		Expect(a.call(http.MethodDelete, memberPath("acme", mia.ID), ana.Token, nil).Status).To(Equal(http.StatusNoContent))
		Expect(b.call(http.MethodDelete, memberPath("acme", mia.ID), ana.Token, nil).Status).To(Equal(http.StatusNotFound), "no longer a member")
		Expect(b.call(http.MethodPut, memberPath("acme", ana.ID), mia.Token, map[string]any{"role": "ADMIN"}).Status).
			To(Equal(http.StatusForbidden))
	})

	It("never removes the workspace's last ADMIN, not even for the instance administrator", func(ctx SpecContext) {
		for _, token := range []string{ana.Token, adminToken} {
			r := a.call(http.MethodDelete, memberPath("acme", ana.ID), token, nil)
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("error", "last-admin"))
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_member WHERE account_id = $1`, ana.ID)).To(Equal(1))

		bob := createAccount("bob", false, "acme", "ADMIN")
		Expect(a.call(http.MethodDelete, memberPath("acme", ana.ID), bob.Token, nil).Status).To(Equal(http.StatusNoContent))
		Expect(a.call(http.MethodDelete, memberPath("acme", bob.ID), bob.Token, nil).JSON).To(HaveKeyWithValue("error", "last-admin"))
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

			results := make([]int, 2)
			var wg sync.WaitGroup
			for i, s := range []server{a, b} {
				wg.Go(func() {
					defer GinkgoRecover()
					results[i] = s.call(http.MethodDelete, "/api/workspaces/acme/members/"+admins[i], adminToken, nil).Status
				})
			}
			wg.Wait()
			Expect(results).To(ConsistOf(http.StatusNoContent, http.StatusConflict), "round %d", round)
			Expect(adminsOfAcme()).To(HaveLen(1), "round %d", round)
		}
	})

	Describe("who may remove members", func() {
		It("answers 401 without a token, 403 to a MEMBER and to another workspace's ADMIN, 404 for a member of another workspace or an unknown workspace", func(ctx SpecContext) {
			gina := createAccount("gina", false, "globex", "ADMIN")
			path := memberPath("acme", mia.ID)

			Expect(a.call(http.MethodDelete, path, "", nil).Status).To(Equal(http.StatusUnauthorized))
			Expect(a.call(http.MethodDelete, path, mia.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(a.call(http.MethodDelete, memberPath("acme", ana.ID), mia.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(a.call(http.MethodDelete, path, gina.Token, nil).Status).To(Equal(http.StatusForbidden))
			// globex's ADMIN names acme's member under globex: not a member there.
			Expect(a.call(http.MethodDelete, memberPath("globex", mia.ID), gina.Token, nil).Status).To(Equal(http.StatusNotFound))
			Expect(a.call(http.MethodDelete, memberPath("nowhere", mia.ID), adminToken, nil).Status).To(Equal(http.StatusNotFound))
			Expect(a.call(http.MethodDelete, "/api/workspaces/acme/members/x", ana.Token, nil).Status).To(Equal(http.StatusNotFound))

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
			r := a.call(http.MethodPut, memberPath("acme", ana.ID), token, map[string]any{"role": "MEMBER"})
			Expect(r.Status).To(Equal(http.StatusConflict), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "last-admin"}))
		}
		Expect(adminsOfAcme(ctx)).To(Equal([]string{fmt.Sprint(ana.ID)}))

		r := a.call(http.MethodPut, memberPath("acme", ana.ID), ana.Token, map[string]any{"role": "ADMIN"})
		Expect(r.Status).To(Equal(http.StatusOK), "keeping the last ADMIN an ADMIN is no demotion")
	})

	It("demotes an ADMIN while another ADMIN stays", func(ctx SpecContext) {
		bob := createAccount("bob", false, "acme", "ADMIN")
		r := a.call(http.MethodPut, memberPath("acme", ana.ID), bob.Token, map[string]any{"role": "MEMBER"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("role", "MEMBER"))
		Expect(adminsOfAcme(ctx)).To(Equal([]string{fmt.Sprint(bob.ID)}))
		Expect(a.call(http.MethodPut, memberPath("acme", bob.ID), adminToken, map[string]any{"role": "MEMBER"}).JSON).
			To(HaveKeyWithValue("error", "last-admin"))
	})

	It("keeps one ADMIN when the last two are demoted on two servers at once", func(ctx SpecContext) {
		for round := range 10 {
			createAccount(fmt.Sprintf("admin%d", round), false, "acme", "ADMIN")
			admins := adminsOfAcme(ctx)
			Expect(admins).To(HaveLen(2))

			results := make([]int, 2)
			var wg sync.WaitGroup
			for i, s := range []server{a, b} {
				wg.Go(func() {
					defer GinkgoRecover()
					results[i] = s.call(http.MethodPut, "/api/workspaces/acme/members/"+admins[i], adminToken, map[string]any{"role": "MEMBER"}).Status
				})
			}
			wg.Wait()
			Expect(results).To(ConsistOf(http.StatusOK, http.StatusConflict), "round %d", round)
			Expect(adminsOfAcme(ctx)).To(HaveLen(1), "round %d", round)
		}
	})

	It("keeps one ADMIN when one of the last two is demoted while the other is removed", func(ctx SpecContext) {
		for round := range 10 {
			createAccount(fmt.Sprintf("admin%d", round), false, "acme", "ADMIN")
			admins := adminsOfAcme(ctx)
			Expect(admins).To(HaveLen(2))

			results := make([]int, 2)
			var wg sync.WaitGroup
			wg.Go(func() {
				defer GinkgoRecover()
				results[0] = a.call(http.MethodPut, "/api/workspaces/acme/members/"+admins[0], adminToken, map[string]any{"role": "MEMBER"}).Status
			})
			wg.Go(func() {
				defer GinkgoRecover()
				results[1] = b.call(http.MethodDelete, "/api/workspaces/acme/members/"+admins[1], adminToken, nil).Status
			})
			wg.Wait()
			Expect(results).To(Or(Equal([]int{http.StatusOK, http.StatusConflict}), Equal([]int{http.StatusConflict, http.StatusNoContent})), "round %d", round)
			Expect(adminsOfAcme(ctx)).To(HaveLen(1), "round %d", round)
		}
	})
})
