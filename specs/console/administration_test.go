package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// octocatSender is a GitHub payload naming octocat as its sender.
const octocatSender = `{"action":"opened","sender":{"login":"octocat","id":583231,"type":"User"}}`

// inboxRow stores a QUEUED row of workspace ws (0: an installation row) with payload, from
// https://github.com.
func inboxRow(ctx context.Context, ws int64, payload string) int64 {
	GinkgoHelper()
	var wsID *int64
	if ws != 0 {
		wsID = &ws
	}
	var id int64
	key := fmt.Sprintf("console-admin-delivery-%d", keys.Add(1))
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, headers, state, attempt, due_at, received_at)
		VALUES ($1, 'GITHUB', 'issues', $2, $3, 'repository:42', $4::jsonb, $5, 'QUEUED', 0, now(), now())
		RETURNING id`,
		wsID, key, "GITHUB:repository:42:"+key, payload,
		map[string]string{"X-GitHub-Event": "issues", "Hephaestus-Source-Server-Url": "https://github.com"}).Scan(&id)).To(Succeed())
	return id
}

// octocatForm is the erasure form for octocat on github.com (one identity row of five filled).
func octocatForm(csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "provider": {"GITHUB"}, "sourceServerUrl": {"https://github.com"},
		"identityId": {"583231", "", "", "", ""}, "identityLogin": {"octocat", "", "", "", ""}, "identityEmail": {"", "", "", "", ""}}
}

func signedIn(token string) browserless {
	GinkgoHelper()
	b := newClient()
	Expect(b.signIn(token).Status).To(Equal(http.StatusSeeOther))
	return b
}

func erasures(ctx context.Context) int {
	GinkgoHelper()
	return support.Count(ctx, pool, `SELECT count(*) FROM inbox_erasure`)
}

func authenticates(ctx context.Context, token string) bool {
	GinkgoHelper()
	_, err := svc.Authenticate(ctx, token)
	return err == nil
}

var shownToken = regexp.MustCompile(`<code id="new-token" class="token">([^<]+)</code>`)

// secretOf is the token a secret page shows, checking that the page may not be cached and that
// the token is in no header (no cookie, no Location).
func secretOf(a answer) string {
	GinkgoHelper()
	Expect(a.Header.Get("Cache-Control")).To(Equal("no-store"))
	m := shownToken.FindStringSubmatch(a.Body)
	Expect(m).To(HaveLen(2), a.Body)
	for name, values := range a.Header {
		for _, v := range values {
			Expect(v).NotTo(ContainSubstring(m[1]), name)
		}
	}
	return m[1]
}

var _ = Describe("Person erasure in the console", func() {
	var f fixture
	var admin browserless
	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		admin = signedIn(adminToken)
		// No runner works the requests here; a spec works one to its end with EraseRunning.
	})

	It("previews the current matches per store, deleting nothing and starting nothing", func(ctx SpecContext) {
		rows := []int64{inboxRow(ctx, f.acme.ID, octocatSender), inboxRow(ctx, 0, octocatSender), inboxRow(ctx, f.acme.ID, `{"action":"opened"}`)}
		a := admin.post("/console/admin/erasures/preview", octocatForm(admin.csrf("/console/admin/erasures")))
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		Expect(a.Body).To(ContainSubstring(`<tr id="matches-workspace-inbox"><td>workspace-inbox</td><td>1</td></tr>`))
		Expect(a.Body).To(ContainSubstring(`<tr id="matches-installation-inbox"><td>installation-inbox</td><td>1</td></tr>`))
		Expect(a.Body).To(ContainSubstring(`<td id="matches-total">2</td>`))
		// The administrator sees what they typed, and the confirm form carries it.
		Expect(a.Body).To(ContainSubstring("<td>583231</td><td>octocat</td>"))
		Expect(a.Body).To(ContainSubstring(`id="confirm-erasure"`))
		Expect(erasures(ctx)).To(Equal(0))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE id = ANY($1)`, rows)).To(Equal(3))
	})

	It("starts the erasure only from the confirm step's post, and goes to its progress page without the identities in the URL", func(ctx SpecContext) {
		inboxRow(ctx, f.acme.ID, octocatSender)
		csrf := admin.csrf("/console/admin/erasures")
		forged := octocatForm("")
		Expect(admin.post("/console/admin/erasures", forged).Status).To(Equal(http.StatusForbidden))
		Expect(erasures(ctx)).To(Equal(0))

		a := admin.post("/console/admin/erasures", octocatForm(csrf))
		Expect(a.Status).To(Equal(http.StatusSeeOther), a.Body)
		id := support.Scalar[int64](ctx, pool, `SELECT id FROM inbox_erasure`)
		Expect(a.Location).To(Equal(fmt.Sprintf("/console/admin/erasures/%d?started=1", id)))
		Expect(a.Location).NotTo(Or(ContainSubstring("octocat"), ContainSubstring("583231")))

		p := admin.get(a.Location)
		Expect(p.Status).To(Equal(http.StatusOK))
		Expect(p.Body).To(ContainSubstring(fmt.Sprintf("Erasure %d was started.", id)))
		Expect(p.Body).To(ContainSubstring(`<dd class="erasure-state">RUNNING</dd>`))
		Expect(p.Body).To(ContainSubstring(`<meta http-equiv="refresh" content="5">`), "a running erasure's page follows it")
		Expect(p.Body).NotTo(ContainSubstring("octocat"), "the progress page shows the request, not the person")
	})

	It("shows the passes, stores and state of an erasure, and resumes it after the confirmation", func(ctx SpecContext) {
		row := inboxRow(ctx, f.acme.ID, octocatSender)
		Expect(admin.post("/console/admin/erasures", octocatForm(admin.csrf("/console/admin/erasures"))).Status).To(Equal(http.StatusSeeOther))
		id := support.Scalar[int64](ctx, pool, `SELECT id FROM inbox_erasure`)
		store := support.ErasureStore(pool)
		support.EraseRunning(ctx, store, id)
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE id = $1`, row)).To(Equal(0))

		p := admin.get(fmt.Sprintf("/console/admin/erasures/%d", id))
		Expect(p.Body).To(ContainSubstring(`<dd class="erasure-state">DONE</dd>`))
		Expect(p.Body).To(ContainSubstring(`<dd class="erasure-passes">1</dd>`))
		Expect(p.Body).To(ContainSubstring("<tr><td>1</td><td>workspace-inbox</td><td>1</td>"))
		Expect(p.Body).To(ContainSubstring("<tr><td>1</td><td>installation-inbox</td><td>0</td>"))
		Expect(p.Body).NotTo(ContainSubstring(`http-equiv="refresh"`), "a finished erasure's page stays still")
		// The look-up form of the erasure page goes to the same page.
		Expect(admin.get(fmt.Sprintf("/console/admin/erasures?id=%d", id)).Location).To(Equal(fmt.Sprintf("/console/admin/erasures/%d", id)))

		confirm := admin.get(fmt.Sprintf("/console/admin/erasures/%d/resume", id))
		Expect(confirm.Body).To(ContainSubstring(`id="confirm-resume"`))
		Expect(support.Scalar[string](ctx, pool, `SELECT state FROM inbox_erasure WHERE id = $1`, id)).To(Equal("DONE"), "the confirm page changes nothing")
		Expect(admin.post(fmt.Sprintf("/console/admin/erasures/%d/resume", id), url.Values{}).Status).To(Equal(http.StatusForbidden))
		a := admin.post(fmt.Sprintf("/console/admin/erasures/%d/resume", id), url.Values{"csrf": {admin.csrf("/console/admin/erasures")}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(a.Location).To(Equal(fmt.Sprintf("/console/admin/erasures/%d?resumed=1", id)))
		p = admin.get(a.Location)
		Expect(p.Body).To(ContainSubstring(`<dd class="erasure-state">RUNNING</dd>`))
		Expect(p.Body).To(ContainSubstring(`<dd class="erasure-passes">2</dd>`))
		support.EraseRunning(ctx, store, id)
		Expect(admin.get(fmt.Sprintf("/console/admin/erasures/%d", id)).Body).To(ContainSubstring("<tr><td>2</td><td>workspace-inbox</td><td>0</td>"))
		Expect(admin.get("/console/admin/erasures/999999").Status).To(Equal(http.StatusNotFound))
	})

	It("keeps what was typed and says why when the request is refused, and starts nothing", func(ctx SpecContext) {
		csrf := admin.csrf("/console/admin/erasures")
		unknown := octocatForm(csrf)
		unknown.Set("sourceServerUrl", "https://githb.com")
		for _, path := range []string{"/console/admin/erasures/preview", "/console/admin/erasures"} {
			a := admin.post(path, unknown)
			Expect(a.Status).To(Equal(http.StatusUnprocessableEntity), path)
			Expect(a.Body).To(ContainSubstring("No source with that server URL"))
			Expect(a.Body).To(ContainSubstring(`value="https://githb.com"`))
			Expect(a.Body).To(ContainSubstring(`value="octocat"`))
		}
		empty := octocatForm(csrf)
		empty.Set("identityId", "")
		empty["identityLogin"] = []string{"", "", "", "", ""}
		empty["identityId"] = []string{"", "", "", "", ""}
		a := admin.post("/console/admin/erasures/preview", empty)
		Expect(a.Status).To(Equal(http.StatusBadRequest))
		Expect(a.Body).To(ContainSubstring("invalid-erasure"))
		misaligned := octocatForm(csrf)
		misaligned["identityEmail"] = []string{""}
		Expect(admin.post("/console/admin/erasures/preview", misaligned).Status).To(Equal(http.StatusBadRequest))
		Expect(erasures(ctx)).To(Equal(0))
	})

	It("refuses every erasure page and action to who is not the instance administrator", func(ctx SpecContext) {
		inboxRow(ctx, f.acme.ID, octocatSender)
		Expect(admin.post("/console/admin/erasures", octocatForm(admin.csrf("/console/admin/erasures"))).Status).To(Equal(http.StatusSeeOther))
		id := support.Scalar[int64](ctx, pool, `SELECT id FROM inbox_erasure`)
		member := support.NewAccount(ctx, svc, fmt.Sprintf("mia%d", logins.Add(1)), false, "acme", "MEMBER")
		for _, who := range []string{f.ana.Token, member.Token} {
			b := signedIn(who)
			csrf := b.csrf("/console/workspaces")
			for _, path := range []string{"/console/admin/erasures", fmt.Sprintf("/console/admin/erasures/%d", id), fmt.Sprintf("/console/admin/erasures/%d/resume", id)} {
				Expect(b.get(path).Status).To(Equal(http.StatusForbidden), path)
			}
			for _, path := range []string{"/console/admin/erasures/preview", "/console/admin/erasures", fmt.Sprintf("/console/admin/erasures/%d/resume", id)} {
				a := b.post(path, octocatForm(csrf))
				Expect(a.Status).To(Equal(http.StatusForbidden), path)
				Expect(a.Body).NotTo(ContainSubstring("workspace-inbox"))
			}
		}
		Expect(erasures(ctx)).To(Equal(1))
		Expect(support.Scalar[int](ctx, pool, `SELECT passes FROM inbox_erasure WHERE id = $1`, id)).To(Equal(1))
	})
})

var _ = Describe("Accounts and tokens in the console", func() {
	var f fixture
	var admin browserless
	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		admin = signedIn(adminToken)
	})

	It("lists the accounts paged, creates one and shows its token once, on a page no cache keeps", func(ctx SpecContext) {
		for i := range 49 {
			support.NewAccount(ctx, svc, fmt.Sprintf("bulk%d-%d", logins.Add(1), i), false, "", "")
		}
		first := admin.get("/console/admin/accounts")
		Expect(first.Status).To(Equal(http.StatusOK))
		Expect(first.Body).To(ContainSubstring("51 in all"))
		Expect(strings.Count(first.Body, `<tr id="account-`)).To(Equal(50))
		Expect(first.Body).To(ContainSubstring(`href="?page=1"`))
		second := admin.get("/console/admin/accounts?page=1")
		Expect(strings.Count(second.Body, `<tr id="account-`)).To(Equal(1))

		a := admin.post("/console/admin/accounts", url.Values{"csrf": {admin.csrf("/console/admin/accounts")}, "login": {"newcomer"}, "instanceAdmin": {"on"}})
		Expect(a.Status).To(Equal(http.StatusCreated), a.Body)
		token := secretOf(a)
		p, err := svc.Authenticate(ctx, token)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.InstanceAdmin).To(BeTrue())
		Expect(support.Scalar[string](ctx, pool, `SELECT login FROM account WHERE id = $1`, p.AccountID)).To(Equal("newcomer"))
		Expect(admin.get("/console/admin/accounts?page=1").Body).NotTo(ContainSubstring(token), "shown once")
		Expect(admin.get("/console/admin/accounts?page=1").Body).To(ContainSubstring("newcomer"))
	})

	It("refuses a bad or taken login with what was typed kept, and creates nothing", func(ctx SpecContext) {
		before := support.Count(ctx, pool, `SELECT count(*) FROM account`)
		csrf := admin.csrf("/console/admin/accounts")
		bad := admin.post("/console/admin/accounts", url.Values{"csrf": {csrf}, "login": {"no spaces"}})
		Expect(bad.Status).To(Equal(http.StatusBadRequest))
		Expect(bad.Body).To(And(ContainSubstring("invalid-login"), ContainSubstring(`value="no spaces"`)))
		taken := admin.post("/console/admin/accounts", url.Values{"csrf": {csrf}, "login": {f.ana.Login}})
		Expect(taken.Status).To(Equal(http.StatusConflict))
		Expect(taken.Body).To(ContainSubstring("exists already"))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM account`)).To(Equal(before))
	})

	It("disables an account after the confirmation: its tokens stop working and its session ends", func(ctx SpecContext) {
		ana := signedIn(f.ana.Token)
		path := fmt.Sprintf("/console/admin/accounts/%d/disable", f.ana.ID)
		Expect(admin.get(path).Body).To(ContainSubstring(`id="confirm-disable"`))
		Expect(authenticates(ctx, f.ana.Token)).To(BeTrue(), "the confirm page changes nothing")
		Expect(admin.post(path, url.Values{}).Status).To(Equal(http.StatusForbidden))
		Expect(authenticates(ctx, f.ana.Token)).To(BeTrue())
		a := admin.post(path, url.Values{"csrf": {admin.csrf("/console/admin/accounts")}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		list := admin.get(a.Location)
		Expect(list.Body).To(ContainSubstring(fmt.Sprintf("Account %s (%d) is disabled", f.ana.Login, f.ana.ID)))
		Expect(authenticates(ctx, f.ana.Token)).To(BeFalse())
		Expect(ana.get("/console/workspaces").Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces"), "the session is gone: back to sign-in, keeping where it was")
	})

	It("issues a token shown once, lists the account's tokens paged, and revokes one", func(ctx SpecContext) {
		path := fmt.Sprintf("/console/admin/accounts/%d/tokens", f.ana.ID)
		csrf := admin.csrf(path)
		a := admin.post(path, url.Values{"csrf": {csrf}, "expiresAt": {"2099-01-31T12:00"}})
		Expect(a.Status).To(Equal(http.StatusCreated), a.Body)
		token := secretOf(a)
		Expect(a.Body).To(ContainSubstring("expiring 2099-01-31 12:00:00Z"))
		Expect(authenticates(ctx, token)).To(BeTrue())
		issued := support.Scalar[int64](ctx, pool, `SELECT max(id) FROM account_token WHERE account_id = $1`, f.ana.ID)

		list := admin.get(path)
		Expect(list.Body).To(ContainSubstring(fmt.Sprintf(`<tr id="token-%d">`, issued)))
		Expect(list.Body).To(ContainSubstring("2 in all"))
		Expect(list.Body).NotTo(ContainSubstring(token))

		revoke := fmt.Sprintf("%s/%d/revoke", path, issued)
		Expect(admin.post(revoke, url.Values{}).Status).To(Equal(http.StatusForbidden))
		Expect(authenticates(ctx, token)).To(BeTrue())
		r := admin.post(revoke, url.Values{"csrf": {csrf}})
		Expect(r.Status).To(Equal(http.StatusSeeOther))
		Expect(admin.get(r.Location).Body).To(ContainSubstring(fmt.Sprintf("Token %d was revoked.", issued)))
		Expect(authenticates(ctx, token)).To(BeFalse())
		Expect(authenticates(ctx, f.ana.Token)).To(BeTrue(), "the account's other token stays valid")
	})

	It("refuses an expiry that is no date or is past, keeping what was typed, and issues nothing", func(ctx SpecContext) {
		path := fmt.Sprintf("/console/admin/accounts/%d/tokens", f.ana.ID)
		csrf := admin.csrf(path)
		for _, expiry := range []string{"tomorrow", "2001-01-01T00:00"} {
			a := admin.post(path, url.Values{"csrf": {csrf}, "expiresAt": {expiry}})
			Expect(a.Status).To(Equal(http.StatusBadRequest), expiry)
			Expect(a.Body).To(ContainSubstring(`value="` + expiry + `"`))
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM account_token WHERE account_id = $1`, f.ana.ID)).To(Equal(1))
	})

	It("refuses the account and token pages and actions to a workspace ADMIN and a MEMBER", func(ctx SpecContext) {
		member := support.NewAccount(ctx, svc, fmt.Sprintf("mo%d", logins.Add(1)), false, "acme", "MEMBER")
		before := support.Count(ctx, pool, `SELECT count(*) FROM account_token`)
		for _, who := range []management.CreatedAccount{f.ana, member} {
			b := signedIn(who.Token)
			csrf := b.csrf("/console/workspaces")
			tokens := fmt.Sprintf("/console/admin/accounts/%d/tokens", f.olga.ID)
			for _, path := range []string{"/console/admin/accounts", tokens, fmt.Sprintf("/console/admin/accounts/%d/disable", f.olga.ID),
				fmt.Sprintf("/console/admin/accounts/%d/tokens", who.ID)} {
				Expect(b.get(path).Status).To(Equal(http.StatusForbidden), path)
			}
			olgaToken := support.Scalar[int64](ctx, pool, `SELECT min(id) FROM account_token WHERE account_id = $1`, f.olga.ID)
			for _, path := range []string{"/console/admin/accounts", tokens, fmt.Sprintf("/console/admin/accounts/%d/disable", f.olga.ID),
				fmt.Sprintf("%s/%d/revoke", tokens, olgaToken)} {
				a := b.post(path, url.Values{"csrf": {csrf}, "login": {"intruder"}})
				Expect(a.Status).To(Equal(http.StatusForbidden), path)
				Expect(shownToken.MatchString(a.Body)).To(BeFalse())
			}
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM account WHERE login = 'intruder'`)).To(Equal(0))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM account_token`)).To(Equal(before))
		Expect(authenticates(ctx, f.olga.Token)).To(BeTrue())
	})

	It("rotates the signed-in account's own token: the new one is shown once, the old one and the session end", func(ctx SpecContext) {
		ana := signedIn(f.ana.Token)
		page := ana.get("/console/token")
		Expect(page.Body).To(ContainSubstring(`id="rotate-token"`))
		Expect(ana.post("/console/token/rotate", url.Values{}).Status).To(Equal(http.StatusForbidden))
		Expect(authenticates(ctx, f.ana.Token)).To(BeTrue())

		a := ana.post("/console/token/rotate", url.Values{"csrf": {ana.csrf("/console/token")}})
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		token := secretOf(a)
		Expect(a.Body).NotTo(ContainSubstring(`action="/console/sign-out"`), "the answer is no longer signed in")
		Expect(authenticates(ctx, token)).To(BeTrue())
		Expect(authenticates(ctx, f.ana.Token)).To(BeFalse())
		cleared := sessionCookie(a.Header)
		Expect(cleared).NotTo(BeNil(), "the answer clears the session cookie")
		Expect(cleared.MaxAge).To(BeNumerically("<", 0))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM console_session WHERE account_id = $1`, f.ana.ID)).To(Equal(0))
		Expect(ana.get("/console/workspaces").Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces"), "the session is gone: back to sign-in, keeping where it was")
		Expect(signedIn(token).get("/console/workspaces").Status).To(Equal(http.StatusOK))
	})

	It("has no token to rotate for the configured administrator token", func() {
		Expect(admin.get("/console/token").Body).NotTo(ContainSubstring(`id="rotate-token"`))
		Expect(admin.post("/console/token/rotate", url.Values{"csrf": {admin.csrf("/console/token")}}).Status).To(Equal(http.StatusConflict))
		Expect(admin.get("/console/workspaces").Status).To(Equal(http.StatusOK), "the session goes on")
	})
})

var _ = Describe("Workspace members in the console", func() {
	var f fixture
	BeforeEach(func(ctx SpecContext) { f = newFixture(ctx) })

	role := func(ctx context.Context, ws, account int64) string {
		GinkgoHelper()
		return support.Scalar[string](ctx, pool, `SELECT coalesce((SELECT role FROM workspace_member WHERE workspace_id = $1 AND account_id = $2), 'none')`, ws, account)
	}

	invitationOf := func(ctx context.Context, login string) int64 {
		GinkgoHelper()
		return support.Scalar[int64](ctx, pool, `SELECT id FROM workspace_invitation WHERE login = $1 AND accepted_at IS NULL`, login)
	}

	It("lets the workspace's ADMIN invite by login, and the invited account accept on its workspaces page; then change the role and remove", func(ctx SpecContext) {
		ana := signedIn(f.ana.Token)
		page := ana.get("/console/workspaces/acme/members")
		Expect(page.Status).To(Equal(http.StatusOK))
		Expect(page.Body).To(ContainSubstring(fmt.Sprintf(`<tr id="member-%d">`, f.ana.ID)))
		Expect(page.Body).To(ContainSubstring("1 in all"))
		Expect(page.Body).NotTo(ContainSubstring(f.olga.Login), "a member of another workspace is not listed")
		Expect(page.Body).To(ContainSubstring(`id="invite"`))
		Expect(page.Body).NotTo(ContainSubstring(`id="add-member"`), "adding an account by id is the instance administrator's")
		csrf := ana.csrf("/console/workspaces/acme/members")

		a := ana.post("/console/workspaces/acme/invitations", url.Values{"csrf": {csrf}, "login": {f.olga.Login}, "role": {"MEMBER"}})
		Expect(a.Status).To(Equal(http.StatusSeeOther), a.Body)
		sent := ana.get(a.Location).Body
		Expect(sent).To(ContainSubstring("Invitation sent."))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("none"), "not a member before accepting")

		olga := signedIn(f.olga.Token)
		id := invitationOf(ctx, f.olga.Login)
		workspaces := olga.get("/console/workspaces")
		Expect(workspaces.Body).To(ContainSubstring(fmt.Sprintf(`<tr id="invitation-%d">`, id)))
		Expect(workspaces.Body).To(ContainSubstring(f.ana.Login), "names who invited")
		accepted := olga.post(fmt.Sprintf("/console/invitations/%d/accept", id), url.Values{"csrf": {olga.csrf("/console/workspaces")}})
		Expect(accepted.Status).To(Equal(http.StatusSeeOther), accepted.Body)
		joined := olga.get(accepted.Location).Body
		Expect(joined).To(ContainSubstring("You are a member of acme (acme)."))
		Expect(joined).NotTo(ContainSubstring(fmt.Sprintf(`<tr id="invitation-%d">`, id)))
		Expect(joined).To(ContainSubstring(`id="ws-acme"`))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("MEMBER"))

		a = ana.post(fmt.Sprintf("/console/workspaces/acme/members/%d", f.olga.ID), url.Values{"csrf": {csrf}, "role": {"ADMIN"}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(ana.get(a.Location).Body).To(ContainSubstring(fmt.Sprintf("%s (%d) is ADMIN of acme.", f.olga.Login, f.olga.ID)))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("ADMIN"))

		a = ana.post(fmt.Sprintf("/console/workspaces/acme/members/%d/remove", f.olga.ID), url.Values{"csrf": {csrf}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(ana.get(a.Location).Body).To(ContainSubstring(fmt.Sprintf("Account %d is no longer a member of acme.", f.olga.ID)))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("none"))
	})

	It("answers an invitation of an unknown login exactly as one of an existing account", func(ctx SpecContext) {
		ana := signedIn(f.ana.Token)
		csrf := ana.csrf("/console/workspaces/acme/members")
		existing := ana.post("/console/workspaces/acme/invitations", url.Values{"csrf": {csrf}, "login": {f.olga.Login}, "role": {"MEMBER"}})
		unknown := ana.post("/console/workspaces/acme/invitations", url.Values{"csrf": {csrf}, "login": {"nobody-yet"}, "role": {"MEMBER"}})
		Expect(unknown.Status).To(Equal(existing.Status))
		Expect(unknown.Location).To(Equal(existing.Location))
		Expect(unknown.Body).To(Equal(existing.Body))
		Expect(ana.get(unknown.Location).Body).To(Equal(ana.get(existing.Location).Body))
	})

	It("does not let an account accept someone else's invitation", func(ctx SpecContext) {
		ana := signedIn(f.ana.Token)
		Expect(ana.post("/console/workspaces/acme/invitations", url.Values{"csrf": {ana.csrf("/console/workspaces/acme/members")},
			"login": {f.olga.Login}, "role": {"ADMIN"}}).Status).To(Equal(http.StatusSeeOther))
		id := invitationOf(ctx, f.olga.Login)
		other := signedIn(support.NewAccount(ctx, svc, fmt.Sprintf("mel%d", logins.Add(1)), false, "", "").Token)
		Expect(other.get("/console/workspaces").Body).NotTo(ContainSubstring(fmt.Sprintf(`invitation-%d`, id)))
		a := other.post(fmt.Sprintf("/console/invitations/%d/accept", id), url.Values{"csrf": {other.csrf("/console/workspaces")}})
		Expect(a.Status).To(Equal(http.StatusNotFound))
		Expect(a.Body).To(ContainSubstring("This invitation is not yours, has expired or was accepted already."))
		olga := signedIn(f.olga.Token)
		Expect(olga.post(fmt.Sprintf("/console/invitations/%d/accept", id), url.Values{}).Status).To(Equal(http.StatusForbidden), "no CSRF token")
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation WHERE accepted_at IS NOT NULL`)).To(Equal(0))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("none"))
	})

	It("refuses bad input and the last ADMIN's demotion or removal with the reason, changing nothing", func(ctx SpecContext) {
		ana := signedIn(f.ana.Token)
		csrf := ana.csrf("/console/workspaces/acme/members")
		for _, form := range []url.Values{
			{"csrf": {csrf}, "account": {"someone"}, "role": {"MEMBER"}},
			{"csrf": {csrf}, "account": {fmt.Sprint(f.olga.ID)}, "role": {"OWNER"}},
		} {
			a := ana.post("/console/workspaces/acme/members", form)
			Expect(a.Status).To(Equal(http.StatusBadRequest), form.Encode())
		}
		for _, form := range []url.Values{
			{"csrf": {csrf}, "login": {"olga smith"}, "role": {"MEMBER"}},
			{"csrf": {csrf}, "login": {f.olga.Login}, "role": {"OWNER"}},
		} {
			a := ana.post("/console/workspaces/acme/invitations", form)
			Expect(a.Status).To(Equal(http.StatusBadRequest), form.Encode())
			Expect(a.Body).To(ContainSubstring(`value="` + form.Get("login") + `"`))
		}
		// A workspace ADMIN adds no account by id: the same answer for an account that exists
		// and one that does not.
		existing := ana.post("/console/workspaces/acme/members", url.Values{"csrf": {csrf}, "account": {fmt.Sprint(f.olga.ID)}, "role": {"MEMBER"}})
		unknown := ana.post("/console/workspaces/acme/members", url.Values{"csrf": {csrf}, "account": {"99999999"}, "role": {"MEMBER"}})
		Expect(existing.Status).To(Equal(http.StatusNotFound))
		Expect(unknown.Status).To(Equal(http.StatusNotFound))
		Expect(existing.Body).To(ContainSubstring(fmt.Sprintf("Account %d is no member of acme. Invite people by login.", f.olga.ID)))
		message := regexp.MustCompile(`<p class="message" role="alert">([^<]*)</p>`)
		Expect(message.FindStringSubmatch(unknown.Body)).To(Equal([]string{
			strings.ReplaceAll(message.FindString(existing.Body), fmt.Sprint(f.olga.ID), "99999999"),
			"Account 99999999 is no member of acme. Invite people by login.",
		}))
		demote := ana.post(fmt.Sprintf("/console/workspaces/acme/members/%d", f.ana.ID), url.Values{"csrf": {csrf}, "role": {"MEMBER"}})
		Expect(demote.Status).To(Equal(http.StatusConflict))
		Expect(demote.Body).To(ContainSubstring("last-admin"))
		remove := ana.post(fmt.Sprintf("/console/workspaces/acme/members/%d/remove", f.ana.ID), url.Values{"csrf": {csrf}})
		Expect(remove.Status).To(Equal(http.StatusConflict))
		Expect(remove.Body).To(ContainSubstring("last ADMIN"))
		Expect(role(ctx, f.acme.ID, f.ana.ID)).To(Equal("ADMIN"))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("none"))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation`)).To(Equal(0))
	})

	It("refuses the member pages and actions to a MEMBER, to another workspace's ADMIN, and every post without the CSRF token", func(ctx SpecContext) {
		member := support.NewAccount(ctx, svc, fmt.Sprintf("mel%d", logins.Add(1)), false, "acme", "MEMBER")
		for _, who := range []string{member.Token, f.olga.Token} {
			b := signedIn(who)
			csrf := b.csrf("/console/workspaces")
			Expect(b.get("/console/workspaces/acme/members").Status).To(Equal(http.StatusForbidden))
			for _, path := range []string{"/console/workspaces/acme/members", fmt.Sprintf("/console/workspaces/acme/members/%d", member.ID),
				fmt.Sprintf("/console/workspaces/acme/members/%d/remove", f.ana.ID), "/console/workspaces/acme/invitations"} {
				a := b.post(path, url.Values{"csrf": {csrf}, "account": {fmt.Sprint(f.olga.ID)}, "login": {f.olga.Login}, "role": {"ADMIN"}})
				Expect(a.Status).To(Equal(http.StatusForbidden), path)
			}
		}
		ana := signedIn(f.ana.Token)
		Expect(ana.post("/console/workspaces/acme/members", url.Values{"account": {fmt.Sprint(f.olga.ID)}, "role": {"ADMIN"}}).Status).To(Equal(http.StatusForbidden))
		Expect(ana.post("/console/workspaces/acme/invitations", url.Values{"login": {f.olga.Login}, "role": {"ADMIN"}}).Status).To(Equal(http.StatusForbidden))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation`)).To(Equal(0))
		Expect(ana.post(fmt.Sprintf("/console/workspaces/acme/members/%d/remove", member.ID), url.Values{"csrf": {"forged"}}).Status).To(Equal(http.StatusForbidden))
		Expect(role(ctx, f.acme.ID, f.olga.ID)).To(Equal("none"))
		Expect(role(ctx, f.acme.ID, f.ana.ID)).To(Equal("ADMIN"))
		Expect(role(ctx, f.acme.ID, member.ID)).To(Equal("MEMBER"))
	})

	It("lets the instance administrator manage any workspace's members", func(ctx SpecContext) {
		admin := signedIn(adminToken)
		page := admin.get("/console/workspaces/other/members").Body
		Expect(page).To(ContainSubstring(fmt.Sprintf(`<tr id="member-%d">`, f.olga.ID)))
		Expect(page).To(And(ContainSubstring(`id="add-member"`), ContainSubstring(`id="invite"`)))
		a := admin.post("/console/workspaces/other/members", url.Values{"csrf": {admin.csrf("/console/workspaces")}, "account": {fmt.Sprint(f.ana.ID)}, "role": {"MEMBER"}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(role(ctx, support.Scalar[int64](ctx, pool, `SELECT id FROM workspace WHERE slug = 'other'`), f.ana.ID)).To(Equal("MEMBER"))
	})
})

var _ = Describe("The administration forms' CSRF token", func() {
	It("refuses every administration post of a signed-in instance administrator without it, changing nothing", func(ctx SpecContext) {
		f := newFixture(ctx)
		admin := signedIn(adminToken)
		inboxRow(ctx, f.acme.ID, octocatSender)
		Expect(admin.post("/console/admin/erasures", octocatForm(admin.csrf("/console/admin/erasures"))).Status).To(Equal(http.StatusSeeOther))
		erasure := support.Scalar[int64](ctx, pool, `SELECT id FROM inbox_erasure`)
		token := support.Scalar[int64](ctx, pool, `SELECT min(id) FROM account_token WHERE account_id = $1`, f.ana.ID)
		acme, err := svc.Manage(ctx, support.InstanceAdmin, "acme")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Invite(ctx, acme, "pending-guest", "MEMBER")).To(Succeed())
		invitation := support.Scalar[int64](ctx, pool, `SELECT id FROM workspace_invitation`)
		tables := func() []int {
			return []int{support.Count(ctx, pool, `SELECT count(*) FROM account`), support.Count(ctx, pool, `SELECT count(*) FROM account_token`),
				support.Count(ctx, pool, `SELECT count(*) FROM workspace_member`), support.Count(ctx, pool, `SELECT count(*) FROM inbox_erasure`),
				support.Count(ctx, pool, `SELECT count(*) FROM workspace_invitation WHERE accepted_at IS NULL`),
				support.Scalar[int](ctx, pool, `SELECT passes FROM inbox_erasure`), support.Count(ctx, pool, `SELECT count(*) FROM account WHERE disabled_at IS NOT NULL`)}
		}
		before := tables()
		form := octocatForm("")
		form.Set("login", "forged")
		form.Set("account", fmt.Sprint(f.olga.ID))
		form.Set("role", "ADMIN")
		for _, path := range []string{
			"/console/admin/erasures/preview", "/console/admin/erasures", fmt.Sprintf("/console/admin/erasures/%d/resume", erasure),
			"/console/admin/accounts", fmt.Sprintf("/console/admin/accounts/%d/disable", f.ana.ID),
			fmt.Sprintf("/console/admin/accounts/%d/tokens", f.ana.ID), fmt.Sprintf("/console/admin/accounts/%d/tokens/%d/revoke", f.ana.ID, token),
			"/console/token/rotate", "/console/workspaces/acme/members", fmt.Sprintf("/console/workspaces/acme/members/%d", f.ana.ID),
			fmt.Sprintf("/console/workspaces/acme/members/%d/remove", f.ana.ID), "/console/workspaces/acme/invitations",
			fmt.Sprintf("/console/invitations/%d/accept", invitation),
		} {
			a := admin.post(path, form)
			Expect(a.Status).To(Equal(http.StatusForbidden), path)
			Expect(a.Body).To(ContainSubstring("Form expired"), path)
		}
		Expect(tables()).To(Equal(before))
		Expect(authenticates(ctx, f.ana.Token)).To(BeTrue())
	})
})
