package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// shot writes a full-page screenshot of t as name.png into $HEPHAESTUS_CONSOLE_SHOTS, when set
// (for a person to look at; nothing is compared).
func shot(t context.Context, name string) {
	GinkgoHelper()
	dir := os.Getenv("HEPHAESTUS_CONSOLE_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(t, chromedp.FullScreenshot(100))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)).To(Succeed())
}

// chromiumPath is Debian's chromium (.ci/run installs it when missing), or HEPHAESTUS_CHROMIUM.
func chromiumPath() string {
	if p := os.Getenv("HEPHAESTUS_CHROMIUM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return "/usr/bin/chromium"
}

// startChromium starts a headless Chromium for an Ordered container (opts add to the console
// specs' options), and stops it after the container.
func startChromium(opts ...chromedp.ExecAllocatorOption) context.Context {
	GinkgoHelper()
	path := chromiumPath()
	_, err := os.Stat(path)
	Expect(err).NotTo(HaveOccurred(), "the browser specs need Chromium (apt-get install chromium; .ci/run installs it)")
	opts = append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(GinkgoT().TempDir()),
	}, opts...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	DeferCleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	DeferCleanup(cancelBrowser)
	Expect(chromedp.Do(browser)).To(Succeed())
	return browser
}

// newTab is a fresh tab of browser, bounded by timeout, without the cookies of earlier specs;
// it closes when the spec ends.
func newTab(browser context.Context, timeout time.Duration) context.Context {
	GinkgoHelper()
	t, cancel := chromedp.NewContext(browser)
	DeferCleanup(cancel)
	t, cancelTimeout := context.WithTimeout(t, timeout)
	DeferCleanup(cancelTimeout)
	_, err := chromedp.Call(t, network.ClearBrowserCookies, cdp.Empty{})
	Expect(err).NotTo(HaveOccurred())
	return t
}

// The browser specs share one headless Chromium (one per suite); each spec opens its own tab
// with no cookies.
var _ = Describe("The console in a real browser", Ordered, func() {
	var browser context.Context

	BeforeAll(func() { browser = startChromium() })

	// tab is a fresh tab of the browser, bounded in time, without the cookies of earlier specs.
	tab := func() context.Context {
		GinkgoHelper()
		return newTab(browser, 30*time.Second)
	}

	var f fixture
	BeforeEach(func(ctx SpecContext) { f = newFixture(ctx) })

	signIn := func(token string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			chromedp.Navigate(server.URL+"/console"),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("#sign-in")),
		)
	}
	text := func(t context.Context, selector string) string {
		GinkgoHelper()
		s, err := chromedp.Run(t, chromedp.Text(chromedp.CSS(selector)))
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	It("signs in, opens the dead letter, replays it after the confirmation, and the list no longer shows it", func(ctx SpecContext) {
		t := tab()
		row := fmt.Sprintf("#dead-%d", f.deadID)
		Expect(chromedp.Do(t,
			signIn(f.ana.Token),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			chromedp.Click(chromedp.CSS(`section a[href="/console/workspaces/acme/dead-letters"]`)),
			chromedp.WaitVisible(chromedp.CSS(row)),
			chromedp.Click(chromedp.CSS(row+" a")),
			chromedp.WaitVisible(chromedp.CSS("#replay")),
			chromedp.Click(chromedp.CSS("#replay")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-replay")),
			chromedp.Click(chromedp.CSS("#confirm-replay")),
			chromedp.WaitVisible(chromedp.CSS(".notice")),
		)).To(Succeed())
		notice := text(t, ".notice")
		left, err := chromedp.Run(t, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, row)))
		Expect(err).NotTo(HaveOccurred())
		Expect(notice).To(ContainSubstring(fmt.Sprintf("Dead letter %d was replayed", f.deadID)))
		Expect(left).To(Equal(0))
		Expect(rowState(ctx, f.deadID)).To(Equal("QUEUED"))
	})

	It("does not open the dead letter for a member of another workspace", func(ctx SpecContext) {
		t := tab()
		Expect(chromedp.Do(t,
			signIn(f.olga.Token),
			chromedp.WaitVisible(chromedp.CSS("#ws-other")),
			chromedp.Navigate(fmt.Sprintf("%s/console/workspaces/acme/dead-letters/%d", server.URL, f.deadID)),
			chromedp.WaitVisible(chromedp.CSS("h1")),
		)).To(Succeed())
		title, body := text(t, "h1"), text(t, "body")
		Expect(title).To(Equal("Forbidden"))
		Expect(body).NotTo(ContainSubstring("Broken"))
		Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
	})

	It("can be used with the keyboard alone: Tab and Enter reach sign-in, the dead letter and the replay", func(ctx SpecContext) {
		t := tab()
		// focusOn presses Tab until the focused element matches selector (at most 40 times).
		focusOn := func(selector string) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				for range 40 {
					focused, err := chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement !== null && document.activeElement.matches(%q)`, selector))(ctx, t)
					if err != nil {
						return err
					}
					if focused {
						return nil
					}
					if _, err := chromedp.KeyEvent(kb.Tab)(ctx, t); err != nil {
						return err
					}
				}
				return fmt.Errorf("tab never reached %s", selector)
			})
		}
		row := fmt.Sprintf("#dead-%d", f.deadID)
		Expect(chromedp.Do(t,
			chromedp.Navigate(server.URL+"/console/sign-in"),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			focusOn("#token"),
			chromedp.KeyEvent(f.ana.Token),
			focusOn("#sign-in"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			focusOn(`section a[href="/console/workspaces/acme/dead-letters"]`),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(row)),
			focusOn(row+" a"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS("#replay")),
			focusOn("#replay"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS("#confirm-replay")),
			focusOn("#confirm-replay"),
			chromedp.KeyEvent(kb.Enter),
			chromedp.WaitVisible(chromedp.CSS(".notice")),
		)).To(Succeed())
		Expect(text(t, ".notice")).To(ContainSubstring("was replayed"))
		Expect(rowState(ctx, f.deadID)).To(Equal("QUEUED"))
	})

	It("shows a connection's sync progress, and the ADMIN's Sync again restarts it while a MEMBER sees no button", func(ctx SpecContext) {
		var conn int64
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://docs.example.com') RETURNING id`, f.acme.ID).Scan(&conn)).To(Succeed())
		_, err := pool.Exec(ctx, `
			INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id, state,
			                      items, pages, started_at, finished_at, last_error)
			VALUES ($1, $2, 'OUTLINE', 'BACKFILL', 'collection', 'c1', 'DONE', 7, 1, now(), now(), NULL),
			       ($1, $2, 'OUTLINE', 'BACKFILL', 'collection', 'c2', 'FAILED', 0, 0, now(), now(), 'provider-unreadable')`,
			f.acme.ID, conn)
		Expect(err).NotTo(HaveOccurred())
		queued := func() int {
			GinkgoHelper()
			return support.Scalar[int](ctx, pool, `SELECT count(*)::int FROM sync_job WHERE connection_id = $1 AND state = 'QUEUED'`, conn)
		}
		syncPage := fmt.Sprintf("%s/console/workspaces/acme/connections/%d/sync", server.URL, conn)

		m := tab()
		member := support.NewAccount(ctx, svc, fmt.Sprintf("max%d", logins.Add(1)), false, "acme", "MEMBER")
		Expect(chromedp.Do(m,
			signIn(member.Token),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			chromedp.Navigate(syncPage),
			chromedp.WaitVisible(chromedp.CSS("table.sync")),
		)).To(Succeed())
		Expect(text(m, ".sync-state")).To(Equal("FAILED"))
		Expect(text(m, "table.sync")).To(And(ContainSubstring("DONE"), ContainSubstring("provider-unreadable")))
		buttons, err := chromedp.Run(m, chromedp.Evaluate[int](`document.querySelectorAll("#sync-again").length`))
		Expect(err).NotTo(HaveOccurred())
		Expect(buttons).To(Equal(0))

		a := tab()
		Expect(chromedp.Do(a,
			signIn(f.ana.Token),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			chromedp.Navigate(server.URL+"/console/workspaces/acme/connections"),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf("#sync-again-%d", conn))),
			chromedp.Click(chromedp.CSS(fmt.Sprintf("#sync-again-%d", conn))),
			chromedp.WaitVisible(chromedp.CSS(".notice")),
		)).To(Succeed())
		Expect(text(a, ".notice")).To(ContainSubstring(fmt.Sprintf("The sync of connection %d started again", conn)))
		Expect(text(a, ".sync-state")).To(Equal("RUNNING"))
		Expect(queued()).To(Equal(2))
	})

	It("finds a delivery by its key, reads its attempts, and replays it from its page", func(ctx SpecContext) {
		var key string
		Expect(pool.QueryRow(ctx, `SELECT delivery_key FROM provider_event WHERE id = $1`, f.deadID).Scan(&key)).To(Succeed())
		other := fmt.Sprintf("#delivery-%d", insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DONE"}))
		// One attempt recorded as the claimers record it: the dead letter's last.
		_, err := pool.Exec(ctx, `
			INSERT INTO provider_event_attempt (event_id, lease_epoch, attempt, started_at, ended_at, server, outcome, cause)
			VALUES ($1, 3, 3, now() - interval '2 seconds', now() - interval '1 second', 'server-a', 'dead', 'payload')`, f.deadID)
		Expect(err).NotTo(HaveOccurred())
		row := fmt.Sprintf("#delivery-%d", f.deadID)
		t := tab()
		Expect(chromedp.Do(t,
			signIn(f.ana.Token),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			chromedp.Click(chromedp.CSS(`section a[href="/console/workspaces/acme/deliveries"]`)),
			chromedp.WaitVisible(chromedp.CSS("#deliveryKey")),
			chromedp.WaitVisible(chromedp.CSS(other)),
			chromedp.SendKeys(chromedp.CSS("#deliveryKey"), key),
			chromedp.Click(chromedp.CSS("#filter")),
			// The filtered page has loaded when the other row is gone (the list had both).
			chromedp.WaitNotPresent(chromedp.CSS(other)),
			chromedp.WaitVisible(chromedp.CSS(row)),
		)).To(Succeed())
		shot(t, "deliveries")
		rows, err := chromedp.Run(t, chromedp.Evaluate[int](`document.querySelectorAll("table.deliveries tbody tr").length`))
		Expect(err).NotTo(HaveOccurred())
		Expect(rows).To(Equal(1), "only the row of that key")
		Expect(chromedp.Do(t,
			chromedp.Click(chromedp.CSS(row+" a")),
			chromedp.WaitVisible(chromedp.CSS("#attempt-3")),
		)).To(Succeed())
		shot(t, "delivery")
		Expect(text(t, "#attempt-3")).To(And(ContainSubstring("server-a"), ContainSubstring("dead"),
			ContainSubstring(inbox.CausePayload.Sentence()), ContainSubstring("1s")))
		Expect(chromedp.Do(t,
			chromedp.Click(chromedp.CSS("#replay")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-replay")),
			chromedp.Click(chromedp.CSS("#confirm-replay")),
			chromedp.WaitVisible(chromedp.CSS(".notice")),
		)).To(Succeed())
		Expect(text(t, ".notice")).To(ContainSubstring(fmt.Sprintf("Dead letter %d was replayed", f.deadID)))
		Expect(rowState(ctx, f.deadID)).To(Equal("QUEUED"))
	})

	It("opens a deep link after sign-in, and shows a member of another workspace no delivery of acme", func(ctx SpecContext) {
		deep := fmt.Sprintf("%s/console/workspaces/acme/deliveries/%d", server.URL, f.deadID)
		t := tab()
		var at string
		Expect(chromedp.Do(t,
			chromedp.Navigate(deep),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), f.ana.Token),
			chromedp.Click(chromedp.CSS("#sign-in")),
			chromedp.WaitVisible(chromedp.CSS("#state")),
		)).To(Succeed())
		at, err := chromedp.Run(t, chromedp.Location())
		Expect(err).NotTo(HaveOccurred())
		Expect(at).To(Equal(deep))
		Expect(text(t, "#state")).To(Equal("DEAD"))

		o := tab()
		Expect(chromedp.Do(o,
			chromedp.Navigate(deep),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), f.olga.Token),
			chromedp.Click(chromedp.CSS("#sign-in")),
			// The error page's message (the sign-in form has none).
			chromedp.WaitVisible(chromedp.CSS(".message")),
		)).To(Succeed())
		Expect(text(o, "h1")).To(Equal("Forbidden"))
		Expect(text(o, "body")).NotTo(ContainSubstring("Broken"))
	})

	It("opens the change feed at the newest change and shows a new one by itself, with no script and the CSP as it is", func(ctx SpecContext) {
		box, err := deliveryinbox.New(pool)
		Expect(err).NotTo(HaveOccurred())
		store, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		publish := func(subject, title string) {
			GinkgoHelper()
			c, err := change.New(change.MustType("github.issue.upserted"), subject, map[string]string{"title": title})
			Expect(err).NotTo(HaveOccurred())
			Expect(box.Write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.Publish(ctx, tx, f.acme.ID, c) })).To(Succeed())
		}
		publish("github:issue:1", "Seen at opening")
		member := newAccount(ctx, "acme", "MEMBER")
		t := tab()
		Expect(chromedp.Do(t,
			signIn(member),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			chromedp.Navigate(server.URL+"/console/workspaces/acme/changes"),
			chromedp.WaitVisible(chromedp.CSS("table.changes")),
		)).To(Succeed())
		Expect(text(t, "table.changes tbody tr:first-child")).To(ContainSubstring("github:issue:1"))
		publish("github:issue:2", "Came after")
		// No navigation from here: the page's meta refresh (every 5 s) brings the new change.
		Eventually(func() string {
			s, err := chromedp.Run(t, chromedp.Evaluate[string](`(document.querySelector("table.changes tbody tr") || {innerText: ""}).innerText`))
			if err != nil {
				return "" // the page is reloading
			}
			return s
		}).WithTimeout(20 * time.Second).WithPolling(250 * time.Millisecond).Should(ContainSubstring("github:issue:2"))
		shot(t, "changes")
	})

	It("shows the rejection log and the change feed's head to a member", func(ctx SpecContext) {
		member := newAccount(ctx, "acme", "MEMBER")
		var conn int64
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'GITHUB_APP', 'GITHUB', 'https://github.com') RETURNING id`, f.acme.ID).Scan(&conn)).To(Succeed())
		_, err := pool.Exec(ctx, `INSERT INTO webhook_rejection (minute, provider, connection_id, reason, count)
			VALUES (date_trunc('minute', now()) - interval '1 minute', 'GITHUB', $1, 'bad-signature', 12)`, conn)
		Expect(err).NotTo(HaveOccurred())
		t := tab()
		Expect(chromedp.Do(t,
			signIn(member),
			chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
			chromedp.Click(chromedp.CSS(`section a[href="/console/workspaces/acme/rejections"]`)),
			chromedp.WaitVisible(chromedp.CSS("table.rejections")),
		)).To(Succeed())
		shot(t, "rejections")
		Expect(text(t, "table.rejections")).To(And(ContainSubstring(fmt.Sprintf("connection %d", conn)), ContainSubstring("bad-signature"), ContainSubstring("12")))
	})
})
