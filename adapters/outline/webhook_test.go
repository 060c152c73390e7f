package outline_test

import (
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Verifying an Outline delivery", func() {
	const body = `{"id":"d1","event":"documents.update","payload":{"id":"doc","model":{"id":"doc","collectionId":"col"}}}`
	var hook *outline.Webhook

	BeforeEach(func() {
		var err error
		hook, err = outline.NewWebhook(outline.Config{Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
	})

	verify := func(header, sentBody string, c *ports.SourceConnection) error {
		req := request(sentBody)
		if header != "" {
			req.Headers.Set("Outline-Signature", header)
		}
		return hook.Verify(req, c)
	}

	It("accepts a body signed with the connection's secret", func() {
		Expect(verify(signature(secret, millis(clockNow), body), body, conn(secret))).To(Succeed())
		Expect(hook.PerConnection()).To(BeTrue())
		Expect(hook.Provider()).To(Equal(outline.Provider))
	})

	It("accepts the parts in any order and with spaces", func() {
		t, s, _ := strings.Cut(signature(secret, millis(clockNow), body), ",")
		Expect(verify(s+", "+t, body, conn(secret))).To(Succeed())
	})

	It("refuses a body signed with another connection's secret", func() {
		Expect(verify(signature("another-secret", millis(clockNow), body), body, conn(secret))).
			To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a body changed after signing", func() {
		Expect(verify(signature(secret, millis(clockNow), body), strings.Replace(body, "col", "other", 1), conn(secret))).
			To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a delivery without a signature", func() {
		Expect(verify("", body, conn(secret))).To(beRejected(ports.ErrUnauthenticated, "missing-signature"))
	})

	It("reads t as milliseconds: a correctly signed timestamp in seconds is stale", func() {
		seconds := strconv.FormatInt(clockNow.Unix(), 10)
		Expect(verify(signature(secret, seconds, body), body, conn(secret))).
			To(beRejected(ports.ErrUnauthenticated, "stale-timestamp"))
	})

	DescribeTable("holds the timestamp to five minutes either side of now",
		func(offset time.Duration, accepted bool) {
			webhooktest.ExpectInWindow(verify(signature(secret, millis(clockNow.Add(offset)), body), body, conn(secret)), accepted)
		},
		webhooktest.WindowEntries(),
	)

	DescribeTable("refuses a malformed signature header",
		func(header, reason string) {
			Expect(verify(header, body, conn(secret))).To(beRejected(ports.ErrUnauthenticated, reason))
		},
		Entry("no t", "s="+strings.Repeat("ab", 32), "missing-timestamp"),
		Entry("t not a number", "t=now,s="+strings.Repeat("ab", 32), "malformed-timestamp"),
		Entry("t twice", "t="+millis(clockNow)+",t=1,s="+strings.Repeat("ab", 32), "malformed-signature"),
		Entry("no s", "t="+millis(clockNow), "malformed-signature"),
		Entry("s not hex", "t="+millis(clockNow)+",s="+strings.Repeat("zz", 32), "malformed-signature"),
		Entry("s truncated", "t="+millis(clockNow)+",s=abcd", "malformed-signature"),
	)

	It("refuses everything for a connection without a secret", func() {
		Expect(verify(signature("", millis(clockNow), body), body, conn(""))).
			To(beRejected(ports.ErrUnauthenticated, "not-configured"))
	})

	It("refuses a delivery without its connection", func() {
		Expect(verify(signature(secret, millis(clockNow), body), body, nil)).
			To(beRejected(ports.ErrUnauthenticated, "missing-connection"))
	})
})
