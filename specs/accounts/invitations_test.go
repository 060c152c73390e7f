package accounts_test

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const myInvitations = "/api/me/invitations"

func invitationsPath(slug string) string { return "/api/workspaces/" + slug + "/invitations" }

func acceptPath(id int64) string { return fmt.Sprintf("/api/me/invitations/%d/accept", id) }

// invite invites login to slug with role as token and expects 202 {}.
func invite(slug, token, login, role string) response {
	GinkgoHelper()
	r := a.Call(http.MethodPost, invitationsPath(slug), token, map[string]any{"login": login, "role": role})
	Expect(r.Status).To(Equal(http.StatusAccepted), r.Raw)
	Expect(r.Raw).To(Equal("{}"))
	return r
}

// invitationsOf is the page of token's pending invitations.
func invitationsOf(token string) []any {
	GinkgoHelper()
	r := a.Call(http.MethodGet, myInvitations, token, nil)
	Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	return r.JSON["items"].([]any)
}

// onlyInvitation is the id of token's one pending invitation.
func onlyInvitation(token string) int64 {
	GinkgoHelper()
	items := invitationsOf(token)
	Expect(items).To(HaveLen(1))
	return int64(items[0].(map[string]any)["id"].(float64))
}

var _ = Describe("Inviting people by login", func() {
	var ana, mia, olga account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", false, "acme", "ADMIN")
		mia = createAccount("mia", false, "acme", "MEMBER")
		olga = createAccount("olga", false, "globex", "ADMIN")
	})

	stored := func(ctx SpecContext, login string) int {
		GinkgoHelper()
		return support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation WHERE login = $1`, login)
	}

	It("answers 202 {} alike for an existing account's login, an unknown login and a member's login", func(ctx SpecContext) {
		existing := invite("acme", ana.Token, "olga", "MEMBER")
		unknown := invite("acme", ana.Token, "nobody-yet", "MEMBER")
		member := invite("acme", ana.Token, "mia", "MEMBER")
		sameAnswer(unknown, existing)
		sameAnswer(member, existing)

		Expect(stored(ctx, "olga")).To(Equal(1))
		Expect(stored(ctx, "nobody-yet")).To(Equal(1), "stored by login, for an account created later")
		Expect(stored(ctx, "mia")).To(Equal(0), "a member already: nothing to accept")
	})

	It("stores the invitation for seven days, with its inviter, and adds no one until it is accepted", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "ADMIN")
		Expect(support.Scalar[string](ctx, pool, `SELECT (expires_at - created_at)::text FROM workspace_invitation`)).To(Equal("7 days"))
		Expect(support.Scalar[int64](ctx, pool, `SELECT invited_by FROM workspace_invitation`)).To(Equal(ana.ID))
		Expect(a.status("/api/workspaces/acme/members", olga.Token)).To(Equal(http.StatusForbidden), "not a member before accepting")
	})

	It("refreshes a pending invitation when the login is invited again: one invitation, the new role, inviter and expiry", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "MEMBER")
		_, err := pool.Exec(ctx, `UPDATE workspace_invitation SET created_at = now() - interval '8 days', expires_at = now() - interval '1 day'`)
		Expect(err).NotTo(HaveOccurred())
		Expect(invitationsOf(olga.Token)).To(BeEmpty(), "expired")

		invite("acme", adminToken, "olga", "ADMIN")
		Expect(stored(ctx, "olga")).To(Equal(1))
		items := invitationsOf(olga.Token)
		Expect(items).To(ConsistOf(And(HaveKeyWithValue("role", "ADMIN"), Not(HaveKey("invitedBy")))))
		Expect(support.Scalar[bool](ctx, pool, `SELECT expires_at > now() + interval '6 days' FROM workspace_invitation`)).To(BeTrue())
	})

	It("answers 400 to an invalid login or role and to a body it does not expect, storing nothing", func(ctx SpecContext) {
		for _, body := range []any{
			map[string]any{"login": "", "role": "MEMBER"},
			map[string]any{"login": "olga smith", "role": "MEMBER"},
			map[string]any{"login": "-olga", "role": "MEMBER"},
			map[string]any{"login": "olga", "role": "OWNER"},
			map[string]any{"login": "olga"},
			map[string]any{"login": "olga", "role": "MEMBER", "accountId": olga.ID},
			`{"login":`,
		} {
			r := a.Call(http.MethodPost, invitationsPath("acme"), ana.Token, body)
			Expect(r.Status).To(Equal(http.StatusBadRequest), "%v", body)
			Expect(r.JSON).To(HaveKeyWithValue("error", BeElementOf("invalid-login", "invalid-role", "invalid-json")), "%v", body)
		}
		Expect(a.Call(http.MethodPost, invitationsPath("acme"), ana.Token, map[string]any{"login": "olga smith", "role": "MEMBER"}).JSON).
			To(Equal(map[string]any{"error": "invalid-login"}))
		Expect(a.Call(http.MethodPost, invitationsPath("acme"), ana.Token, map[string]any{"login": "olga", "role": "OWNER"}).JSON).
			To(Equal(map[string]any{"error": "invalid-role"}))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation`)).To(Equal(0))
	})

	It("lets the instance administrator invite; answers 401 without a token, 403 to a MEMBER and to another workspace's ADMIN, 404 for an unknown workspace", func(ctx SpecContext) {
		body := map[string]any{"login": "zed", "role": "ADMIN"}
		Expect(a.Call(http.MethodPost, invitationsPath("acme"), "", body).Status).To(Equal(http.StatusUnauthorized))
		Expect(a.Call(http.MethodPost, invitationsPath("acme"), mia.Token, body).Status).To(Equal(http.StatusForbidden))
		Expect(a.Call(http.MethodPost, invitationsPath("acme"), olga.Token, body).Status).To(Equal(http.StatusForbidden))
		Expect(a.Call(http.MethodPost, invitationsPath("nowhere"), adminToken, body).Status).To(Equal(http.StatusNotFound))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation`)).To(Equal(0))

		invite("acme", adminToken, "zed", "ADMIN")
		Expect(support.Scalar[bool](ctx, pool, `SELECT invited_by IS NULL FROM workspace_invitation`)).To(BeTrue(), "the administrator token is no account")
	})

	It("goes with its workspace when the workspace is deleted", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "MEMBER")
		invite("globex", olga.Token, "ana", "MEMBER")
		Expect(a.Call(http.MethodDelete, "/api/admin/workspaces/acme", adminToken, nil).Status).To(Equal(http.StatusNoContent))
		Expect(support.Column(ctx, pool, `SELECT login FROM workspace_invitation`)).To(Equal([]string{"ana"}))
		Expect(invitationsOf(olga.Token)).To(BeEmpty())
	})
})

var _ = Describe("Accepting an invitation", func() {
	var ana, olga account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", false, "acme", "ADMIN")
		olga = createAccount("olga", false, "globex", "ADMIN")
	})

	It("lists the caller's own pending, unexpired invitations with workspace, role, inviter and times, paged", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "ADMIN")
		invite("globex", olga.Token, "ana", "MEMBER")
		invite("globex", olga.Token, "zed", "MEMBER")
		createWorkspace("initech")
		invite("initech", adminToken, "olga", "MEMBER")
		createWorkspace("umbrella")
		invite("umbrella", adminToken, "olga", "MEMBER")
		_, err := pool.Exec(ctx, `UPDATE workspace_invitation i SET created_at = now() - interval '8 days', expires_at = now() - interval '1 second'
			FROM workspace w WHERE w.id = i.workspace_id AND w.slug = 'umbrella'`)
		Expect(err).NotTo(HaveOccurred())

		r := a.Call(http.MethodGet, myInvitations+"?page=0&size=1", olga.Token, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(And(HaveKeyWithValue("total", 2.0), HaveKeyWithValue("page", 0.0), HaveKeyWithValue("size", 1.0)))
		first := r.JSON["items"].([]any)[0].(map[string]any)
		Expect(first).To(And(
			HaveKeyWithValue("workspace", map[string]any{"slug": "acme", "name": "ACME"}),
			HaveKeyWithValue("role", "ADMIN"),
			HaveKeyWithValue("invitedBy", "ana"),
		))
		created, err := time.Parse(time.RFC3339, first["createdAt"].(string))
		Expect(err).NotTo(HaveOccurred())
		expires, err := time.Parse(time.RFC3339, first["expiresAt"].(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(expires.Sub(created)).To(BeNumerically("~", 7*24*time.Hour, time.Second))

		next := b.Call(http.MethodGet, myInvitations+"?page=1&size=1", olga.Token, nil)
		Expect(next.JSON["items"]).To(ConsistOf(And(
			HaveKeyWithValue("workspace", HaveKeyWithValue("slug", "initech")), Not(HaveKey("invitedBy")))))
		Expect(invitationsOf(ana.Token)).To(ConsistOf(HaveKeyWithValue("workspace", HaveKeyWithValue("slug", "globex"))))
		Expect(invitationsOf(adminToken)).To(BeEmpty(), "the administrator token is no account and has no login")
		Expect(a.status(myInvitations+"?size=201", olga.Token)).To(Equal(http.StatusBadRequest))
		Expect(a.status(myInvitations, "")).To(Equal(http.StatusUnauthorized))
	})

	It("makes the caller a member with the invitation's role and marks it accepted, once", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "ADMIN")
		id := onlyInvitation(olga.Token)

		r := a.Call(http.MethodPost, acceptPath(id), olga.Token, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"accountId": float64(olga.ID), "role": "ADMIN",
			"workspace": map[string]any{"slug": "acme", "name": "ACME"}}))
		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("ADMIN"))
		Expect(support.Scalar[bool](ctx, pool, `SELECT accepted_at IS NOT NULL FROM workspace_invitation WHERE id = $1`, id)).To(BeTrue())
		Expect(a.status("/api/workspaces/acme/members", olga.Token)).To(Equal(http.StatusOK))
		Expect(invitationsOf(olga.Token)).To(BeEmpty())

		again := b.Call(http.MethodPost, acceptPath(id), olga.Token, nil)
		Expect(again.Status).To(Equal(http.StatusNotFound), "accepted already")
	})

	It("lets an account created after the invitation accept it", func(ctx SpecContext) {
		invite("acme", ana.Token, "newcomer", "MEMBER")
		newcomer := createAccount("newcomer", false, "", "")
		r := a.Call(http.MethodPost, acceptPath(onlyInvitation(newcomer.Token)), newcomer.Token, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(roleIn(ctx, "acme", newcomer.ID)).To(Equal("MEMBER"))
	})

	It("answers the same 404 for someone else's, an expired, an accepted or an unknown invitation, changing nothing", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "MEMBER")
		olgas := onlyInvitation(olga.Token)
		invite("globex", olga.Token, "ana", "MEMBER")
		anas := onlyInvitation(ana.Token)
		mel := createAccount("mel", false, "", "")
		invite("acme", ana.Token, "mel", "MEMBER")
		expired := onlyInvitation(mel.Token)
		_, err := pool.Exec(ctx, `UPDATE workspace_invitation SET created_at = now() - interval '8 days', expires_at = now() - interval '1 second' WHERE id = $1`, expired)
		Expect(err).NotTo(HaveOccurred())

		someoneElses := a.Call(http.MethodPost, acceptPath(olgas), ana.Token, nil)
		Expect(someoneElses.Status).To(Equal(http.StatusNotFound), someoneElses.Raw)
		Expect(someoneElses.JSON).To(Equal(map[string]any{"error": "not-found"}))
		sameAnswer(a.Call(http.MethodPost, acceptPath(anas), olga.Token, nil), someoneElses)
		sameAnswer(a.Call(http.MethodPost, acceptPath(olgas), adminToken, nil), someoneElses)
		sameAnswer(a.Call(http.MethodPost, acceptPath(expired), mel.Token, nil), someoneElses)
		sameAnswer(a.Call(http.MethodPost, acceptPath(olgas+1000), olga.Token, nil), someoneElses)
		sameAnswer(a.Call(http.MethodPost, "/api/me/invitations/x/accept", olga.Token, nil), someoneElses)
		Expect(a.Call(http.MethodPost, acceptPath(olgas), "", nil).Status).To(Equal(http.StatusUnauthorized))

		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("none"))
		Expect(roleIn(ctx, "globex", ana.ID)).To(Equal("none"))
		Expect(roleIn(ctx, "acme", mel.ID)).To(Equal("none"))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation WHERE accepted_at IS NOT NULL`)).To(Equal(0))

		Expect(a.Call(http.MethodPost, acceptPath(olgas), olga.Token, nil).Status).To(Equal(http.StatusOK))
		sameAnswer(a.Call(http.MethodPost, acceptPath(olgas), olga.Token, nil), someoneElses)
	})

	It("leaves a member's role as it is when the member accepts", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "ADMIN")
		id := onlyInvitation(olga.Token)
		Expect(a.Call(http.MethodPut, memberPath("acme", olga.ID), adminToken, map[string]any{"role": "MEMBER"}).Status).To(Equal(http.StatusOK))

		r := a.Call(http.MethodPost, acceptPath(id), olga.Token, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("role", "MEMBER"))
		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("MEMBER"))
		Expect(invitationsOf(olga.Token)).To(BeEmpty())
	})

	It("accepts an invitation once when two servers accept it at once", func(ctx SpecContext) {
		for round := range 10 {
			login := fmt.Sprintf("guest%d", round)
			guest := createAccount(login, false, "", "")
			invite("acme", ana.Token, login, "MEMBER")
			id := onlyInvitation(guest.Token)
			results := atOnceOnBoth(func(i int, s server) int { return s.Call(http.MethodPost, acceptPath(id), guest.Token, nil).Status })
			Expect(results).To(ConsistOf(http.StatusOK, http.StatusNotFound), "round %d", round)
			Expect(roleIn(ctx, "acme", guest.ID)).To(Equal("MEMBER"))
		}
	})

	It("marks the invitation accepted only with the membership, in one transaction", func(ctx SpecContext) {
		invite("acme", ana.Token, "olga", "MEMBER")
		id := onlyInvitation(olga.Token)
		// The membership's insert fails for olga (as a deletion of the workspace in between
		// would make it fail): the invitation must stay pending.
		_, err := pool.Exec(ctx, fmt.Sprintf(`
			CREATE FUNCTION spec_refuse_member() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.account_id = %d THEN RAISE EXCEPTION 'spec: refused'; END IF; RETURN NEW; END $$;
			CREATE TRIGGER spec_refuse_member BEFORE INSERT ON workspace_member FOR EACH ROW EXECUTE FUNCTION spec_refuse_member();`, olga.ID))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `DROP TRIGGER spec_refuse_member ON workspace_member; DROP FUNCTION spec_refuse_member()`)
			Expect(err).NotTo(HaveOccurred())
		})

		_, err = workspaces.AcceptInvitation(ctx, olga.ID, id)
		Expect(err).To(HaveOccurred())
		Expect(support.Scalar[bool](ctx, pool, `SELECT accepted_at IS NULL FROM workspace_invitation WHERE id = $1`, id)).To(BeTrue())
		Expect(roleIn(ctx, "acme", olga.ID)).To(Equal("none"))
	})
})
