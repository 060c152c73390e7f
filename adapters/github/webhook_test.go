package github_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Verifying a GitHub delivery", func() {
	const body = `{"action":"opened","installation":{"id":7},"repository":{"id":1}}`
	var hook *github.Webhook

	BeforeEach(func() {
		var err error
		hook, err = github.NewWebhook(github.Config{WebhookSecret: []byte(appSecret), AppID: 42})
		Expect(err).NotTo(HaveOccurred())
	})

	verify := func(signature string, signedBody string, extra ...string) error {
		req := delivery("issues", "d-1", signedBody, extra...)
		if signature != "" {
			req.Headers.Set("X-Hub-Signature-256", signature)
		}
		return hook.Verify(req, nil)
	}

	It("accepts a body signed with the App secret", func() {
		Expect(verify(sign(appSecret, []byte(body)), body)).To(Succeed())
	})

	It("refuses a body signed with another secret", func() {
		Expect(verify(sign("another-secret", []byte(body)), body)).
			To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a body changed after signing", func() {
		tampered := `{"action":"opened","installation":{"id":8},"repository":{"id":1}}`
		Expect(verify(sign(appSecret, []byte(body)), tampered)).
			To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
	})

	It("refuses a delivery without X-Hub-Signature-256", func() {
		Expect(verify("", body)).To(beRejected(ports.ErrUnauthenticated, "missing-signature"))
	})

	It("does not accept the legacy SHA-1 header instead", func() {
		Expect(verify("", body, "X-Hub-Signature", "sha1=0123")).
			To(beRejected(ports.ErrUnauthenticated, "missing-signature"))
	})

	DescribeTable("refuses a malformed signature header",
		func(header string) {
			Expect(verify(header, body)).To(beRejected(ports.ErrUnauthenticated, "malformed-signature"))
		},
		Entry("without the sha256= prefix", sign(appSecret, []byte(body))[len("sha256="):]),
		Entry("with a sha1= prefix", "sha1="+sign(appSecret, []byte(body))[len("sha256="):]),
		Entry("with non-hex digits", "sha256=zz"+sign(appSecret, []byte(body))[len("sha256=")+2:]),
		Entry("with a truncated digest", sign(appSecret, []byte(body))[:40]),
	)

	It("refuses every delivery while no secret is configured, even one signed with an empty key", func() {
		unconfigured, err := github.NewWebhook(github.Config{})
		Expect(err).NotTo(HaveOccurred())
		req := delivery("issues", "d-1", body)
		req.Headers.Set("X-Hub-Signature-256", sign("", []byte(body)))
		Expect(unconfigured.Verify(req, nil)).To(beRejected(ports.ErrUnauthenticated, "not-configured"))
	})

	It("refuses a delivery whose hook target is another App", func() {
		Expect(verify(sign(appSecret, []byte(body)), body,
			"X-GitHub-Hook-Installation-Target-Type", "integration",
			"X-GitHub-Hook-Installation-Target-ID", "43")).
			To(beRejected(ports.ErrUnauthenticated, "wrong-app"))
		Expect(verify(sign(appSecret, []byte(body)), body,
			"X-GitHub-Hook-Installation-Target-Type", "integration",
			"X-GitHub-Hook-Installation-Target-ID", "42")).To(Succeed())
	})

	It("refuses a negative App id at construction", func() {
		_, err := github.NewWebhook(github.Config{WebhookSecret: []byte(appSecret), AppID: -1})
		Expect(err).To(HaveOccurred())
	})

	It("receives on one URL for every installation", func() {
		Expect(hook.PerConnection()).To(BeFalse())
		Expect(hook.Provider()).To(Equal(github.Provider))
	})
})
