package admission_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/application/admission"
)

// edge is a receiving server as `hephaestus serve` runs it: the real HTTP server (listener,
// timeouts, /healthz) with the webhook routes under a byte budget the spec observes.
type edge struct {
	url    string
	addr   string
	budget *webhookapi.Budget
}

func newEdge(ctx context.Context, budgetBytes int64, readTimeout time.Duration) *edge {
	GinkgoHelper()
	return startEdge(budgetBytes, readTimeout, webhookapi.Hooks{&fakeWebhook{p: testHub}})
}

// startEdge runs the real HTTP server with hooks' webhook routes on admission (the real
// service and store, the suite's connection table as directory) under a budget of budgetBytes.
func startEdge(budgetBytes int64, readTimeout time.Duration, hooks webhookapi.Hooks) *edge {
	GinkgoHelper()
	budget, err := webhookapi.NewBudget(budgetBytes)
	Expect(err).NotTo(HaveOccurred())
	store, err := admissionstore.New(admissionPool)
	Expect(err).NotTo(HaveOccurred())
	svc, err := admission.New(admission.Config{DefaultSourceServerURL: "https://github.com"}, store, tableDirectory{pool: pool}, notifierFunc(func() {}),
		newMetricsRecorder(), &logRecorder{}, systemClock{})
	Expect(err).NotTo(HaveOccurred())
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", ReadTimeout: readTimeout}, zap.NewNop(),
		func(context.Context) error { return nil }, http.NotFoundHandler(),
		func(r gin.IRouter) error {
			return webhookapi.Register(r, svc, hooks, webhookapi.Config{MaxBytes: 4 << 20, Budget: budget})
		})
	Expect(err).NotTo(HaveOccurred())
	Expect(srv.Start()).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return &edge{url: "http://" + srv.Addr(), addr: srv.Addr(), budget: budget}
}

// trickler is a hostile client: it declares a large body and sends it a little at a time.
type trickler struct {
	conn     net.Conn
	status   atomic.Int32 // the answer's status, 0 until one came
	retry    atomic.Value // the answer's Retry-After
	answered chan struct{}
}

func trickle(addr string, declared, chunk int, every time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) *trickler {
	GinkgoHelper()
	conn, err := net.Dial("tcp", addr)
	Expect(err).NotTo(HaveOccurred())
	t := &trickler{conn: conn, answered: make(chan struct{})}
	t.retry.Store("")
	_, err = fmt.Fprintf(conn, "POST /webhooks/testhub HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\n"+
		"%s: 00\r\n%s: d-trickle\r\nContent-Length: %d\r\n\r\n", headerSignature, headerDelivery, declared)
	Expect(err).NotTo(HaveOccurred())
	wg.Add(2)
	go func() { // the answer, whenever it comes
		defer GinkgoRecover()
		defer wg.Done()
		defer close(t.answered)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return // cut off without an answer (the read timeout)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		t.retry.Store(res.Header.Get("Retry-After"))
		t.status.Store(int32(res.StatusCode))
	}()
	go func() { // the body, a chunk at a time, until the server stops listening
		defer GinkgoRecover()
		defer wg.Done()
		piece := bytes.Repeat([]byte("x"), chunk)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for sent := 0; sent < declared; sent += chunk {
			select {
			case <-stop:
				return
			case <-t.answered:
				return
			case <-tick.C:
			}
			if _, err := conn.Write(piece); err != nil {
				return
			}
		}
	}()
	return t
}

var _ = Describe("Webhook bodies in flight", func() {
	const budgetBytes = 256 << 10

	It("never hold more than the byte budget: trickling senders get 503 retry at once, /healthz answers, and the read timeout frees what they held", func(ctx SpecContext) {
		e := newEdge(ctx, budgetBytes, 2*time.Second)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		DeferCleanup(func() { close(stop); wg.Wait() })

		// Forty connections that each declare 4 MiB (160 MiB together) and send 4 KiB every 20 ms.
		var ts []*trickler
		for range 40 {
			ts = append(ts, trickle(e.addr, 4<<20, 4<<10, 20*time.Millisecond, stop, &wg))
		}
		DeferCleanup(func() {
			for _, t := range ts {
				_ = t.conn.Close()
			}
		})

		// The ones past the budget are refused at once, before their bodies arrive.
		Eventually(func() int {
			n := 0
			for _, t := range ts {
				if t.status.Load() == http.StatusServiceUnavailable {
					n++
				}
			}
			return n
		}).WithTimeout(time.Second).Should(BeNumerically(">=", 40-budgetBytes/(32<<10)))
		for _, t := range ts {
			if t.status.Load() == http.StatusServiceUnavailable {
				Expect(t.retry.Load()).To(Equal("5"))
			}
		}

		// Meanwhile the bytes held stay under the budget and the process answers /healthz.
		client := &http.Client{Timeout: 2 * time.Second}
		Consistently(func(g Gomega) {
			g.Expect(e.budget.Held()).To(BeNumerically("<=", budgetBytes))
			res, err := client.Get(e.url + "/healthz")
			g.Expect(err).NotTo(HaveOccurred())
			_ = res.Body.Close()
			g.Expect(res.StatusCode).To(Equal(http.StatusOK))
		}).WithTimeout(500 * time.Millisecond).WithPolling(50 * time.Millisecond).Should(Succeed())
		Expect(e.budget.Peak()).To(BeNumerically(">", 0))
		Expect(e.budget.Peak()).To(BeNumerically("<=", budgetBytes))

		// The read timeout cuts the slow senders off and their reservations come back.
		Eventually(e.budget.Held).WithTimeout(10 * time.Second).Should(BeZero())
	})

	It("reserves only what arrived, never the declared length, for a slow sender", func(ctx SpecContext) {
		e := newEdge(ctx, budgetBytes, 5*time.Second)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		DeferCleanup(func() { close(stop); wg.Wait() })
		t := trickle(e.addr, 4<<20, 100, 100*time.Millisecond, stop, &wg)
		DeferCleanup(func() { _ = t.conn.Close() })

		Eventually(e.budget.Held).Should(BeNumerically(">", 0))
		Consistently(e.budget.Held).WithTimeout(500 * time.Millisecond).Should(BeNumerically("<=", 32<<10))
		Expect(t.status.Load()).To(BeZero(), "a sender within the budget is not refused")
	})

	It("answers a signed delivery 503 retry while its client's share is spent, and stores it once there is room", func(ctx SpecContext) {
		ws := createWorkspace(ctx, "acme")
		app := createConnection(ctx, conn{Workspace: ws, Kind: kindHubApp, SourceKey: "1001"})
		subscribe(ctx, app, "repository", "r1")
		e := newEdge(ctx, 64<<10, 3*time.Second)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		DeferCleanup(func() { close(stop); wg.Wait() })
		hog := []*trickler{
			trickle(e.addr, 4<<20, 10, time.Second, stop, &wg),
			trickle(e.addr, 4<<20, 10, time.Second, stop, &wg),
		}
		// The first hog holds this client's share (half the budget); the second is refused.
		Eventually(func() int32 { return hog[0].status.Load() + hog[1].status.Load() }).Should(BeEquivalentTo(http.StatusServiceUnavailable))
		Expect(e.budget.Held()).To(BeEquivalentTo(32 << 10))

		body := mustJSON(hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "r1"}}})
		post := func() *http.Response {
			req, err := http.NewRequest(http.MethodPost, e.url+"/webhooks/testhub", bytes.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set(headerSignature, sign(appSecret, body))
			req.Header.Set(headerDelivery, "d-1")
			res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			Expect(err).NotTo(HaveOccurred())
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			return res
		}
		res := post()
		Expect(res.StatusCode).To(Equal(http.StatusServiceUnavailable))
		Expect(res.Header.Get("Retry-After")).To(Equal("5"))
		Expect(rowsOf(ctx, "")).To(BeEmpty())

		for _, t := range hog {
			_ = t.conn.Close()
		}
		Eventually(e.budget.Held).Should(BeZero())
		Expect(post().StatusCode).To(Equal(http.StatusAccepted))
		Expect(rowsOf(ctx, "")).To(HaveLen(1))
	})
})
