package slack_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Verifying a Slack delivery", func() {
	const body = `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"message","channel":"C1"}}`
	var hook *slack.Webhook

	BeforeEach(func() {
		var err error
		hook, err = slack.NewWebhook(slack.Config{SigningSecret: []byte(signingSecret), Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
	})

	It("accepts a body signed with the app's signing secret", func() {
		Expect(hook.Verify(signed(signingSecret, clockNow, body), nil)).To(Succeed())
		Expect(hook.PerConnection()).To(BeFalse())
		Expect(hook.Provider()).To(Equal(slack.Provider))
	})

	It("refuses a body signed with another secret", func() {
		Expect(hook.Verify(signed("another-secret", clockNow, body), nil)).To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a body changed after signing", func() {
		req := signed(signingSecret, clockNow, body)
		req.Body = []byte(`{"type":"event_callback","team_id":"T2","event_id":"Ev1","event":{"type":"message","channel":"C1"}}`)
		Expect(hook.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a timestamp changed after signing, even inside the window", func() {
		req := signed(signingSecret, clockNow, body)
		req.Headers.Set("X-Slack-Request-Timestamp", "1700000001")
		Expect(hook.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a delivery without a signature", func() {
		req := signed(signingSecret, clockNow, body)
		req.Headers.Del("X-Slack-Signature")
		Expect(hook.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "missing-signature"))
	})

	It("refuses a delivery without a timestamp", func() {
		req := signed(signingSecret, clockNow, body)
		req.Headers.Del("X-Slack-Request-Timestamp")
		Expect(hook.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "missing-timestamp"))
	})

	It("refuses a timestamp that is not whole seconds", func() {
		req := signed(signingSecret, clockNow, body)
		req.Headers.Set("X-Slack-Request-Timestamp", "1700000000.5")
		Expect(hook.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "malformed-timestamp"))
	})

	DescribeTable("refuses a malformed signature header",
		func(header string) {
			req := signed(signingSecret, clockNow, body)
			req.Headers.Set("X-Slack-Signature", header)
			Expect(hook.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "malformed-signature"))
		},
		Entry("another version", "v1="+sign(signingSecret, clockNow, body)[3:]),
		Entry("no version", sign(signingSecret, clockNow, body)[3:]),
		Entry("non-hex digits", "v0=zz"+sign(signingSecret, clockNow, body)[5:]),
		Entry("a truncated digest", sign(signingSecret, clockNow, body)[:40]),
	)

	DescribeTable("holds the timestamp to five minutes either side of now",
		func(offset time.Duration, accepted bool) {
			webhooktest.ExpectInWindow(hook.Verify(signed(signingSecret, clockNow.Add(offset), body), nil), accepted)
		},
		webhooktest.WindowEntries(),
	)

	It("refuses every delivery while no signing secret is configured, even one signed with an empty key", func() {
		unconfigured, err := slack.NewWebhook(slack.Config{Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
		Expect(unconfigured.Verify(signed("", clockNow, body), nil)).To(beRejected(ports.ErrUnauthenticated, "not-configured"))
	})
})
