package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// replayMaxRows is the rows limit of the page's replays: a filter of the fixture's seven DEAD
// rows of acme passes it.
const replayMaxRows = 10

// replayFixture adds to the fixture a MEMBER of acme and DEAD rows of acme (five of event type
// "issues", two of "push") and of other (two of "issues").
type replayFixture struct {
	fixture
	mia    string // token of a MEMBER of acme
	issues []int64
	pushes []int64
}

func newReplayFixture(ctx context.Context) replayFixture {
	GinkgoHelper()
	f := replayFixture{fixture: newFixture(ctx)}
	f.mia = support.NewAccount(ctx, svc, fmt.Sprintf("mia%d", logins.Add(1)), false, "acme", "MEMBER").Token
	f.issues = append(f.issues, f.deadID)
	for range 4 {
		f.issues = append(f.issues, deadLetter(ctx, f.acme.ID, "GITHUB", "issues", "PERMANENT:*json.SyntaxError"))
	}
	for range 2 {
		f.pushes = append(f.pushes, deadLetter(ctx, f.acme.ID, "GITHUB", "push", "PERMANENT:*json.SyntaxError"))
	}
	other := support.Scalar[int64](ctx, pool, `SELECT id FROM workspace WHERE slug = 'other'`)
	deadLetter(ctx, other, "GITHUB", "issues", "PERMANENT:*json.SyntaxError")
	deadLetter(ctx, other, "GITHUB", "issues", "PERMANENT:*json.SyntaxError")
	return f
}

func states(ctx context.Context, ids []int64) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, id := range ids {
		out[rowState(ctx, id)]++
	}
	return out
}

func jobCount(ctx context.Context) int {
	GinkgoHelper()
	return support.Count(ctx, pool, `SELECT count(*) FROM replay_job`)
}

var _ = Describe("The console's bulk replay page", func() {
	var f replayFixture
	BeforeEach(func(ctx SpecContext) { f = newReplayFixture(ctx) })

	It("shows a MEMBER the dry-run count and the jobs, but no start or cancel button, and refuses the MEMBER's posts", func(ctx SpecContext) {
		started, err := replayStore.StartReplay(ctx, f.acme.ID, mustFilter(), f.ana.ID, replayService.Limits())
		Expect(err).NotTo(HaveOccurred())
		b := newClient()
		Expect(b.signIn(f.mia).Status).To(Equal(http.StatusSeeOther))
		a := b.get("/console/workspaces/acme/replays?eventType=issues&count=1")
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		Expect(a.Body).To(ContainSubstring(`<strong>5</strong> DEAD rows match this filter now.`))
		Expect(a.Body).To(ContainSubstring(fmt.Sprintf(`id="replay-%d"`, started.ID)))
		Expect(a.Body).NotTo(ContainSubstring(`id="start-replay"`))
		Expect(a.Body).NotTo(ContainSubstring(`id="cancel-`))

		csrf := b.csrf("/console/workspaces/acme/replays")
		Expect(b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}, "eventType": {"issues"}}).Status).To(Equal(http.StatusForbidden))
		Expect(b.post(fmt.Sprintf("/console/workspaces/acme/replays/%d/cancel", started.ID), url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusForbidden))
		Expect(jobCount(ctx)).To(Equal(1))
		Expect(states(ctx, f.issues)).To(Equal(map[string]int{"DEAD": 5}))
	})

	It("does not show the page, nor start or cancel a job, for an ADMIN of another workspace", func(ctx SpecContext) {
		started, err := replayStore.StartReplay(ctx, f.acme.ID, mustFilter(), f.ana.ID, replayService.Limits())
		Expect(err).NotTo(HaveOccurred())
		b := newClient()
		Expect(b.signIn(f.olga.Token).Status).To(Equal(http.StatusSeeOther))
		a := b.get("/console/workspaces/acme/replays?count=1")
		Expect(a.Status).To(Equal(http.StatusForbidden))
		Expect(a.Body).NotTo(ContainSubstring("DEAD rows match"))
		csrf := b.csrf("/console/workspaces/other/replays")
		Expect(b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusForbidden))
		Expect(b.post(fmt.Sprintf("/console/workspaces/acme/replays/%d/cancel", started.ID), url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusForbidden))
		By("acme's job is no job of other's page")
		Expect(b.post(fmt.Sprintf("/console/workspaces/other/replays/%d/cancel", started.ID), url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusNotFound))
		Expect(jobCount(ctx)).To(Equal(1))
	})

	It("refuses the ADMIN's start without the session's CSRF token, and a bad filter with 400 naming the field", func(ctx SpecContext) {
		b := newClient()
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
		Expect(b.post("/console/workspaces/acme/replays", url.Values{"eventType": {"issues"}}).Status).To(Equal(http.StatusForbidden))
		Expect(b.post("/console/workspaces/acme/replays", url.Values{"csrf": {"forged"}, "eventType": {"issues"}}).Status).To(Equal(http.StatusForbidden))
		csrf := b.csrf("/console/workspaces/acme/replays")
		bad := b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}, "deadAfter": {"yesterday"}})
		Expect(bad.Status).To(Equal(http.StatusBadRequest))
		Expect(bad.Body).To(ContainSubstring("deadAfter"))
		unknown := b.get("/console/workspaces/acme/replays?state=DEAD&count=1")
		Expect(unknown.Status).To(Equal(http.StatusBadRequest))
		Expect(unknown.Body).To(ContainSubstring("state"))
		bitbucket := b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}, "provider": {"BITBUCKET"}})
		Expect(bitbucket.Status).To(Equal(http.StatusBadRequest))
		Expect(bitbucket.Body).To(ContainSubstring("The filter field provider has a value the console cannot use. It takes the name of a provider this server runs: GITHUB, SLACK."))
		class := b.get("/console/workspaces/acme/replays?errorClass=PERMANENT&count=1")
		Expect(class.Status).To(Equal(http.StatusBadRequest))
		Expect(class.Body).To(ContainSubstring("The filter field errorClass has a value the console cannot use. It takes an error class as a dead letter shows it"))
		Expect(class.Body).NotTo(ContainSubstring("DEAD rows match"))
		Expect(jobCount(ctx)).To(Equal(0))
		Expect(states(ctx, f.issues)).To(Equal(map[string]int{"DEAD": 5}))
	})

	It("refuses the ADMIN's start past the workspace's limits with 409 saying what to do, starting nothing", func(ctx SpecContext) {
		for range 2 {
			_, err := replayStore.StartReplay(ctx, f.acme.ID, mustFilter(), f.ana.ID, replayService.Limits())
			Expect(err).NotTo(HaveOccurred())
		}
		b := newClient()
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
		csrf := b.csrf("/console/workspaces/acme/replays")
		busy := b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}, "eventType": {"issues"}})
		Expect(busy.Status).To(Equal(http.StatusConflict))
		Expect(busy.Body).To(ContainSubstring("This workspace already runs as many replay jobs as it may at once (2). Wait for one to end, or cancel one"))
		Expect(jobCount(ctx)).To(Equal(2))

		By("with a job cancelled, a filter of more rows than one job may replay is refused, and a narrower one starts")
		first := support.Scalar[int64](ctx, pool, `SELECT min(id) FROM replay_job`)
		Expect(b.post(fmt.Sprintf("/console/workspaces/acme/replays/%d/cancel", first), url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusSeeOther))
		for range replayMaxRows - 6 {
			deadLetter(ctx, f.acme.ID, "GITHUB", "issues", "PERMANENT:*json.SyntaxError")
		}
		wide := b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}})
		Expect(wide.Status).To(Equal(http.StatusConflict))
		Expect(wide.Body).To(ContainSubstring(fmt.Sprintf("The filter matches more than %d DEAD rows, the most one replay job may replay. Narrow it", replayMaxRows)))
		Expect(jobCount(ctx)).To(Equal(2))
		Expect(b.post("/console/workspaces/acme/replays", url.Values{"csrf": {csrf}, "eventType": {"push"}}).Status).To(Equal(http.StatusSeeOther))
		Expect(jobCount(ctx)).To(Equal(3))
		Expect(states(ctx, f.issues)).To(Equal(map[string]int{"DEAD": 5}))
	})

	Describe("in a real browser", Ordered, func() {
		var browser context.Context
		BeforeAll(func() { browser = startChromium() })

		It("counts the rows of a filter, starts the replay, shows its progress and cancels it, as the workspace's ADMIN", func(ctx SpecContext) {
			t := newTab(browser, 30*time.Second)

			Expect(chromedp.Do(t,
				chromedp.EmulateViewport(1400, 900),
				chromedp.Navigate(server.URL+"/console"),
				chromedp.WaitVisible(chromedp.CSS("#token")),
				chromedp.SendKeys(chromedp.CSS("#token"), f.ana.Token),
				chromedp.Click(chromedp.CSS("#sign-in")),
				chromedp.WaitVisible(chromedp.CSS("#ws-acme")),
				chromedp.Navigate(server.URL+"/console/workspaces/acme/dead-letters"),
				chromedp.WaitVisible(chromedp.CSS(`nav a[href="/console/workspaces/acme/replays"]`)),
				chromedp.Click(chromedp.CSS(`nav a[href="/console/workspaces/acme/replays"]`)),
				chromedp.WaitVisible(chromedp.CSS(`input[name="eventType"]`)),
				chromedp.SendKeys(chromedp.CSS(`input[name="eventType"]`), "issues"),
				chromedp.Click(chromedp.CSS("#dry-run")),
				chromedp.WaitVisible(chromedp.CSS("#dry-run-count")),
			)).To(Succeed())
			count, err := chromedp.Run(t, chromedp.Text(chromedp.CSS("#dry-run-count")))
			Expect(err).NotTo(HaveOccurred())
			Expect(count).To(Equal("5 DEAD rows match this filter now."))
			Expect(states(ctx, f.issues)).To(Equal(map[string]int{"DEAD": 5}), "counting changes nothing")

			Expect(chromedp.Do(t,
				chromedp.Click(chromedp.CSS("#start-replay")),
				chromedp.WaitVisible(chromedp.CSS(".notice")),
			)).To(Succeed())
			notice, err := chromedp.Run(t, chromedp.Text(chromedp.CSS(".notice")))
			Expect(err).NotTo(HaveOccurred())
			Expect(notice).To(MatchRegexp(`^Replay job \d+ started\.$`))
			id := support.Scalar[int64](ctx, pool, `SELECT id FROM replay_job`)
			Expect(support.Scalar[int64](ctx, pool, `SELECT matched FROM replay_job WHERE id = $1`, id)).To(Equal(int64(5)))

			By("a server's runner works two rows; the page shows the progress")
			l, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			_, _, err = replayStore.ReplayBatch(ctx, l, 2, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			row := fmt.Sprintf("#replay-%d", id)
			Expect(chromedp.Do(t,
				chromedp.Reload(),
				chromedp.WaitVisible(chromedp.CSS(row+" .replay-state")),
			)).To(Succeed())
			state, err := chromedp.Run(t, chromedp.Text(chromedp.CSS(row+" .replay-state")))
			Expect(err).NotTo(HaveOccurred())
			replayed, err := chromedp.Run(t, chromedp.Text(chromedp.CSS(row+" .replay-replayed")))
			Expect(err).NotTo(HaveOccurred())
			Expect([]string{state, replayed}).To(Equal([]string{"RUNNING", "2"}))
			shot, err := chromedp.Run(t, chromedp.FullScreenshot(100))
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(filepath.Join(os.TempDir(), "hephaestus-console-replays.png"), shot, 0o600)).To(Succeed())

			By("cancel stops the job: the counts stop and it is CANCELLED")
			Expect(chromedp.Do(t,
				chromedp.Click(chromedp.CSS(fmt.Sprintf("#cancel-%d", id))),
				// The page being left has the job's row too: only the answer to the cancel has
				// no cancel button for it, so wait for that page before reading it.
				chromedp.WaitNotPresent(chromedp.CSS(fmt.Sprintf("#cancel-%d", id))),
				chromedp.WaitVisible(chromedp.CSS(row+" .replay-state")),
			)).To(Succeed())
			state, err = chromedp.Run(t, chromedp.Text(chromedp.CSS(row+" .replay-state")))
			Expect(err).NotTo(HaveOccurred())
			Expect(state).To(Equal("CANCELLED"))
			left, err := chromedp.Run(t, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll("#cancel-%d").length`, id)))
			Expect(err).NotTo(HaveOccurred())
			Expect(left).To(Equal(0), "an ended job has no cancel button")
			Expect(states(ctx, f.issues)).To(Equal(map[string]int{"QUEUED": 2, "DEAD": 3}))
			Expect(states(ctx, f.pushes)).To(Equal(map[string]int{"DEAD": 2}))
		})
	})
})

// mustFilter is the filter of every DEAD row.
func mustFilter() replayjob.Filter {
	GinkgoHelper()
	f, err := replayService.Filter(replayjob.FilterFields{})
	Expect(err).NotTo(HaveOccurred())
	return f
}
