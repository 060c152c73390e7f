package changes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/changesapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const adminToken = "feed-admin-token-0123456789abcdef"

// feedServer is one server of the feed: its API on its own pool, woken by its own signal.
type feedServer struct {
	url     string
	client  *http.Client
	signal  *changes.Signal
	feed    *changes.Feed
	metrics *telemetry.Metrics
	stop    context.CancelFunc
}

// Its waits read again every poll only (the recheck is the poll interval too), so a spec with
// a poll interval of an hour proves the in-process wake.
func newFeedServer(poll time.Duration, maxWaiting int) *feedServer {
	GinkgoHelper()
	return newFeedServerWith(changes.Config{PollInterval: poll, Recheck: poll, MaxWaiting: maxWaiting}, nil)
}

// newFeedServerWith is newFeedServer with the feed's whole configuration, and api (when not
// nil) changing the route's.
func newFeedServerWith(feedCfg changes.Config, api func(*changesapi.Config)) *feedServer {
	GinkgoHelper()
	svc, workspaces := support.Management(readerPool, adminToken)
	store, err := changefeed.New(readerPool, nil)
	Expect(err).NotTo(HaveOccurred())
	s := &feedServer{signal: changes.NewSignal(), metrics: telemetry.NewMetrics()}
	s.feed, err = changes.NewFeed(feedCfg, store, s.signal, s.metrics)
	Expect(err).NotTo(HaveOccurred())
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.feed.Run(runCtx) }()
	s.stop = stop
	DeferCleanup(func() {
		stop()
		Eventually(ran).Should(Receive(BeNil()))
	})
	gin.SetMode(gin.TestMode)
	engine := gin.New()
	apiCfg := changesapi.Config{Auth: svc, Members: workspaces, Feed: s.feed,
		Stopping: s.feed.Stopping(), Heartbeat: 200 * time.Millisecond, Log: support.Logger{}}
	if api != nil {
		api(&apiCfg)
	}
	Expect(changesapi.Register(engine, apiCfg)).To(Succeed())
	server := httptest.NewServer(engine)
	DeferCleanup(server.Close)
	s.url = server.URL
	// Every answer is checked against the API document (SSE streams pass through unread).
	s.client = &http.Client{Transport: support.ValidatingTransport{Next: &http.Transport{}}, Timeout: 40 * time.Second}
	DeferCleanup(s.client.CloseIdleConnections)
	return s
}

func (s *feedServer) get(path, token string) support.Response {
	GinkgoHelper()
	return support.GetJSON(s.client, s.url+path, token)
}

// changeList is the "changes" of a feed answer.
func changeList(r support.Response) []map[string]any {
	GinkgoHelper()
	Expect(r.Status).To(Equal(200), fmt.Sprint(r.JSON))
	var out []map[string]any
	for _, c := range r.JSON["changes"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

var _ = Describe("The change feed API", func() {
	var (
		srv         *feedServer
		box         *deliveryinbox.Inbox
		pub         *changefeed.Store
		acme, other int64
		mia, sam    string
	)

	// write publishes a change of subject in ws as a handler of this server does: the
	// server's signal is woken after the commit.
	write := func(ctx context.Context, ws int64, subject string) {
		GinkgoHelper()
		Expect(publish(ctx, box, pub, ws, subject, nil)).To(Succeed())
	}

	BeforeEach(func(ctx SpecContext) {
		srv = newFeedServer(time.Hour, 8)
		svc, _ := support.Management(readerPool, adminToken)
		acme = support.NewWorkspace(ctx, svc, "acme").ID
		other = support.NewWorkspace(ctx, svc, "other").ID
		mia = support.NewAccount(ctx, svc, "mia", false, "acme", "MEMBER").Token
		sam = support.NewAccount(ctx, svc, "sam", false, "other", "MEMBER").Token
		var err error
		box, err = deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		pub, err = changefeed.New(writerPool, srv.signal.Notify)
		Expect(err).NotTo(HaveOccurred())
	})

	It("shows each workspace only its own changes, with the contract's fields", func(ctx SpecContext) {
		write(ctx, acme, "a-1")
		write(ctx, other, "o-1")
		write(ctx, acme, "a-2")

		r := srv.get("/api/workspaces/acme/changes", mia)
		cs := changeList(r)
		Expect(cs).To(HaveLen(2))
		Expect(cs[0]).To(HaveKeyWithValue("subject", "a-1"))
		Expect(cs[1]).To(HaveKeyWithValue("subject", "a-2"))
		Expect(cs[0]).To(SatisfyAll(HaveKey("id"), HaveKey("cursor"), HaveKeyWithValue("type", "spec.item.written"),
			HaveKey("occurredAt"), HaveKeyWithValue("data", SatisfyAll(HaveKeyWithValue("subject", "a-1"), HaveKey("version")))))
		Expect(r.JSON["next"]).To(Equal(cs[1]["cursor"]))
		_, err := time.Parse(time.RFC3339Nano, cs[0]["occurredAt"].(string))
		Expect(err).NotTo(HaveOccurred())

		Expect(subjectsOf(changeList(srv.get("/api/workspaces/other/changes", sam)))).To(Equal([]string{"o-1"}))
		Expect(subjectsOf(changeList(srv.get("/api/workspaces/other/changes", adminToken)))).To(Equal([]string{"o-1"}))
	})

	It("pages by cursor: next continues where the page ended, and an empty page keeps next", func(ctx SpecContext) {
		for i := range 5 {
			write(ctx, acme, fmt.Sprintf("a-%d", i))
		}
		first := srv.get("/api/workspaces/acme/changes?limit=2", mia)
		Expect(subjectsOf(changeList(first))).To(Equal([]string{"a-0", "a-1"}))
		second := srv.get("/api/workspaces/acme/changes?limit=2&after="+first.JSON["next"].(string), mia)
		Expect(subjectsOf(changeList(second))).To(Equal([]string{"a-2", "a-3"}))
		third := srv.get("/api/workspaces/acme/changes?limit=100&after="+second.JSON["next"].(string), mia)
		Expect(subjectsOf(changeList(third))).To(Equal([]string{"a-4"}))
		empty := srv.get("/api/workspaces/acme/changes?after="+third.JSON["next"].(string), mia)
		Expect(changeList(empty)).To(BeEmpty())
		Expect(empty.JSON["next"]).To(Equal(third.JSON["next"]))
	})

	It("refuses callers who are not members: 401 without a token, 403 for another workspace's member, 404 for an unknown workspace", func() {
		Expect(srv.get("/api/workspaces/acme/changes", "").Status).To(Equal(401))
		Expect(srv.get("/api/workspaces/acme/changes", "not-a-token").Status).To(Equal(401))
		Expect(srv.get("/api/workspaces/acme/changes", sam).Status).To(Equal(403))
		Expect(srv.get("/api/workspaces/nowhere/changes", mia).Status).To(Equal(404))
	})

	DescribeTable("answers 400 for a bad cursor, limit or wait",
		func(query, code string) {
			r := srv.get("/api/workspaces/acme/changes?"+query, mia)
			Expect(r.Status).To(Equal(400))
			Expect(r.JSON).To(Equal(map[string]any{"error": code}))
		},
		Entry("a cursor that is no cursor", "after=abc", "invalid-cursor"),
		Entry("a cursor with a negative id", "after=5--1", "invalid-cursor"),
		Entry("a limit of 0", "limit=0", "invalid-limit"),
		Entry("a limit above 100", "limit=101", "invalid-limit"),
		Entry("a limit that is no number", "limit=ten", "invalid-limit"),
		Entry("a wait above 60 s", "wait=61s", "invalid-wait"),
		Entry("a negative wait", "wait=-1s", "invalid-wait"),
		Entry("a wait that is no duration", "wait=soon", "invalid-wait"),
	)

	When("a long poll waits and this server commits a change", func() {
		It("answers with the change as soon as it commits, woken in-process (its poll interval is an hour)", func(ctx SpecContext) {
			answered := make(chan support.Response, 1)
			go func() {
				defer GinkgoRecover()
				answered <- srv.get("/api/workspaces/acme/changes?wait=30s", mia)
			}()
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			Expect(testutilGauge(srv.metrics, "integration_change_feed_waiting_clients")).To(Equal(1.0))
			write(ctx, acme, "a-1")
			var r support.Response
			Eventually(answered).WithTimeout(20 * time.Second).Should(Receive(&r))
			Expect(subjectsOf(changeList(r))).To(Equal([]string{"a-1"}))
			Expect(srv.feed.Waiting()).To(Equal(0))
		})
	})

	When("a long poll waits on one server and another server commits", func() {
		It("answers at its next poll", func(ctx SpecContext) {
			polling := newFeedServer(100*time.Millisecond, 8)
			answered := make(chan support.Response, 1)
			go func() {
				defer GinkgoRecover()
				answered <- polling.get("/api/workspaces/acme/changes?wait=30s", mia)
			}()
			Eventually(polling.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			write(ctx, acme, "a-1") // wakes srv's signal, not polling's
			var r support.Response
			Eventually(answered).WithTimeout(20 * time.Second).Should(Receive(&r))
			Expect(subjectsOf(changeList(r))).To(Equal([]string{"a-1"}))
		})
	})

	When("more requests wait than the server allows", func() {
		It("answers the one too many 503 too-many-waiters and keeps the others waiting", func(ctx SpecContext) {
			small := newFeedServer(time.Hour, 1)
			answered := make(chan support.Response, 1)
			go func() {
				defer GinkgoRecover()
				answered <- small.get("/api/workspaces/acme/changes?wait=30s", mia)
			}()
			Eventually(small.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			r := small.get("/api/workspaces/acme/changes?wait=30s", mia)
			Expect(r.Status).To(Equal(503))
			Expect(r.JSON).To(Equal(map[string]any{"error": "too-many-waiters"}))
			Expect(small.feed.Waiting()).To(Equal(1), "the first request still waits")
			small.stop() // a stopping server ends the wait with an empty page
			Eventually(answered).WithTimeout(20 * time.Second).Should(Receive(WithTransform(changeList, BeEmpty())))
		})
	})

	When("a consumer follows the feed as Server-Sent Events", func() {
		It("sends each change with its cursor as id, resumes after Last-Event-ID and ends when the server stops", func(ctx SpecContext) {
			write(ctx, acme, "a-1")
			write(ctx, acme, "a-2")
			first := changeList(srv.get("/api/workspaces/acme/changes?limit=1", mia))[0]

			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/api/workspaces/acme/changes", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+mia)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", first["cursor"].(string))
			res, err := srv.client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer res.Body.Close()
			Expect(res.StatusCode).To(Equal(200))
			Expect(res.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"))
			events := sseEvents(res.Body)

			var e sseEvent
			Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&e))
			Expect(e.data).To(HaveKeyWithValue("subject", "a-2"))
			Expect(e.id).To(Equal(e.data["cursor"]))

			write(ctx, acme, "a-3")
			Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&e))
			Expect(e.data).To(HaveKeyWithValue("subject", "a-3"))

			srv.stop()
			Eventually(events).WithTimeout(10 * time.Second).Should(BeClosed())
		})

		It("sends heartbeats while nothing changes", func(ctx SpecContext) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/api/workspaces/acme/changes", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+mia)
			req.Header.Set("Accept", "text/event-stream")
			res, err := srv.client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer res.Body.Close()
			r := bufio.NewReader(res.Body)
			line, err := r.ReadString('\n')
			Expect(err).NotTo(HaveOccurred())
			Expect(line).To(Equal(": heartbeat\n"))
		})

		It("answers a bad Last-Event-ID with 400 before streaming", func(ctx SpecContext) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/api/workspaces/acme/changes", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+mia)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", "nope")
			res, err := srv.client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer res.Body.Close()
			Expect(res.StatusCode).To(Equal(400))
		})
	})
})

func subjectsOf(cs []map[string]any) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c["subject"].(string))
	}
	return out
}

type sseEvent struct {
	id         string
	data       map[string]any
	heartbeats int
}

// sseEvents parses the stream's change events onto a channel, closed when the stream ends.
func sseEvents(body io.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == ": heartbeat":
				e.heartbeats++
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e.data)
			case line == "" && e.id != "":
				out <- e
				e = sseEvent{}
			}
		}
	}()
	return out
}

// testutilGauge reads a gauge of the registry.
func testutilGauge(m *telemetry.Metrics, name string) float64 {
	GinkgoHelper()
	families, err := m.Registry().Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	Fail("no metric " + name)
	return 0
}
