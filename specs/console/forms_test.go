package console_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/console"
)

// rawPost opens a connection to the console's listener and sends a request's head with the
// given headers and the first bytes of its body, and nothing more: the rest of the body it
// declares never comes, as from a stalled upload. The answer must arrive anyway.
func rawPost(path string, headers map[string]string, start []byte) *http.Response {
	GinkgoHelper()
	u, err := url.Parse(server.URL)
	Expect(err).NotTo(HaveOccurred())
	conn, err := net.Dial("tcp", u.Host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, u.Host)
	for k, v := range headers {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	_, err = conn.Write(append(head.Bytes(), start...))
	Expect(err).NotTo(HaveOccurred())
	Expect(conn.SetReadDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	Expect(err).NotTo(HaveOccurred(), "answered while the body is still owed")
	return res
}

// rssBytes is this process's resident set (the console runs in it).
func rssBytes() int64 {
	GinkgoHelper()
	raw, err := os.ReadFile("/proc/self/status")
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	Fail("no VmRSS in /proc/self/status")
	return 0
}

var _ = Describe("Console form bodies", func() {
	var tmp string
	BeforeEach(func() {
		// Go's multipart reader spools file parts to os.TempDir(), which reads TMPDIR.
		tmp = GinkgoT().TempDir()
		GinkgoT().Setenv("TMPDIR", tmp)
	})
	tempFiles := func() []os.DirEntry {
		GinkgoHelper()
		entries, err := os.ReadDir(tmp)
		Expect(err).NotTo(HaveOccurred())
		return entries
	}

	It("refuses concurrent oversized multipart sign-ins with 415 before reading their bodies, writing no temporary file and holding no memory", func() {
		before := rssBytes()
		const declared = 49 << 20 // each declares 49 MB, as in the attack, and sends 64 KiB of it
		part := []byte("--x\r\nContent-Disposition: form-data; name=\"token\"; filename=\"t\"\r\n\r\n")
		part = append(part, bytes.Repeat([]byte("A"), 64<<10)...)
		var wg sync.WaitGroup
		statuses := make([]int, 6)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				res := rawPost("/console/sign-in", map[string]string{
					"Content-Type": "multipart/form-data; boundary=x", "Content-Length": strconv.Itoa(declared),
				}, part)
				statuses[i] = res.StatusCode
				Expect(res.Header.Values("Set-Cookie")).To(BeEmpty())
				Expect(res.Close).To(BeTrue(), "the rest of the body is not drained")
			}()
		}
		wg.Wait()
		Expect(statuses).To(HaveEach(http.StatusUnsupportedMediaType))
		Expect(tempFiles()).To(BeEmpty())
		Expect(rssBytes()-before).To(BeNumerically("<", 16<<20), "the server's memory stays flat")
	})

	It("refuses a form over the limit with 413, by its declared length before reading it, and by its bytes when it declares none", func() {
		declared := rawPost("/console/sign-in", map[string]string{
			"Content-Type": "application/x-www-form-urlencoded", "Content-Length": strconv.Itoa(300 << 20),
		}, []byte("token=a"))
		Expect(declared.StatusCode).To(Equal(http.StatusRequestEntityTooLarge))
		Expect(declared.Header.Values("Set-Cookie")).To(BeEmpty())

		// Chunked: one chunk just past the limit is read, then the answer comes while the
		// body still goes on.
		chunk := bytes.Repeat([]byte("a"), console.MaxFormBytes+1)
		body := append([]byte(fmt.Sprintf("%x\r\n", len(chunk))), chunk...)
		body = append(body, "\r\n"...)
		chunked := rawPost("/console/sign-in", map[string]string{
			"Content-Type": "application/x-www-form-urlencoded", "Transfer-Encoding": "chunked",
		}, body)
		Expect(chunked.StatusCode).To(Equal(http.StatusRequestEntityTooLarge))
		Expect(tempFiles()).To(BeEmpty())
	})

	It("refuses every body type but a urlencoded form on the signed-in forms too, before the session's CSRF check reads it", func(ctx SpecContext) {
		f := newFixture(ctx)
		b := newClient()
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
		csrf := b.csrf(fmt.Sprintf("/console/workspaces/acme/dead-letters/%d/replay", f.deadID))
		path := fmt.Sprintf("/console/workspaces/acme/dead-letters/%d/replay", f.deadID)
		res, err := b.Post(server.URL+path, "application/json", strings.NewReader(`{"csrf":"`+csrf+`"}`))
		Expect(err).NotTo(HaveOccurred())
		a := read(res)
		Expect(a.Status).To(Equal(http.StatusUnsupportedMediaType))
		Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
		// The form itself still works.
		Expect(b.post(path, url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusSeeOther))
		Expect(rowState(ctx, f.deadID)).To(Equal("QUEUED"))
	})

	It("leaves the visitor's cookies alone when it refuses a post or page read that came without them (from another site)", func(ctx SpecContext) {
		f := newFixture(ctx)
		// A page of another site posts to the console: SameSite=Strict keeps the browser from
		// sending the console's cookies, so the request arrives without any.
		for _, path := range []string{"/console/sign-in", "/console/sign-out",
			fmt.Sprintf("/console/workspaces/acme/dead-letters/%d/replay", f.deadID)} {
			a := newClient().post(path, url.Values{"token": {f.ana.Token}, "csrf": {"forged"}})
			Expect(a.Status).To(Equal(http.StatusForbidden), path)
			Expect(a.Header.Values("Set-Cookie")).To(BeEmpty(), path)
		}
		// A link from another site (a top-level GET without the Strict cookie) neither.
		a := newClient().get("/console/workspaces")
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(a.Header.Values("Set-Cookie")).To(BeEmpty())
		Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
	})
})
