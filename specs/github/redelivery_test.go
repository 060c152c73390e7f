package github_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubredelivery"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// recordingLog keeps Info lines with their fields.
type recordingLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLog) rec(msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(msg, " ", kv))
}
func (l *recordingLog) Debugw(string, ...any)        {}
func (l *recordingLog) Infow(msg string, kv ...any)  { l.rec(msg, kv...) }
func (l *recordingLog) Warnw(msg string, kv ...any)  { l.rec(msg, kv...) }
func (l *recordingLog) Errorw(msg string, kv ...any) { l.rec(msg, kv...) }
func (l *recordingLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

var _ = Describe("The GitHub redelivery reconciler", func() {
	// hookDelivery is one entry of the fake App's delivery log, as GitHub lists it.
	type hookDelivery struct {
		id     int64
		guid   string
		status int
	}

	var (
		fake      *fakeGitHubApp
		app       *githubapi.App
		log       *recordingLog
		metrics   *telemetry.Metrics
		mu        sync.Mutex
		log3pages [][]hookDelivery // pages, newest first
		listed    []string         // cursors asked for
		attempts  []int64          // deliveries asked to be redelivered
		failPost  bool
	)

	BeforeEach(func() {
		key, _ := rsaKey()
		clock := &movingClock{now: time.Now()}
		fake = newFakeGitHubApp(&key.PublicKey, clock)
		listed, attempts, failPost = nil, nil, false
		log3pages = [][]hookDelivery{
			{{1, "guid-stored-ws", 502}, {2, "guid-ok", 200}, {3, "guid-lost-a", 503}, {4, "guid-lost-a", 0}},
			{{5, "guid-stored-installation", 500}, {6, "guid-lost-b", 0}, {7, "guid-redirected", 302}},
			{{8, "guid-beyond-the-page-bound", 502}},
		}
		// The fake serves the log paged by an opaque cursor in the Link header, as GitHub does.
		mux := fake.srv.Config.Handler.(*http.ServeMux)
		mux.HandleFunc("GET /api/v3/app/hook/deliveries", func(w http.ResponseWriter, r *http.Request) {
			if !fake.verify(w, r) {
				return
			}
			cursor := r.URL.Query().Get("cursor")
			mu.Lock()
			listed = append(listed, cursor)
			pages := log3pages
			mu.Unlock()
			page := 0
			if cursor != "" {
				page, _ = strconv.Atoi(strings.TrimPrefix(cursor, "c"))
			}
			if page+1 < len(pages) {
				w.Header().Set("Link", fmt.Sprintf(`<%s/api/v3/app/hook/deliveries?per_page=100&cursor=c%d>; rel="next"`, fake.srv.URL, page+1))
			}
			items := make([]string, 0, len(pages[page]))
			for _, d := range pages[page] {
				items = append(items, fmt.Sprintf(`{"id":%d,"guid":%q,"delivered_at":"2024-03-01T10:00:00Z","redelivery":false,
					"duration":0.5,"status":"x","status_code":%d,"event":"issues","action":"opened","installation_id":4711,"repository_id":1001}`,
					d.id, d.guid, d.status))
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "[%s]", strings.Join(items, ","))
		})
		mux.HandleFunc("POST /api/v3/app/hook/deliveries/{id}/attempts", func(w http.ResponseWriter, r *http.Request) {
			if !fake.verify(w, r) {
				return
			}
			id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
			mu.Lock()
			defer mu.Unlock()
			if failPost {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			attempts = append(attempts, id)
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{}`)
		})
		var err error
		app, err = githubapi.NewApp(githubapi.AppConfig{BaseURL: fake.srv.URL + "/api/v3", AppID: specAppID, Key: key, Now: clock.Now})
		Expect(err).NotTo(HaveOccurred())
		log, metrics = &recordingLog{}, telemetry.NewMetrics()
		// Declared as bootstrap declares the module's counters, before anything runs.
		metrics.Declare(telemetry.Labels{Counters: github.Module{}.Counters()})
	})

	reconciler := func(owner string, maxPages int) *githubredelivery.Reconciler {
		GinkgoHelper()
		requested, err := metrics.Counter(github.RedeliveriesRequested)
		Expect(err).NotTo(HaveOccurred())
		store, err := githubmirror.NewRedeliveries(pool)
		Expect(err).NotTo(HaveOccurred())
		lease, err := inboxstore.New(pool, inboxstore.Config{})
		Expect(err).NotTo(HaveOccurred())
		r, err := githubredelivery.New(githubredelivery.Config{Owner: owner, Interval: time.Hour, MaxPages: maxPages}, app, store, lease, githubredelivery.MetricsFunc(requested), log)
		Expect(err).NotTo(HaveOccurred())
		return r
	}

	requested := func() float64 {
		GinkgoHelper()
		families, err := metrics.Registry().Gather()
		Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() == "github_redeliveries_requested_total" {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		Fail("github_redeliveries_requested_total is not exported")
		return 0
	}

	BeforeEach(func(ctx SpecContext) {
		ws := newWorkspace(ctx, "acme")
		// One failed guid reached a workspace's inbox (a later retry of GitHub's own, or a
		// manual redelivery), another the installation inbox with a NULL workspace.
		support.LeasedEvent(ctx, pool, ws, github.Provider, "issues", "github:spec", `{}`)
		_, err := pool.Exec(ctx, `UPDATE provider_event SET delivery_key = 'guid-stored-ws'`)
		Expect(err).NotTo(HaveOccurred())
		d := support.LeasedEvent(ctx, pool, 0, github.Provider, "installation", "github:spec", `{}`)
		_, err = pool.Exec(ctx, `UPDATE provider_event SET delivery_key = 'guid-stored-installation' WHERE id = $1`, d.ID)
		Expect(err).NotTo(HaveOccurred())
	})

	It("exports github_redeliveries_requested_total at 0 from start", func() {
		Expect(requested()).To(BeZero())
	})

	It("asks once for each failed delivery whose guid is stored nowhere, over bounded pages, with a log line per request", func(ctx SpecContext) {
		st, err := reconciler("server-a", 2).RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st).To(Equal(githubredelivery.Stats{Ran: true, Pages: 2, Failed: 5, Requested: 3}))

		mu.Lock()
		Expect(listed).To(Equal([]string{"", "c1"}), "the cursor of the Link header, two pages at most")
		Expect(attempts).To(Equal([]int64{3, 6, 7}), "one attempt per failed guid, never a stored or delivered one")
		mu.Unlock()
		Expect(requested()).To(Equal(3.0))
		lines := strings.Join(log.all(), "\n")
		for _, guid := range []string{"guid-lost-a", "guid-lost-b", "guid-redirected"} {
			Expect(lines).To(ContainSubstring("github redelivery requested [guid " + guid))
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM github_redelivery_request`)).To(Equal(3))

		// The next run, on another server, asks for none of them again.
		_, err = pool.Exec(ctx, `DELETE FROM singleton_lease WHERE name = $1`, githubredelivery.Singleton)
		Expect(err).NotTo(HaveOccurred())
		st, err = reconciler("server-b", 3).RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Requested).To(Equal(1), "only the guid of the third page, first seen now")
		mu.Lock()
		defer mu.Unlock()
		Expect(attempts).To(Equal([]int64{3, 6, 7, 8}))
	})

	It("asks again, with growing spacing and a bounded number of times, for a delivery whose redelivery failed too", func(ctx SpecContext) {
		// A run on a fresh lease each time, as the next interval's run would be.
		run := func() githubredelivery.Stats {
			GinkgoHelper()
			_, err := pool.Exec(ctx, `DELETE FROM singleton_lease WHERE name = $1`, githubredelivery.Singleton)
			Expect(err).NotTo(HaveOccurred())
			st, err := reconciler("server-a", 1).RunOnce(ctx)
			Expect(err).NotTo(HaveOccurred())
			return st
		}
		// later moves the recorded requests back in time by more than any spacing (30m·2^4 after a fifth request).
		later := func() {
			GinkgoHelper()
			_, err := pool.Exec(ctx, `UPDATE github_redelivery_request SET requested_at = requested_at - interval '1 day'`)
			Expect(err).NotTo(HaveOccurred())
		}
		attemptsOf := func(guid string) int {
			GinkgoHelper()
			return support.Count(ctx, pool, `SELECT coalesce(max(attempts), 0) FROM github_redelivery_request WHERE guid = $1`, guid)
		}
		Expect(run().Requested).To(Equal(1), "guid-lost-a: the first page's only unknown failed guid")
		Expect(attemptsOf("guid-lost-a")).To(Equal(1))

		// GitHub lists the redelivery as a failed attempt of its own; the guid is still stored
		// nowhere. Within the spacing nothing is asked again.
		mu.Lock()
		log3pages[0] = append([]hookDelivery{{9, "guid-lost-a", 504}}, log3pages[0]...)
		mu.Unlock()
		Expect(run().Requested).To(BeZero(), "too soon after the first request")

		// After the spacing it is asked again, for its newest failed attempt, up to five
		// requests in all.
		for n := 2; n <= 5; n++ {
			later()
			Expect(run().Requested).To(Equal(1), "request %d", n)
			Expect(attemptsOf("guid-lost-a")).To(Equal(n))
		}
		later()
		Expect(run().Requested).To(BeZero(), "no sixth request")
		mu.Lock()
		Expect(attempts).To(Equal([]int64{3, 9, 9, 9, 9}))
		mu.Unlock()
		Expect(requested()).To(Equal(5.0))
	})

	It("does not ask again for a delivery whose redelivery was answered 2xx or stored", func(ctx SpecContext) {
		_, err := reconciler("server-a", 2).RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		mu.Lock()
		Expect(attempts).To(Equal([]int64{3, 6, 7}))
		// guid-lost-a's redelivery was answered 2xx (dropped by a rule, say); guid-lost-b's
		// was stored.
		log3pages[0] = append([]hookDelivery{{10, "guid-lost-a", 202}}, log3pages[0]...)
		mu.Unlock()
		ws := newWorkspace(ctx, "beta")
		d := support.LeasedEvent(ctx, pool, ws, github.Provider, "issues", "github:spec-b", `{}`)
		_, err = pool.Exec(ctx, `UPDATE provider_event SET delivery_key = 'guid-lost-b' WHERE id = $1`, d.ID)
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `UPDATE github_redelivery_request SET requested_at = requested_at - interval '5 hours'`)
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `DELETE FROM singleton_lease WHERE name = $1`, githubredelivery.Singleton)
		Expect(err).NotTo(HaveOccurred())

		st, err := reconciler("server-a", 2).RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Requested).To(Equal(1), "only guid-redirected, whose redelivery failed too")
		mu.Lock()
		defer mu.Unlock()
		Expect(attempts).To(Equal([]int64{3, 6, 7, 7}))
	})

	It("runs on one server at a time", func(ctx SpecContext) {
		a, b := reconciler("server-a", 10), reconciler("server-b", 10)
		stA, err := a.RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		stB, err := b.RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stA.Ran).To(BeTrue())
		Expect(stB.Ran).To(BeFalse())
		mu.Lock()
		defer mu.Unlock()
		Expect(attempts).To(HaveLen(4))
	})

	It("asks again at the next run when GitHub refused a request, and counts only what was requested", func(ctx SpecContext) {
		mu.Lock()
		failPost = true
		mu.Unlock()
		_, err := reconciler("server-a", 10).RunOnce(ctx)
		Expect(err).To(HaveOccurred())
		Expect(requested()).To(BeZero())
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM github_redelivery_request`)).To(BeZero())

		mu.Lock()
		failPost = false
		mu.Unlock()
		st, err := reconciler("server-a", 10).RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Requested).To(Equal(4))
		Expect(requested()).To(Equal(4.0))
	})

	It("is refused by GitHub without a valid App JWT, and asks for nothing", func(ctx SpecContext) {
		other, _ := rsaKey()
		var err error
		app, err = githubapi.NewApp(githubapi.AppConfig{BaseURL: fake.srv.URL + "/api/v3", AppID: specAppID, Key: other})
		Expect(err).NotTo(HaveOccurred())
		_, err = reconciler("server-a", 10).RunOnce(ctx)
		Expect(err).To(HaveOccurred())
		mu.Lock()
		defer mu.Unlock()
		Expect(listed).To(BeEmpty())
		Expect(attempts).To(BeEmpty())
	})
})
