package changes_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
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

	// An access that ends: end makes the token stop authenticating for the workspace acme and
	// answers the status a request with it now gets.
	type ending struct {
		token  func(ctx context.Context) string
		end    func(ctx context.Context, token string)
		status int
	}
	endings := map[string]ending{
		"its token is revoked": {
			token: func(context.Context) string { return mia },
			end: func(ctx context.Context, _ string) {
				accountID, tokenID := principalOfMia(ctx)
				Expect(svc.RevokeToken(ctx, support.InstanceAdmin, accountID, tokenID)).To(Succeed())
			},
			status: http.StatusUnauthorized,
		},
		"its token expires": {
			token: func(ctx context.Context) string {
				accountID, _ := principalOfMia(ctx)
				soon := time.Now().Add(5 * time.Second)
				issued, err := svc.IssueToken(ctx, support.InstanceAdmin, accountID, &soon)
				Expect(err).NotTo(HaveOccurred())
				return issued.Value
			},
			end: func(ctx context.Context, token string) {
				Eventually(func() error { _, err := svc.Authenticate(ctx, token); return err }).
					WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(HaveOccurred())
			},
			status: http.StatusUnauthorized,
		},
		"its account is disabled": {
			token: func(context.Context) string { return mia },
			end: func(ctx context.Context, _ string) {
				accountID, _ := principalOfMia(ctx)
				Expect(svc.DisableAccount(ctx, support.InstanceAdmin, accountID)).To(Succeed())
			},
			status: http.StatusUnauthorized,
		},
		"it is removed from the workspace": {
			token:  func(context.Context) string { return mia },
			end:    func(ctx context.Context, _ string) { removeMiaFromWS(ctx) },
			status: http.StatusForbidden,
		},
	}
	// drain is every change event of a stream until it ends (failing when it does not end).
	drain := func(events <-chan sseEvent) []string {
		GinkgoHelper()
		var got []string
		Eventually(func() bool {
			for {
				select {
				case e, ok := <-events:
					if !ok {
						return true
					}
					got = append(got, e.data["subject"].(string))
				default:
					return false
				}
			}
		}).WithTimeout(10*time.Second).Should(BeTrue(), "the stream ends")
		return got
	}

	When("the caller's access ends and then a change commits", func() {
		// srv reads only when this server's commit wakes it (poll, recheck and heartbeat
		// intervals of an hour), so the change committed right after the access ended reaches
		// the waiting read at once: only the check in the read's own snapshot keeps it back.
		var srv *feedServer
		BeforeEach(func() {
			srv = newFeedServerWith(changes.Config{PollInterval: time.Hour, Recheck: time.Hour},
				func(c *changesapi.Config) { c.Heartbeat = time.Hour })
		})

		for name, e := range endings {
			It("never hands the change to a stream, which ends, when "+name, func(ctx SpecContext) {
				token := e.token(ctx)
				writeTo(ctx, srv, acme, "before")
				events, closeStream := openStream(ctx, srv, token, "")
				DeferCleanup(closeStream)
				var first sseEvent
				Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&first))
				Expect(first.data).To(HaveKeyWithValue("subject", "before"))
				Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))

				e.end(ctx, token)
				writeTo(ctx, srv, acme, "after")
				Expect(drain(events)).NotTo(ContainElement("after"))
			})

			It("never hands the change to a long poll, which answers "+strconv.Itoa(e.status)+", when "+name, func(ctx SpecContext) {
				token := e.token(ctx)
				writeTo(ctx, srv, acme, "before")
				next := srv.get("/api/workspaces/acme/changes", token).JSON["next"].(string)
				answered := longPoll(srv, "/api/workspaces/acme/changes?wait=60s&after="+next, token)
				Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))

				e.end(ctx, token)
				writeTo(ctx, srv, acme, "after")
				var r support.Response
				Eventually(answered).WithTimeout(10 * time.Second).Should(Receive(&r))
				Expect(r.Status).To(Equal(e.status), fmt.Sprint(r.JSON))
				Expect(r.JSON).NotTo(HaveKey("changes"))
				Expect(srv.feed.Waiting()).To(BeZero())
			})
		}

		It("never hands out a change another server commits after another server revoked the token", func(ctx SpecContext) {
			// This server polls (another server's commit does not wake it); the revocation goes
			// through the other server's own pool and service.
			polling := newFeedServerWith(changes.Config{PollInterval: 100 * time.Millisecond, Recheck: time.Hour},
				func(c *changesapi.Config) { c.Heartbeat = time.Hour })
			elsewhere, _ := support.Management(writerPool, adminToken)
			events, closeStream := openStream(ctx, polling, mia, "")
			DeferCleanup(closeStream)
			next := polling.get("/api/workspaces/acme/changes", mia).JSON["next"].(string)
			answered := longPoll(polling, "/api/workspaces/acme/changes?wait=60s&after="+next, mia)
			Eventually(polling.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(2))

			p, err := elsewhere.Authenticate(ctx, mia)
			Expect(err).NotTo(HaveOccurred())
			Expect(elsewhere.RevokeToken(ctx, support.InstanceAdmin, p.AccountID, p.TokenID)).To(Succeed())
			writeTo(ctx, srv, acme, "after") // wakes srv, not polling
			Expect(drain(events)).NotTo(ContainElement("after"))
			var r support.Response
			Eventually(answered).WithTimeout(10 * time.Second).Should(Receive(&r))
			Expect(r.Status).To(Equal(http.StatusUnauthorized), fmt.Sprint(r.JSON))
		})
	})

	When("the caller's access ends and nothing commits", func() {
		// The poll and heartbeat intervals are an hour: only the feed's recheck (1 s, the
		// contract's bound) reads again.
		var srv *feedServer
		BeforeEach(func() {
			srv = newFeedServerWith(changes.Config{PollInterval: time.Hour},
				func(c *changesapi.Config) { c.Heartbeat = time.Hour })
		})

		It("ends a stream within a few seconds once the token is revoked", func(ctx SpecContext) {
			events, closeStream := openStream(ctx, srv, mia, "")
			DeferCleanup(closeStream)
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			accountID, tokenID := principalOfMia(ctx)
			Expect(svc.RevokeToken(ctx, support.InstanceAdmin, accountID, tokenID)).To(Succeed())
			Eventually(events).WithTimeout(5 * time.Second).Should(BeClosed())
		})

		It("answers a long poll 403 once the member is removed, long before its wait is over", func(ctx SpecContext) {
			answered := longPoll(srv, "/api/workspaces/acme/changes?wait=60s", mia)
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			removeMiaFromWS(ctx)
			var r support.Response
			Eventually(answered).WithTimeout(5 * time.Second).Should(Receive(&r))
			Expect(r.Status).To(Equal(403))
			Expect(srv.feed.Waiting()).To(BeZero())
		})

		It("answers a long poll 404 once the workspace is deleted", func(ctx SpecContext) {
			answered := longPoll(srv, "/api/workspaces/acme/changes?wait=60s", mia)
			Eventually(srv.feed.Waiting).WithTimeout(10 * time.Second).Should(Equal(1))
			Expect(svc.DeleteWorkspace(ctx, support.InstanceAdmin, "acme")).To(Succeed())
			var r support.Response
			Eventually(answered).WithTimeout(5 * time.Second).Should(Receive(&r))
			Expect(r.Status).To(Equal(404))
		})

		It("keeps a stream of a caller whose access holds", func(ctx SpecContext) {
			events, closeStream := openStream(ctx, srv, mia, "")
			DeferCleanup(closeStream)
			Consistently(events).WithTimeout(2 * time.Second).ShouldNot(BeClosed())
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
