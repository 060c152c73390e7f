package bootstrap

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodule"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// The server below speaks plain HTTP, as it does behind a TLS proxy: whether its cookies are
// Secure comes from the configuration alone.
var _ = Describe("Console and install cookies behind a TLS proxy", func() {
	const adminToken = "admin-token-for-the-cookie-specs"

	// serve starts the whole server with the variables of env and answers its base URL.
	serve := func(ctx SpecContext, env map[string]string) string {
		GinkgoHelper()
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		addr := freeAddr()
		vars := map[string]string{
			EnvDatabaseURL:              db.URL,
			EnvHTTPAddr:                 addr,
			EnvAdminToken:               adminToken,
			EnvCredentialsKey:           base64.StdEncoding.EncodeToString(make([]byte, 32)),
			slackmodule.EnvClientID:     "slack-client-id",
			slackmodule.EnvClientSecret: "slack-client-secret",
		}
		for k, v := range env {
			vars[k] = v
		}
		cfg, err := LoadConfig(func(name string) string { return vars[name] })
		Expect(err).NotTo(HaveOccurred())
		app, err := InitializeApp(cfg, zap.NewNop())
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = app.Run(runCtx)
		}()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed()) })
		base := "http://" + addr
		Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(30 * time.Second).Should(Equal(200))
		return base
	}

	noRedirects := &http.Client{Transport: client.Transport, Timeout: client.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// cookies answers the cookies the sign-in form, the sign-in and the Slack install start set.
	cookies := func(base string) []*http.Cookie {
		GinkgoHelper()
		resp, err := client.Get(base + "/console/sign-in")
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		got := resp.Cookies()
		Expect(got).To(HaveLen(1))

		// Signing in sets the session cookie.
		form := url.Values{"csrf": {got[0].Value}, "token": {adminToken}}
		req, _ := http.NewRequest(http.MethodPost, base+"/console/sign-in", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: got[0].Name, Value: got[0].Value})
		resp, err = noRedirects.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
		got = append(got, resp.Cookies()...)

		req, _ = http.NewRequest(http.MethodPost, base+"/api/admin/workspaces", strings.NewReader(`{"slug":"acme","name":"Acme"}`))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err = client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusCreated))
		req, _ = http.NewRequest(http.MethodPost, base+"/api/workspaces/acme/connections/slack/install", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err = client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		got = append(got, resp.Cookies()...)
		names := make([]string, 0, len(got))
		for _, c := range got {
			names = append(names, c.Name)
		}
		Expect(names).To(ConsistOf("hephaestus_console_signin", "hephaestus_console", "hx_install_slack"))
		return got
	}

	DescribeTable("mark every cookie Secure when the browser reaches the server over https",
		func(ctx SpecContext, env map[string]string, secure bool) {
			for _, c := range cookies(serve(ctx, env)) {
				Expect(c.Secure).To(Equal(secure), c.Name)
			}
		},
		Entry("HEPHAESTUS_PUBLIC_URL is https: Secure", map[string]string{EnvPublicURL: "https://hx.example"}, true),
		Entry("HEPHAESTUS_PUBLIC_URL is http and nothing is set: not Secure", map[string]string{EnvPublicURL: "http://127.0.0.1"}, false),
		Entry("HEPHAESTUS_COOKIE_SECURE=true: Secure", map[string]string{EnvPublicURL: "http://127.0.0.1", EnvCookieSecure: "true"}, true),
		Entry("HEPHAESTUS_COOKIE_SECURE=false wins over an https public URL", map[string]string{EnvPublicURL: "https://hx.example", EnvCookieSecure: "false"}, false),
	)
})
