package changes_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/changesapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Change feed waits and streams", func() {
	var (
		svc             *management.Service
		box             *deliveryinbox.Inbox
		acme, other     int64
		mia, bob, sam   string
		writeTo         func(ctx context.Context, srv *feedServer, ws int64, subject string)
		openStream      func(ctx context.Context, srv *feedServer, token, lastEventID string) (<-chan sseEvent, func())
		longPoll        func(srv *feedServer, path, token string) <-chan support.Response
		principalOfMia  func(ctx context.Context) (accountID, tokenID int64)
		removeMiaFromWS func(ctx context.Context)
	)

	BeforeEach(func(ctx SpecContext) {
		svc, _ = support.Management(readerPool, adminToken)
		acme = support.NewWorkspace(ctx, svc, "acme").ID
		other = support.NewWorkspace(ctx, svc, "other").ID
		mia = support.NewAccount(ctx, svc, "mia", false, "acme", "MEMBER").Token
		bob = support.NewAccount(ctx, svc, "bob", false, "acme", "MEMBER").Token
		sam = support.NewAccount(ctx, svc, "sam", false, "other", "MEMBER").Token
		var err error
		box, err = deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		writeTo = func(ctx context.Context, srv *feedServer, ws int64, subject string) {
			GinkgoHelper()
			pub, err := changefeed.New(writerPool, srv.signal.Notify)
			Expect(err).NotTo(HaveOccurred())
			Expect(publish(ctx, box, pub, ws, subject, nil)).To(Succeed())
		}
		openStream = func(ctx context.Context, srv *feedServer, token, lastEventID string) (<-chan sseEvent, func()) {
			GinkgoHelper()
			ctx, cancel := context.WithCancel(ctx)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/api/workspaces/acme/changes", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "text/event-stream")
			if lastEventID != "" {
				req.Header.Set("Last-Event-ID", lastEventID)
			}
			res, err := srv.client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.StatusCode).To(Equal(200))
			return sseEvents(res.Body), func() { cancel(); _ = res.Body.Close() }
		}
		longPoll = func(srv *feedServer, path, token string) <-chan support.Response {
			out := make(chan support.Response, 1)
			go func() {
				defer GinkgoRecover()
				out <- srv.get(path, token)
			}()
			return out
		}
		principalOfMia = func(ctx context.Context) (int64, int64) {
			GinkgoHelper()
			p, err := svc.Authenticate(ctx, mia)
			Expect(err).NotTo(HaveOccurred())
			return p.AccountID, p.TokenID
		}
		removeMiaFromWS = func(ctx context.Context) {
			GinkgoHelper()
			accountID, _ := principalOfMia(ctx)
			m, err := svc.Manage(ctx, support.InstanceAdmin, "acme")
			Expect(err).NotTo(HaveOccurred())
			Expect(svc.RemoveMember(ctx, m, accountID)).To(Succeed())
		}
	})

	When("a member holds many waits", func() {
		It("refuses them past the member's and the workspace's shares, and another workspace's long poll is still answered", func(ctx SpecContext) {
			srv := newFeedServerWith(changes.Config{PollInterval: time.Hour, MaxWaiting: 10,
				MaxWaitingPerWorkspace: 6, MaxWaitingPerReader: 4}, nil)
			DeferCleanup(srv.stop) // ends the held waits with empty pages

			// mia holds her four; the fifth is refused.
			for range 4 {
				longPoll(srv, "/api/workspaces/acme/changes?wait=60s", mia)
			}
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(4))
			r := srv.get("/api/workspaces/acme/changes?wait=60s", mia)
			Expect(r.Status).To(Equal(503))
			Expect(r.JSON).To(Equal(map[string]any{"error": "too-many-waiters"}))

			// bob, of the same workspace, gets what is left of its share: two.
			longPoll(srv, "/api/workspaces/acme/changes?wait=60s", bob)
			longPoll(srv, "/api/workspaces/acme/changes?wait=60s", bob)
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(6))
			Expect(srv.get("/api/workspaces/acme/changes?wait=60s", bob).Status).To(Equal(503))

			// Another workspace's member waits and is answered as soon as its change commits.
			answered := longPoll(srv, "/api/workspaces/other/changes?wait=60s", sam)
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(7))
			writeTo(ctx, srv, other, "o-1")
			var got support.Response
			Eventually(answered).WithTimeout(20 * time.Second).Should(Receive(&got))
			Expect(subjectsOf(changeList(got))).To(Equal([]string{"o-1"}))
		})
	})

	When("the caller's access ends while a stream or long poll is open", func() {
		var srv *feedServer
		BeforeEach(func() {
			srv = newFeedServerWith(changes.Config{PollInterval: time.Hour},
				func(c *changesapi.Config) { c.Recheck = 200 * time.Millisecond })
		})

		It("ends the stream within the recheck interval once the token is revoked", func(ctx SpecContext) {
			writeTo(ctx, srv, acme, "a-1")
			events, closeStream := openStream(ctx, srv, mia, "")
			DeferCleanup(closeStream)
			Eventually(events).WithTimeout(10 * time.Second).Should(Receive())

			accountID, tokenID := principalOfMia(ctx)
			Expect(svc.RevokeToken(ctx, support.InstanceAdmin, accountID, tokenID)).To(Succeed())
			Eventually(events).WithTimeout(5 * time.Second).Should(BeClosed())
		})

		It("ends the stream once the account is disabled", func(ctx SpecContext) {
			events, closeStream := openStream(ctx, srv, mia, "")
			DeferCleanup(closeStream)
			accountID, _ := principalOfMia(ctx)
			Expect(svc.DisableAccount(ctx, support.InstanceAdmin, accountID)).To(Succeed())
			Eventually(events).WithTimeout(5 * time.Second).Should(BeClosed())
		})

		It("answers a long poll 403 once the member is removed from the workspace, long before its wait is over", func(ctx SpecContext) {
			answered := longPoll(srv, "/api/workspaces/acme/changes?wait=60s", mia)
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			removeMiaFromWS(ctx)
			var r support.Response
			Eventually(answered).WithTimeout(5 * time.Second).Should(Receive(&r))
			Expect(r.Status).To(Equal(403))
			Expect(srv.feed.Waiting()).To(BeZero())
		})

		It("keeps a stream of a caller whose access holds", func(ctx SpecContext) {
			events, closeStream := openStream(ctx, srv, mia, "")
			DeferCleanup(closeStream)
			Consistently(events).WithTimeout(time.Second).ShouldNot(BeClosed())
			writeTo(ctx, srv, acme, "a-1")
			var e sseEvent
			Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&e))
			Expect(e.data).To(HaveKeyWithValue("subject", "a-1"))
		})
	})

	It("ends a stream at its maximum lifetime, and the client resumes after its Last-Event-ID", func(ctx SpecContext) {
		srv := newFeedServerWith(changes.Config{PollInterval: time.Hour},
			func(c *changesapi.Config) { c.StreamMax = 500 * time.Millisecond })
		writeTo(ctx, srv, acme, "a-1")
		events, closeStream := openStream(ctx, srv, mia, "")
		DeferCleanup(closeStream)
		var e sseEvent
		Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&e))
		Expect(e.data).To(HaveKeyWithValue("subject", "a-1"))
		Eventually(events).WithTimeout(5 * time.Second).Should(BeClosed())

		writeTo(ctx, srv, acme, "a-2")
		resumed, closeResumed := openStream(ctx, srv, mia, e.id)
		DeferCleanup(closeResumed)
		var next sseEvent
		Eventually(resumed).WithTimeout(10 * time.Second).Should(Receive(&next))
		Expect(next.data).To(HaveKeyWithValue("subject", "a-2"))
	})
})
