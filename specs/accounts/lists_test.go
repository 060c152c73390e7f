package accounts_test

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Listing accounts and a workspace's members", func() {
	var ana, mel, olga account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", false, "acme", "ADMIN")
		mel = createAccount("max", false, "acme", "MEMBER")
		olga = createAccount("olga", false, "globex", "ADMIN")
	})

	It("pages every account for the instance administrator, disabled ones included, never a token", func() {
		Expect(a.Call(http.MethodDelete, fmt.Sprintf("/api/admin/accounts/%d", mel.ID), adminToken, nil).Status).To(Equal(http.StatusNoContent))
		r := a.Call(http.MethodGet, "/api/admin/accounts?page=0&size=2", adminToken, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("total", 3.0))
		Expect(r.JSON).To(HaveKeyWithValue("size", 2.0))
		items := r.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(And(HaveKeyWithValue("login", "ana"), HaveKeyWithValue("disabledAt", BeNil()), HaveKeyWithValue("instanceAdmin", false)))
		Expect(items[1]).To(And(HaveKeyWithValue("login", "max"), HaveKeyWithValue("disabledAt", Not(BeNil()))))
		Expect(r.Raw).NotTo(Or(ContainSubstring(ana.Token), ContainSubstring("token")))
		next := a.Call(http.MethodGet, "/api/admin/accounts?page=1&size=2", adminToken, nil)
		Expect(next.JSON["items"]).To(ConsistOf(HaveKeyWithValue("login", "olga")))
		Expect(a.Call(http.MethodGet, "/api/admin/accounts?size=201", adminToken, nil).Status).To(Equal(http.StatusBadRequest))
	})

	It("refuses the account list to a workspace ADMIN and a MEMBER, and without a token", func() {
		for _, token := range []string{ana.Token, mel.Token} {
			Expect(a.status("/api/admin/accounts", token)).To(Equal(http.StatusForbidden))
		}
		Expect(a.status("/api/admin/accounts", "")).To(Equal(http.StatusUnauthorized))
	})

	It("pages a workspace's members with login and role for its ADMIN and the instance administrator", func() {
		for _, token := range []string{ana.Token, adminToken} {
			r := a.Call(http.MethodGet, "/api/workspaces/acme/members", token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("total", 2.0))
			Expect(r.JSON["items"]).To(Equal([]any{
				map[string]any{"accountId": float64(ana.ID), "login": "ana", "role": "ADMIN", "disabled": false},
				map[string]any{"accountId": float64(mel.ID), "login": "max", "role": "MEMBER", "disabled": false},
			}))
		}
		r := b.Call(http.MethodGet, "/api/workspaces/globex/members?page=0&size=1", adminToken, nil)
		Expect(r.JSON["items"]).To(ConsistOf(HaveKeyWithValue("login", "olga")))
	})

	It("refuses a workspace's members to its MEMBER and to another workspace's ADMIN", func() {
		Expect(a.status("/api/workspaces/acme/members", mel.Token)).To(Equal(http.StatusForbidden))
		Expect(a.status("/api/workspaces/acme/members", olga.Token)).To(Equal(http.StatusForbidden))
		Expect(a.status("/api/workspaces/nowhere/members", adminToken)).To(Equal(http.StatusNotFound))
	})
})
