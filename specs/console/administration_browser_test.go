package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// screenshot, when HEPHAESTUS_CONSOLE_SCREENSHOTS names a directory, writes there a full-page PNG
// of the page the browser spec reached (to look at the pages).
func screenshot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		dir := os.Getenv("HEPHAESTUS_CONSOLE_SCREENSHOTS")
		if dir == "" {
			return nil
		}
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o600)
	})
}

// noticeSays waits until the page's notice contains want: the page before an action may show a
// notice of its own, so waiting for any notice could read the page the action left.
func noticeSays(want string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		check := fmt.Sprintf(`(() => { const n = document.querySelector(".notice"); return n !== null && n.textContent.includes(%q); })()`, want)
		for {
			ok, err := chromedp.Evaluate[bool](check)(ctx, t)
			if err == nil && ok {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("no notice saying %q: %w", want, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

var _ = Describe("The administration pages in a real browser", Ordered, func() {
	var browser context.Context

	BeforeAll(func() { browser = startChromium(chromedp.WindowSize(1280, 900)) })

	tab := func() context.Context {
		GinkgoHelper()
		// Generous: Chromium shares the machine's cores with the other suites.
		return newTab(browser, 90*time.Second)
	}
	signIn := func(token string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			chromedp.Navigate(server.URL+"/console"),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("#sign-in")),
			// Signed in when the form is gone (a navigation now would cancel the sign-in).
			chromedp.WaitNotPresent(chromedp.CSS("#token")),
		)
	}
	text := func(t context.Context, selector string) string {
		GinkgoHelper()
		s, err := chromedp.Run(t, chromedp.Text(chromedp.CSS(selector)))
		Expect(err).NotTo(HaveOccurred())
		return strings.TrimSpace(s)
	}

	var f fixture
	BeforeEach(func(ctx SpecContext) { f = newFixture(ctx) })

	It("previews a person erasure, starts it after the confirmation and shows its progress", func(ctx SpecContext) {
		inboxRow(ctx, f.acme.ID, octocatSender)
		t := tab()
		Expect(chromedp.Do(t,
			signIn(adminToken),
			chromedp.Click(chromedp.CSS(`nav a[href="/console/admin/erasures"]`)),
			chromedp.WaitVisible(chromedp.CSS("#preview-erasure")),
			chromedp.SendKeys(chromedp.CSS("#erasure-provider"), "GITHUB"),
			chromedp.SendKeys(chromedp.CSS("#erasure-source"), "https://github.com"),
			chromedp.SendKeys(chromedp.CSS("#identity-id-0"), "583231"),
			chromedp.SendKeys(chromedp.CSS("#identity-login-0"), "octocat"),
			screenshot("erasure-form"),
			chromedp.Click(chromedp.CSS("#preview-erasure")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-erasure")),
			screenshot("erasure-preview"),
		)).To(Succeed())
		Expect(text(t, "#matches-workspace-inbox")).To(HaveSuffix("1"))
		Expect(text(t, "#matches-total")).To(Equal("1"))
		Expect(erasures(ctx)).To(Equal(0))
		Expect(chromedp.Do(t,
			chromedp.Click(chromedp.CSS("#confirm-erasure")),
			noticeSays("was started"),
			screenshot("erasure-progress"),
		)).To(Succeed())
		Expect(text(t, ".erasure-state")).To(Equal("RUNNING"))
		Expect(erasures(ctx)).To(Equal(1))
	})

	It("creates an account and shows its token once, then disables it after the confirmation", func(ctx SpecContext) {
		t := tab()
		Expect(chromedp.Do(t,
			signIn(adminToken),
			chromedp.Click(chromedp.CSS(`nav a[href="/console/admin/accounts"]`)),
			chromedp.WaitVisible(chromedp.CSS("#create-account")),
			chromedp.SendKeys(chromedp.CSS("#account-login"), "newcomer"),
			chromedp.Click(chromedp.CSS("#create-account")),
			chromedp.WaitVisible(chromedp.CSS("#new-token")),
			screenshot("account-created"),
		)).To(Succeed())
		token := text(t, "#new-token")
		Expect(authenticates(ctx, token)).To(BeTrue())
		id := support.Scalar[int64](ctx, pool, `SELECT id FROM account WHERE login = 'newcomer'`)
		Expect(chromedp.Do(t,
			chromedp.Click(chromedp.CSS(`main a[href="/console/admin/accounts"]`)),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf("#disable-%d", id))),
			screenshot("accounts"),
			chromedp.Click(chromedp.CSS(fmt.Sprintf("#disable-%d", id))),
			chromedp.WaitVisible(chromedp.CSS("#confirm-disable")),
			chromedp.Click(chromedp.CSS("#confirm-disable")),
			noticeSays(fmt.Sprintf("Account newcomer (%d) is disabled", id)),
		)).To(Succeed())
		Expect(authenticates(ctx, token)).To(BeFalse())
	})

	It("issues another token of an account and revokes it", func(ctx SpecContext) {
		t := tab()
		Expect(chromedp.Do(t,
			signIn(adminToken),
			chromedp.Navigate(fmt.Sprintf("%s/console/admin/accounts/%d/tokens", server.URL, f.ana.ID)),
			chromedp.WaitVisible(chromedp.CSS("#issue-token")),
			chromedp.Click(chromedp.CSS("#issue-token")),
			chromedp.WaitVisible(chromedp.CSS("#new-token")),
		)).To(Succeed())
		token := text(t, "#new-token")
		Expect(authenticates(ctx, token)).To(BeTrue())
		issued := support.Scalar[int64](ctx, pool, `SELECT max(id) FROM account_token WHERE account_id = $1`, f.ana.ID)
		Expect(chromedp.Do(t,
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`main a[href="/console/admin/accounts/%d/tokens"]`, f.ana.ID))),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf("#revoke-%d", issued))),
			screenshot("tokens"),
			chromedp.Click(chromedp.CSS(fmt.Sprintf("#revoke-%d", issued))),
			noticeSays(fmt.Sprintf("Token %d was revoked.", issued)),
		)).To(Succeed())
		Expect(authenticates(ctx, token)).To(BeFalse())
		Expect(authenticates(ctx, f.ana.Token)).To(BeTrue())
	})

	It("lets a workspace ADMIN invite by login, the invited account accept, and the ADMIN change its role and remove it", func(ctx SpecContext) {
		t := tab()
		olga := fmt.Sprint(f.olga.ID)
		Expect(chromedp.Do(t,
			signIn(f.ana.Token),
			chromedp.Navigate(server.URL+"/console/workspaces/acme/connections"),
			chromedp.Click(chromedp.CSS(`nav a[href="/console/workspaces/acme/members"]`)),
			chromedp.WaitVisible(chromedp.CSS("#invite")),
			chromedp.SendKeys(chromedp.CSS("#invite-login"), f.olga.Login),
			chromedp.Click(chromedp.CSS("#invite")),
			noticeSays("Invitation sent."),
		)).To(Succeed())
		id := support.Scalar[int64](ctx, pool, `SELECT id FROM workspace_invitation WHERE login = $1`, f.olga.Login)

		t = tab()
		Expect(chromedp.Do(t,
			signIn(f.olga.Token),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf("#accept-%d", id))),
			screenshot("invitations"),
			chromedp.Click(chromedp.CSS(fmt.Sprintf("#accept-%d", id))),
			noticeSays("You are a member of acme"),
		)).To(Succeed())
		Expect(support.Scalar[string](ctx, pool, `SELECT role FROM workspace_member WHERE account_id = $1 AND workspace_id = $2`, f.olga.ID, f.acme.ID)).
			To(Equal("MEMBER"))

		t = tab()
		Expect(chromedp.Do(t,
			signIn(f.ana.Token),
			chromedp.Navigate(server.URL+"/console/workspaces/acme/members"),
			chromedp.WaitVisible(chromedp.CSS("#set-role-"+olga)),
			chromedp.SetValue(chromedp.CSS("#role-"+olga), "ADMIN"),
			chromedp.Click(chromedp.CSS("#set-role-"+olga)),
			noticeSays("is ADMIN of acme"),
			screenshot("members"),
		)).To(Succeed())
		Expect(text(t, fmt.Sprintf("#member-%s .member-role", olga))).To(Equal("ADMIN"))
		Expect(chromedp.Do(t,
			chromedp.Click(chromedp.CSS("#remove-"+olga)),
			noticeSays("no longer a member"),
		)).To(Succeed())
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM workspace_member WHERE account_id = $1 AND workspace_id = $2`, f.olga.ID, f.acme.ID)).To(Equal(0))
	})

	It("rotates the signed-in account's token and signs in again with the new one", func(ctx SpecContext) {
		t := tab()
		Expect(chromedp.Do(t,
			signIn(f.ana.Token),
			chromedp.Click(chromedp.CSS(`nav a[href="/console/token"]`)),
			chromedp.WaitVisible(chromedp.CSS("#rotate-token")),
			chromedp.Click(chromedp.CSS("#rotate-token")),
			chromedp.WaitVisible(chromedp.CSS("#new-token")),
			screenshot("token-rotated"),
		)).To(Succeed())
		token := text(t, "#new-token")
		Expect(authenticates(ctx, f.ana.Token)).To(BeFalse())
		Expect(chromedp.Do(t,
			signIn(token),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
		)).To(Succeed())
	})
})
