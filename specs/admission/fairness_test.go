package admission_test

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// fairEdge is a receiving server as `hephaestus serve` runs it (real listener and timeouts)
// with the real GitHub webhook and the fake per-connection TESTLAB, under a budget with the
// default shares.
func fairEdge(budgetBytes int64, githubSecret string) *edge {
	GinkgoHelper()
	hook, err := github.NewWebhook(github.Config{WebhookSecret: []byte(githubSecret)})
	Expect(err).NotTo(HaveOccurred())
	return startEdge(budgetBytes, time.Minute, webhookapi.Hooks{hook, &fakeWebhook{p: testLab, perConnection: true}})
}

// stalled is an upload from source address from (127.0.0.x: a client of its own) that sends
// its head and the first sent bytes of a body of declared bytes, then nothing more.
type stalled struct {
	conn   net.Conn
	answer chan *http.Response // the answer if one comes before the connection closes
}

func stallUpload(addr, from, path string, headers map[string]string, declared, sent int) *stalled {
	GinkgoHelper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", addr)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, declared)
	for k, v := range headers {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	_, err = conn.Write(append([]byte(head.String()), bytes.Repeat([]byte("x"), sent)...))
	Expect(err).NotTo(HaveOccurred())
	s := &stalled{conn: conn, answer: make(chan *http.Response, 1)}
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			s.answer <- res
		}
		close(s.answer)
	}()
	return s
}

var _ = Describe("The webhook body budget under attack", func() {
	const githubSecret = "github-app-secret"
	// A well-formed signature of nothing the attacker could sign: it passes the header checks
	// and fails only against the body, which never comes.
	forged := map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Delivery": "forged",
		"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64)}

	It("refuses a delivery for a connection that does not exist with 404 before reading its body, reserving nothing", func(ctx SpecContext) {
		e := fairEdge(1<<20, githubSecret)
		s := stallUpload(e.addr, "127.0.0.2", "/webhooks/testlab/987654", map[string]string{headerSignature: "00"}, 20<<20, 1024)
		var res *http.Response
		Eventually(s.answer).WithTimeout(10 * time.Second).Should(Receive(&res))
		Expect(res.StatusCode).To(Equal(http.StatusNotFound))
		Expect(res.Close).To(BeTrue(), "the body is not drained")
		Expect(e.budget.Peak()).To(BeZero())
	})

	It("refuses a GitHub delivery without a signature, or on a server without the App secret, before reading its body", func(ctx SpecContext) {
		e := fairEdge(1<<20, githubSecret)
		unsigned := stallUpload(e.addr, "127.0.0.2", "/webhooks/github", map[string]string{"X-GitHub-Event": "issues"}, 20<<20, 1024)
		unconfigured := stallUpload(fairEdge(1<<20, "").addr, "127.0.0.2", "/webhooks/github", forged, 20<<20, 1024)
		for _, s := range []*stalled{unsigned, unconfigured} {
			var res *http.Response
			Eventually(s.answer).WithTimeout(10 * time.Second).Should(Receive(&res))
			Expect(res.StatusCode).To(Equal(http.StatusUnauthorized))
		}
		Expect(e.budget.Peak()).To(BeZero())
	})

	It("keeps answering correctly signed GitHub deliveries 202 and storing them while other clients stall large uploads", func(ctx SpecContext) {
		acme := createWorkspace(ctx, "acme")
		app := createConnection(ctx, conn{Workspace: acme, Kind: github.KindApp, SourceKey: "1001", URL: "https://github.com"})
		subscribe(ctx, app, github.ResourceRepository, "1296269")
		const budgetBytes = 1 << 20
		e := fairEdge(budgetBytes, githubSecret)
		shares := e.budget.Config()

		// Two attacker addresses open stalled uploads that each declare 4 MiB and send 100
		// KiB (their buffers grow to 128 KiB), and many small ones that send nothing more
		// than their head, until the budget refuses them.
		var uploads []*stalled
		for _, from := range []string{"127.0.0.2", "127.0.0.3"} {
			for range 12 {
				uploads = append(uploads, stallUpload(e.addr, from, "/webhooks/github", forged, 4<<20, 100<<10))
			}
			for range 12 {
				uploads = append(uploads, stallUpload(e.addr, from, "/webhooks/github", forged, 4<<20, 0))
			}
		}
		// The shared part is taken: everything the attackers may hold, they hold.
		Eventually(e.budget.Held).WithTimeout(10 * time.Second).Should(BeNumerically(">=", shares.Limit-shares.Headroom-256<<10))
		Expect(e.budget.HeldBy("127.0.0.2")).To(BeNumerically("<=", shares.ClientShare))
		Expect(e.budget.HeldBy("127.0.0.3")).To(BeNumerically("<=", shares.ClientShare))
		refused := 0
		for _, u := range uploads {
			select {
			case res, ok := <-u.answer:
				if ok {
					Expect(res.StatusCode).To(Equal(http.StatusServiceUnavailable))
					Expect(res.Header.Get("Retry-After")).NotTo(BeEmpty())
					refused++
				}
			default:
			}
		}
		Expect(refused).To(BeNumerically(">", 0), "the attackers are refused past their shares")

		// GitHub's deliveries, from their own address, meanwhile.
		var wg sync.WaitGroup
		statuses := make([]int, 20)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				body := mustJSON(map[string]any{"action": "opened",
					"issue":        map[string]any{"id": 10 + i, "number": i, "title": "Found a bug"},
					"repository":   map[string]any{"id": 1296269, "full_name": "octo/hello", "owner": map[string]any{"id": 9919, "login": "octo"}},
					"installation": map[string]any{"id": 1001}})
				m := hmac.New(sha256.New, []byte(githubSecret))
				m.Write(body)
				req, err := http.NewRequest(http.MethodPost, e.url+"/webhooks/github", bytes.NewReader(body))
				Expect(err).NotTo(HaveOccurred())
				req.Header.Set("X-GitHub-Event", "issues")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("gh-%d", i))
				req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
				req.Header.Set("Content-Type", "application/json")
				res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
				Expect(err).NotTo(HaveOccurred())
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				statuses[i] = res.StatusCode
			}()
		}
		wg.Wait()
		Expect(statuses).To(HaveEach(http.StatusAccepted))
		for i := range statuses {
			Expect(rowsOf(ctx, fmt.Sprintf("gh-%d", i))).To(HaveLen(1))
		}
		Expect(e.budget.Peak()).To(BeNumerically("<=", budgetBytes))
		Eventually(func() int64 { return e.budget.HeldBy("127.0.0.1") }).Should(BeZero(), "the deliveries gave back what they held")
	})
})

var _ contract.HeaderVerifier = (*github.Webhook)(nil)
