package gitlab_test

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Verifying a GitLab delivery", func() {
	const body = `{"object_kind":"push","project_id":15}`
	var hook *gitlab.Webhook

	BeforeEach(func() {
		var err error
		hook, err = gitlab.NewWebhook(gitlab.Config{Now: func() time.Time { return clockNow }})
		Expect(err).NotTo(HaveOccurred())
	})

	It("receives on each connection's own URL", func() {
		Expect(hook.PerConnection()).To(BeTrue())
		Expect(hook.Provider()).To(Equal(gitlab.Provider))
	})

	Describe("with a token", func() {
		It("accepts the connection's secret in X-Gitlab-Token", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken), conn(plainToken, nil))).To(Succeed())
		})

		It("refuses another connection's token", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", "other-token"), conn(plainToken, nil))).
				To(beRejected(ports.ErrUnauthenticated, "bad-token"))
		})

		It("refuses a prefix of the secret", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken[:5]), conn(plainToken, nil))).
				To(beRejected(ports.ErrUnauthenticated, "bad-token"))
		})

		It("refuses a delivery without a token", func() {
			Expect(hook.Verify(request(body), conn(plainToken, nil))).
				To(beRejected(ports.ErrUnauthenticated, "missing-token"))
		})

		It("refuses everything for a connection without a secret", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", ""), conn("", nil))).
				To(beRejected(ports.ErrUnauthenticated, "not-configured"))
		})

		It("refuses a delivery without its connection", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken), nil)).
				To(beRejected(ports.ErrUnauthenticated, "missing-connection"))
		})
	})

	Describe("with a Standard Webhooks signature", func() {
		signed := func(key []byte, at time.Time, signedBody, sentBody string, extra ...string) ports.Request {
			headers := append([]string{
				"webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
				"webhook-timestamp", strconv.FormatInt(at.Unix(), 10),
				"webhook-signature", standardSignature(key, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", at, signedBody),
			}, extra...)
			return request(sentBody, headers...)
		}

		It("accepts a body signed with the connection's key", func() {
			Expect(hook.Verify(signed(signingKey, clockNow, body, body), conn(whsecKey, nil))).To(Succeed())
		})

		It("accepts when any listed signature matches, as during a key rotation", func() {
			req := signed(signingKey, clockNow, body, body)
			req.Headers.Set("webhook-signature", "v1,AAAA "+standardSignature([]byte("old-key"), "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", clockNow, body)+" "+req.Headers.Get("webhook-signature"))
			Expect(hook.Verify(req, conn(whsecKey, nil))).To(Succeed())
		})

		It("refuses a body signed with another key", func() {
			Expect(hook.Verify(signed([]byte("another-key-another-key"), clockNow, body, body), conn(whsecKey, nil))).
				To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
		})

		It("refuses a body changed after signing", func() {
			Expect(hook.Verify(signed(signingKey, clockNow, body, `{"object_kind":"push","project_id":16}`), conn(whsecKey, nil))).
				To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
		})

		It("refuses a message id changed after signing", func() {
			req := signed(signingKey, clockNow, body, body)
			req.Headers.Set("webhook-id", "msg_other")
			Expect(hook.Verify(req, conn(whsecKey, nil))).To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
		})

		DescribeTable("holds the timestamp to five minutes either side of now",
			func(offset time.Duration, accepted bool) {
				webhooktest.ExpectInWindow(hook.Verify(signed(signingKey, clockNow.Add(offset), body, body), conn(whsecKey, nil)), accepted)
			},
			webhooktest.WindowEntries(),
		)

		It("refuses a timestamp that is not whole seconds", func() {
			req := signed(signingKey, clockNow, body, body)
			req.Headers.Set("webhook-timestamp", strconv.FormatInt(clockNow.UnixMilli(), 10)+".5")
			Expect(hook.Verify(req, conn(whsecKey, nil))).To(beRejected(ports.ErrUnauthenticated, "malformed-timestamp"))
		})

		It("refuses a signature without its timestamp", func() {
			req := signed(signingKey, clockNow, body, body)
			req.Headers.Del("webhook-timestamp")
			Expect(hook.Verify(req, conn(whsecKey, nil))).To(beRejected(ports.ErrUnauthenticated, "missing-timestamp"))
		})

		DescribeTable("refuses a malformed signature header",
			func(header string) {
				req := signed(signingKey, clockNow, body, body)
				req.Headers.Set("webhook-signature", header)
				Expect(hook.Verify(req, conn(whsecKey, nil))).To(beRejected(ports.ErrUnauthenticated, "malformed-signature"))
			},
			Entry("empty", ""),
			Entry("another version only", "v1a,"+standardSignature(signingKey, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", clockNow, body)[3:]),
			Entry("not base64", "v1,***"),
			Entry("no version", "c2lnbmF0dXJl"),
		)

		It("never falls back to a correct token when the signature is wrong", func() {
			req := signed([]byte("another-key-another-key"), clockNow, body, body, "X-Gitlab-Token", whsecKey)
			Expect(hook.Verify(req, conn(whsecKey, nil))).To(beRejected(ports.ErrUnauthenticated, "bad-signature"))
		})

		It("never falls back to a correct token when the signature header is empty", func() {
			req := request(body, "X-Gitlab-Token", whsecKey)
			req.Headers["Webhook-Signature"] = []string{""}
			Expect(hook.Verify(req, conn(whsecKey, nil))).To(beRejected(ports.ErrUnauthenticated, "malformed-signature"))
		})

		It("refuses a signature for a connection whose secret is a plain token", func() {
			req := signed([]byte(plainToken), clockNow, body, body, "X-Gitlab-Token", plainToken)
			Expect(hook.Verify(req, conn(plainToken, nil))).To(beRejected(ports.ErrUnauthenticated, "not-configured"))
		})
	})

	Describe("the instance header", func() {
		It("accepts the connection's source server, with or without a trailing slash", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken, "X-Gitlab-Instance", instance), conn(plainToken, nil))).To(Succeed())
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken, "X-Gitlab-Instance", instance+"/"), conn(plainToken, nil))).To(Succeed())
		})

		It("compares the header and the source server in their canonical forms (case of scheme and host, default port)", func() {
			u, err := url.Parse(instance)
			Expect(err).NotTo(HaveOccurred())
			upper := strings.ToUpper(u.Scheme) + "://" + strings.ToUpper(u.Host) + ":443" + u.Path + "/"
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken, "X-Gitlab-Instance", upper), conn(plainToken, nil))).To(Succeed())
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken, "X-Gitlab-Instance", strings.Replace(instance, "https://", "http://", 1)), conn(plainToken, nil))).
				To(beRejected(ports.ErrUnauthenticated, "wrong-instance"))
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken, "X-Gitlab-Instance", "not a url"), conn(plainToken, nil))).
				To(beRejected(ports.ErrUnauthenticated, "wrong-instance"))
		})

		It("refuses a delivery from another instance", func() {
			Expect(hook.Verify(request(body, "X-Gitlab-Token", plainToken, "X-Gitlab-Instance", "https://gitlab.com"), conn(plainToken, nil))).
				To(beRejected(ports.ErrUnauthenticated, "wrong-instance"))
		})
	})
})
